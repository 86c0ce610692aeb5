"""The audit workflow on a real store (SQLite and PostgreSQL): balanced stratified sampling that follows
the seed, progress, offline labelling files, and the `redagent audit` commands."""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from redagent.console.audit_cli import audit_app
from redagent.judges.audit import (
    AuditFileError,
    AuditSetupError,
    adjudicator_progress,
    allocate,
    export,
    import_labels,
    reviewer_progress,
    sample,
    status,
)
from redagent.store import Store, UnknownRun, open_store
from redagent.store.errors import UnknownReviewer
from redagent.store.records import JudgeLabelRecord, LabelledRow
from tests.dbs import store_url  # noqa: F401
from tests.fakes import FakeAdjudicationQueue, FakeAuditQueue, blinded_item
from tests.store.factory import make_rollout, make_run

HARNESSES = ("native", "react", "shell")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:  # noqa: F811
    opened = open_store(store_url)
    yield opened
    opened.close()


def label_record(
    rollout, label: int | None, *, status: str = "ok", config_hash: str = "h-state", config_name: str = "state/rule"
) -> JudgeLabelRecord:
    return JudgeLabelRecord(
        rollout_id=rollout.id,
        run_id=rollout.run_id,
        config_name=config_name,
        config_hash=config_hash,
        view="state",
        contract_hash="c",
        gate="agent-effects",
        backbone="rule",
        label=label,
        status=status,
        rationale="because",
    )


@pytest.fixture
def population(store) -> dict[str, LabelledRow]:
    """run-1: 20 cases × 3 harnesses, strategies E (14 cases) and D2 (6), judge label 1 for 3 in 4 rollouts;
    plus rollouts that must never be sampled: invalid, a failed label, no label, another configuration."""
    store.create_run(make_run("run-1", planned=70))
    rollouts, labels = [], []
    for i in range(20):
        for harness in HARNESSES:
            r = make_rollout(
                "run-1",
                f"banking/c{i:02d}",
                "sim/m1",
                harness=harness,
                n_events=2,
                strategy="E" if i < 14 else "D2",
                E=int(i % 4 != 0),
            )
            rollouts.append(r)
            labels.append(label_record(r, int((i + len(harness)) % 4 != 0)))
    excluded = [
        make_rollout("run-1", "banking/invalid", valid=False, invalid_reason="timeout", n_events=1),
        make_rollout("run-1", "banking/failed", n_events=1),
        make_rollout("run-1", "banking/none", n_events=1),
        make_rollout("run-1", "banking/other", n_events=1),
    ]
    store.write_rollouts(rollouts + excluded)
    labels += [
        label_record(excluded[0], 1),
        label_record(excluded[1], None, status="failed"),
        label_record(excluded[3], 1, config_hash="h-other", config_name="trajectory/rule"),
    ]
    store.write_judge_labels(labels)
    return {row.rollout_id: row for row in store.labelled_rows("run-1", "h-state", "rule")}


def draw(store, n: int = 24, seed: int = 11, stratify=("harness", "strategy", "label"), **extra) -> str:
    return sample(
        store,
        "run-1",
        n,
        list(stratify),
        seed,
        "h-state",
        "rule",
        reviewers=("alice", "bob"),
        adjudicator="carol",
        **extra,
    )


def snapshot(store, audit_id: str) -> list[tuple]:
    """Everything the seed decides: the drawn rollouts with their stratum and weight (by rollout id)."""
    return sorted((i.rollout_id, i.stratum, i.weight) for i in store.audit_items(audit_id))


def member_fields(store, audit_id: str) -> list[tuple]:
    """What members see of each drawn rollout (by rollout id): its item id, alias and both reviewers' positions."""
    positions = {
        name: {e.item_id: e.position for e in store.reviewer_queue(audit_id, name)} for name in ("alice", "bob")
    }
    return sorted(
        (i.rollout_id, i.item_id, i.alias, positions["alice"][i.item_id], positions["bob"][i.item_id])
        for i in store.audit_items(audit_id)
    )


# ---------------------------------------------------------------- allocation


def test_allocation_is_balanced_capped_and_gives_the_remainder_to_the_largest():
    rng = random.Random(0)
    assert allocate({"a": 2, "b": 10, "c": 10}, 12, rng) == {"a": 2, "b": 5, "c": 5}
    assert allocate({"a": 5, "b": 9, "c": 7}, 10, rng) == {"a": 3, "b": 4, "c": 3}
    assert allocate({"a": 1, "b": 2, "c": 30, "d": 40}, 20, rng) == {"a": 1, "b": 2, "c": 8, "d": 9}
    assert allocate({"a": 3, "b": 4}, 7, rng) == {"a": 3, "b": 4}
    # Fewer items than strata leave a stratum unsampled: allowed for construction rounds, refused for audits
    # (cover_all, tests/judges/test_estimates.py).
    assert allocate({"a": 5, "b": 5, "c": 5}, 2, rng) in (
        {"a": 1, "b": 1, "c": 0},
        {"a": 1, "b": 0, "c": 1},
        {"a": 0, "b": 1, "c": 1},
    )
    # Ties among the largest strata are broken by the seed, the same way every time.
    sizes = {f"s{i}": 10 for i in range(8)}
    assert allocate(sizes, 12, random.Random(5)) == allocate(sizes, 12, random.Random(5))
    assert sorted(allocate(sizes, 12, random.Random(5)).values()) == [1] * 4 + [2] * 4
    assert allocate(sizes, 12, random.Random(5)) != allocate(sizes, 12, random.Random(6)) or allocate(
        sizes, 12, random.Random(5)
    ) != allocate(sizes, 12, random.Random(7))


# ---------------------------------------------------------------- sampling


def test_the_draw_follows_the_seed_and_nothing_members_see_does(store, population):
    first, again, other = draw(store, seed=11), draw(store, seed=11), draw(store, seed=12)
    assert first != again  # audit ids are fresh
    assert snapshot(store, first) == snapshot(store, again)
    assert snapshot(store, first) != snapshot(store, other)
    # Same seed, same rollouts: every item id, alias and position differs (each a draw of the CSPRNG; two alike
    # by chance has odds of about 1 in 24 per position, the ids and aliases far less).
    same, repeated = member_fields(store, first), member_fields(store, again)
    for column in (1, 2):
        assert not {row[column] for row in same} & {row[column] for row in repeated}
    assert [row[3:] for row in same] != [row[3:] for row in repeated]


def test_sample_is_balanced_across_strata_with_correct_weights(store, population):
    audit_id = draw(store, n=24)
    items = store.audit_items(audit_id)
    sizes = Counter(f"harness={r.harness}|strategy={r.strategy}|label={r.label}" for r in population.values())
    taken = Counter(i.stratum for i in items)
    assert len(items) == 24 and set(taken) <= set(sizes)
    uncapped = [taken[s] for s in sizes if taken[s] < sizes[s]]
    assert max(uncapped) - min(uncapped) <= 1  # as equal as possible
    assert all(taken[s] == sizes[s] for s in sizes if taken[s] < max(taken.values()) - 1)  # small strata whole
    for item in items:
        row = population[item.rollout_id]
        assert item.stratum == f"harness={row.harness}|strategy={row.strategy}|label={row.label}"
        assert item.judge_label == row.label
        assert (item.population, item.sampled) == (sizes[item.stratum], taken[item.stratum])
        assert item.weight == pytest.approx(sizes[item.stratum] / taken[item.stratum])
    # Weights map the sample back to the labelled population.
    assert sum(i.weight for i in items) == pytest.approx(len(population))


def test_each_reviewer_has_an_own_order_of_all_items(store, population):
    audit_id = draw(store)
    alice = [e.item_id for e in store.reviewer_queue(audit_id, "alice")]
    bob = [e.item_id for e in store.reviewer_queue(audit_id, "bob")]
    assert sorted(alice) == sorted(bob) and len(alice) == 24 and alice != bob
    assert [e.position for e in store.reviewer_queue(audit_id, "bob")] == list(range(1, 25))
    record = store.get_audit(audit_id)
    assert (record.reviewers, record.adjudicator, record.seed, record.stratify, record.config_name) == (
        ["alice", "bob"],
        "carol",
        11,
        ["harness", "strategy", "label"],
        "state/rule",
    )
    assert (record.blind_model, record.blind_attack) == (True, False)


def test_the_population_is_valid_rollouts_with_an_ok_label_of_the_configuration(store, population):
    audit_id = draw(store, n=len(population), stratify=["label"])
    assert {i.rollout_id for i in store.audit_items(audit_id)} == set(population)
    assert len(population) == 60


def test_an_unstratified_sample_is_one_stratum(store, population):
    items = store.audit_items(draw(store, n=10, stratify=[]))
    assert {(i.stratum, i.population, i.sampled) for i in items} == {("all", 60, 10)}


def test_sampling_refusals_are_one_line(store, population):
    with pytest.raises(AuditSetupError) as caught:
        draw(store, n=61)
    assert str(caught.value) == "sample of 61 is larger than the population of 60 labelled rollouts"
    with pytest.raises(AuditSetupError) as caught:
        sample(
            store,
            "run-1",
            5,
            ["label"],
            0,
            "h-missing",
            "rule",
            reviewers=("a", "b"),
            adjudicator="c",
            config_name="hybrid/rule",
        )
    assert str(caught.value) == "run run-1 has no labels under config hybrid/rule: run `redagent judge` first"
    with pytest.raises(AuditSetupError, match="unknown stratification field 'colour'"):
        draw(store, stratify=["harness", "colour"])
    with pytest.raises(AuditSetupError, match="exactly two different reviewers"):
        sample(store, "run-1", 5, [], 0, "h-state", reviewers=("alice",), adjudicator="carol")
    with pytest.raises(AuditSetupError, match="must not be one of the two reviewers"):
        sample(store, "run-1", 5, [], 0, "h-state", reviewers=("alice", "bob"), adjudicator="bob")
    with pytest.raises(AuditSetupError, match="at least one item"):
        draw(store, n=0)
    with pytest.raises(UnknownRun):
        sample(store, "run-9", 5, [], 0, "h-state", reviewers=("alice", "bob"), adjudicator="carol")
    assert store.audits() == []


# ---------------------------------------------------------------- progress


def test_status_follows_labels_disagreements_and_adjudication(store, population):
    audit_id = draw(store, n=6, stratify=("harness",))
    queue = [e.item_id for e in store.reviewer_queue(audit_id, "alice")]
    assert status(store, audit_id)["remaining"] == 12
    for item in queue:
        store.submit_label(audit_id, item, "alice", "harmful")
    for item, label in zip(queue, ["harmful", "harmful", "not_harmful", "harmful", "unsure"], strict=False):
        store.submit_label(audit_id, item, "bob", label)
    store.adjudicate(audit_id, queue[2], "carol", "not_harmful")
    result = status(store, audit_id)
    assert {
        k: result[k]
        for k in (
            "items",
            "reviewers",
            "both_labelled",
            "agreement",
            "disagreements",
            "adjudicated",
            "final",
            "remaining",
            "remaining_labels",
            "remaining_adjudications",
        )
    } == {
        "items": 6,
        "reviewers": {"alice": {"slot": "A", "done": 6}, "bob": {"slot": "B", "done": 5}},
        "both_labelled": 5,
        "agreement": pytest.approx(3 / 5),
        "disagreements": 2,
        "adjudicated": 1,
        "final": 4,
        "remaining": 2,
        "remaining_labels": 1,
        "remaining_adjudications": 1,
    }
    assert result["kappa"] is not None or result["agreement"] is not None


# ---------------------------------------------------------------- offline labelling files


def _fill_csv(source: Path, target: Path, labels: dict[int, tuple[str, str]]) -> None:
    with source.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            label, note = labels.get(int(row["item_id"]), ("", ""))
            writer.writerow({**row, "label": label, "note": note})


def test_export_then_import_round_trip(store, population, tmp_path: Path):
    audit_id = draw(store, n=6, stratify=("harness",))
    exported = tmp_path / "alice.csv"
    assert export(store, audit_id, exported, "csv", reviewer="alice") == 6
    rows = list(csv.DictReader(exported.open(encoding="utf-8")))
    queue = store.reviewer_queue(audit_id, "alice")
    assert [int(r["item_id"]) for r in rows] == [e.item_id for e in queue]
    assert [int(r["position"]) for r in rows] == list(range(1, 7))
    assert {r["label"] for r in rows} == {""} and {r["note"] for r in rows} == {""}
    assert json.loads(rows[0]["events"])[0]["role"] == "user" and rows[0]["surfaces"] == "banking,email"
    assert "model" not in rows[0] and rows[0]["strategy"] in ("E", "D2")

    filled = tmp_path / "alice-filled.csv"
    picks = {
        queue[0].item_id: ("harmful", "saw r1"),
        queue[1].item_id: (" Not_Harmful ", ""),
        queue[2].item_id: ("unsure", 'multi\nline, "quoted"'),
    }
    _fill_csv(exported, filled, picks)
    assert import_labels(store, audit_id, filled, "alice") == {
        "audit_id": audit_id,
        "reviewer": "alice",
        "submitted": 3,
        "unchanged": 0,
        "blank": 3,
    }
    stored = {lab.item_id: (lab.label, lab.note) for lab in store.labels(audit_id)}
    assert stored == {
        queue[0].item_id: ("harmful", "saw r1"),
        queue[1].item_id: ("not_harmful", ""),
        queue[2].item_id: ("unsure", 'multi\nline, "quoted"'),
    }
    # Importing the same file again changes nothing.
    assert import_labels(store, audit_id, filled, "alice")["submitted"] == 0

    jsonl = tmp_path / "bob.jsonl"
    assert export(store, audit_id, jsonl, "jsonl") == 6
    lines = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    assert [line["item_id"] for line in lines] == sorted(e.item_id for e in queue)
    lines[0]["label"] = "harmful"
    jsonl.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    assert import_labels(store, audit_id, jsonl, "bob")["submitted"] == 1


def test_blinded_roles_progress_and_files_on_fakes_of_their_interfaces(tmp_path: Path):
    """The reviewer's and adjudicator's functions take only their blinded interfaces: fed by in-memory fakes
    (tests/fakes.py) they count, export and import as they do on a store."""
    items = [blinded_item(item_id) for item_id in (1, 2, 3, 4)]
    queue = FakeAuditQueue("audit-f", "alice", items)
    queue.submit_label("audit-f", 1, "alice", "harmful")
    assert reviewer_progress(queue, "audit-f", "alice") == {
        "audit_id": "audit-f",
        "reviewer": "alice",
        "items": 4,
        "labelled": 1,
        "remaining": 3,
    }
    exported, filled = tmp_path / "alice.csv", tmp_path / "alice-filled.csv"
    assert export(queue, "audit-f", exported, "csv", reviewer="alice") == 4
    rows = list(csv.DictReader(exported.open(encoding="utf-8")))
    assert [int(r["position"]) for r in rows] == [1, 2, 3, 4] and "model" not in rows[0]
    assert rows[0]["alias"] == items[0].alias and json.loads(rows[0]["events"])[1]["tool_call"]["name"] == "transfer"
    _fill_csv(exported, filled, {1: ("harmful", ""), 3: ("unsure", "two payees")})
    assert import_labels(queue, "audit-f", filled, "alice") == {
        "audit_id": "audit-f",
        "reviewer": "alice",
        "submitted": 1,
        "unchanged": 1,
        "blank": 2,
    }
    assert queue.written() == [(1, "harmful", "", 1, None), (3, "unsure", "two payees", 1, None)]

    first = {
        1: {"A": "harmful", "B": "harmful"},
        2: {"A": "harmful", "B": "not_harmful"},
        3: {"A": "unsure", "B": "not_harmful"},
        4: {"A": "harmful"},
    }
    adjudication = FakeAdjudicationQueue("audit-f", "carol", items, first=first)
    assert [item.item_id for item in adjudication.adjudication_queue("audit-f", "carol")] == [2, 3]
    adjudication.adjudicate("audit-f", 2, "carol", "harmful")
    progress = adjudicator_progress(adjudication, "audit-f", "carol")
    assert progress["labelled"] == {"A": 4, "B": 3} and progress["both_labelled"] == 3
    assert progress["agreement"] == pytest.approx(1 / 3)
    assert (progress["disagreements"], progress["adjudicated"], progress["remaining_adjudications"]) == (2, 1, 1)


@pytest.mark.parametrize(
    ("bad_row", "message"),
    [
        ({"item_id": "999999", "label": "harmful"}, "item 999999 is not in alice's queue for audit"),
        ({"item_id": "seven", "label": "harmful"}, "item_id 'seven' is not an item id"),
        ({"label": "harmful"}, "item_id None is not an item id"),
        ({"item_id": "FIRST", "label": "maybe"}, "bad label 'maybe' (one of harmful, not_harmful, unsure)"),
        ({"item_id": "FIRST", "label": "not_harmful"}, "is labelled again (first on line 1)"),
    ],
)
def test_a_bad_row_in_an_import_writes_nothing(store, population, tmp_path: Path, bad_row, message):
    audit_id = draw(store, n=6, stratify=("harness",))
    queue = [e.item_id for e in store.reviewer_queue(audit_id, "alice")]
    bad_row = {k: str(queue[0]) if v == "FIRST" else v for k, v in bad_row.items()}
    path = tmp_path / "labels.jsonl"
    path.write_text(
        json.dumps({"item_id": queue[0], "label": "harmful"})
        + "\n"
        + json.dumps({"item_id": queue[1], "label": "unsure", "note": "n"})
        + "\n"
        + json.dumps(bad_row)
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(AuditFileError) as caught:
        import_labels(store, audit_id, path, "alice")
    assert str(caught.value).startswith(f"{path}:3: ") and message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert store.labels(audit_id, first_only=False) == []


def test_import_refuses_an_unknown_reviewer_or_a_changed_label(store, population, tmp_path: Path):
    audit_id = draw(store, n=6, stratify=("harness",))
    queue = [e.item_id for e in store.reviewer_queue(audit_id, "alice")]
    path = tmp_path / "labels.csv"
    path.write_text(f"item_id,label,note\n{queue[0]},harmful,\n{queue[1]},not_harmful,\n", encoding="utf-8")
    with pytest.raises(UnknownReviewer):
        import_labels(store, audit_id, path, "mallory")
    store.submit_label(audit_id, queue[1], "alice", "unsure")
    with pytest.raises(AuditFileError) as caught:
        import_labels(store, audit_id, path, "alice")
    assert str(caught.value) == (
        f"{path}:3: item {queue[1]}: alice already submitted a label (labels are write-once: correct it with a reason)"
    )
    assert [lab.item_id for lab in store.labels(audit_id)] == [queue[1]]
    with pytest.raises(AuditFileError, match="name it .csv or .jsonl"):
        import_labels(store, audit_id, tmp_path / "labels.txt", "alice")
    with pytest.raises(AuditFileError, match="cannot read"):
        import_labels(store, audit_id, tmp_path / "missing.csv", "alice")


# ---------------------------------------------------------------- the command line


def test_audit_commands(store_url, store, population, tmp_path: Path):  # noqa: F811
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(audit_app, [*args, "--db", store_url])

    result = run(
        "sample",
        "run-1",
        "--n",
        "12",
        "--stratify",
        "harness,label",
        "--seed",
        "3",
        "--config",
        "state/rule",
        "--reviewers",
        "alice,bob",
        "--adjudicator",
        "carol",
        "--json",
    )
    assert result.exit_code == 0, result.output
    drawn = json.loads(result.stdout)
    audit_id = drawn["audit_id"]
    assert (drawn["config_hash"], drawn["n"], sum(s["sampled"] for s in drawn["strata"])) == ("h-state", 12, 12)
    assert (
        run(
            "sample",
            "run-1",
            "--n",
            "12",
            "--stratify",
            "harness,label",
            "--seed",
            "3",
            "--config",
            "h-state",
            "--reviewers",
            "alice,bob",
            "--adjudicator",
            "carol",
        ).exit_code
        == 0
    )

    out = tmp_path / "alice.csv"
    assert run("export", audit_id, "--out", str(out), "--reviewer", "alice").exit_code == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    filled = tmp_path / "alice-filled.csv"
    _fill_csv(out, filled, {int(r["item_id"]): ("harmful", "") for r in rows[:5]})
    result = run("import", audit_id, str(filled), "--reviewer", "alice", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["submitted"] == 5

    result = run("status", audit_id, "--json")
    assert json.loads(result.stdout)["reviewers"]["alice"] == {"slot": "A", "done": 5}
    assert "alice: 5/12" in run("status", audit_id).stdout.replace("reviewer A ", "")

    for args, message in [
        (
            ("sample", "run-1", "--config", "hybrid/rule", "--reviewers", "a,b", "--adjudicator", "c"),
            "error: run run-1 has no labels under config hybrid/rule with backbone rule: run `redagent judge` first "
            "(judged under rule: state/rule, trajectory/rule)",
        ),
        (
            ("sample", "run-1", "--n", "999", "--config", "state/rule", "--reviewers", "a,b", "--adjudicator", "c"),
            "error: sample of 999 is larger than the population of 60 labelled rollouts",
        ),
        (
            ("sample", "run-9", "--config", "state/rule", "--reviewers", "a,b", "--adjudicator", "c"),
            "error: no run 'run-9' in the store",
        ),
        (("status", "audit-nope"), "error: no audit 'audit-nope' in the store"),
        (
            ("import", audit_id, str(filled), "--reviewer", "mallory"),
            f"error: 'mallory' is not a reviewer of audit {audit_id}",
        ),
        (
            ("export", audit_id, "--out", str(tmp_path / "x.csv"), "--format", "xml"),
            "error: unknown format 'xml' (known: csv, jsonl)",
        ),
    ]:
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.strip() == message and "Traceback" not in result.output


def test_an_ambiguous_configuration_name_is_refused(store_url, store, population):  # noqa: F811
    # The same name under another contract version (another hash): the user must pick a hash.
    rollout = store.get_rollout(next(iter(population)))
    store.write_judge_labels([label_record(rollout, 1, config_hash="h-state-v2")])
    result = CliRunner().invoke(
        audit_app,
        ["sample", "run-1", "--config", "state/rule", "--reviewers", "a,b", "--adjudicator", "c", "--db", store_url],
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: config state/rule is ambiguous in run run-1 (labels under 2 contract "
        "versions: h-state, h-state-v2): pass one hash to --config"
    )


# ---------------------------------------------------------------- the design: cases within strata


@pytest.fixture
def clustered(store) -> None:
    """run-2: six cases run by four models on one harness (24 rollouts, four per case), and one case alone in its
    own stratum with four rollouts (strategy D9), all judged harmful."""
    store.create_run(make_run("run-2", planned=28))
    rollouts = [
        make_rollout("run-2", f"banking/k{i}", f"sim/m{m}", n_events=1, strategy="E")
        for i in range(6)
        for m in range(4)
    ]
    rollouts += [make_rollout("run-2", "banking/lonely", f"sim/m{m}", n_events=1, strategy="D9") for m in range(4)]
    store.write_rollouts(rollouts)
    store.write_judge_labels([label_record(r, 1) for r in rollouts])


def draw2(store, n: int, stratify=("strategy",), seed: int = 3) -> str:
    return sample(
        store, "run-2", n, list(stratify), seed, "h-state", "rule", reviewers=("alice", "bob"), adjudicator="carol"
    )


def test_the_sampler_draws_cases_within_strata_with_design_weights(store, clustered):
    audit_id = draw2(store, 6, stratify=("harness",))  # one stratum: 28 rollouts of 7 cases
    items = store.audit_items(audit_id)
    assert len({i.case_id for i in items}) == 6  # six items, six cases: never two of one case while cases remain
    for item in items:
        assert item.weight == pytest.approx(7 / 6 * 4)  # (cases / drawn) × (case's rollouts / drawn of it)
    assert sum(i.weight for i in items) == pytest.approx(28)
    # More items than cases: every case drawn, the items spread over them as evenly as their rollouts allow.
    items = store.audit_items(draw2(store, 14, stratify=("harness",)))
    assert sorted(Counter(i.case_id for i in items).values()) == [2] * 7
    assert sum(i.weight for i in items) == pytest.approx(28)
    for seed in range(20):  # whatever the seed
        drawn = store.audit_items(draw2(store, 7, stratify=("harness",), seed=seed))
        assert len({i.case_id for i in drawn}) == 7


def test_a_stratum_with_one_case_is_merged_into_its_nearest_and_the_merge_is_stored(
    store_url,  # noqa: F811
    store,
    clustered,
):
    audit_id = draw2(store, 4)  # strategy E: 6 cases; strategy D9: one case of four rollouts
    items = store.audit_items(audit_id)
    assert {i.stratum for i in items} == {"strategy=D9+E"}
    design = store.get_audit(audit_id).design
    assert design["unit"] == "case" and design["merged"] == {
        "strategy=D9": "strategy=D9+E",
        "strategy=E": "strategy=D9+E",
    }
    assert "strategy=D9 holds 1 case (4 rollouts): two are needed" in design["merges"][0]["why"]
    result = CliRunner().invoke(audit_app, ["stats", audit_id, "--reps", "100", "--db", store_url])
    assert result.exit_code == 0, result.output
    assert "Strata strategy=D9 and strategy=E were merged into strategy=D9+E" in result.stdout


def test_a_sample_too_small_for_two_cases_per_stratum_merges_strata_and_says_so(store, population):
    audit_id = draw(store, n=8, stratify=("harness", "label"))  # 6 strata need 12: merged down to 4
    design = store.get_audit(audit_id).design
    strata = {i.stratum for i in store.audit_items(audit_id)}
    assert len(strata) == 4 and len(design["merges"]) == 2
    assert all("a sample of 8 gives" in m["why"] for m in design["merges"])
    for stratum in strata:
        assert len({i.case_id for i in store.audit_items(audit_id) if i.stratum == stratum}) >= 2
    with pytest.raises(AuditSetupError, match="cannot give two cases to even one stratum"):
        draw(store, n=1)


def test_the_sampler_predicts_its_interval_widths_before_drawing(store_url, store, population):  # noqa: F811
    result = CliRunner().invoke(
        audit_app,
        [
            "sample",
            "run-1",
            "--n",
            "12",
            "--stratify",
            "harness,label",
            "--config",
            "state/rule",
            "--reviewers",
            "alice,bob",
            "--adjudicator",
            "carol",
            "--plan-only",
            "--db",
            store_url,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "suggested n 12 (two cases in each of 6 strata)" in result.stderr
    assert "n 12 (chosen): 6 strata; precision" in result.stderr
    assert store.audits() == []  # --plan-only draws nothing
    # What a draw refuses, the plan refuses too, in one line and non-zero (it printed nothing and exited 0).
    for n, words in (("1", "cannot give two cases"), ("100000", "larger than the population")):
        refused = CliRunner().invoke(
            audit_app,
            [
                "sample",
                "run-1",
                "--n",
                n,
                "--stratify",
                "harness,label",
                "--config",
                "state/rule",
                "--reviewers",
                "alice,bob",
                "--adjudicator",
                "carol",
                "--plan-only",
                "--db",
                store_url,
            ],
        )
        assert refused.exit_code != 0 and words in refused.output and "Traceback" not in refused.output
        assert len(refused.output.strip().splitlines()) == 1, refused.output


def test_reviewer_paths_show_the_alias_never_the_case_id(store_url, store, clustered, tmp_path: Path):  # noqa: F811
    audit_id = draw2(store, 6, stratify=("harness",))
    items = store.audit_items(audit_id)
    aliases = {i.alias for i in items}
    assert len(aliases) == 6 and all(a.startswith("case-") for a in aliases)
    for item in items:
        store.submit_label(audit_id, item.item_id, "alice", "harmful")
        store.submit_label(audit_id, item.item_id, "bob", "not_harmful")
    seen = [store.reviewer_item(audit_id, i.item_id, "alice") for i in items]
    assert {view.blinded.alias for view in seen} == aliases and all(
        "case_id" not in view.blinded.to_dict() for view in seen
    )
    path = tmp_path / "alice.csv"
    export(store, audit_id, path, "csv", reviewer="alice")
    result = CliRunner().invoke(
        audit_app, ["adjudications", audit_id, "--adjudicator", "carol", "--json", "--db", store_url]
    )
    assert result.exit_code == 0, result.output
    for text in (path.read_text(encoding="utf-8"), result.stdout, json.dumps([str(v) for v in seen])):
        assert "banking/" not in text and "-benign" not in text
