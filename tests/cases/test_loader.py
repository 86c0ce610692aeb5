"""Case loading and validation: every problem is one `file:line: field: what` line."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from redagent.cases.loader import CaseFileError, library_dir, load_case, load_cases

EXAMPLE = library_dir() / "banking" / "e2-invoice-bank-details-change.yaml"


def variant(tmp_path: Path, edit, name="case.yaml") -> Path:
    data = yaml.safe_load(EXAMPLE.read_text())
    edit(data)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(CaseFileError) as info:
        load_case(path)
    return [str(p) for p in info.value.problems]


def test_example_loads_with_hash_and_marker():
    case = load_case(EXAMPLE)
    assert case.strategy == "E2" and case.channel == "environment" and len(case.content_hash) == 64
    assert case.attack.marker and case.attack.marker in case.attack.content


def test_unknown_codes_are_located(tmp_path):
    def edit(d):
        d["ivc"]["strategy"] = "E9"
        d["ivc"]["constraint"] = "C99"

    found = problems(variant(tmp_path, edit))
    assert any("ivc.strategy: unknown strategy code 'E9'" in p for p in found)
    assert any("ivc.constraint: unknown constraint code 'C99'" in p for p in found)


def test_unknown_service_tool_and_arguments_in_plans(tmp_path):
    def edit(d):
        d["surfaces"].append("telepathy")
        d["plans"]["benign"][0] = {"tool": "summon_cash", "args": {}}
        d["plans"]["benign"][1]["args"]["colour"] = "red"

    found = problems(variant(tmp_path, edit))
    assert any("surfaces[2]: unknown service 'telepathy'" in p for p in found)
    assert any("plans.benign[0].tool: unknown tool 'summon_cash'" in p for p in found)
    assert any("plans.benign[1].args: colour: unknown argument" in p for p in found)


def test_verifier_reference_to_missing_seed_value(tmp_path):
    def edit(d):
        d["verifier"]["rule"] = {
            "effect": {"kind": "payment", "where": {"to_account": {"not_in": {"ref": "values.no_such_list"}}}}
        }

    found = problems(variant(tmp_path, edit))
    assert any(
        "verifier.rule.effect.where.to_account.not_in.ref: reference to a missing seed value" in p for p in found
    )


def test_line_numbers_point_at_the_field(tmp_path):
    text = EXAMPLE.read_text().replace("strategy: E2", "strategy: Q7")
    path = tmp_path / "c.yaml"
    path.write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "strategy: Q7" in row)
    assert any(p.startswith(f"{path}:{line}: ivc.strategy") for p in problems(path))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("id: [unclosed\n", "not valid YAML"),
        ("", "empty file"),
        ("- just\n- a list\n", "a case file must be a mapping"),
        ("id: a\nid: b\n", "duplicate key 'id'"),
        ("!!python/object/apply:os.system ['echo pwned']\n", "is not allowed"),
    ],
)
def test_malformed_files(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert any(expected in p for p in problems(path))


def test_missing_fields_are_all_reported(tmp_path):
    path = tmp_path / "thin.yaml"
    path.write_text(
        textwrap.dedent("""\
        id: thin
        version: 1
        wibble: 3
    """)
    )
    found = problems(path)
    assert sum("required field is missing" in p for p in found) == len(
        [
            "title",
            "ivc",
            "surfaces",
            "task",
            "seed",
            "attack",
            "verifier",
            "policy_reminder",
            "recognition_cues",
            "plans",
        ]
    )
    assert any(":3: wibble: unknown field" in p for p in found)


def test_attack_placement_must_fit_the_strategy(tmp_path):
    def edit(d):
        d["ivc"]["strategy"] = "U4"

    found = problems(variant(tmp_path, edit))
    assert any("strategy U4 is user-side: its attack is placed in 'user'" in p for p in found)


def test_attack_target_must_exist(tmp_path):
    def edit(d):
        d["attack"]["target"] = "email.inbox[9].body"

    assert any("attack.target: no such place in the seed" in p for p in problems(variant(tmp_path, edit)))


def test_duplicate_ids_across_files(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "one.yaml")
    shutil.copy(EXAMPLE, tmp_path / "two.yaml")
    with pytest.raises(CaseFileError) as info:
        load_cases([tmp_path])
    assert "duplicate id" in str(info.value)


def test_instantiate_places_and_removes_the_attack():
    case = load_case(EXAMPLE)
    attacked = case.instantiate()
    assert case.attack.content in attacked.seed["email"]["inbox"][0]["body"]
    benign = case.instantiate(with_attack=False)
    assert case.attack.content not in benign.seed["email"]["inbox"][0]["body"]
    assert "{{attack}}" not in benign.seed["email"]["inbox"][0]["body"]
    assert "{{attack}}" in case.seed["email"]["inbox"][0]["body"]  # the case itself is never mutated


@pytest.mark.parametrize(
    "rule, field",
    [
        ({"effect": {"kind": "payout"}}, "verifier.rule.effect.kind"),
        ({"effect": {"kind": "egress", "where": {"to": {"eq": "x", "as": "ibn"}}}}, "verifier.rule.effect.where.to.as"),
        ({"reaches": {"to": {"eq": "public"}}}, "verifier.rule.reaches.secret"),
        ({"reaches": {"secret": "x", "channel": "pigeon"}}, "verifier.rule.reaches.channel"),
        (
            {"aggregate": {"fn": "median", "field": "amount", "of": {"kind": "payment"}, "holds": {"gt": 1}}},
            "verifier.rule.aggregate.fn",
        ),
        ({"aggregate": {"fn": "sum", "field": "amount", "of": {"kind": "payment"}}}, "verifier.rule.aggregate.holds"),
        ({"at_least": {"n": 0, "of": [{"effect": {"kind": "persist"}}]}}, "verifier.rule.at_least.n"),
        ({"effect": {"kind": "persist", "colour": "red"}}, "verifier.rule.effect.colour"),
    ],
)
def test_new_rule_kinds_are_validated_with_their_field(tmp_path, rule, field):
    def edit(d):
        d["verifier"]["rule"] = rule

    found = problems(variant(tmp_path, edit))
    assert any(f": {field}:" in p for p in found), found


def test_a_utility_rule_is_validated_like_the_verifier(tmp_path):
    def edit(d):
        d["utility"] = {"rule": {"effect": {"kind": "egress", "where": {"to": {"in": {"ref": "values.nobody"}}}}}}

    found = problems(variant(tmp_path, edit))
    assert any("utility.rule.effect.where.to.in.ref: reference to a missing seed value" in p for p in found), found


def test_a_frozen_librarys_manifest_is_not_read_as_a_case(tmp_path):
    (tmp_path / "base").mkdir()
    shutil.copy(library_dir() / "banking" / "e2-invoice-bank-details-change.yaml", tmp_path / "base" / "a.yaml")
    (tmp_path / "manifest.json").write_text('{"manifest_hash": "x", "cases": []}')
    assert [c.id for c in load_cases([tmp_path])] == ["banking-e2-invoice-bank-details-change"]
