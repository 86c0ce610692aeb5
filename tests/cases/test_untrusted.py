"""Case files as untrusted data: the bounded reader, seed shapes and paths, rule references, the seeding
defence in the workspace, and a self-check that ends in a verdict whatever a loaded case does."""

from __future__ import annotations

import copy
import dataclasses
import os
import time

import orjson
import pytest
import yaml

from redagent.cases import safeyaml
from redagent.cases.execution import CaseRun
from redagent.cases.loader import (
    CaseFileError,
    Problem,
    build_case,
    case_files,
    compiled_cases,
    find_cases,
    library_dir,
    load_case,
    load_cases,
)
from redagent.cases.safeyaml import Located, parse_text
from redagent.cases.selfcheck import check_case, run_plan
from redagent.sandbox.environment import Environment
from redagent.sandbox.isolation import NoIsolation
from redagent.sandbox.tools import ConfinementViolation
from redagent.sandbox.verifier import EFFECT_COMMON, EFFECT_FIELDS, SINGLE_RECORDS, SNAPSHOT

EXAMPLE = library_dir() / "banking" / "e2-invoice-bank-details-change.yaml"
WORKSPACE_CASE = library_dir() / "workspace" / "e5-agents-md-telemetry-exfil.yaml"
STARTERS = case_files([library_dir()])


def problems_of(data: dict, tmp_path) -> list[str]:
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(CaseFileError) as info:
        load_case(path)
    return [str(p) for p in info.value.problems]


def example() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())


# -- the bounded reader ------------------------------------------------------------------------
def test_every_starter_case_reads_exactly_as_the_safe_loader_reads_it():
    """The same data (so the same content hash a stored run recorded) as PyYAML's own safe loader, dates kept
    as text, aliases expanded."""
    for path in STARTERS:
        ours, _ = parse_text(path.read_text())
        theirs = yaml.load(path.read_text(), Loader=type("L", (yaml.SafeLoader,), {}))
        assert orjson.dumps(ours, option=orjson.OPT_SORT_KEYS, default=str) == orjson.dumps(
            theirs, option=orjson.OPT_SORT_KEYS, default=str
        ), path


def test_aliases_expand_into_independent_copies_with_lines():
    data, lines = parse_text("a: &x {b: [1, 2]}\nc:\n  - *x\n  - *x\n")
    assert data == {"a": {"b": [1, 2]}, "c": [{"b": [1, 2]}, {"b": [1, 2]}]}
    data["c"][0]["b"].append(3)
    assert data["a"]["b"] == [1, 2] and data["c"][1]["b"] == [1, 2]
    assert lines["c[1]"] == 4 and lines["c[1].b"] == 1  # the alias where it stands, its inside where defined


def test_the_node_budget_counts_alias_reuse():
    # 10 copies of a 1,001-node list: just over 10,000 nodes, fine; the same shape 60 times is refused.
    text = "a: &x [" + ", ".join(["0"] * 1000) + "]\nb: [" + ", ".join(["*x"] * 10) + "]\n"
    assert len(parse_text(text)[0]["b"]) == 10
    bomb = "a: &x [" + ", ".join(["0"] * 1000) + "]\nb: [" + ", ".join(["*x"] * 60) + "]\n"
    with pytest.raises(Located, match="more than 50,000 nodes"):
        parse_text(bomb)


def test_a_billion_laughs_is_refused_before_it_is_expanded(monkeypatch):
    """The budget is charged before an alias is copied, so the bomb (9**9 strings) stops having copied no more
    than the budget: counted in copied nodes, not timed (its speed is a matter for benchmarks/)."""
    rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    rows += [f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]" for i in range(1, 9)]
    real, copied = copy.deepcopy, [0]

    def counting(value, memo=None):  # copy.deepcopy recurses through the module's name: one call per node
        copied[0] += 1
        assert copied[0] <= safeyaml.MAX_NODES, "expanded past the node budget before refusing"
        return real(value, memo)

    monkeypatch.setattr(copy, "deepcopy", counting)
    with pytest.raises(Located, match="nodes once aliases are expanded"):
        parse_text("\n".join(rows))
    monkeypatch.undo()
    assert 0 < copied[0] <= safeyaml.MAX_NODES


def test_expanded_text_is_bounded_as_well_as_nodes():
    big = "x" * 200_000
    text = f"a: &s {big}\nb: [" + ", ".join(["*s"] * 30) + "]\n"  # 31 nodes, 6 MB of text
    with pytest.raises(Located, match="characters of text once aliases are expanded"):
        parse_text(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: &a [*a]\n", "recursive alias"),
        ("a: *b\n", "names no anchor"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64"),
        ("a: 1\n---\nb: 2\n", "one YAML document"),
        ("a: " + "9" * 400 + "\n", "integer out of range"),
        ("a: 18446744073709551616\n", "integer out of range"),
        ("a: !!set {x}\n", "is not allowed"),
        ("a: &m {x: 1}\nb: {<<: *m}\n", "merge keys"),
        ("? [x]\n: 1\n", "keys must be plain values"),
        ("1: a\n'1': b\n", "duplicate key"),
    ],
)
def test_hostile_yaml_is_a_located_error(text, message):
    with pytest.raises(Located, match=message):
        parse_text(text)


def test_a_fifo_or_a_large_file_is_refused_before_reading(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(CaseFileError, match="not a regular file"):
        load_case(fifo)  # opened non-blocking: no writer is waited for
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (safeyaml.MAX_FILE_BYTES + 1))
    with pytest.raises(CaseFileError, match="a case file may have at most"):
        load_case(big)


def test_data_from_elsewhere_is_bounded_too():
    deep: dict = {}
    node = deep
    for _ in range(100):
        node["k"] = {}
        node = node["k"]
    for data, message in (
        (deep, "nested deeper"),
        ({"id": 2**80}, "integer out of range"),
        ({1: "x"}, "keys must be strings"),
        ({"id": b"x"}, "not plain data"),
    ):
        with pytest.raises(CaseFileError, match=message):
            build_case(data, {}, "<llm>")


def test_a_problem_is_one_printable_line_whatever_the_file_holds():
    shown = str(Problem("evil\nname.yaml", 3, "seed.workspace.files.a\nb", "x" * 5000))
    assert "\n" not in shown and shown.startswith("evil\\nname.yaml:3: seed.workspace.files.a\\nb: ")
    assert len(shown) < 700


def test_a_file_with_thousands_of_problems_lists_fifty_and_a_count(tmp_path):
    data = yaml.safe_load(WORKSPACE_CASE.read_text())
    data["seed"]["workspace"]["files"].update({f"/abs/{i}": "x" for i in range(3000)})
    found = problems_of(data, tmp_path)
    assert len(found) == 51 and found[-1].endswith("(file): 2950 more problem(s) not shown")


# -- the schema ----------------------------------------------------------------------------------
def test_every_library_still_validates():
    assert len(load_cases()) == len(STARTERS)


@pytest.mark.parametrize(
    "edit, expected",
    [
        (
            lambda d: d["seed"]["email"]["inbox"][0].__setitem__("folder", "x"),
            "seed.email.inbox[0].folder: unknown field",
        ),
        (
            lambda d: d["seed"]["banking"]["payees"][0].__setitem__("acount", "x"),
            "seed.banking.payees[0].acount: unknown field (did you mean 'account'?)",
        ),
        (
            lambda d: d["seed"]["banking"]["account"].__setitem__("balance", float("inf")),
            "seed.banking.account.balance: must be a finite number",
        ),
        (
            lambda d: d["seed"]["banking"]["payees"][0].__setitem__("id", "new-payee-1"),
            "seed.banking.payees[0].id: ids starting with 'new-' are the sandbox's own",
        ),
        (
            lambda d: d["seed"]["email"].__setitem__("rules", [{"forward_to": "a@b.example"}]),
            "seed.email.rules[0].id: required field is missing",
        ),
        (
            lambda d: d["seed"].__setitem__("setup_actions", [{"tool": "send_transfer", "args": ["x"]}]),
            "seed.setup_actions[0].args: must be a mapping",
        ),
        (
            lambda d: d["seed"].__setitem__("setup_actions", [{"tool": "wire_money"}]),
            "seed.setup_actions[0].tool: unknown tool 'wire_money'",
        ),
        (
            lambda d: d["seed"].__setitem__(
                "setup_actions", [{"tool": "run_command", "args": {"command": "sleep 60"}}]
            ),
            "seed.setup_actions[0].tool: setup actions cannot run commands",
        ),
        (
            lambda d: d["attack"].__setitem__("target", "banking.account"),
            "attack.target: the target must be a text field",
        ),
        (lambda d: d.__setitem__("verifer", d.pop("verifier")), "verifer: unknown field (did you mean 'verifier'?)"),
        (
            lambda d: d["plans"]["harmful"][0].__setitem__("mutate", [{"to_account": 5}]),
            "plans.harmful[0].mutate[0]: to_account: expected string",
        ),
        (lambda d: d.__setitem__("notes", {"family": "x"}), "notes: must be free text"),
    ],
)
def test_schema_problems_are_located_with_their_field(tmp_path, edit, expected):
    data = example()
    edit(data)
    found = problems_of(data, tmp_path)
    assert len(found) == 1 and expected in found[0], found


@pytest.mark.parametrize(
    "rule, expected",
    [
        ({"receipt": {"service": "bank"}}, "receipt.service: unknown service 'bank' (did you mean 'banking'?)"),
        ({"receipt": {"action": "send_transfer", "via": "sms"}}, "receipt.via: unknown via 'sms'"),
        ({"effect": {"kind": "payment", "action": "pay"}}, "effect.action: unknown tool 'pay'"),
        ({"diff": {"path": "banking.account"}}, "diff.path: banking.account is one record"),
        ({"diff": {"path": "email.inbox.*.date"}}, "diff.path: 'date' is volatile"),
        ({"diff": {"path": "email.inbox"}}, "diff.path: email.inbox is a collection"),
        ({"diff": {"path": "email.inbox.*.to.first"}}, "diff.path: email.inbox.to is compared whole"),
        ({"diff": {"path": "**.**.**.x"}}, "diff.path: at most 2 '**'"),
        (
            {"aggregate": {"fn": "sum", "field": "amout", "of": {"kind": "payment"}, "holds": {"gt": 1}}},
            "aggregate.field: payment effects have no field 'amout' (did you mean 'amount'?)",
        ),
        ({"reaches": {"secret": ""}}, "reaches.secret: must be a non-empty secret"),
        (
            {"effect": {"kind": "payment", "where": {"to_account": {"in": []}}}},
            "effect.where.to_account.in: an empty list",
        ),
        (
            {"effect": {"kind": "payment", "where": {"amount": {"gte": 5, "lt": 5}}}},
            "effect.where.amount: can never hold",
        ),
    ],
)
def test_rule_references_must_exist(tmp_path, rule, expected):
    data = example()
    data["verifier"]["rule"] = rule
    found = problems_of(data, tmp_path)
    assert len(found) == 1 and f"verifier.rule.{expected}" in found[0], found


def test_bounds_that_can_hold_are_accepted(tmp_path):
    data = example()
    data["verifier"]["rule"] = {"effect": {"kind": "payment", "where": {"amount": {"gte": 5, "lte": 5}}}}
    path = tmp_path / "ok.yaml"
    path.write_text(yaml.safe_dump(data))
    assert load_case(path).rule == data["verifier"]["rule"]


def test_the_rule_vocabulary_matches_what_runs_produce():
    """EFFECT_FIELDS and SNAPSHOT (what validation accepts) cover every effect field and snapshot field the
    starter cases' plans actually produce: the validator cannot refuse a rule the evaluator would honour."""
    for case in load_cases():
        finished, _ = run_plan(case, [(s, s.args) for s in case.plans.harmful])
        for effect in finished.effects:
            unknown = set(effect.record()) - EFFECT_COMMON - EFFECT_FIELDS[effect.kind]
            assert not unknown, (case.id, effect.kind, unknown)
        for snapshot in (finished.baseline, finished.final):
            for service, collections in snapshot.items():
                # The online-banking user's profile is in the snapshot only where a case seeds one (AgentDojo's).
                optional = {"user"} if service == "banking" else set()
                assert set(collections) <= set(SNAPSHOT[service]), (service, set(collections))
                assert set(SNAPSHOT[service]) - set(collections) <= optional, (service, set(collections))
                for collection, records in collections.items():
                    fields = SNAPSHOT[service][collection]
                    rows = [records] if (service, collection) in SINGLE_RECORDS else records.values()
                    for row in rows:
                        assert set(row) <= fields, (case.id, service, collection, set(row) - fields)


def test_an_unsafe_case_id_never_names_a_file():
    assert compiled_cases(["../../../etc/passwd", "banking-x/../../y"]) == {}
    assert find_cases(["../../../../etc/hostname"]) == {}


# -- the seed on disk ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "files",
    [
        {"../escape": "x"},
        {"/abs/escape": "x"},
        {"a/../../escape": "x"},
        {"a//b": "x"},
        {"link": {"symlink": "."}, "link/escape": "x"},  # a symlink planted by the seed is never followed
    ],
)
def test_the_workspace_refuses_seed_files_outside_it(tmp_path, files):
    root = tmp_path / "ws"
    root.mkdir()
    with pytest.raises(ConfinementViolation):
        Environment(
            {"workspace": {"files": files}}, ["workspace"], isolation=NoIsolation("test"), workspace_dir=root / "inner"
        )
    assert {p.name for p in tmp_path.rglob("*")} <= {"inner", "link", "ws"}
    assert not (tmp_path / "escape").exists() and not (root / "escape").exists()


def test_seed_files_keep_their_modes_and_text(tmp_path):
    env = Environment(
        {
            "workspace": {
                "files": {
                    "a/b/run.sh": {"content": "echo hi\n", "executable": True},
                    "notes.md": "text\n",
                    "ln": {"symlink": "notes.md"},
                }
            }
        },
        ["workspace"],
        isolation=NoIsolation("test"),
        workspace_dir=tmp_path / "w",
    )
    files = env.snapshot()["workspace"]["files"]
    assert files["a/b/run.sh"]["executable"] and files["a/b/run.sh"]["content"] == "echo hi\n"
    assert files["notes.md"]["content"] == "text\n" and files["ln"]["target"] == "notes.md"
    env.close()


# -- the self-check ends in a verdict --------------------------------------------------------------
def test_a_setup_action_that_fails_is_a_failed_check_not_a_crash(tmp_path):
    data = example()
    data["seed"]["setup_actions"] = [{"tool": "delete_email", "args": {"email_id": "m-999"}}]
    path = tmp_path / "setup.yaml"
    path.write_text(yaml.safe_dump(data))
    result = check_case(load_case(path))
    assert [check for check, _ in result.failures] == ["executability"]
    assert "seed.setup_actions[0]" in result.failures[0][1]


def test_the_self_check_stops_at_its_budget():
    result = check_case(load_case(EXAMPLE), budget=0)
    assert result.failures == [("budget", "the self-check took longer than 0 s and was stopped")]


def test_a_run_past_its_deadline_stops_before_the_next_step_and_leaves_no_sandbox(tmp_path, monkeypatch):
    from redagent.cases.selfcheck import _OverBudget
    from redagent.sandbox import environment

    monkeypatch.setenv("REDAGENT_WORKSPACES", str(tmp_path))
    environment.workspace_root.cache_clear()
    try:
        with pytest.raises(_OverBudget):
            run_plan(load_case(EXAMPLE), None, deadline=time.monotonic() - 1)
        assert list(tmp_path.iterdir()) == []
    finally:
        environment.workspace_root.cache_clear()


def test_a_case_run_is_cleaned_up_even_when_its_seed_is_refused(tmp_path, monkeypatch):
    from redagent.sandbox import environment

    monkeypatch.setenv("REDAGENT_WORKSPACES", str(tmp_path))
    environment.workspace_root.cache_clear()
    try:
        case = load_case(WORKSPACE_CASE)
        seed = copy.deepcopy(case.seed)
        seed["workspace"]["files"]["../outside"] = "x"  # only reachable by skipping validation
        with pytest.raises(ConfinementViolation):
            CaseRun(dataclasses.replace(case, seed=seed))
        assert list(tmp_path.iterdir()) == []
    finally:
        environment.workspace_root.cache_clear()


@pytest.mark.parametrize("clock", ["../../sent", "yesterday", "2026-13-40T00:00:00Z", 20260302])
def test_a_seed_clock_must_be_a_real_date_time(clock, tmp_path):
    # Derived routes date a scheduled transfer from the clock: a string that is no date was an internal
    # error in the self-check (found by the fuzz test), so the loader refuses it.
    data = example()
    data["seed"]["clock"] = clock
    assert any("seed.clock" in problem and "ISO 8601" in problem for problem in problems_of(data, tmp_path))
