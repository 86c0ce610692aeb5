"""Writing rollouts: exact round trips, idempotent batches, blob dedup, and all-or-nothing transactions."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from redagent.store import InvalidRecord, UnknownRun, WriteRejected
from redagent.store import tables as t
from redagent.store.errors import mask_url
from redagent.store.rows import canonical_json, sha256_hex
from tests.store.factory import T0, baseline_state, make_rollout, make_run


def row_counts(store) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {
            table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (t.rollout, t.event, t.receipt, t.blob, t.snapshot, t.diff_entry)
        }


def test_run_round_trip_and_update(store):
    run = make_run(manifest_hash="sha256:manifest", protocol={"models": ["sim/x"], "cue_text": {"eval": "Ünï ✓"}})
    store.create_run(run)
    assert store.get_run("run-1") == run
    assert store.get_run("nope") is None
    started = datetime(2026, 3, 1, 11, 0, tzinfo=timezone(timedelta(hours=2)))  # 09:00 UTC
    store.update_run("run-1", status="running", started_at=started)
    back = store.get_run("run-1")
    assert back.status == "running"
    assert back.started_at == started and back.started_at.utcoffset() == timedelta(0)
    with pytest.raises(UnknownRun):
        store.update_run("nope", status="finished")
    with pytest.raises(InvalidRecord):
        store.update_run("run-1", status="exploded")


def test_rollout_round_trip_is_exact(store):
    store.create_run(make_run())
    rollout = make_rollout()
    assert store.write_rollouts([rollout]) == 1
    back = store.get_rollout(rollout.id)
    assert back == rollout
    assert back.started_at.tzinfo is not None and back.started_at.utcoffset() == timedelta(0)
    assert [e["idx"] for e in back.events] == list(range(12))
    assert back.events[1]["tool_call"]["args"]["memo"] == "Rechnung Nr. 7 — ünïcødé 💸"
    assert back.receipts[1]["via"] == "run_command" and back.receipts[1]["error"] == "network is not available"
    assert store.get_rollout("nope") is None


def test_rewriting_a_batch_inserts_nothing_and_duplicates_nothing(store):
    store.create_run(make_run())
    batch = [make_rollout(case_id=f"banking/c{i}") for i in range(5)]
    assert store.write_rollouts(batch) == 5
    before = row_counts(store)
    assert store.write_rollouts(batch) == 0
    # A batch mixing stored and new rollouts writes only the new ones, children included.
    assert store.write_rollouts([*batch, make_rollout(case_id="banking/new")]) == 1
    after = row_counts(store)
    assert after["rollout"] == before["rollout"] + 1
    assert after["event"] == before["event"] + 12
    assert after["receipt"] == before["receipt"] + 2
    assert store.completed_ids("run-1") == {r.id for r in batch} | {make_rollout(case_id="banking/new").id}


def test_a_rollout_repeated_within_a_batch_is_written_once(store):
    store.create_run(make_run())
    rollout = make_rollout()
    assert store.write_rollouts([rollout, rollout]) == 1
    assert row_counts(store)["event"] == 12


def test_identical_snapshots_are_stored_once(store):
    store.create_run(make_run())
    shared = baseline_state("banking/e4")
    a = make_rollout(model="sim/complies", baseline=shared)
    b = make_rollout(model="sim/ignores", baseline=shared)
    # Same content, different key order: still one blob (canonical JSON sorts keys).
    c = make_rollout(model="sim/third", baseline=dict(reversed(list(shared.items()))))
    assert store.write_rollouts([a, b]) == 2
    assert store.write_rollouts([c]) == 1
    counts = row_counts(store)
    assert counts["snapshot"] == 6
    # One baseline blob; the finals are equal too (same transfer on the same baseline).
    assert counts["blob"] == 2
    with store.engine.connect() as conn:
        shas = set(conn.execute(select(t.snapshot.c.blob_sha).where(t.snapshot.c.kind == "baseline")).scalars())
    assert shas == {sha256_hex(canonical_json(shared))}
    assert store.get_rollout(c.id).baseline == shared


def test_a_failing_batch_writes_nothing(store):
    store.create_run(make_run())
    good = [make_rollout(case_id=f"banking/c{i}") for i in range(3)]
    bad = make_rollout(case_id="banking/bad")
    bad.events[5] = {**bad.events[5], "idx": 4}  # two events with idx 4
    with pytest.raises(WriteRejected) as caught:
        store.write_rollouts([*good, bad])
    message = str(caught.value)
    assert message.startswith(f"cannot write to store {mask_url(store.url)}: ")
    assert "\n" not in message
    assert row_counts(store) == {"rollout": 0, "event": 0, "receipt": 0, "blob": 0, "snapshot": 0, "diff_entry": 0}
    assert store.write_rollouts(good) == 3


def test_a_rollout_of_an_unknown_run_is_rejected(store):
    with pytest.raises(WriteRejected):
        store.write_rollouts([make_rollout(run_id="missing")])
    assert row_counts(store)["rollout"] == 0


def test_a_baseline_rollout_may_come_later_in_the_same_batch(store):
    store.create_run(make_run())
    baseline = make_rollout(cue="no-attack")
    attacked = make_rollout(baseline_rollout_id=baseline.id)
    # Sorted by id on insert, so whichever comes first, the deferred foreign key is checked at commit.
    assert store.write_rollouts([attacked, baseline]) == 2
    assert store.get_rollout(attacked.id).baseline_rollout_id == baseline.id
    with pytest.raises(WriteRejected):
        store.write_rollouts([make_rollout(case_id="banking/other", baseline_rollout_id="ro-nowhere")])


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"valid": False, "invalid_reason": None}, "an invalid rollout needs an invalid_reason"),
        ({"E": None}, "a valid rollout needs an execution outcome E"),
        ({"surfaces": ["banking,email"]}, "surface names must be non-empty and free of commas"),
        ({"started_at": datetime(2026, 3, 1, 9, 30)}, "started_at is a naive datetime"),
        ({"events": [{"role": "user", "text": "no idx"}]}, "lacks the key 'idx'"),
        ({"evidence": {"ids": {1, 2}}}, "evidence is not JSON-serialisable"),
        (
            {"diff": [{"path": "x", "op": "changed", "before": 2**70, "after": 0}]},
            "a diff entry is not JSON-serialisable",
        ),
        ({"baseline": {1: "int key"}}, "baseline snapshot is not JSON-serialisable"),
    ],
)
def test_records_that_break_an_invariant_are_refused_before_any_sql(store, change, problem):
    store.create_run(make_run())
    broken = dataclasses.replace(make_rollout(), **change)
    with pytest.raises(InvalidRecord, match=problem):
        store.write_rollouts([make_rollout(case_id="banking/fine"), broken])
    assert row_counts(store)["rollout"] == 0


def test_nul_characters_in_text_are_stored_the_same_on_both_databases(store):
    store.create_run(make_run())
    rollout = make_rollout(final_text="binary\x00output")
    rollout.events[2]["observation"] = "\x00\x01 raw bytes"
    rollout.evidence = {"raw": "a\x00b"}  # JSON escapes NUL: kept exactly
    store.write_rollouts([rollout])
    back = store.get_rollout(rollout.id)
    assert back.final_text == "binary\ufffdoutput"
    assert back.events[2]["observation"] == "\ufffd\x01 raw bytes"
    assert back.evidence == {"raw": "a\x00b"}


def test_json_numbers_keep_their_type_and_precision(store):
    store.create_run(make_run())
    values = {"float": 10.0, "big": 2**62 + 1, "neg": -0.5, "list": [1, 1.0, "1"], "none": None, "bool": True}
    rollout = make_rollout(evidence=values, diff=[{"path": "x", "op": "changed", "before": 10.0, "after": 2**62}])
    store.write_rollouts([rollout])
    back = store.get_rollout(rollout.id)
    assert back.evidence == values
    assert type(back.evidence["float"]) is float and type(back.evidence["list"][1]) is float
    assert type(back.diff[0]["before"]) is float and back.diff[0]["after"] == 2**62


JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(evidence=st.dictionaries(st.text(), JSON_VALUES, max_size=5), snapshot=st.dictionaries(st.text(), JSON_VALUES))
def test_any_json_round_trips(store, evidence, snapshot):
    if store.get_run("run-1") is None:
        store.create_run(make_run())
    key = sha256_hex(canonical_json([evidence, snapshot]))
    rollout = make_rollout(case_id=f"prop/{key}", evidence=evidence, baseline=snapshot, final=snapshot, started_at=T0)
    store.write_rollouts([rollout])
    back = store.get_rollout(rollout.id)
    assert back.evidence == evidence
    assert back.baseline == snapshot and back.final == snapshot
