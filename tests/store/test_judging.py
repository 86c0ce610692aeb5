"""Judging tables: migration 0002, judge labels keyed (and cached) per configuration, failed-label retries,
recognition labels, and the per-rollout rows the statistics layer reads."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import func, inspect, select, text

from redagent.store import InvalidRecord, open_store
from redagent.store import judging as store_judging
from redagent.store import tables_judging as tj
from redagent.store.connect import WRITE, create_store_engine
from redagent.store.db import Store
from redagent.store.migrate import alembic_config, current_revisions, head_revision
from redagent.store.records import JudgeLabelRecord, OutcomeRow, RecognitionLabelRecord
from redagent.store.tables import metadata
from tests.store.factory import T0, make_rollout, make_run, write_as_of

OLD_TABLES = {"run", "rollout", "event", "receipt", "blob", "snapshot", "diff_entry"}
# Everything migrations after 0001 add (judging and audit in 0002, case reviews in 0003, the team in 0005, run
# shards in 0007, audits' closes and re-opens in 0012).
NEW_TABLES = {
    "judge_label",
    "recognition_label",
    "audit",
    "audit_item",
    "audit_assignment",
    "audit_label",
    "adjudication",
    "review_round",
    "round_case",
    "case_review",
    "team_member",
    "run_shard",
    "audit_closure",
    "evidence_link",
    "evidence_correction",
}


def judge_label(
    rollout, *, config_hash: str = "h-state", backbone: str = "rule", label: int | None = 1, status: str = "ok", **extra
) -> JudgeLabelRecord:
    fields = dict(
        rollout_id=rollout.id,
        run_id=rollout.run_id,
        config_name="state/rule",
        config_hash=config_hash,
        view="state",
        contract_hash="sha256:contract",
        gate="agent-effects",
        backbone=backbone,
        label=label,
        status=status,
        rationale="the transfer receipt r1 shows the payment — ✓",
        evidence=["r1", "d0"],
        prompt_tokens=120,
        completion_tokens=30,
        cost_usd=0.0004,
        created_at=T0 + timedelta(hours=1),
    )
    fields.update(extra)
    return JudgeLabelRecord(**fields)


def recognition(rollout, **extra) -> RecognitionLabelRecord:
    fields = dict(
        rollout_id=rollout.id,
        run_id=rollout.run_id,
        judge="lexical",
        contract_hash="sha256:cues",
        anchor_idx=1,
        resolved=True,
        broad=1,
        strict=0,
        status="ok",
        rationale="cue before e1",
        evidence=["e0"],
        created_at=T0 + timedelta(hours=2),
    )
    fields.update(extra)
    return RecognitionLabelRecord(**fields)


@pytest.fixture
def rollouts(store):
    """Six valid rollouts (E alternating) and two invalid ones of run-1; one rollout of run-2."""
    store.create_run(make_run("run-1", planned=8))
    store.create_run(make_run("run-2", planned=1))
    valid = [
        make_rollout(
            "run-1",
            f"banking/c{i}",
            "sim/m1" if i < 3 else "sim/m2",
            harness="native" if i % 2 else "react",
            E=i % 2,
            n_events=3,
            surfaces=["email", "banking"] if i == 0 else ["banking"],
        )
        for i in range(6)
    ]
    invalid = [
        make_rollout("run-1", f"banking/x{i}", "sim/m1", valid=False, invalid_reason="timeout", n_events=1)
        for i in range(2)
    ]
    store.write_rollouts(valid + invalid + [make_rollout("run-2", "banking/c0", n_events=1)])
    return valid, invalid


def count(store, table) -> int:
    with store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


# ---------------------------------------------------------------- migration


def test_migration_0002_applies_on_top_of_0001_and_keeps_the_data(store_url):
    engine = create_store_engine(store_url)
    with engine.connect() as conn:
        conn = conn.execution_options(**{WRITE: True})
        with conn.begin():
            command.upgrade(alembic_config(conn), "0001")
    old = Store(store_url, engine)  # a store as the previous release left it
    old.create_run(make_run("run-1"))
    rollout = make_rollout("run-1", n_events=2)
    write_as_of(engine, [rollout])
    with engine.connect() as conn:
        assert current_revisions(conn) == ("0001",)
        assert set(inspect(conn).get_table_names()) == OLD_TABLES | {"alembic_version"}
    old.close()

    store = open_store(store_url)
    try:
        with store.engine.connect() as conn:
            assert current_revisions(conn) == (head_revision(),)
            assert set(inspect(conn).get_table_names()) == OLD_TABLES | NEW_TABLES | {"alembic_version"}
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, metadata) == []
        assert store.get_rollout(rollout.id) == rollout
        assert store.write_judge_labels([judge_label(rollout)]) == 1
    finally:
        store.close()


def test_a_fresh_database_gets_the_judging_schema_with_its_keys(store):
    with store.engine.connect() as conn:
        inspector = inspect(conn)
        assert set(inspector.get_table_names()) == OLD_TABLES | NEW_TABLES | {"alembic_version"}
        assert compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata) == []
        uniques = {
            table: {u["name"]: u["column_names"] for u in inspector.get_unique_constraints(table)}
            for table in ("judge_label", "recognition_label", "audit_item", "audit_label", "adjudication")
        }
        assert uniques["judge_label"] == {"uq_judge_label_rollout_config": ["rollout_id", "config_hash", "backbone"]}
        assert uniques["recognition_label"] == {
            "uq_recognition_label_rollout_judge": ["rollout_id", "judge", "contract_hash"]
        }
        assert uniques["audit_item"] == {"uq_audit_item_audit_rollout": ["audit_id", "rollout_id"]}
        assert uniques["audit_label"] == {"uq_audit_label_item_reviewer_version": ["item_id", "reviewer", "version"]}
        assert uniques["adjudication"] == {"uq_adjudication_item_version": ["item_id", "version"]}
        assert inspector.get_pk_constraint("audit_assignment")["constrained_columns"] == ["item_id", "reviewer"]
        indexes = {i["name"]: i["column_names"] for i in inspector.get_indexes("judge_label")}
        assert indexes["ix_judge_label_run_config"] == ["run_id", "config_hash", "backbone"]
        fks = {
            fk["name"]: (fk["constrained_columns"], fk["referred_table"])
            for fk in inspector.get_foreign_keys("audit_label")
        }
        assert fks == {"fk_audit_label_item_id_audit_assignment": (["item_id", "reviewer"], "audit_assignment")}


def test_downgrade_to_0001_drops_only_the_judging_tables(store):
    store.create_run(make_run("run-1"))
    with store.engine.connect() as conn:
        conn = conn.execution_options(**{WRITE: True})
        with conn.begin():
            command.downgrade(alembic_config(conn), "0001")
    with store.engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) == OLD_TABLES | {"alembic_version"}
        # Read as the 0001 schema has it (this code's Store reads columns later revisions added).
        assert conn.execute(text("SELECT id FROM run")).scalars().all() == ["run-1"]


# ---------------------------------------------------------------- judge labels


def test_judge_labels_round_trip_and_never_mix_across_configurations(store, rollouts):
    valid, _ = rollouts
    labels = [judge_label(r, label=r.E) for r in valid]
    assert store.write_judge_labels(labels) == 6
    assert store.write_judge_labels(labels) == 0  # insert-if-absent on (rollout, config hash, backbone)
    other_config = [
        judge_label(r, config_hash="h-trajectory", config_name="trajectory/rule", view="trajectory", label=1)
        for r in valid
    ]
    other_backbone = [judge_label(r, backbone="openai/gpt-x", label=0, rationale="llm says no") for r in valid]
    assert store.write_judge_labels(other_config + other_backbone) == 12
    assert store.judge_labels("run-1", "h-state", "rule") == sorted(labels, key=lambda r: r.rollout_id)
    assert {r.label for r in store.judge_labels("run-1", "h-trajectory", "rule")} == {1}
    assert {r.label for r in store.judge_labels("run-1", "h-state", "openai/gpt-x")} == {0}
    assert store.judge_labels("run-2", "h-state", "rule") == []
    assert count(store, tj.judge_label) == 18


def test_a_repeated_key_in_one_batch_keeps_the_first(store, rollouts):
    valid, _ = rollouts
    assert store.write_judge_labels([judge_label(valid[0], label=1), judge_label(valid[0], label=0)]) == 1
    assert [r.label for r in store.judge_labels("run-1", "h-state", "rule")] == [1]


def test_a_failed_label_is_retried_but_an_ok_label_is_final(store, rollouts):
    first = rollouts[0][0]
    failed = judge_label(first, label=None, status="failed", rationale="judge failure: timeout")
    assert store.write_judge_labels([failed]) == 1
    assert store.cached_judge_labels([first.id], "h-state", "rule") == {}  # not cached: the judge retries it
    assert store.cached_judge_labels([first.id], "h-state", "rule", include_failed=True)[first.id].status == "failed"
    ok = judge_label(first, label=0)
    assert store.write_judge_labels([ok]) == 1  # the retry replaces the failure
    assert store.write_judge_labels([failed]) == 0
    assert store.write_judge_labels([judge_label(first, label=1)]) == 0
    assert store.judge_labels("run-1", "h-state", "rule") == [ok]
    assert count(store, tj.judge_label) == 1


def test_cached_judge_labels_is_the_cache_lookup(store, rollouts, monkeypatch):
    valid, _ = rollouts
    store.write_judge_labels([judge_label(r, label=r.E) for r in valid[:4]])
    monkeypatch.setattr(store_judging, "IN_CHUNK", 3)  # several IN (...) rounds
    cached = store.cached_judge_labels([r.id for r in valid] + ["ro-unknown", valid[0].id], "h-state", "rule")
    assert sorted(cached) == sorted(r.id for r in valid[:4])
    assert all(cached[r.id].label == r.E for r in valid[:4])
    assert store.cached_judge_labels([r.id for r in valid], "h-state", "openai/gpt-x") == {}
    assert store.cached_judge_labels([], "h-state", "rule") == {}


def test_judged_configs_counts_ok_and_failed_labels(store, rollouts):
    valid, _ = rollouts
    store.write_judge_labels(
        [judge_label(r, label=r.E) for r in valid[:5]]
        + [judge_label(valid[5], label=None, status="failed")]
        + [judge_label(r, backbone="openai/gpt-x", config_name="state/llm", config_hash="h-llm") for r in valid[:2]]
    )
    assert store.judged_configs("run-1") == [
        {
            "config_name": "state/llm",
            "config_hash": "h-llm",
            "view": "state",
            "contract_hash": "sha256:contract",
            "gate": "agent-effects",
            "backbone": "openai/gpt-x",
            "labels": 2,
            "failed": 0,
        },
        {
            "config_name": "state/rule",
            "config_hash": "h-state",
            "view": "state",
            "contract_hash": "sha256:contract",
            "gate": "agent-effects",
            "backbone": "rule",
            "labels": 5,
            "failed": 1,
        },
    ]
    assert store.judged_configs("run-2") == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"label": None}, "an ok label needs a 0/1 label"),
        ({"status": "failed"}, "an ok label needs a 0/1 label and a failed one none"),
        ({"label": 2}, "label must be 0, 1 or None"),
        ({"status": "maybe"}, "unknown status 'maybe'"),
        ({"view": "vibes"}, "unknown view 'vibes'"),
        ({"config_hash": ""}, "config_hash is empty"),
        ({"rollout_id": "ro-nope"}, "no such rollout in the store"),
        ({"run_id": "run-2"}, "run_id 'run-2' is not the rollout's run 'run-1'"),
        ({"evidence": [object()]}, "evidence is not JSON-serialisable"),
    ],
)
def test_an_invalid_label_refuses_the_whole_batch(store, rollouts, change, message):
    valid, _ = rollouts
    batch = [judge_label(valid[0]), judge_label(valid[1], **change)]
    with pytest.raises(InvalidRecord, match=message):
        store.write_judge_labels(batch)
    assert count(store, tj.judge_label) == 0


def test_boolean_labels_from_a_model_are_stored_as_integers(store, rollouts):
    first = rollouts[0][0]
    store.write_judge_labels([judge_label(first, label=True)])
    assert store.judge_labels("run-1", "h-state", "rule")[0].label == 1


# ---------------------------------------------------------------- recognition labels


def test_recognition_labels_round_trip_uniqueness_and_retry(store, rollouts):
    valid, _ = rollouts
    harmful = [r for r in valid if r.E == 1]
    records = [
        recognition(harmful[0]),
        recognition(harmful[1], broad=1, strict=1),
        recognition(
            harmful[2],
            resolved=False,
            anchor_idx=None,
            broad=None,
            strict=None,
            rationale="the action anchor is unresolved",
        ),
    ]
    assert store.write_recognition_labels(records) == 3
    assert store.write_recognition_labels(records) == 0
    assert store.recognition_labels("run-1", "lexical", "sha256:cues") == sorted(records, key=lambda r: r.rollout_id)
    assert store.recognition_labels("run-1", "openai/gpt-x", "sha256:cues") == []
    failed = recognition(harmful[0], judge="openai/gpt-x", broad=None, strict=None, status="failed")
    assert store.write_recognition_labels([failed]) == 1
    assert store.write_recognition_labels([dataclasses.replace(failed, broad=0, strict=0, status="ok")]) == 1
    assert [r.status for r in store.recognition_labels("run-1", "openai/gpt-x", "sha256:cues")] == ["ok"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"broad": 0, "strict": 1}, "strict recognition is nested in broad"),
        ({"resolved": True, "anchor_idx": None}, "a resolved anchor needs anchor_idx"),
        ({"resolved": False}, "an unresolved one none"),
        ({"status": "failed"}, "a failed label carries no broad/strict values"),
        ({"broad": 3}, "broad must be 0, 1 or None"),
        ({"rollout_id": "ro-nope"}, "no such rollout in the store"),
    ],
)
def test_invalid_recognition_labels_are_refused(store, rollouts, change, message):
    with pytest.raises(InvalidRecord, match=message):
        store.write_recognition_labels([recognition(rollouts[0][1]), recognition(rollouts[0][3], **change)])
    assert count(store, tj.recognition_label) == 0


# ---------------------------------------------------------------- rows for statistics and sampling


def test_outcome_rows_are_the_valid_rollouts_with_their_cell_and_taxonomy(store, rollouts):
    valid, _ = rollouts
    rows = store.outcome_rows("run-1")
    assert [row.rollout_id for row in rows] == [r.id for r in sorted(valid, key=lambda r: r.case_id)]
    first = rows[0]
    assert first == OutcomeRow(
        rollout_id=valid[0].id,
        case_id="banking/c0",
        model="sim/m1",
        harness="react",
        cue="none",
        defense="none",
        attempt=0,
        strategy="E",
        vulnerability="4",
        constraint="payee-allowlist",
        channel="email",
        surface="email",
        E=0,
        U=None,
        benign=False,
    )
    assert [row.surface for row in rows[1:]] == ["banking"] * 5
    assert store.outcome_rows("nope") == []


def test_outcome_rows_page_through_large_runs(store, rollouts, monkeypatch):
    whole = store.outcome_rows("run-1")
    monkeypatch.setattr(store_judging, "ROWS_PAGE", 2)
    assert store.outcome_rows("run-1") == whole
    monkeypatch.setattr(store_judging, "ROWS_PAGE", 3)  # a page boundary exactly at the end
    assert store.outcome_rows("run-1") == whole


def test_labelled_rows_join_only_ok_labels_of_the_configuration(store, rollouts, monkeypatch):
    valid, invalid = rollouts
    store.write_judge_labels(
        [judge_label(r, label=1 - r.E) for r in valid[:4]]
        + [judge_label(valid[4], label=None, status="failed")]
        + [judge_label(valid[5], backbone="openai/gpt-x")]
        + [judge_label(invalid[0])]
    )
    monkeypatch.setattr(store_judging, "ROWS_PAGE", 3)
    rows = store.labelled_rows("run-1", "h-state", "rule")
    assert [row.rollout_id for row in rows] == [r.id for r in valid[:4]]
    assert all(row.label == 1 - row.E for row in rows)
    # A labelled row is its outcome row plus the label.
    outcome = {row.rollout_id: row for row in store.outcome_rows("run-1")}
    assert all(
        OutcomeRow(**{f.name: getattr(row, f.name) for f in dataclasses.fields(OutcomeRow)}) == outcome[row.rollout_id]
        for row in rows
    )
