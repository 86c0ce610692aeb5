"""Human audits in the store: blinding enforced by the reviewer and adjudicator queries, write-once labels
with versioned corrections, agreement on first submissions, adjudication of disagreements, typed errors."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest
from sqlalchemy import func, select

from redagent.judges.audit import export
from redagent.store import InvalidRecord
from redagent.store import tables_judging as tj
from redagent.store.audit import AuditQueries, _pg_write
from redagent.store.errors import (
    AuditError,
    BadLabel,
    CorrectionWithoutReason,
    ItemNotInQueue,
    LabelAlreadySubmitted,
    NothingToCorrect,
    UnknownAudit,
    UnknownReviewer,
)
from redagent.store.readmodel import OwnLabel
from redagent.store.records import AuditItemRecord, AuditRecord, JudgeLabelRecord
from tests.store.factory import T0, make_rollout, make_run

MODEL = "MODEL-SENTINEL/gpt-9"
RATIONALE = "JUDGE-RATIONALE-SENTINEL"
JUDGE_EVIDENCE = "JUDGE-EVIDENCE-SENTINEL"
VERIFIER = "VERIFIER-EVIDENCE-SENTINEL"
STRATUM = "STRATUM-SENTINEL"
STRATEGY = "STRATEGY-SENTINEL"
PEER = "zelda-peer"
PEER_NOTE = "PEER-NOTE-SENTINEL"
OWN_NOTE = "OWN-NOTE-SENTINEL"
ADJUDICATOR_NOTE = "ADJUDICATOR-NOTE-SENTINEL"
N = 6


def make_audit(
    store,
    audit_id: str = "audit-1",
    *,
    blind_model: bool = True,
    blind_attack: bool = False,
    reviewers=("alice", PEER),
    rollout_ids=None,
    adjudicator: str = "carol",
) -> list[int]:
    """An audit over the run's N rollouts (alice's order reversed); returns item ids in alice's order."""
    ids = rollout_ids or sorted(r.rollout_id for r in store.labelled_rows("run-1", "h-state", "rule"))[:N]
    items = [
        AuditItemRecord(
            rollout_id=rollout_id,
            stratum=f"{STRATUM}|label={i % 2}",
            population=10,
            sampled=3,
            weight=10 / 3,
            positions={reviewers[0]: len(ids) - i, reviewers[1]: i + 1},
        )
        for i, rollout_id in enumerate(ids)
    ]
    store.create_audit(
        AuditRecord(
            id=audit_id,
            run_id="run-1",
            config_name="state/rule",
            config_hash="h-state",
            backbone="rule",
            seed=7,
            n=len(ids),
            stratify=["strategy", "label"],
            reviewers=list(reviewers),
            adjudicator=adjudicator,
            blind_model=blind_model,
            blind_attack=blind_attack,
            created_at=T0,
        ),
        items,
    )
    return [entry.item_id for entry in store.reviewer_queue(audit_id, reviewers[0])]


@pytest.fixture
def filled(store):
    store.create_run(make_run("run-1", planned=N + 2))
    # Case ids name the strategy and the benign arm, as the library's do: a reviewer must never see them.
    rollouts = [
        make_rollout(
            "run-1",
            f"banking/c{i}-{STRATEGY}" + ("-benign" if i % 2 else ""),
            MODEL,
            E=i % 2,
            n_events=4,
            strategy=STRATEGY,
            evidence={"rule": VERIFIER},
        )
        for i in range(N + 2)
    ]
    store.write_rollouts(rollouts)
    store.write_judge_labels(
        [
            JudgeLabelRecord(
                rollout_id=r.id,
                run_id="run-1",
                config_name="state/rule",
                config_hash="h-state",
                view="state",
                contract_hash="c",
                gate="agent-effects",
                backbone="rule",
                label=1 - r.E,
                status="ok",
                rationale=RATIONALE,
                evidence=[JUDGE_EVIDENCE],
            )
            for r in rollouts
        ]
    )
    return store


@pytest.fixture
def audit(filled):
    return make_audit(filled)


def text_of(data) -> str:
    """Everything in `data` as text: records field by field (a hidden field's name and its None included)."""
    return json.dumps(
        data, default=lambda o: dataclasses.asdict(o) if dataclasses.is_dataclass(o) else str(o), ensure_ascii=False
    )


def assert_blind(data, *, reader: str, allowed_labels: bool = False) -> None:
    """Nothing a blinded reader must not see is anywhere in `data` (serialised)."""
    text = text_of(data) if not isinstance(data, str) else data
    for secret in (
        RATIONALE,
        JUDGE_EVIDENCE,
        VERIFIER,
        STRATUM,
        PEER_NOTE,
        MODEL,
        "judge_label",
        "stratum",
        "weight",
        "rollout_id",
        "ro-",
        "population",
        "banking/c",
        "-benign",
        "case_id",
    ):
        assert secret not in text, f"{secret!r} leaked to {reader}"
    for name in ("alice", PEER, "carol"):
        if name != reader:
            assert name not in text, f"the name {name!r} leaked to {reader}"
    if not allowed_labels:
        for value in ("harmful", "unsure"):
            assert value not in text, f"a label leaked to {reader}"


# ---------------------------------------------------------------- blinding


def test_every_reviewer_facing_query_is_blind(audit, filled, tmp_path: Path):
    store, alice_order = filled, audit
    # The peer labels everything, with notes; alice labels only her first item.
    for item_id in alice_order:
        store.submit_label("audit-1", item_id, PEER, "unsure" if item_id % 2 else "not_harmful", PEER_NOTE)
    store.submit_label("audit-1", alice_order[0], "alice", "harmful", OWN_NOTE)

    queue = store.reviewer_queue("audit-1", "alice")
    assert [e.labelled for e in queue] == [True] + [False] * (N - 1)
    assert_blind(queue[1:], reader="alice")
    assert queue[0].label == "harmful"  # her own
    for entry in queue[1:]:
        view = store.reviewer_item("audit-1", entry.item_id, "alice")
        assert_blind(view, reader="alice")
        assert view.my_label is None
        item = view.blinded
        assert item.events and item.receipts and item.diff and item.alias.startswith("case-")
        assert item.model is None and "model" in item.hidden and "model" not in item.to_dict()
        assert all("id" not in (e.tool_call or {}) for e in item.events)
    mine = store.reviewer_item("audit-1", alice_order[0], "alice")
    assert mine.my_label == OwnLabel(item_id=alice_order[0], label="harmful", note=OWN_NOTE, version=1)
    assert_blind(mine.blinded, reader="alice")

    for reviewer in (None, "alice"):
        assert_blind(store.blinded_items("audit-1", reviewer), reader="alice")
        for fmt in ("csv", "jsonl"):
            path = tmp_path / f"{reviewer}.{fmt}"
            assert export(store, "audit-1", path, fmt, reviewer=reviewer) == N
            assert_blind(path.read_text(encoding="utf-8"), reader="alice")

    # The peer's view of the same audit shows her own labels only, never alice's note or name.
    peer_view = store.reviewer_item("audit-1", alice_order[0], PEER)
    assert OWN_NOTE not in text_of(peer_view) and "alice" not in text_of(peer_view)

    # The adjudicator sees the two labels as A and B: no names, no notes, no judge.
    queue = store.adjudication_queue("audit-1", "carol")
    assert [e.item_id for e in queue] == [alice_order[0]]
    peer_label = "unsure" if alice_order[0] % 2 else "not_harmful"
    assert queue[0].labels == queue[0].first_labels == {"A": "harmful", "B": peer_label}
    assert_blind(queue, reader="carol", allowed_labels=True)
    assert OWN_NOTE not in text_of(queue)


def test_errors_read_by_reviewers_do_not_name_the_peer(audit, filled):
    with pytest.raises(UnknownReviewer) as caught:
        filled.reviewer_queue("audit-1", "alicia")
    assert str(caught.value) == "'alicia' is not a reviewer of audit audit-1"
    with pytest.raises(UnknownReviewer) as caught:
        filled.adjudication_queue("audit-1", "alice")
    assert str(caught.value) == "'alice' is not the adjudicator of audit audit-1"


def test_blinding_follows_the_audit_flags(filled):
    make_audit(filled, "open", blind_model=False)
    make_audit(filled, "attack-blind", blind_attack=True)
    open_view = filled.blinded_items("open")[0].blinded
    assert open_view.model == MODEL and open_view.strategy == STRATEGY
    assert {"vulnerability", "channel"} <= {name for name, _ in open_view.shown()} <= set(open_view.to_dict())
    assert open_view.events[1].tool_call["id"] == "call_1"
    assert open_view.hidden == frozenset() and open_view.events[0].tampered is not None
    blind = filled.blinded_items("attack-blind")[0].blinded
    assert blind.model is blind.strategy is blind.vulnerability is blind.channel is None and not blind.shown()
    assert not {"model", "strategy", "vulnerability", "channel"} & set(blind.to_dict())
    assert {"harness", "cue", "defense", "constraint", "surfaces", "alias"} <= set(blind.to_dict())
    assert STRATEGY not in text_of(blind)
    # Hidden, not none: the record's fields are null and the item names them; the export leaves them out.
    assert {"model", "strategy", "vulnerability", "channel", "original", "tampered"} <= blind.hidden
    assert all(event.original is None and event.tampered is None for event in blind.events)
    assert all(not {"original", "tampered"} & set(event) for event in blind.to_dict()["events"])


# ---------------------------------------------------------------- write-once and corrections


def test_a_label_is_write_once(audit, filled):
    item = audit[0]
    stored = filled.submit_label("audit-1", item, "alice", "harmful", "saw the transfer")
    assert stored == OwnLabel(item_id=item, label="harmful", note="saw the transfer", version=1)
    for label in ("harmful", "not_harmful"):
        with pytest.raises(LabelAlreadySubmitted) as caught:
            filled.submit_label("audit-1", item, "alice", label)
        assert str(caught.value) == (
            f"item {item}: alice already submitted a label (labels are write-once: correct it with a reason)"
        )
    assert [(lab.label, lab.version) for lab in filled.labels("audit-1")] == [("harmful", 1)]


def test_corrections_append_versions_with_who_and_why(audit, filled):
    item = audit[0]
    with pytest.raises(NothingToCorrect):
        filled.correct_label("audit-1", item, "alice", "harmful", "typo")
    filled.submit_label("audit-1", item, "alice", "harmful")
    for reason in ("", "   "):
        with pytest.raises(CorrectionWithoutReason) as caught:
            filled.correct_label("audit-1", item, "alice", "not_harmful", reason)
        assert str(caught.value) == f"item {item}: a correction needs a reason"
    second = filled.correct_label("audit-1", item, "alice", "not_harmful", "misread the receipt", "r2 was denied")
    assert second == OwnLabel(item_id=item, label="not_harmful", note="r2 was denied", version=2)
    filled.correct_label("audit-1", item, "alice", "unsure", "  second thoughts  ")
    history = filled.labels("audit-1", first_only=False)
    assert [(h.reviewer, h.slot, h.label, h.version, h.reason) for h in history] == [
        ("alice", "A", "harmful", 1, None),
        ("alice", "A", "not_harmful", 2, "misread the receipt"),
        ("alice", "A", "unsure", 3, "second thoughts"),
    ]
    assert all(h.created_at.tzinfo is not None for h in history)
    assert [(h.label, h.version) for h in filled.labels("audit-1")] == [("harmful", 1)]
    assert filled.reviewer_queue("audit-1", "alice")[0].label == "unsure"


def test_agreement_is_measured_on_first_submissions_even_after_a_correction(audit, filled):
    agreed, disputed, corrected_apart = audit[:3]
    for item in audit[:3]:
        filled.submit_label("audit-1", item, "alice", "harmful")
    filled.submit_label("audit-1", agreed, PEER, "harmful")
    filled.submit_label("audit-1", disputed, PEER, "not_harmful")
    filled.submit_label("audit-1", corrected_apart, PEER, "harmful")
    # alice comes round to the peer's view on the disputed item; the peer changes an agreed one.
    filled.correct_label("audit-1", disputed, "alice", "not_harmful", "re-read the diff")
    filled.correct_label("audit-1", corrected_apart, PEER, "not_harmful", "missed the approval code")
    first = {(lab.item_id, lab.slot): lab.label for lab in filled.labels("audit-1", first_only=True)}
    assert first == {
        (agreed, "A"): "harmful",
        (agreed, "B"): "harmful",
        (disputed, "A"): "harmful",
        (disputed, "B"): "not_harmful",
        (corrected_apart, "A"): "harmful",
        (corrected_apart, "B"): "harmful",
    }
    # First labels disputed → adjudication, whatever the corrections; a correction that opens a
    # disagreement goes there too, so no item is left without a final label.
    queue = {e.item_id: e for e in filled.adjudication_queue("audit-1", "carol")}
    assert sorted(queue) == sorted([disputed, corrected_apart])
    assert queue[disputed].first_labels == {"A": "harmful", "B": "not_harmful"}
    assert queue[disputed].labels == {"A": "not_harmful", "B": "not_harmful"}
    assert queue[corrected_apart].labels == {"A": "harmful", "B": "not_harmful"}


# ---------------------------------------------------------------- adjudication and final labels


def test_adjudication_queue_shows_only_disagreements_under_slot_letters(audit, filled):
    plan = {
        audit[0]: ("harmful", "harmful"),
        audit[1]: ("harmful", "not_harmful"),
        audit[2]: ("not_harmful", "unsure"),
        audit[3]: ("unsure", "unsure"),
        audit[4]: ("not_harmful", None),
    }
    for item, (a, b) in plan.items():
        filled.submit_label("audit-1", item, "alice", a)
        if b:
            filled.submit_label("audit-1", item, PEER, b)
    queue = filled.adjudication_queue("audit-1", "carol")
    assert [(e.item_id, e.labels) for e in queue] == sorted(
        [
            (audit[1], {"A": "harmful", "B": "not_harmful"}),
            (audit[2], {"A": "not_harmful", "B": "unsure"}),
            (audit[3], {"A": "unsure", "B": "unsure"}),
        ]
    )
    assert all(e.adjudicated is None and e.decision is None for e in queue)

    decided = filled.adjudicate("audit-1", audit[1], "carol", "harmful", ADJUDICATOR_NOTE)
    assert decided == OwnLabel(item_id=audit[1], label="harmful", note=ADJUDICATOR_NOTE, version=1)
    with pytest.raises(LabelAlreadySubmitted):
        filled.adjudicate("audit-1", audit[1], "carol", "not_harmful")
    with pytest.raises(ItemNotInQueue) as caught:
        filled.adjudicate("audit-1", audit[0], "carol", "harmful")  # the reviewers agree
    assert str(caught.value) == f"item {audit[0]} is not in the adjudication queue for audit audit-1"
    with pytest.raises(ItemNotInQueue):
        filled.adjudicate("audit-1", audit[4], "carol", "harmful")  # one label missing
    with pytest.raises(UnknownReviewer):
        filled.adjudicate("audit-1", audit[2], "alice", "harmful")
    with pytest.raises(CorrectionWithoutReason):
        filled.correct_adjudication("audit-1", audit[1], "carol", "unsure", "")
    with pytest.raises(NothingToCorrect):
        filled.correct_adjudication("audit-1", audit[2], "carol", "unsure", "why not")
    filled.correct_adjudication("audit-1", audit[1], "carol", "not_harmful", "the payee was on the allowlist")
    assert [(a.label, a.version, a.reason) for a in filled.adjudications("audit-1")] == [
        ("harmful", 1, None),
        ("not_harmful", 2, "the payee was on the allowlist"),
    ]
    assert {e.item_id: e.adjudicated for e in filled.adjudication_queue("audit-1", "carol")}[audit[1]] == "not_harmful"

    final = {f.item.item_id: f for f in filled.final_labels("audit-1")}
    assert [(final[i].final, final[i].source, final[i].human) for i in audit[:5]] == [
        ("harmful", "agreed", 1),
        ("not_harmful", "adjudicated", 0),
        (None, "awaiting_adjudication", None),
        (None, "awaiting_adjudication", None),
        (None, "awaiting_review", None),
    ]
    agreed = final[audit[0]]
    item = agreed.item
    assert item.weight == pytest.approx(10 / 3) and item.stratum.startswith(STRATUM)
    assert item.judge_label in (0, 1) and item.case_id.startswith("banking/")
    assert (agreed.A, agreed.B, agreed.A_first, agreed.B_first) == ("harmful",) * 4


def test_items_copy_the_judge_label_of_the_audited_configuration(audit, filled):
    labels = {r.rollout_id: r.label for r in filled.judge_labels("run-1", "h-state", "rule")}
    items = filled.audit_items("audit-1")
    assert len(items) == N and all(i.judge_label == labels[i.rollout_id] for i in items)


# ---------------------------------------------------------------- typed errors


def test_typed_errors_are_one_line(audit, filled):
    make_audit(filled, "audit-2")
    other = filled.reviewer_queue("audit-2", "alice")[0].item_id
    cases = [
        (lambda: filled.reviewer_queue("nope", "alice"), UnknownAudit, "no audit 'nope' in the store"),
        (lambda: filled.submit_label("nope", audit[0], "alice", "harmful"), UnknownAudit, None),
        (lambda: filled.adjudication_queue("nope", "carol"), UnknownAudit, None),
        (lambda: filled.final_labels("nope"), UnknownAudit, None),
        (lambda: filled.get_audit("nope"), UnknownAudit, None),
        (
            lambda: filled.reviewer_item("audit-1", audit[0], "bob"),
            UnknownReviewer,
            "'bob' is not a reviewer of audit audit-1",
        ),
        (lambda: filled.submit_label("audit-1", audit[0], "carol", "harmful"), UnknownReviewer, None),
        (
            lambda: filled.reviewer_item("audit-1", other, "alice"),
            ItemNotInQueue,
            f"item {other} is not in alice's queue for audit audit-1",
        ),
        (lambda: filled.submit_label("audit-1", 999_999, "alice", "harmful"), ItemNotInQueue, None),
        (
            lambda: filled.submit_label("audit-1", audit[0], "alice", "Harmful"),
            BadLabel,
            "bad label 'Harmful' (one of harmful, not_harmful, unsure)",
        ),
        (lambda: filled.correct_label("audit-1", audit[0], "alice", "yes", "why"), BadLabel, None),
        (lambda: filled.adjudicate("audit-1", audit[0], "carol", None), BadLabel, None),
    ]
    for call, error, message in cases:
        with pytest.raises(error) as caught:
            call()
        assert isinstance(caught.value, AuditError) and "\n" not in str(caught.value)
        if message is not None:
            assert str(caught.value) == message
    assert filled.labels("audit-1") == [] and filled.labels("audit-2") == []


def test_a_batch_submission_is_all_or_nothing(audit, filled):
    with pytest.raises(ItemNotInQueue):
        filled.submit_labels("audit-1", "alice", [(audit[0], "harmful", ""), (424242, "harmful", "")])
    with pytest.raises(BadLabel):
        filled.submit_labels("audit-1", "alice", [(audit[0], "harmful", ""), (audit[1], "maybe", "")])
    filled.submit_label("audit-1", audit[2], "alice", "unsure", "hmm")
    with pytest.raises(LabelAlreadySubmitted):
        filled.submit_labels("audit-1", "alice", [(audit[0], "harmful", ""), (audit[2], "harmful", "")])
    assert [lab.item_id for lab in filled.labels("audit-1")] == [audit[2]]
    # Re-sending what is stored is skipped when asked (re-importing a file).
    assert (
        filled.submit_labels(
            "audit-1", "alice", [(audit[0], "harmful", ""), (audit[2], "unsure", "hmm")], skip_identical=True
        )
        == 1
    )
    assert len(filled.labels("audit-1")) == 2


def test_concurrent_first_submissions_keep_exactly_one(audit, filled):
    results: list[str] = []
    barrier = threading.Barrier(4)

    def submit(label: str) -> None:
        barrier.wait()
        try:
            filled.submit_label("audit-1", audit[0], "alice", label)
            results.append("ok")
        except LabelAlreadySubmitted:
            results.append("refused")
        except Exception as exc:
            results.append(f"{type(exc).__name__}: {exc}")

    threads = [
        threading.Thread(target=submit, args=(label,)) for label in ("harmful", "not_harmful", "unsure", "harmful")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["ok", "refused", "refused", "refused"]
    assert len(filled.labels("audit-1", first_only=False)) == 1


def test_a_first_label_that_loses_the_race_after_the_check_is_refused_as_taken(audit, filled, monkeypatch):
    """The store reads whether the item is labelled, then writes. A label committed between the two (a second
    tab, a second client) must give LabelAlreadySubmitted, not a database error: on PostgreSQL the writer
    function took version 2 and wrote it without a reason, which the table's check refused (CI's four-thread
    race above, one run in many). The missed read is made certain here by a check that sees nothing."""
    filled.submit_label("audit-1", audit[0], "alice", "harmful")
    monkeypatch.setattr(AuditQueries, "_own_first", staticmethod(lambda conn, audit_id, reviewer: {}))
    with pytest.raises(LabelAlreadySubmitted):
        filled.submit_label("audit-1", audit[0], "alice", "not_harmful")
    assert [(row.label, row.version) for row in filled.labels("audit-1", first_only=False)] == [("harmful", 1)]


def test_the_writer_functions_call_a_write_of_the_wrong_kind_taken(audit, filled):
    """PostgreSQL's definer writers (migration 0011): a first write (no reason) when a version exists, or a
    correction (a reason) when none does, returns NULL, which the store reads as a lost race."""
    if filled.engine.dialect.name != "postgresql":
        pytest.skip("the writer functions are PostgreSQL's; SQLite inserts with ON CONFLICT DO NOTHING")
    filled.submit_label("audit-1", audit[1], "alice", "harmful")
    filled.submit_label("audit-1", audit[1], PEER, "not_harmful")
    filled.adjudicate("audit-1", audit[1], "carol", "harmful")
    first = {"label": "unsure", "note": "", "reason": None}
    correction = {"label": "unsure", "note": "", "reason": "second look", "reviewer": "alice"}

    class Undo(Exception):
        """Leaves the transaction by rolling it back: the one correction written below is not kept."""

    with pytest.raises(Undo), filled._writing() as conn:
        label = {**first, "item_id": audit[1], "reviewer": "alice"}
        decision = {**first, "item_id": audit[1], "adjudicator": "carol"}
        assert _pg_write(conn, "redagent_submit_label", "audit-1", label) is None
        assert _pg_write(conn, "redagent_adjudicate", "audit-1", decision) is None
        assert _pg_write(conn, "redagent_submit_label", "audit-1", {**correction, "item_id": audit[2]}) is None
        assert _pg_write(conn, "redagent_submit_label", "audit-1", {**correction, "item_id": audit[1]}) == 2
        raise Undo
    stored = [(row.item_id, row.reviewer, row.version) for row in filled.labels("audit-1", first_only=False)]
    assert sorted(stored) == [(audit[1], "alice", 1), (audit[1], PEER, 1)]


# ---------------------------------------------------------------- creating audits


def test_create_audit_refuses_rollouts_without_an_ok_label_and_writes_nothing(filled):
    store = filled
    store.create_run(make_run("run-2"))
    stranger = make_rollout("run-2", "banking/z", n_events=1)
    store.write_rollouts([stranger])
    unlabelled = make_rollout("run-1", "banking/unlabelled", n_events=1)
    invalid = make_rollout("run-1", "banking/invalid", valid=False, invalid_reason="timeout", n_events=1)
    store.write_rollouts([unlabelled, invalid])
    store.write_judge_labels(
        [
            JudgeLabelRecord(
                rollout_id=invalid.id,
                run_id="run-1",
                config_name="state/rule",
                config_hash="h-state",
                view="state",
                contract_hash="c",
                gate="g",
                backbone="rule",
                label=1,
                status="ok",
            )
        ]
    )
    good = sorted(r.rollout_id for r in store.labelled_rows("run-1", "h-state", "rule"))[:2]
    for bad in (unlabelled.id, invalid.id, stranger.id):
        with pytest.raises(InvalidRecord, match=f"rollout {bad} is not a valid rollout of run run-1"):
            make_audit(store, "audit-x", rollout_ids=[*good, bad])
    with pytest.raises(InvalidRecord, match="exactly two distinct"):
        make_audit(store, "audit-x", reviewers=("alice", "alice"))
    with pytest.raises(InvalidRecord, match="must not be one of the reviewers"):
        make_audit(store, "audit-x", reviewers=("alice", "carol"))
    assert store.audits() == []
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(tj.audit_item)).scalar_one() == 0


def test_audit_records_round_trip(audit, filled):
    record = filled.get_audit("audit-1")
    assert record == AuditRecord(
        id="audit-1",
        run_id="run-1",
        config_name="state/rule",
        config_hash="h-state",
        backbone="rule",
        seed=7,
        n=N,
        stratify=["strategy", "label"],
        reviewers=["alice", PEER],
        adjudicator="carol",
        blind_model=True,
        blind_attack=False,
        created_at=T0,
    )
    make_audit(filled, "audit-2")
    assert [a.id for a in filled.audits("run-1")] == ["audit-1", "audit-2"]  # same created_at: by id
    assert filled.audits("run-9") == []
    positions = [e.position for e in filled.reviewer_queue("audit-1", PEER)]
    assert positions == list(range(1, N + 1))
    assert filled.reviewer_queue("audit-1", PEER)[0].item_id == audit[-1]  # alice's order is reversed


def test_an_adaptive_attackers_own_moves_never_reach_reviewers(store):
    """A move's reasoning, channel and model say what the attack is; reviewers see what the agent saw."""
    store.create_run(make_run("run-1", planned=1))
    rollout = make_rollout("run-1", "banking/c0", MODEL, E=1, n_events=4)
    move = {
        "idx": len(rollout.events),
        "role": "attacker",
        "text": "ATTACKER-MOVE-SENTINEL",
        "receipts": [],
        "tool_call": {"move": "reformulate", "channel": "user", "why": "WHY-SENTINEL", "model": MODEL},
        "original": None,
        "observation": None,
        "tampered": False,
    }
    rollout = dataclasses.replace(rollout, events=[*rollout.events, move])
    store.write_rollouts([rollout])
    store.write_judge_labels(
        [
            JudgeLabelRecord(
                rollout_id=rollout.id,
                run_id="run-1",
                config_name="state/rule",
                config_hash="h-state",
                view="state",
                contract_hash="c",
                gate="agent-effects",
                backbone="rule",
                label=1,
                status="ok",
                rationale=RATIONALE,
                evidence=[JUDGE_EVIDENCE],
            )
        ]
    )
    item = make_audit(store, rollout_ids=[rollout.id])[0]
    seen = text_of(store.reviewer_item("audit-1", item, "alice"))
    assert "ATTACKER-MOVE-SENTINEL" not in seen and "WHY-SENTINEL" not in seen and MODEL not in seen
    assert "ATTACKER-MOVE-SENTINEL" in text_of(store.get_rollout(rollout.id).events)  # researchers keep it
