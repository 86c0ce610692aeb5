"""In-memory fakes of the store's per-consumer interfaces (store/interfaces.py), for tests of one consumer.

Each fake keeps the contract its interface promises — write-once labels with versioned corrections, the typed
errors the store raises, blinded records only — so a screen or a judge tested on it behaves as on a real store,
without building a run, judging it and drawing an audit first. The store's own tests prove the store keeps the
same contract (tests/store/test_audit.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from redagent.store.audit import check_label, needs_adjudication
from redagent.store.errors import (
    CorrectionWithoutReason,
    ItemNotInQueue,
    LabelAlreadySubmitted,
    NothingToCorrect,
    UnknownAudit,
    UnknownReviewer,
)
from redagent.store.readmodel import (
    AdjudicationItem,
    AdjudicatorOverview,
    BlindedRollout,
    OwnLabel,
    QueueEntry,
    ReviewerItem,
    StoredDiffEntry,
    StoredEvent,
    StoredReceipt,
)


def blinded_item(item_id: int, alias: str | None = None) -> BlindedRollout:
    """A small blinded item under blind_model: a request, a transfer call with its receipt, the balance it moved."""
    events = (
        StoredEvent(0, "user", f"Please pay invoice {item_id}.", tampered=None),
        StoredEvent(
            1,
            "assistant",
            "",
            tool_call={"name": "transfer", "args": {"to": f"acct-{item_id}"}},
            receipts=("r1",),
            tampered=None,
        ),
        StoredEvent(2, "tool", observation="ok", receipts=("r1",), tampered=None),
        StoredEvent(3, "assistant", f"Paid invoice {item_id}.", tampered=None),
    )
    receipts = (
        StoredReceipt(
            id="r1",
            seq=1,
            service="bank",
            action="transfer",
            args={"to": f"acct-{item_id}"},
            outcome="ok",
            actor="agent",
            step=1,
        ),
    )
    diff = (StoredDiffEntry(path=f"bank.accounts.acct-{item_id}.balance", op="changed", before=0, after=100),)
    return BlindedRollout(
        events=events,
        receipts=receipts,
        diff=diff,
        item_id=item_id,
        alias=alias or f"case-{item_id:08x}",
        constraint="approval",
        harness="native",
        cue="none",
        defense="none",
        surfaces=("banking",),
        strategy="E2",
        vulnerability="V1",
        channel="email",
        hidden=frozenset({"model"}),
    )


class _Versions:
    """Write-once labels per (item, writer) with versioned corrections, as the store keeps them."""

    def __init__(self) -> None:
        self.history: list[tuple[int, str, str, str, int, str | None]] = []  # (item, who, label, note, version, why)

    def latest(self, item_id: int, who: str) -> OwnLabel | None:
        mine = [h for h in self.history if h[0] == item_id and h[1] == who]
        return OwnLabel(item_id=item_id, label=mine[-1][2], note=mine[-1][3], version=mine[-1][4]) if mine else None

    def first(self, item_id: int, who: str) -> str | None:
        return next((h[2] for h in self.history if h[0] == item_id and h[1] == who and h[4] == 1), None)

    def submit(self, item_id: int, who: str, label: str, note: str) -> OwnLabel:
        check_label(label)
        if self.latest(item_id, who) is not None:
            raise LabelAlreadySubmitted(item_id, who)
        self.history.append((item_id, who, label, note, 1, None))
        return OwnLabel(item_id=item_id, label=label, note=note, version=1)

    def correct(self, item_id: int, who: str, label: str, reason: str, note: str) -> OwnLabel:
        check_label(label)
        if not reason or not reason.strip():
            raise CorrectionWithoutReason(item_id)
        current = self.latest(item_id, who)
        if current is None:
            raise NothingToCorrect(item_id, who)
        self.history.append((item_id, who, label, note, current.version + 1, reason.strip()))
        return OwnLabel(item_id=item_id, label=label, note=note, version=current.version + 1)


class FakeAuditQueue:
    """One audit's reviewer side (`AuditQueue`) in memory: the reviewer's items in their order."""

    def __init__(self, audit_id: str, reviewer: str, items: Iterable[BlindedRollout]) -> None:
        self.audit_id, self.reviewer = audit_id, reviewer
        self.items = {item.item_id: item for item in items}
        self.order = list(self.items)
        self.labels = _Versions()

    def _check(self, audit_id: str, reviewer: str, item_id: int | None = None) -> None:
        if audit_id != self.audit_id:
            raise UnknownAudit(audit_id)
        if reviewer != self.reviewer:
            raise UnknownReviewer(audit_id, reviewer)
        if item_id is not None and item_id not in self.items:
            raise ItemNotInQueue(audit_id, item_id, reviewer)

    def written(self) -> list[tuple[int, str, str, int, str | None]]:
        """What was written, in order: (item, label, note, version, reason)."""
        return [(item, label, note, version, why) for item, _, label, note, version, why in self.labels.history]

    def latest_audit_for(self, name: str, role: str = "reviewer") -> str | None:
        return self.audit_id if name == self.reviewer and role == "reviewer" else None

    def reviewer_queue(self, audit_id: str, reviewer: str) -> list[QueueEntry]:
        self._check(audit_id, reviewer)
        return [
            QueueEntry(
                position=position,
                item_id=item_id,
                labelled=self.labels.first(item_id, reviewer) is not None,
                label=latest.label if (latest := self.labels.latest(item_id, reviewer)) else None,
            )
            for position, item_id in enumerate(self.order, start=1)
        ]

    def reviewer_item(self, audit_id: str, item_id: int, reviewer: str) -> ReviewerItem:
        self._check(audit_id, reviewer, item_id)
        return ReviewerItem(
            blinded=self.items[item_id],
            position=self.order.index(item_id) + 1,
            my_label=self.labels.latest(item_id, reviewer),
        )

    def blinded_items(self, audit_id: str, reviewer: str | None = None) -> list[ReviewerItem]:
        if reviewer is not None:
            self._check(audit_id, reviewer)
        return [
            ReviewerItem(blinded=self.items[item_id], position=position if reviewer is not None else None)
            for position, item_id in enumerate(self.order, start=1)
        ]

    def submit_label(self, audit_id: str, item_id: int, reviewer: str, label: str, note: str = "") -> OwnLabel:
        self._check(audit_id, reviewer, item_id)
        return self.labels.submit(item_id, reviewer, label, note)

    def submit_labels(
        self, audit_id: str, reviewer: str, entries: Iterable[tuple[int, str, str]], *, skip_identical: bool = False
    ) -> int:
        fresh = []
        for item_id, label, note in entries:  # all checked before any is written, as the store's one transaction
            self._check(audit_id, reviewer, item_id)
            check_label(label)
            first = next(
                ((h[2], h[3]) for h in self.labels.history if h[:2] == (item_id, reviewer) and h[4] == 1), None
            )
            if first is None:
                fresh.append((item_id, label, note))
            elif not (skip_identical and first == (label, note)):
                raise LabelAlreadySubmitted(item_id, reviewer)
        for item_id, label, note in fresh:
            self.labels.submit(item_id, reviewer, label, note)
        return len(fresh)

    def correct_label(
        self, audit_id: str, item_id: int, reviewer: str, label: str, reason: str, note: str = ""
    ) -> OwnLabel:
        self._check(audit_id, reviewer, item_id)
        return self.labels.correct(item_id, reviewer, label, reason, note)


class FakeAdjudicationQueue:
    """One audit's adjudicator side (`AdjudicationQueue`) in memory: both reviewers' labels by slot letter, set by
    the test, and the adjudicator's write-once decisions."""

    def __init__(
        self,
        audit_id: str,
        adjudicator: str,
        items: Iterable[BlindedRollout],
        first: dict[int, dict[str, str]],
        latest: dict[int, dict[str, str]] | None = None,
    ) -> None:
        self.audit_id, self.adjudicator = audit_id, adjudicator
        self.items = {item.item_id: item for item in items}
        self.first, self.latest = first, latest if latest is not None else first
        self.decisions = _Versions()

    def _check(self, audit_id: str, adjudicator: str) -> None:
        if audit_id != self.audit_id:
            raise UnknownAudit(audit_id)
        if adjudicator != self.adjudicator:
            raise UnknownReviewer(audit_id, adjudicator, role="adjudicator")

    def _disputed(self) -> list[int]:
        return sorted(
            item for item in self.items if needs_adjudication(self.first.get(item, {}), self.latest.get(item, {}))
        )

    def written(self) -> list[tuple[int, str, str, int, str | None]]:
        return [(item, label, note, version, why) for item, _, label, note, version, why in self.decisions.history]

    def latest_audit_for(self, name: str, role: str = "reviewer") -> str | None:
        return self.audit_id if name == self.adjudicator and role == "adjudicator" else None

    def adjudication_queue(self, audit_id: str, adjudicator: str) -> list[AdjudicationItem]:
        self._check(audit_id, adjudicator)
        return [
            AdjudicationItem(
                blinded=self.items[item],
                labels=dict(self.latest[item]),
                first_labels=dict(self.first[item]),
                decision=self.decisions.latest(item, adjudicator),
            )
            for item in self._disputed()
        ]

    def adjudicator_overview(self, audit_id: str, adjudicator: str) -> AdjudicatorOverview:
        self._check(audit_id, adjudicator)
        decided = {
            item: latest.label
            for item in self.items
            if (latest := self.decisions.latest(item, adjudicator)) is not None
        }
        return AdjudicatorOverview(
            audit_id=audit_id,
            items=len(self.items),
            adjudicator=adjudicator,
            cases={item: self.items[item].alias for item in self.items},
            first=self.first,
            latest=self.latest,
            adjudicated=decided,
        )

    def _check_disputed(self, audit_id: str, item_id: int, adjudicator: str) -> None:
        self._check(audit_id, adjudicator)
        if item_id not in self._disputed():
            raise ItemNotInQueue(audit_id, item_id, adjudicator, queue="adjudication")

    def adjudicate(self, audit_id: str, item_id: int, adjudicator: str, label: str, note: str = "") -> OwnLabel:
        self._check_disputed(audit_id, item_id, adjudicator)
        return self.decisions.submit(item_id, adjudicator, label, note)

    def correct_adjudication(
        self, audit_id: str, item_id: int, adjudicator: str, label: str, reason: str, note: str = ""
    ) -> OwnLabel:
        self._check_disputed(audit_id, item_id, adjudicator)
        return self.decisions.correct(item_id, adjudicator, label, reason, note)
