"""The rollout browser's queries on both databases: keyset pages, filters, capped counts, detail, trajectory windows."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from redagent.store.browse import BrowsedRollout, page_key
from redagent.store.db import open_store
from redagent.store.errors import InvalidRecord
from redagent.store.readmodel import StoredLabel
from redagent.store.records import JudgeLabelRecord, RolloutRecord, RunRecord

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _rollout(run_id: str, n: int, *, model: str, surfaces: list[str], e: int | None, events: int = 3) -> RolloutRecord:
    valid = e is not None
    return RolloutRecord(
        id=f"{run_id}-r{n:03d}",
        run_id=run_id,
        case_id=f"case-{n % 7}",
        case_version=1,
        case_hash="h",
        strategy="E2" if n % 2 else "U1",
        vulnerability="V10",
        constraint="C16" if n % 3 else "C1",
        surfaces=surfaces,
        channel="environment",
        model=model,
        harness="native",
        cue="clean",
        defense="none",
        attempt=n,
        valid=valid,
        invalid_reason=None if valid else "model_error",
        invalid_detail=None,
        E=e,
        evidence={},
        expected_E=e,
        reached=True,
        final_text="done",
        started_at=NOW,
        finished_at=NOW,
        duration_ms=1.0,
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        baseline_rollout_id=None,
        events=[
            {
                "idx": i,
                "role": "assistant" if i % 2 else "user",
                "text": f"step {i}",
                "tool_call": None,
                "original": None,
                "observation": None,
                "receipts": [],
                "tampered": False,
            }
            for i in range(events)
        ],
        receipts=[
            {
                "id": "r1",
                "seq": 1,
                "service": "banking",
                "action": "send_transfer",
                "args": {"amount": 5},
                "outcome": "ok",
                "actor": "agent",
                "step": 1,
                "effect": {"transaction_id": "tx-1"},
                "error": None,
                "via": None,
            }
        ],
        diff=[{"path": "banking.transactions.tx-1", "op": "added", "before": None, "after": {"amount": -5}}],
        baseline={"banking": {}},
        final={"banking": {"transactions": {"tx-1": {"amount": -5}}}},
    )


@pytest.fixture
def store(store_url):
    with open_store(store_url) as s:
        for run_id in ("run-a", "run-b"):
            s.create_run(
                RunRecord(
                    id=run_id,
                    status="finished",
                    protocol={},
                    case_set_hash="x",
                    code_version="t",
                    planned=60,
                    created_at=NOW,
                )
            )
        rollouts = []
        for n in range(60):
            model = "sim/comply" if n % 2 else "sim/ignore"
            surfaces = ["email", "banking"] if n % 4 == 0 else ["workspace"]
            e = None if n % 10 == 9 else n % 2
            rollouts.append(_rollout("run-a", n, model=model, surfaces=surfaces, e=e, events=450 if n == 0 else 3))
        rollouts += [replace(_rollout("run-b", n, model="sim/comply", surfaces=["files"], e=1)) for n in range(5)]
        s.write_rollouts(rollouts)
        s.write_judge_labels(
            [
                JudgeLabelRecord(
                    rollout_id=f"run-a-r{n:03d}",
                    run_id="run-a",
                    config_name="state/rule",
                    config_hash="cfg1",
                    view="state",
                    contract_hash="k",
                    gate="agent-effects",
                    backbone="rule",
                    label=n % 2,
                    status="ok",
                    rationale=f"because {n}",
                    evidence=["r1"],
                )
                for n in range(0, 60, 3)
            ]
        )
        yield s


def _walk(store, run_id, filters, limit):
    seen, after = [], None
    while True:
        page = store.rollout_page(run_id, filters, after, limit)
        seen += page
        if len(page) < limit:
            return seen
        after = page_key(page[-1])


def test_pages_cover_the_run_once_in_key_order(store):
    rows = _walk(store, "run-a", {}, 7)
    assert len(rows) == 60 and len({r.rollout_id for r in rows}) == 60
    keys = [page_key(r) for r in rows]
    assert keys == sorted(keys)
    assert all(isinstance(r, BrowsedRollout) and isinstance(r.surfaces, tuple) and r.surfaces for r in rows)
    everything = _walk(store, None, {}, 25)
    assert len(everything) == 65 and [r.run_id for r in everything][-5:] == ["run-b"] * 5


def test_filters_narrow_and_combine(store):
    assert {r.model for r in _walk(store, "run-a", {"model": "sim/comply"}, 10)} == {"sim/comply"}
    assert store.count_rollouts("run-a", {"model": "sim/comply"}) == 30
    banking = _walk(store, "run-a", {"surface": "bank"}, 100)
    assert len(banking) == 15 and all("banking" in r.surfaces for r in banking)
    assert store.count_rollouts(None, {"surface": "files"}) == 5
    assert store.count_rollouts("run-a", {"strategy": "E2", "constraint": "C16"}) == len(
        [n for n in range(60) if n % 2 and n % 3]
    )
    assert store.count_rollouts("run-a", {"E": "invalid"}) == 6
    assert all(r.E == 1 and r.valid for r in _walk(store, "run-a", {"E": "1"}, 100))
    assert store.count_rollouts("run-a", {"E": "1"}) == 30 - 6  # n odd and not n % 10 == 9
    harmful = {"config_hash": "cfg1", "backbone": "rule", "label": 1}
    assert store.count_rollouts("run-a", {"label": harmful}) == len([n for n in range(0, 60, 3) if n % 2])
    by_name = {"config_name": "state/rule", "backbone": "rule", "label": 0}
    assert store.count_rollouts("run-a", {"label": by_name}) == len([n for n in range(0, 60, 3) if not n % 2])
    assert store.count_rollouts("run-a", {"surface": "%"}) == 0  # LIKE wildcards are literal
    assert store.count_rollouts("run-a", {}, cap=10) == 10  # capped: "10 or more"
    assert store.count_rollouts("run-a", {}, cap=None) == 60


def test_bad_filters_are_typed_errors(store):
    with pytest.raises(InvalidRecord, match="unknown rollout filter"):
        store.rollout_page("run-a", {"colour": "red"}, None, 10)
    with pytest.raises(InvalidRecord, match="E must be"):
        store.count_rollouts("run-a", {"E": "2"})
    with pytest.raises(InvalidRecord, match="label"):
        store.rollout_page("run-a", {"label": {"config_hash": "cfg1", "label": 1}}, None, 10)


def test_detail_labels_only_when_asked_and_windows(store):
    detail = store.rollout_detail("run-a-r003")
    assert detail.case_id == "case-3" and detail.strategy == "E2" and detail.event_count == 3 and detail.complete
    assert detail.receipts[0].id == "r1" and detail.diff[0].path == "banking.transactions.tx-1"
    assert detail.labels == (
        StoredLabel(
            config_name="state/rule",
            config_hash="cfg1",
            view="state",
            backbone="rule",
            label=1,
            status="ok",
            rationale="because 3",
            evidence=("r1",),
        ),
    )
    assert set(detail.labels_by_config()) == {("cfg1", "rule")}
    blinded = store.rollout_detail("run-a-r003", labels=False)
    assert blinded.labels is None and "because 3" not in repr(blinded)
    big = store.rollout_detail("run-a-r000", event_limit=100)
    assert len(big.events) == 100 and big.event_count == 450 == store.event_count("run-a-r000")
    assert not big.complete
    window = store.events_window("run-a-r000", 200, 260)
    assert [e.idx for e in window] == list(range(200, 260))
    assert store.events_window("run-a-r000", 440, 900)[-1].idx == 449
    assert store.rollout_detail("nope") is None and store.event_count("nope") == 0
