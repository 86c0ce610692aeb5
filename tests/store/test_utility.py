"""Utility U beside E: stored and read back, counted per cell and arm, and migration 0004 over a 0003 store."""

from __future__ import annotations

import dataclasses

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from redagent.store import InvalidRecord, open_store
from redagent.store.connect import WRITE, create_store_engine
from redagent.store.db import Store
from redagent.store.migrate import alembic_config, current_revisions, head_revision
from redagent.store.records import CellAsr, UtilityCount
from redagent.store.tables import metadata
from tests.store.factory import make_rollout, make_run, write_as_of

# (case, model, harness, attempt, valid, E, U, benign) for run-U; counted by hand in the tests below.
ROWS = [
    ("banking/a", "sim/m1", "native", 0, True, 1, 0, False),
    ("banking/a", "sim/m1", "native", 1, True, 0, 1, False),
    ("banking/b", "sim/m1", "native", 0, True, 0, None, False),  # the case states no utility check
    ("banking/c", "sim/m1", "native", 0, False, None, None, False),  # invalid: neither E nor U
    ("banking/a-benign", "sim/m1", "native", 0, True, 0, 1, True),
    ("banking/a-benign", "sim/m1", "native", 1, True, 0, 1, True),
    ("banking/b-benign", "sim/m1", "native", 0, True, 0, 0, True),
    ("banking/a", "sim/m2", "react", 0, True, 1, None, False),
]


def _rollouts():
    return [
        make_rollout(
            "run-U",
            case,
            model,
            harness=harness,
            attempt=attempt,
            valid=valid,
            E=E,
            U=U,
            benign=benign,
            invalid_reason=None if valid else "timeout",
        )
        for case, model, harness, attempt, valid, E, U, benign in ROWS
    ]


@pytest.fixture
def filled(store):
    store.create_run(make_run("run-U", planned=len(ROWS)))
    store.write_rollouts(_rollouts())
    return store


def test_utility_and_benign_round_trip(filled):
    for record in _rollouts():
        back = filled.get_rollout(record.id)
        assert back == record
        assert (back.U, back.benign) == (record.U, record.benign)
    exported = {item["rollout_id"]: (item["U"], item["benign"]) for item in filled.iter_export("run-U")}
    assert exported == {r.id: (r.U, r.benign) for r in _rollouts()}
    summaries = {s.id: (s.U, s.benign) for s in filled.rollouts("run-U")}
    assert summaries == exported
    page = {row.rollout_id: (row.U, row.benign) for row in filled.rollout_page("run-U")}
    assert page == exported
    outcomes = {row.rollout_id: (row.U, row.benign) for row in filled.outcome_rows("run-U")}
    assert outcomes == {r.id: (r.U, r.benign) for r in _rollouts() if r.valid}


def test_utility_counts_per_cell_and_arm(filled):
    assert filled.utility_counts("run-U") == [
        UtilityCount("sim/m1", "native", "none", "none", benign=False, valid=3, checked=2, done=1),
        UtilityCount("sim/m1", "native", "none", "none", benign=True, valid=3, checked=3, done=2),
        UtilityCount("sim/m2", "react", "none", "none", benign=False, valid=1, checked=0, done=0),
    ]
    assert filled.utility_counts("nope") == []


def test_execution_asr_leaves_benign_rollouts_out(filled):
    assert filled.execution_asr("run-U") == [
        CellAsr("sim/m1", "native", "none", "none", harmful=1, valid=3, rate=1 / 3, unresolved=0, upper=1 / 3),
        CellAsr("sim/m2", "react", "none", "none", harmful=1, valid=1, rate=1.0, unresolved=0, upper=1.0),
    ]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"U": 2}, "utility U must be 0, 1 or None"),
        ({"U": 0.5}, "utility U must be 0, 1 or None"),
        ({"valid": False, "invalid_reason": "timeout", "E": None, "U": 1}, "an invalid rollout has no utility"),
    ],
)
def test_bad_utility_is_refused_before_any_write(store, change, message):
    store.create_run(make_run("run-U"))
    with pytest.raises(InvalidRecord, match=message):
        store.write_rollouts([make_rollout("run-U", "banking/z"), dataclasses.replace(make_rollout("run-U"), **change)])
    assert store.counts("run-U").completed == 0


def test_migration_0004_keeps_old_rollouts_with_utility_null(store_url):
    engine = create_store_engine(store_url)
    with engine.connect() as conn:
        conn = conn.execution_options(**{WRITE: True})
        with conn.begin():
            command.upgrade(alembic_config(conn), "0003")
    old = Store(store_url, engine)  # a store as the release before utility left it
    old.create_run(make_run("run-1"))
    attacked = make_rollout("run-1", "banking/e4", n_events=2)
    benign = make_rollout("run-1", "banking/e4-benign", n_events=2, E=0)
    invalid = make_rollout("run-1", "banking/e5", valid=False, invalid_reason="timeout", n_events=1)
    write_as_of(engine, [attacked, benign, invalid])
    with engine.connect() as conn:
        assert current_revisions(conn) == ("0003",)
        assert "utility" not in {c["name"] for c in inspect(conn).get_columns("rollout")}
    old.close()

    store = open_store(store_url)
    try:
        with store.engine.connect() as conn:
            assert current_revisions(conn) == (head_revision(),)
            assert compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata) == []
            stored = dict(conn.execute(text("SELECT id, utility FROM rollout")).all())
        assert stored == {attacked.id: None, benign.id: None, invalid.id: None}
        assert store.get_rollout(attacked.id) == attacked  # U None, benign False: the record as it was written
        assert store.get_rollout(benign.id) == dataclasses.replace(benign, benign=True)  # backfilled from its id
        assert store.utility_counts("run-1") == [
            UtilityCount("sim/complies", "native", "none", "none", benign=False, valid=1, checked=0, done=0),
            UtilityCount("sim/complies", "native", "none", "none", benign=True, valid=1, checked=0, done=0),
        ]
        # A new rollout on the migrated store carries its U.
        fresh = make_rollout("run-1", "banking/e6", U=1)
        assert store.write_rollouts([fresh]) == 1 and store.get_rollout(fresh.id).U == 1
    finally:
        store.close()
