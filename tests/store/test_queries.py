"""Queries: counts, execution ASR over valid rollouts, streamed export, replay summaries, run listing."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from redagent.store import RolloutSummary, UnknownRun
from redagent.store import db as store_db
from redagent.store.records import CellAsr, RunCounts, RunListing
from tests.store.factory import T0, make_rollout, make_run

# (case, model, harness, cue, defense, attempt, E, invalid_reason) for run-A; hand-computed below.
ROWS = [
    ("banking/a", "sim/m1", "native", "none", "none", 0, 1, None),
    ("banking/b", "sim/m1", "native", "none", "none", 0, 0, None),
    ("banking/c", "sim/m1", "native", "none", "none", 0, None, "timeout"),
    ("banking/d", "sim/m1", "native", "none", "none", 0, 1, None),
    ("banking/a", "sim/m1", "native", "eval", "none", 0, 0, None),
    ("banking/b", "sim/m1", "native", "eval", "none", 0, None, "timeout"),
    ("banking/a", "sim/m2", "native", "none", "none", 0, None, "provider_error"),
    ("banking/b", "sim/m2", "native", "none", "none", 0, None, "provider_error"),
    ("banking/a", "sim/m2", "react", "none", "spotlight", 0, 1, None),
    ("banking/a", "sim/m2", "react", "none", "spotlight", 1, 1, None),
    ("banking/e", "sim/m1", "native", "none", "none", 0, None, None),  # valid, the verifier could not decide
]


def _rollouts(run_id: str = "run-A"):
    return [
        make_rollout(
            run_id,
            case,
            model,
            harness=harness,
            cue=cue,
            defense=defense,
            attempt=attempt,
            E=E,
            valid=reason is None,
            invalid_reason=reason,
        )
        for case, model, harness, cue, defense, attempt, E, reason in ROWS
    ]


@pytest.fixture
def filled(store):
    store.create_run(make_run("run-A", planned=12))
    store.create_run(make_run("run-B", planned=3, created_at=T0 + timedelta(hours=1)))
    rollouts = _rollouts()
    random.Random(7).shuffle(rollouts)
    store.write_rollouts(rollouts[:4])
    store.write_rollouts(rollouts[4:])
    # Another run's rollouts must never leak into run-A's numbers.
    store.write_rollouts([make_rollout("run-B", "banking/a", "sim/m1", E=1)])
    return store


def test_counts(filled):
    assert filled.counts("run-A") == RunCounts(
        planned=12, completed=11, valid=7, invalid=4, invalid_reasons={"provider_error": 2, "timeout": 2}
    )
    assert filled.counts("run-B") == RunCounts(planned=3, completed=1, valid=1, invalid=0, invalid_reasons={})
    with pytest.raises(UnknownRun):
        filled.counts("nope")


def test_execution_asr_counts_valid_rollouts_only(filled):
    assert filled.execution_asr("run-A") == [
        CellAsr("sim/m1", "native", "eval", "none", harmful=0, valid=1, rate=0.0, unresolved=0, upper=0.0),
        # The unresolved rollout is valid: it widens the bounds, never counted safe: [2/4, 3/4].
        CellAsr("sim/m1", "native", "none", "none", harmful=2, valid=4, rate=2 / 4, unresolved=1, upper=3 / 4),
        # Every rollout invalid: no rate at all, rather than a misleading 0.
        CellAsr("sim/m2", "native", "none", "none", harmful=0, valid=0, rate=None, unresolved=0, upper=None),
        CellAsr("sim/m2", "react", "none", "spotlight", harmful=2, valid=2, rate=1.0, unresolved=0, upper=1.0),
    ]
    assert filled.execution_asr("nope") == []


@pytest.mark.parametrize("page", [1, 3, 200])
def test_export_streams_every_rollout_in_cell_order(filled, monkeypatch, page):
    monkeypatch.setattr(store_db, "EXPORT_PAGE", page)
    exported = list(filled.iter_export("run-A"))
    keys = [(x["case_id"], x["model"], x["harness"], x["cue"], x["defense"], x["attempt"]) for x in exported]
    assert keys == sorted(row[:6] for row in ROWS)
    expected = {r.id: r for r in _rollouts()}
    for item in exported:
        record = expected[item["rollout_id"]]
        assert item["E"] == record.E and item["valid"] == record.valid
        assert item["invalid_reason"] == record.invalid_reason
        assert item["expected_E"] == record.expected_E and item["evidence"] == record.evidence
        assert item["surfaces"] == ["banking", "email"] and item["case_hash"] == record.case_hash
        assert item["events"] == record.events and [e["idx"] for e in item["events"]] == list(range(12))
        assert item["receipts"] == record.receipts and [r["seq"] for r in item["receipts"]] == [1, 2]
        assert item["diff"] == record.diff
        assert item["baseline"] == record.baseline and item["final"] == record.final
        assert item["started_at"] == record.started_at


def test_export_keys(filled):
    first = next(filled.iter_export("run-A"))
    assert list(first) == [
        "rollout_id",
        "run_id",
        "case_id",
        "case_version",
        "case_hash",
        "strategy",
        "vulnerability",
        "constraint",
        "surfaces",
        "channel",
        "model",
        "harness",
        "cue",
        "defense",
        "attempt",
        "valid",
        "invalid_reason",
        "invalid_detail",
        "E",
        "evidence",
        "expected_E",
        "reached",
        "final_text",
        "started_at",
        "finished_at",
        "duration_ms",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "baseline_rollout_id",
        "U",
        "benign",
        "events",
        "receipts",
        "diff",
        "baseline",
        "final",
    ]
    assert list(filled.iter_export("nope")) == []


def test_rollout_summaries_for_replay(filled):
    summaries = filled.rollouts("run-A")
    assert len(summaries) == 11 and all(isinstance(s, RolloutSummary) for s in summaries)
    assert [(s.case_id, s.model, s.cue, s.attempt) for s in summaries] == [
        (c, m, cue, a) for c, m, _h, cue, _d, a, _e, _r in sorted(ROWS)
    ]
    harmful = filled.rollouts("run-A", harmful_only=True)
    assert [(s.case_id, s.model, s.defense, s.attempt, s.E, s.valid) for s in harmful] == [
        ("banking/a", "sim/m1", "none", 0, 1, True),
        ("banking/a", "sim/m2", "spotlight", 0, 1, True),
        ("banking/a", "sim/m2", "spotlight", 1, 1, True),
        ("banking/d", "sim/m1", "none", 0, 1, True),
    ]


def test_list_runs_newest_first_with_progress(filled):
    filled.create_run(make_run("run-C", planned=0, created_at=T0 - timedelta(days=1)))
    assert filled.list_runs() == [
        RunListing(run_id="run-B", status="planned", planned=3, completed=1, created_at=T0 + timedelta(hours=1)),
        RunListing(run_id="run-A", status="planned", planned=12, completed=11, created_at=T0),
        RunListing(run_id="run-C", status="planned", planned=0, completed=0, created_at=T0 - timedelta(days=1)),
    ]


def test_completed_ids_for_resume(filled):
    assert filled.completed_ids("run-A") == {r.id for r in _rollouts()}
    assert filled.completed_ids("nope") == set()
