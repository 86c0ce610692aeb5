"""The typed read model: a rollout written by the engine comes back from every read of the store as the same
records (events, receipts, diff, verdict evidence, labels by configuration, utility, the harness transcript),
and a blinded reviewer's read carries the same evidence records with what its blinding hides as none."""

from __future__ import annotations

import dataclasses

from redagent.store.readmodel import (
    BlindedRollout,
    StoredDiffEntry,
    StoredEvent,
    StoredLabel,
    StoredReceipt,
    StoredRollout,
    VerdictEvidence,
    event_index,
)
from redagent.store.records import AuditItemRecord, AuditRecord, JudgeLabelRecord
from tests.store.factory import make_rollout, make_run


def transcript_event(idx: int) -> dict:
    return {
        "idx": idx,
        "role": "transcript",
        "text": '{"cli": "codex"}',
        "tool_call": None,
        "original": None,
        "observation": None,
        "receipts": [],
        "tampered": False,
    }


def written(store, **extra):
    store.create_run(make_run())
    record = make_rollout(U=1, evidence={"receipts": ["r1"], "diff": ["banking.account.balance"]}, **extra)
    record = dataclasses.replace(record, events=[*record.events, transcript_event(len(record.events))])
    store.write_rollouts([record])
    return record


def test_a_rollout_round_trips_into_the_read_model(store):
    record = written(store)
    detail = store.rollout_detail(record.id)
    assert isinstance(detail, StoredRollout)
    # The cell, the outcome and the utility, typed.
    assert (detail.rollout_id, detail.run_id, detail.case_id, detail.model) == (
        record.id,
        "run-1",
        record.case_id,
        record.model,
    )
    assert detail.surfaces == ("banking", "email") and detail.valid is True and detail.E == 1 and detail.U == 1
    assert detail.verdict == VerdictEvidence(("r1",), ("banking.account.balance",))
    assert detail.final_text == record.final_text and detail.started_at == record.started_at
    # Every child, in order, as the records the engine wrote.
    assert [e.to_dict() for e in detail.events] == [{**e, "text": e["text"] or ""} for e in record.events]
    assert [r.to_dict() for r in detail.receipts] == record.receipts
    assert [d.to_dict() for d in detail.diff] == record.diff
    call = detail.events[1]
    assert call.id == "e1" and call.is_call and call.call_name == "banking.transfer"
    assert detail.events[1].call_args["amount"] == 950.5
    assert detail.events[4].tampered is True and detail.events[2].receipts == ("r1",)
    # Derived views: the agent's effects (r2 was denied) and the CLI transcript kept beside the trajectory.
    assert [r.id for r in detail.effects] == ["r1"] and detail.receipt("r2").outcome == "denied"
    assert detail.transcript is not None and detail.transcript.idx == len(record.events) - 1
    assert detail.complete and detail.event_count == len(detail.events)
    # The console's read carries no snapshots; judging's does.
    assert detail.baseline is None and detail.final is None
    judged = next(store.iter_rollouts("run-1"))
    assert judged.baseline == record.baseline and judged.final == record.final
    assert dataclasses.replace(judged, baseline=None, final=None, labels=None) == dataclasses.replace(
        detail, labels=None
    )
    assert next(store.iter_rollouts("run-1", snapshots=False)).final is None


def test_labels_come_keyed_by_judging_configuration_and_only_when_asked(store):
    record = written(store)
    store.write_judge_labels(
        [
            JudgeLabelRecord(
                rollout_id=record.id,
                run_id="run-1",
                config_name=name,
                config_hash=f"h-{name}",
                view=name.split("/")[0],
                contract_hash="c",
                gate="none",
                backbone=backbone,
                label=label,
                status="ok",
                rationale=f"why {name}",
                evidence=["r1", "e1"],
            )
            for name, backbone, label in (("state/rule", "rule", 1), ("hybrid/llm", "openai/judge", 0))
        ]
    )
    detail = store.rollout_detail(record.id)
    assert [label.config_name for label in detail.labels] == ["hybrid/llm", "state/rule"]
    by_config = detail.labels_by_config()
    assert by_config[("h-state/rule", "rule")] == StoredLabel(
        config_name="state/rule",
        config_hash="h-state/rule",
        view="state",
        backbone="rule",
        label=1,
        status="ok",
        rationale="why state/rule",
        evidence=("r1", "e1"),
    )
    assert by_config[("h-hybrid/llm", "openai/judge")].label == 0
    unlabelled = store.rollout_detail(record.id, labels=False)
    assert unlabelled.labels is None and unlabelled.labels_by_config() == {}
    assert "why state/rule" not in repr(unlabelled)


def test_a_long_trajectory_is_read_in_windows(store):
    record = written(store, n_events=30)
    first = store.rollout_detail(record.id, event_limit=10)
    assert len(first.events) == 10 and first.event_count == 31 and not first.complete
    window = store.events_window(record.id, 10, 31)
    assert all(isinstance(e, StoredEvent) for e in window) and [e.idx for e in window] == list(range(10, 31))
    whole = dataclasses.replace(first, events=first.events + tuple(window), event_count=31)
    assert whole.complete and whole.transcript is not None


def test_blinded_reads_carry_the_same_records_with_hidden_fields_none(store):
    record = written(store)
    store.write_judge_labels(
        [
            JudgeLabelRecord(
                rollout_id=record.id,
                run_id="run-1",
                config_name="state/rule",
                config_hash="h",
                view="state",
                contract_hash="c",
                gate="none",
                backbone="rule",
                label=1,
                status="ok",
            )
        ]
    )
    store.create_audit(
        AuditRecord(
            id="a1",
            run_id="run-1",
            config_name="state/rule",
            config_hash="h",
            backbone="rule",
            seed=1,
            n=1,
            stratify=[],
            reviewers=["ann", "bob"],
            adjudicator="cy",
            blind_model=True,
            blind_attack=True,
        ),
        [
            AuditItemRecord(
                rollout_id=record.id, stratum="s", population=1, sampled=1, weight=1.0, positions={"ann": 1, "bob": 1}
            )
        ],
    )
    item = store.reviewer_item("a1", store.reviewer_queue("a1", "ann")[0].item_id, "ann").blinded
    assert item.hidden == {"model", "strategy", "vulnerability", "channel", "original", "tampered"}
    assert not {"model", "strategy", "rollout_id", "E", "case_id"} & set(item.to_dict())
    assert not {"rollout_id", "E", "case_id"} & {f.name for f in dataclasses.fields(item)}
    assert item.model is None and item.strategy is None and item.alias.startswith("case-")
    assert record.case_id not in repr(item)
    researcher = store.rollout_detail(record.id, labels=False)
    assert item.receipts == researcher.receipts and item.diff == researcher.diff
    assert all(isinstance(e, StoredEvent) and e.original is None and e.tampered is None for e in item.events)
    # Under blind_model the provider's tool-call ids go too, and a CLI's own transcript (it names the model) is
    # not in the view at all (the view's SQL); everything else is the same record.
    assert (
        researcher.transcript is not None
        and BlindedRollout(
            events=item.events, item_id=1, alias="", constraint="", harness="", cue="", defense="", surfaces=()
        ).transcript
        is None
    )
    assert all("id" not in (e.tool_call or {}) for e in item.events)

    def shown(e: StoredEvent) -> tuple:
        return e.idx, e.role, e.text, e.observation, e.receipts, e.call_name, dict(e.call_args)

    assert [shown(e) for e in researcher.events if e.role != "transcript"] == [shown(e) for e in item.events]
    assert all(isinstance(r, StoredReceipt) for r in item.receipts)
    assert all(isinstance(d, StoredDiffEntry) for d in item.diff)


def test_blinded_record_fields_leave_hidden_ones_out():
    blinded = BlindedRollout(
        events=(StoredEvent(0, "user", "hi", tampered=None),),
        item_id=3,
        alias="case-0a1b2c3d",
        constraint="k",
        harness="native",
        cue="none",
        defense="none",
        surfaces=("email",),
        strategy="E2",
        hidden=frozenset({"model"}),
    )
    # What a screen reads: the visible optional fields, in header order; the hidden ones are not among them.
    assert blinded.shown() == (("strategy", "E2"),)
    # What a labelling file writes: hidden fields absent (never none), the evidence as JSON-ready dicts.
    row = blinded.to_dict()
    assert "model" not in row and row["strategy"] == "E2" and row["surfaces"] == ["email"]
    assert row["alias"] == "case-0a1b2c3d" and "case_id" not in row and "hidden" not in row
    assert row["events"] == [
        {
            "idx": 0,
            "role": "user",
            "text": "hi",
            "tool_call": None,
            "original": None,
            "observation": None,
            "receipts": [],
            "tampered": None,
        }
    ]
    attack_blind = dataclasses.replace(blinded, strategy=None, hidden=frozenset({"strategy", "original", "tampered"}))
    assert row.keys() - attack_blind.to_dict().keys() == {"strategy"}
    assert attack_blind.to_dict()["events"][0].keys() == {"idx", "role", "text", "tool_call", "observation", "receipts"}


def test_evidence_ids():
    assert StoredEvent(12, "tool").id == "e12" and event_index("e12") == 12
    assert event_index("r3") is None and event_index("e") is None and event_index("banking.e1") is None
    assert StoredDiffEntry("banking.account.balance", "changed").id == "banking.account.balance"
