"""Human audits of judge labels: creating an audit, the blinded reviewer and adjudicator queries, and
write-once labels with versioned corrections.

Exposed as methods of `Store` (this module's `AuditQueries` is one of its mixins): `store.create_audit`,
`store.reviewer_queue`, `store.reviewer_item`, `store.submit_label`, `store.adjudication_queue`, ...

Blinding is enforced in SQL: the reviewer- and adjudicator-facing methods (`reviewer_queue`,
`reviewer_item`, `blinded_items`, `adjudication_queue`, `adjudicator_overview`, the label writes) read
only the blinded views of migration 0005 (`blind_*`) and the member's own rows (`own_label`,
`own_adjudication`, migration 0010) — never a table of runs, rollouts, labels, judge labels or the audit
itself — so on a PostgreSQL team store, where a reviewer's login is granted nothing else
(store/access.py), the database refuses any other read. There the views run over definer functions that
return only the login's rows, and labels and decisions are written through definer functions
(`_pg_write`) that name the writer from the login and check the item is theirs (and, for a decision,
disputed). The views select
only the columns a blinded reader may see. They never read the judge's label, rationale or evidence, the
item's stratum or weight (a stratum names the judge label), the verifier's outcome E or its evidence,
the rollout id (it would let a reader look the rollout up), the case id (it names the attack strategy and
the benign arm: the item's random `alias` stands in for it, migration 0009), the other reviewer's labels, notes or name;
the model is left out under blind_model (and with it the provider-specific tool-call ids), the strategy,
vulnerability and channel (and the tampering marks on events) under blind_attack. The adjudicator sees
the two reviewers' labels under their slot letters A and B, never their names or notes.
The analyst-facing methods (`get_audit`, `audit_items`, `labels`, `adjudications`, `final_labels`)
return everything and must not be shown to reviewers.

Labels are write-once: a second submission by the same person is refused (LabelAlreadySubmitted); a
correction appends the next version with a reason. Agreement is measured on first submissions;
final labels use each person's latest version.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Table, func, select, text

from redagent.store import evidence
from redagent.store import tables as t
from redagent.store import tables_judging as tj
from redagent.store import tables_team as tv
from redagent.store.connect import DialectInsert
from redagent.store.errors import (
    AuditClosed,
    AuditStateError,
    BadLabel,
    CorrectionWithoutReason,
    EvidenceChanged,
    EvidenceDiffers,
    InvalidRecord,
    ItemNotInQueue,
    LabelAlreadySubmitted,
    LabelConflict,
    NothingToCorrect,
    UnknownAudit,
    UnknownReviewer,
    UnknownRun,
    WriteRejected,
)
from redagent.store.judging import chunks
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
from redagent.store.records import (
    AUDIT_SLOTS,
    HUMAN_LABELS,
    Adjudication,
    AuditClosureRecord,
    AuditItem,
    AuditItemRecord,
    AuditRecord,
    FinalLabel,
    ReviewerLabel,
)
from redagent.store.rows import aware, clean_text, stored_diff_entry, stored_event, stored_receipt

UNSURE = "unsure"
HUMAN_TO_BINARY = {"harmful": 1, "not_harmful": 0, "unsure": None}


def new_alias(taken: set[str]) -> str:
    """A random alias for an audit item, not in `taken` (which it joins): what blinded readers see in place of
    the case id, whose name carries the attack strategy and the benign arm's `-benign` suffix."""
    while True:
        alias = f"case-{secrets.token_hex(4)}"
        if alias not in taken:
            taken.add(alias)
            return alias


def new_evidence_tag() -> str:
    """What names an item's evidence version to its reviewers (0015): random, so it says nothing of the evidence."""
    return f"ev-{secrets.token_hex(4)}"


ITEM_IDS = 2**31 - 1  # item ids are drawn from 1 .. 2^31 - 1, what the INTEGER column holds


def _new_item_ids(conn: Connection, count: int) -> list[int]:
    """`count` item ids from the CSPRNG, unique in the store: what a reviewer sees of an item besides its alias,
    so it may say nothing of the sample's order, its seed or how many items other audits hold."""
    ids: list[int] = []
    while len(ids) < count:
        wanted = {secrets.randbelow(ITEM_IDS) + 1 for _ in range(count - len(ids))} - set(ids)
        taken = set(conn.execute(select(tj.audit_item.c.id).where(tj.audit_item.c.id.in_(sorted(wanted)))).scalars())
        ids += sorted(wanted - taken, key=lambda _: secrets.randbits(32))
    return ids


def check_label(value: object) -> str:
    if not isinstance(value, str) or value not in HUMAN_LABELS:
        raise BadLabel(value, HUMAN_LABELS)
    return value


def needs_adjudication(first: Mapping[str, str], latest: Mapping[str, str]) -> bool:
    """Both reviewers have labelled and their first or latest labels differ, or any of them is unsure.

    First labels decide what goes to adjudication (the audit's protocol); a later correction that
    opens a disagreement, or leaves an unsure, sends the item there too, so no item is left without a
    final label.
    """
    if set(first) != set(AUDIT_SLOTS):
        return False
    values = [first["A"], first["B"], latest["A"], latest["B"]]
    return first["A"] != first["B"] or latest["A"] != latest["B"] or UNSURE in values


def _audit_record(row: Any) -> AuditRecord:
    return AuditRecord(
        id=row.id,
        run_id=row.run_id,
        config_name=row.config_name,
        config_hash=row.config_hash,
        backbone=row.backbone,
        seed=row.seed,
        n=row.n,
        stratify=list(row.stratify),
        reviewers=list(row.reviewers),
        adjudicator=row.adjudicator,
        blind_model=bool(row.blind_model),
        blind_attack=bool(row.blind_attack),
        created_at=row.created_at,
        design=row.design,
        seeded_order=bool(row.seeded_order),
    )


def _validate_audit(audit: AuditRecord, items: Sequence[AuditItemRecord]) -> None:
    where = f"audit {audit.id}"
    if not audit.id:
        raise InvalidRecord("an audit needs an id")
    names = list(audit.reviewers)
    if len(names) != 2 or len(set(names)) != 2 or not all(isinstance(n, str) and n and n == n.strip() for n in names):
        raise InvalidRecord(f"{where}: needs exactly two distinct, non-empty reviewer names, not {names!r}")
    if not audit.adjudicator or audit.adjudicator != audit.adjudicator.strip() or audit.adjudicator in names:
        raise InvalidRecord(f"{where}: the adjudicator must be named and must not be one of the reviewers")
    if not all(isinstance(field, str) and field for field in audit.stratify):
        raise InvalidRecord(f"{where}: stratify must be a list of field names")
    if not items or audit.n != len(items):
        raise InvalidRecord(f"{where}: n is {audit.n} but {len(items)} items were given")
    if len({item.rollout_id for item in items}) != len(items):
        raise InvalidRecord(f"{where}: a rollout is sampled twice")
    for name in names:
        positions = sorted(item.positions.get(name, 0) for item in items)
        if positions != list(range(1, len(items) + 1)):
            raise InvalidRecord(f"{where}: {name}'s positions must number the items 1..{len(items)} once each")
    for item in items:
        if set(item.positions) != set(names):
            raise InvalidRecord(f"{where}: item {item.rollout_id} must be assigned to exactly the two reviewers")
        if not (1 <= item.sampled <= item.population) or not item.weight > 0 or not item.stratum:
            raise InvalidRecord(f"{where}: item {item.rollout_id} has a bad stratum, population, sample size or weight")


def _pg_write(conn: Connection, function: str, audit_id: str, row: dict[str, Any]) -> int | None:
    """A label or decision written through its definer function (migration 0010): it names the writer from the
    login, checks the item is theirs (and, for a decision, disputed) and takes the next version itself.
    Returns the version written, or None when a concurrent writer took it."""
    who = row.get("reviewer", row.get("adjudicator"))
    return conn.execute(
        text(f"SELECT {function}(:audit_id, :item_id, :who, :label, :note, :reason)"),
        {
            "audit_id": audit_id,
            "item_id": row["item_id"],
            "who": who,
            "label": row["label"],
            "note": row["note"],
            "reason": row["reason"],
        },
    ).scalar_one_or_none()


def _refusal(exc: WriteRejected, audit_id: str, item_id: int | None) -> Exception:
    """The database's refusal of a label or decision (migration 0012's triggers, which every write path meets) as
    the API's error: a closed audit, or a correction without a reason; anything else as it was."""
    if "is closed" in exc.reason and "redagent: audit" in exc.reason:
        return AuditClosed(audit_id)
    if "redagent: a correction needs a reason" in exc.reason:
        return CorrectionWithoutReason(item_id if item_id is not None else 0)
    if "changed after the audit was drawn" in exc.reason:
        return EvidenceChanged(audit_id, item_id)
    return exc


class AuditQueries:
    """Store methods for human audits (mixed into `Store`, which provides the plumbing)."""

    if TYPE_CHECKING:
        url: str
        _reading: Callable[[], AbstractContextManager[Connection]]
        _writing: Callable[[], AbstractContextManager[Connection]]

        @staticmethod
        def _insert(conn: Connection, table: Table) -> DialectInsert: ...

        def _require_owner(self, doing: str) -> None: ...

        def _made_by(self) -> str: ...

        def get_run(self, run_id: str) -> Any: ...

        def verify_evidence(self, run_id: str, export_head: str | None = None) -> evidence.EvidenceCheck: ...

    @contextmanager
    def _label_writing(self, audit_id: str, item_id: int | None = None) -> Iterator[Connection]:
        """A write transaction for labels and decisions whose refusals by the database's rules are typed."""
        try:
            with self._writing() as conn:
                yield conn
        except WriteRejected as exc:
            raise _refusal(exc, audit_id, item_id) from exc

    # ------------------------------------------------------------ creating and reading audits (analysts)

    def create_audit(self, audit: AuditRecord, items: Sequence[AuditItemRecord]) -> str:
        """Store an audit with its items and both reviewers' assignments in one transaction; returns its id.

        Item ids are shown to reviewers, so the store draws them from the operating system's CSPRNG (unique in
        the store): neither the order items are given in nor how many items the store held before says anything
        through them. Each item's judge label is copied from the stored ok label of the audited
        configuration; a rollout without one, invalid or from another run is refused (InvalidRecord).
        """
        _validate_audit(audit, items)
        created_at = aware(audit.created_at, f"audit {audit.id}: created_at") or datetime.now(UTC)
        if self.get_run(audit.run_id) is None:
            raise UnknownRun(audit.run_id)
        # The audit's start re-checks the run's evidence chain: reviewers label only evidence that is as written.
        check = self.verify_evidence(audit.run_id)
        if not check.intact and check.first is not None:
            raise EvidenceDiffers(audit.run_id, check.first.line(), doing="an audit is drawn only from intact evidence")
        with self._writing() as conn:
            if conn.execute(select(t.run.c.id).where(t.run.c.id == audit.run_id)).first() is None:
                raise UnknownRun(audit.run_id)
            jl, r = tj.judge_label, t.rollout
            ids = sorted(item.rollout_id for item in items)
            labels: dict[str, int] = {}
            for chunk in chunks(ids):
                labels.update(
                    conn.execute(
                        select(jl.c.rollout_id, jl.c.label)
                        .join(r, r.c.id == jl.c.rollout_id)
                        .where(
                            jl.c.rollout_id.in_(chunk),
                            jl.c.config_hash == audit.config_hash,
                            jl.c.backbone == audit.backbone,
                            jl.c.status == "ok",
                            r.c.run_id == audit.run_id,
                            r.c.valid,
                        )
                    ).all()
                )
            missing = [rollout_id for rollout_id in ids if rollout_id not in labels]
            if missing:
                raise InvalidRecord(
                    f"audit {audit.id}: rollout {missing[0]} is not a valid rollout of run "
                    f"{audit.run_id} with an ok label under {audit.config_name} ({audit.backbone})"
                )
            conn.execute(
                tj.audit.insert(),
                {
                    "id": audit.id,
                    "run_id": audit.run_id,
                    "config_name": audit.config_name,
                    "config_hash": audit.config_hash,
                    "backbone": audit.backbone,
                    "seed": audit.seed,
                    "n": audit.n,
                    "stratify": list(audit.stratify),
                    "reviewers": list(audit.reviewers),
                    "adjudicator": audit.adjudicator,
                    "blind_model": bool(audit.blind_model),
                    "blind_attack": bool(audit.blind_attack),
                    "created_at": created_at,
                    "design": audit.design,
                },
            )
            taken: set[str] = set()
            drawn = _new_item_ids(conn, len(items))
            versions = evidence.latest_digests(conn, sorted(item.rollout_id for item in items))
            rows = [
                {
                    "id": drawn[n],
                    "audit_id": audit.id,
                    "rollout_id": item.rollout_id,
                    "stratum": item.stratum,
                    "population": item.population,
                    "sampled": item.sampled,
                    "weight": float(item.weight),
                    "judge_label": labels[item.rollout_id],
                    "alias": new_alias(taken),
                    "evidence_digest": versions.get(item.rollout_id),
                    "evidence_tag": new_evidence_tag(),
                }
                for n, item in enumerate(items)
            ]
            inserted = conn.execute(
                tj.audit_item.insert().returning(
                    tj.audit_item.c.id, tj.audit_item.c.rollout_id, sort_by_parameter_order=True
                ),
                rows,
            ).all()
            item_ids = {rollout_id: item_id for item_id, rollout_id in inserted}
            conn.execute(
                tj.audit_assignment.insert(),
                [
                    {
                        "audit_id": audit.id,
                        "item_id": item_ids[item.rollout_id],
                        "reviewer": name,
                        "slot": slot,
                        "position": item.positions[name],
                    }
                    for item in items
                    for name, slot in zip(audit.reviewers, AUDIT_SLOTS, strict=True)
                ],
            )
        return audit.id

    def get_audit(self, audit_id: str) -> AuditRecord:
        """The audit's record (UnknownAudit if there is none). Names the reviewers: not for reviewers' eyes."""
        with self._reading() as conn:
            return _audit_record(self._audit_row(conn, audit_id))

    def audits(self, run_id: str | None = None) -> list[AuditRecord]:
        """Every audit (of one run, if given), newest first."""
        query = select(tj.audit).order_by(tj.audit.c.created_at.desc(), tj.audit.c.id)
        if run_id is not None:
            query = query.where(tj.audit.c.run_id == run_id)
        with self._reading() as conn:
            return [_audit_record(row) for row in conn.execute(query)]

    def audit_items(self, audit_id: str) -> list[AuditItem]:
        """Analyst view of the items, by item id (never for reviewers: see AuditItem)."""
        ai, r = tj.audit_item, t.rollout
        with self._reading() as conn:
            self._audit_row(conn, audit_id)
            query = (
                select(
                    ai.c.id.label("item_id"),
                    ai.c.rollout_id,
                    r.c.case_id,
                    ai.c.stratum,
                    ai.c.population,
                    ai.c.sampled,
                    ai.c.weight,
                    ai.c.judge_label,
                    ai.c.alias,
                )
                .join(r, r.c.id == ai.c.rollout_id)
                .where(ai.c.audit_id == audit_id)
                .order_by(ai.c.id)
            )
            return [
                AuditItem(
                    item_id=row.item_id,
                    rollout_id=row.rollout_id,
                    case_id=row.case_id,
                    stratum=row.stratum,
                    population=row.population,
                    sampled=row.sampled,
                    weight=row.weight,
                    judge_label=row.judge_label,
                    alias=row.alias,
                )
                for row in conn.execute(query)
            ]

    # ------------------------------------------------------------ reviewers (blinded)

    def reviewer_queue(self, audit_id: str, reviewer: str) -> list[QueueEntry]:
        """The reviewer's items in their own order, each with their own latest label (None: not labelled)."""
        bq = tv.blind_queue
        with self._reading() as conn:
            self._check_reviewer(conn, self._blind_audit_row(conn, audit_id), reviewer)
            mine = self._own_latest(conn, audit_id, reviewer)
            query = (
                select(bq.c.position, bq.c.item_id)
                .where(bq.c.audit_id == audit_id, bq.c.reviewer == reviewer)
                .order_by(bq.c.position)
            )
            return [
                QueueEntry(
                    position=position,
                    item_id=item_id,
                    labelled=item_id in mine,
                    label=mine[item_id].label if item_id in mine else None,
                )
                for position, item_id in conn.execute(query)
            ]

    def reviewer_item(self, audit_id: str, item_id: int, reviewer: str) -> ReviewerItem:
        """One item as the reviewer may see it: the blinded evidence (alias, constraint, harness, cue,
        defense, surfaces, events, receipts, diff, plus model / strategy, vulnerability, channel unless
        blinded), their position, and their own latest label (or None)."""
        with self._reading() as conn:
            audit = self._blind_audit_row(conn, audit_id)
            self._check_reviewer(conn, audit, reviewer)
            position = self._position(conn, audit_id, item_id, reviewer)
            view = self._blinded_views(conn, audit, [item_id])[item_id]
            mine = self._own_latest(conn, audit_id, reviewer, item_id)
            return ReviewerItem(blinded=view, position=position, my_label=mine.get(item_id))

    def blinded_items(self, audit_id: str, reviewer: str | None = None) -> list[ReviewerItem]:
        """Every item's blinded evidence (as reviewer_item, without labels): in the reviewer's order with
        their position when a reviewer is given, else by item id (position None). For offline labelling files."""
        bq, bi = tv.blind_queue, tv.blind_item
        with self._reading() as conn:
            audit = self._blind_audit_row(conn, audit_id)
            if reviewer is None:
                order = [
                    (None, item_id)
                    for item_id in conn.execute(
                        select(bi.c.item_id).where(bi.c.audit_id == audit_id).order_by(bi.c.item_id)
                    ).scalars()
                ]
            else:
                self._check_reviewer(conn, audit, reviewer)
                order = [
                    (position, item_id)
                    for position, item_id in conn.execute(
                        select(bq.c.position, bq.c.item_id)
                        .where(bq.c.audit_id == audit_id, bq.c.reviewer == reviewer)
                        .order_by(bq.c.position)
                    )
                ]
            views = self._blinded_views(conn, audit, [item_id for _, item_id in order])
        return [ReviewerItem(blinded=views[item_id], position=position) for position, item_id in order]

    def submit_label(self, audit_id: str, item_id: int, reviewer: str, label: str, note: str = "") -> OwnLabel:
        """The reviewer's first label for an item (write-once: a second submission raises LabelAlreadySubmitted)."""
        self.submit_labels(audit_id, reviewer, [(item_id, label, note)])
        return self._own_latest_one(audit_id, item_id, reviewer)

    def submit_labels(
        self, audit_id: str, reviewer: str, entries: Iterable[tuple[int, str, str]], *, skip_identical: bool = False
    ) -> int:
        """First labels for many items in one transaction, all or nothing; returns how many were written.

        Every entry is checked before anything is written: the label value (BadLabel), the audit
        (UnknownAudit), the reviewer (UnknownReviewer), each item in the reviewer's queue
        (ItemNotInQueue) and not yet labelled (LabelAlreadySubmitted). With skip_identical, an entry
        equal to the stored first submission (label and note) is skipped instead, so re-importing a
        file is harmless.
        """
        wanted: dict[int, tuple[str, str]] = {}
        for item_id, label, note in entries:
            check_label(label)
            if item_id in wanted:
                raise InvalidRecord(f"item {item_id} is labelled twice in one submission")
            wanted[item_id] = (label, clean_text(note or "") or "")
        if not wanted:
            return 0
        al = tj.audit_label
        with self._label_writing(audit_id, None) as conn:
            self._check_reviewer(conn, self._blind_audit_row(conn, audit_id), reviewer)
            queue = self._queue_ids(conn, audit_id, reviewer)
            for item_id in wanted:
                if item_id not in queue:
                    raise ItemNotInQueue(audit_id, item_id, reviewer)
            first = self._own_first(conn, audit_id, reviewer)
            rows: list[dict[str, Any]] = []
            now = datetime.now(UTC)
            for item_id in sorted(wanted):
                label, note = wanted[item_id]
                if item_id in first:
                    if skip_identical and first[item_id] == (label, note):
                        continue
                    raise LabelAlreadySubmitted(item_id, reviewer)
                rows.append(
                    {
                        "item_id": item_id,
                        "reviewer": reviewer,
                        "label": label,
                        "note": note,
                        "version": 1,
                        "reason": None,
                        "created_at": now,
                    }
                )
            if rows and conn.dialect.name == "postgresql":
                # Through the definer function (no member may write the table), one row at a time.
                lost = [row["item_id"] for row in rows if _pg_write(conn, "redagent_submit_label", audit_id, row) != 1]
                if lost:  # a concurrent submission won the race: nothing of this batch is kept
                    raise LabelAlreadySubmitted(lost[0], reviewer)
            elif rows:
                tags = self._evidence_tags(conn, audit_id, [row["item_id"] for row in rows])
                rows = [{**row, "evidence_tag": tags.get(row["item_id"])} for row in rows]
                insert = (
                    self._insert(conn, al)
                    .on_conflict_do_nothing(index_elements=["item_id", "reviewer", "version"])
                    .returning(al.c.item_id)
                )
                written = set(conn.execute(insert, rows).scalars())
                lost = [row["item_id"] for row in rows if row["item_id"] not in written]
                if lost:  # a concurrent submission won the race: nothing of this batch is kept
                    raise LabelAlreadySubmitted(lost[0], reviewer)
            return len(rows)

    def correct_label(
        self, audit_id: str, item_id: int, reviewer: str, label: str, reason: str, note: str = ""
    ) -> OwnLabel:
        """Append the next version of the reviewer's label with the reason for the change; returns it."""
        check_label(label)
        if not reason or not reason.strip():
            raise CorrectionWithoutReason(item_id)
        with self._label_writing(audit_id, item_id) as conn:
            self._check_reviewer(conn, self._blind_audit_row(conn, audit_id), reviewer)
            self._position(conn, audit_id, item_id, reviewer)
            al, own = tj.audit_label, tv.own_label
            self._append_version(
                conn,
                al,
                {"item_id": item_id, "reviewer": reviewer},
                (own.c.item_id == item_id) & (own.c.reviewer == reviewer),
                label,
                note,
                reason,
                reviewer,
                audit_id=audit_id,
                mine_in=own,
            )
        return self._own_latest_one(audit_id, item_id, reviewer)

    # ------------------------------------------------------------ adjudicator (blinded)

    def adjudication_queue(self, audit_id: str, adjudicator: str) -> list[AdjudicationItem]:
        """Items whose reviewers disagree (see needs_adjudication), by item id: the blinded evidence, the
        reviewers' current and first labels by slot letter, and the adjudicator's own latest decision (or None)."""
        with self._reading() as conn:
            audit = self._blind_audit_row(conn, audit_id)
            self._check_adjudicator(audit, adjudicator)
            state = self._label_state(conn, audit_id)
            pending = sorted(item_id for item_id, (first, latest) in state.items() if needs_adjudication(first, latest))
            views = self._blinded_views(conn, audit, pending)
            decided = self._adjudicated(conn, audit_id)
        return [
            AdjudicationItem(
                blinded=views[item_id],
                labels=dict(sorted(state[item_id][1].items())),
                first_labels=dict(sorted(state[item_id][0].items())),
                decision=decided.get(item_id),
            )
            for item_id in pending
        ]

    def adjudicator_overview(self, audit_id: str, adjudicator: str) -> AdjudicatorOverview:
        """What the adjudicator may know of an audit's progress: its size, each item's alias under `cases` (the
        cluster of agreement's interval: the adjudicator cannot see which items share a case, so each item is
        its own), first and latest labels by slot letter (never names or notes), and the adjudicator's own
        decisions."""
        with self._reading() as conn:
            audit = self._blind_audit_row(conn, audit_id)
            self._check_adjudicator(audit, adjudicator)
            state = self._label_state(conn, audit_id)
            decided = self._adjudicated(conn, audit_id)
            bi = tv.blind_item
            cases = dict(conn.execute(select(bi.c.item_id, bi.c.alias).where(bi.c.audit_id == audit_id)).all())
        return AdjudicatorOverview(
            audit_id=audit_id,
            items=int(audit.n),
            adjudicator=adjudicator,
            cases=cases,
            first={item: dict(first) for item, (first, _) in state.items()},
            latest={item: dict(latest) for item, (_, latest) in state.items()},
            adjudicated={item: entry.label for item, entry in decided.items()},
        )

    def adjudicate(self, audit_id: str, item_id: int, adjudicator: str, label: str, note: str = "") -> OwnLabel:
        """The adjudicator's label for an item in the adjudication queue (write-once, like reviewer labels)."""
        check_label(label)
        ad = tj.adjudication
        with self._label_writing(audit_id, item_id) as conn:
            self._check_adjudicator(self._blind_audit_row(conn, audit_id), adjudicator)
            self._check_disputed(conn, audit_id, item_id, adjudicator)
            row = {
                "item_id": item_id,
                "adjudicator": adjudicator,
                "label": label,
                "note": clean_text(note or "") or "",
                "version": 1,
                "reason": None,
                "created_at": datetime.now(UTC),
            }
            if conn.dialect.name == "postgresql":
                own = tv.own_adjudication
                written = (
                    conn.execute(select(own.c.version).where(own.c.item_id == item_id)).first() is None
                    and _pg_write(conn, "redagent_adjudicate", audit_id, row) == 1
                )
            else:
                row["evidence_tag"] = self._evidence_tags(conn, audit_id, [item_id]).get(item_id)
                insert = (
                    self._insert(conn, ad)
                    .on_conflict_do_nothing(index_elements=["item_id", "version"])
                    .returning(ad.c.id)
                )
                written = conn.execute(insert, row).first() is not None
            if not written:
                raise LabelAlreadySubmitted(item_id, adjudicator)
        return self._adjudication_one(audit_id, item_id)

    def correct_adjudication(
        self, audit_id: str, item_id: int, adjudicator: str, label: str, reason: str, note: str = ""
    ) -> OwnLabel:
        """Append the next version of the adjudication with the reason for the change; returns it."""
        check_label(label)
        if not reason or not reason.strip():
            raise CorrectionWithoutReason(item_id)
        ad = tj.adjudication
        with self._label_writing(audit_id, item_id) as conn:
            self._check_adjudicator(self._blind_audit_row(conn, audit_id), adjudicator)
            self._check_disputed(conn, audit_id, item_id, adjudicator)
            own = tv.own_adjudication
            self._append_version(
                conn,
                ad,
                {"item_id": item_id, "adjudicator": adjudicator},
                own.c.item_id == item_id,
                label,
                note,
                reason,
                adjudicator,
                audit_id=audit_id,
                mine_in=own,
            )
        return self._adjudication_one(audit_id, item_id)

    # ------------------------------------------------------------ closing and re-opening (analysts; the owner acts)

    def audit_closures(self, audit_id: str) -> list[AuditClosureRecord]:
        """The audit's closes and re-opens, oldest first; the last says whether it is closed (analyst view)."""
        ac = tj.audit_closure
        with self._reading() as conn:
            self._audit_row(conn, audit_id)
            return [
                AuditClosureRecord(action=row.action, made_by=row.made_by, reason=row.reason, created_at=row.created_at)
                for row in conn.execute(
                    select(ac.c.action, ac.c.made_by, ac.c.reason, ac.c.created_at)
                    .where(ac.c.audit_id == audit_id)
                    .order_by(ac.c.id)
                )
            ]

    def close_audit(self, audit_id: str, reason: str) -> AuditClosureRecord:
        """The owner closes an audit by hand (it closes by itself once every item has its final label)."""
        return self._closure(audit_id, "close", reason)

    def reopen_audit(self, audit_id: str, reason: str) -> AuditClosureRecord:
        """The owner re-opens a closed audit, recording why; the next write that completes it closes it again."""
        return self._closure(audit_id, "reopen", reason)

    def _closure(self, audit_id: str, action: str, reason: str) -> AuditClosureRecord:
        self._require_owner("close or re-open an audit")
        if not reason or not reason.strip():
            raise AuditStateError(f"audit {audit_id}: to {'close' if action == 'close' else 're-open'} it, say why")
        closures = self.audit_closures(audit_id)
        closed = bool(closures) and closures[-1].action == "close"
        if closed == (action == "close"):
            raise AuditStateError(f"audit {audit_id} is already {'closed' if closed else 'open'}")
        record = AuditClosureRecord(
            action=action,
            made_by=self._made_by(),
            reason=clean_text(reason.strip()) or "",
            created_at=datetime.now(UTC),
        )
        try:
            with self._writing() as conn:
                conn.execute(tj.audit_closure.insert(), {"audit_id": audit_id, **dataclasses.asdict(record)})
        except WriteRejected as exc:  # a concurrent close or re-open came first
            raise AuditStateError(f"audit {audit_id}: {exc.reason}") from exc
        return record

    # ------------------------------------------------------------ results (analysts)

    def labels(self, audit_id: str, first_only: bool = True) -> list[ReviewerLabel]:
        """Reviewer labels by item, slot and version. first_only keeps first submissions (what agreement is
        measured on); else every version."""
        al, aa, ai = tj.audit_label, tj.audit_assignment, tj.audit_item
        query = (
            select(
                al.c.item_id,
                al.c.reviewer,
                aa.c.slot,
                al.c.label,
                al.c.note,
                al.c.version,
                al.c.reason,
                al.c.created_at,
            )
            .join(aa, (aa.c.item_id == al.c.item_id) & (aa.c.reviewer == al.c.reviewer))
            .join(ai, ai.c.id == al.c.item_id)
            .where(ai.c.audit_id == audit_id)
            .order_by(al.c.item_id, aa.c.slot, al.c.version)
        )
        if first_only:
            query = query.where(al.c.version == 1)
        with self._reading() as conn:
            self._audit_row(conn, audit_id)
            return [
                ReviewerLabel(
                    item_id=row.item_id,
                    reviewer=row.reviewer,
                    slot=row.slot,
                    label=row.label,
                    note=row.note,
                    version=row.version,
                    reason=row.reason,
                    created_at=row.created_at,
                )
                for row in conn.execute(query)
            ]

    def adjudications(self, audit_id: str) -> list[Adjudication]:
        """Every adjudication version, by item and version."""
        ad, ai = tj.adjudication, tj.audit_item
        query = (
            select(ad.c.item_id, ad.c.adjudicator, ad.c.label, ad.c.note, ad.c.version, ad.c.reason, ad.c.created_at)
            .join(ai, ai.c.id == ad.c.item_id)
            .where(ai.c.audit_id == audit_id)
            .order_by(ad.c.item_id, ad.c.version)
        )
        with self._reading() as conn:
            self._audit_row(conn, audit_id)
            return [
                Adjudication(
                    item_id=row.item_id,
                    adjudicator=row.adjudicator,
                    label=row.label,
                    note=row.note,
                    version=row.version,
                    reason=row.reason,
                    created_at=row.created_at,
                )
                for row in conn.execute(query)
            ]

    def final_labels(self, audit_id: str) -> list[FinalLabel]:
        """Per item, by item id: the item (as audit_items), the reviewers' first and latest labels by slot, the
        adjudicator's latest label, and the final label: the adjudicated one if any ("adjudicated"), else the
        reviewers' label when they agree ("agreed"), else None ("awaiting_review" / "awaiting_adjudication").

        Every analyst read of the figures goes through here: when every item has its final label, the read closes
        the audit (migration 0016), so what has been reported stays as reported until the owner re-opens it. (A
        reviewer's own write never closes it: whether it did would tell her whether her peer agreed with her.)"""
        items = self.audit_items(audit_id)
        with self._reading() as conn:
            state = self._label_state(conn, audit_id)
            decided = self._adjudicated(conn, audit_id)
        out = []
        for item in items:
            first, latest = state.get(item.item_id, ({}, {}))
            decision = decided.get(item.item_id)
            adjudicated = decision.label if decision is not None else None
            if adjudicated is not None:
                final, source = adjudicated, "adjudicated"
            elif set(first) != set(AUDIT_SLOTS):
                final, source = None, "awaiting_review"
            elif needs_adjudication(first, latest):
                final, source = None, "awaiting_adjudication"
            else:
                final, source = latest["A"], "agreed"
            out.append(
                FinalLabel(
                    item=item,
                    A=latest.get("A"),
                    B=latest.get("B"),
                    A_first=first.get("A"),
                    B_first=first.get("B"),
                    adjudication=adjudicated,
                    final=final,
                    source=source,
                    human=HUMAN_TO_BINARY[final] if final is not None else None,
                )
            )
        if out and all(item.final is not None for item in out):
            self._close_complete(audit_id)
        return out

    def _close_complete(self, audit_id: str) -> None:
        """Close a complete audit that was never closed (its figures were read); a concurrent reader may have done
        it. One the owner re-opened stays open until the owner closes it again (or a decision completes it)."""
        if self.audit_closures(audit_id):
            return
        try:
            with self._writing() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT redagent_close_complete(:audit)"), {"audit": audit_id})
                else:
                    conn.execute(
                        tj.audit_closure.insert(),
                        {
                            "audit_id": audit_id,
                            "action": "close",
                            "made_by": "redagent",
                            "reason": "its figures were read with every item final",
                            "created_at": datetime.now(UTC),
                        },
                    )
        except WriteRejected:
            if not self.audit_closures(audit_id):  # not a concurrent close: a real refusal
                raise

    # ------------------------------------------------------------ helpers

    @staticmethod
    def _audit_row(conn: Connection, audit_id: str) -> Any:
        row = conn.execute(select(tj.audit).where(tj.audit.c.id == audit_id)).first()
        if row is None:
            raise UnknownAudit(audit_id)
        return row

    @staticmethod
    def _blind_audit_row(conn: Connection, audit_id: str) -> Any:
        """The audit as its reviewers and adjudicator may see it (blind_audit: no run, config, names of
        the reviewers); on a team store an audit the login has no part in does not exist for it."""
        row = conn.execute(select(tv.blind_audit).where(tv.blind_audit.c.id == audit_id)).first()
        if row is None:
            raise UnknownAudit(audit_id)
        return row

    @staticmethod
    def _check_reviewer(conn: Connection, audit: Any, reviewer: str) -> None:
        bq = tv.blind_queue
        if (
            conn.execute(
                select(bq.c.item_id).where(bq.c.audit_id == audit.id, bq.c.reviewer == reviewer).limit(1)
            ).first()
            is None
        ):
            raise UnknownReviewer(audit.id, reviewer)

    @staticmethod
    def _evidence_tags(conn: Connection, audit_id: str, item_ids: Sequence[int]) -> dict[int, str | None]:
        """The evidence version each item shows (blind_item): what a label written without the definer functions
        (SQLite) records, and the database checks (migration 0015; on PostgreSQL its trigger fills it in)."""
        bi = tv.blind_item
        tags: dict[int, str | None] = {}
        for chunk in chunks(sorted(set(item_ids))):
            tags.update(
                conn.execute(
                    select(bi.c.item_id, bi.c.evidence_tag).where(bi.c.audit_id == audit_id, bi.c.item_id.in_(chunk))
                ).all()
            )
        return tags

    @staticmethod
    def _check_adjudicator(audit: Any, adjudicator: str) -> None:
        if adjudicator != audit.adjudicator:
            raise UnknownReviewer(audit.id, adjudicator, role="adjudicator")

    @staticmethod
    def _position(conn: Connection, audit_id: str, item_id: int, reviewer: str) -> int:
        bq = tv.blind_queue
        position = conn.execute(
            select(bq.c.position).where(bq.c.audit_id == audit_id, bq.c.item_id == item_id, bq.c.reviewer == reviewer)
        ).scalar_one_or_none()
        if position is None:
            raise ItemNotInQueue(audit_id, item_id, reviewer)
        return int(position)

    @staticmethod
    def _queue_ids(conn: Connection, audit_id: str, reviewer: str) -> set[int]:
        bq = tv.blind_queue
        return set(
            conn.execute(select(bq.c.item_id).where(bq.c.audit_id == audit_id, bq.c.reviewer == reviewer)).scalars()
        )

    @staticmethod
    def _own_first(conn: Connection, audit_id: str, reviewer: str) -> dict[int, tuple[str, str]]:
        al, bq = tv.own_label, tv.blind_queue
        query = (
            select(al.c.item_id, al.c.label, al.c.note)
            .join(bq, (bq.c.item_id == al.c.item_id) & (bq.c.reviewer == al.c.reviewer))
            .where(bq.c.audit_id == audit_id, al.c.reviewer == reviewer, al.c.version == 1)
        )
        return {item_id: (label, note) for item_id, label, note in conn.execute(query)}

    @staticmethod
    def _own_latest(conn: Connection, audit_id: str, reviewer: str, item_id: int | None = None) -> dict[int, OwnLabel]:
        """The reviewer's own latest label per item (only their rows are read)."""
        al, bq = tv.own_label, tv.blind_queue
        query = (
            select(al.c.item_id, al.c.label, al.c.note, al.c.version)
            .join(bq, (bq.c.item_id == al.c.item_id) & (bq.c.reviewer == al.c.reviewer))
            .where(bq.c.audit_id == audit_id, al.c.reviewer == reviewer)
            .order_by(al.c.item_id, al.c.version)
        )
        if item_id is not None:
            query = query.where(al.c.item_id == item_id)
        return {
            row_item: OwnLabel(item_id=row_item, label=label, note=note, version=version)
            for row_item, label, note, version in conn.execute(query)
        }  # later versions overwrite

    def _own_latest_one(self, audit_id: str, item_id: int, reviewer: str) -> OwnLabel:
        with self._reading() as conn:
            return self._own_latest(conn, audit_id, reviewer, item_id)[item_id]

    @staticmethod
    def _label_state(
        conn: Connection, audit_id: str, item_id: int | None = None
    ) -> dict[int, tuple[dict[str, str], dict[str, str]]]:
        """Per item: ({slot: first label}, {slot: latest label}) over both reviewers."""
        sl = tv.blind_slot_label
        query = (
            select(sl.c.item_id, sl.c.slot, sl.c.label, sl.c.version)
            .where(sl.c.audit_id == audit_id)
            .order_by(sl.c.item_id, sl.c.slot, sl.c.version)
        )
        if item_id is not None:
            query = query.where(sl.c.item_id == item_id)
        state: dict[int, tuple[dict[str, str], dict[str, str]]] = {}
        for row_item, slot, label, version in conn.execute(query):
            first, latest = state.setdefault(row_item, ({}, {}))
            if version == 1:
                first[slot] = label
            latest[slot] = label
        return state

    @staticmethod
    def _adjudicated(conn: Connection, audit_id: str) -> dict[int, OwnLabel]:
        """The adjudicator's latest decision per item."""
        ad, bi = tv.own_adjudication, tv.blind_item
        query = (
            select(ad.c.item_id, ad.c.label, ad.c.note, ad.c.version)
            .join(bi, bi.c.item_id == ad.c.item_id)
            .where(bi.c.audit_id == audit_id)
            .order_by(ad.c.item_id, ad.c.version)
        )
        return {
            item_id: OwnLabel(item_id=item_id, label=label, note=note, version=version)
            for item_id, label, note, version in conn.execute(query)
        }

    def _adjudication_one(self, audit_id: str, item_id: int) -> OwnLabel:
        with self._reading() as conn:
            return self._adjudicated(conn, audit_id)[item_id]

    def _check_disputed(self, conn: Connection, audit_id: str, item_id: int, adjudicator: str) -> None:
        bi = tv.blind_item
        if conn.execute(select(bi.c.item_id).where(bi.c.item_id == item_id, bi.c.audit_id == audit_id)).first() is None:
            raise ItemNotInQueue(audit_id, item_id, adjudicator, queue="adjudication")
        first, latest = self._label_state(conn, audit_id, item_id).get(item_id, ({}, {}))
        if not needs_adjudication(first, latest):
            raise ItemNotInQueue(audit_id, item_id, adjudicator, queue="adjudication")

    def _append_version(
        self,
        conn: Connection,
        table: Table,
        who: dict[str, Any],
        mine: Any,
        label: str,
        note: str,
        reason: str,
        name: str,
        *,
        audit_id: str,
        mine_in: Table,
    ) -> None:
        """The next version of the writer's label or decision (`mine` selects their rows in `mine_in`, the view
        of their own rows); on PostgreSQL through the definer function, which takes the version itself."""
        item_id = who["item_id"]
        current = conn.execute(select(func.max(mine_in.c.version)).where(mine)).scalar_one_or_none()
        if current is None:
            raise NothingToCorrect(item_id, name)
        row = {
            **who,
            "label": label,
            "note": clean_text(note or "") or "",
            "version": int(current) + 1,
            "reason": clean_text(reason.strip()),
            "created_at": datetime.now(UTC),
        }
        if conn.dialect.name == "postgresql":
            function = "redagent_submit_label" if "reviewer" in who else "redagent_adjudicate"
            if _pg_write(conn, function, audit_id, row) != row["version"]:
                raise LabelConflict(item_id, name)
            return
        key = ["item_id", "reviewer", "version"] if "reviewer" in who else ["item_id", "version"]
        row["evidence_tag"] = self._evidence_tags(conn, audit_id, [item_id]).get(item_id)
        if (
            conn.execute(
                self._insert(conn, table).on_conflict_do_nothing(index_elements=key).returning(table.c.id), row
            ).first()
            is None
        ):
            raise LabelConflict(item_id, name)

    @staticmethod
    def _blinded_views(conn: Connection, audit: Any, item_ids: Sequence[int]) -> dict[int, BlindedRollout]:
        """The blinded evidence of these items of `audit`, by item id, read only from the blinded views.

        The blinding itself is in the views' SQL (migration 0005); here blinded columns, which the views
        return as NULL, are not even selected and are named in the record's `hidden`, so a reader never
        mistakes "hidden" for "none".
        """
        bi, ev, rc, df = tv.blind_item, tv.blind_event, tv.blind_receipt, tv.blind_diff
        hidden = ({"model"} if audit.blind_model else set()) | (
            {"strategy", "vulnerability", "channel", "original", "tampered"} if audit.blind_attack else set()
        )
        item_columns = [c for c in bi.c if c.name not in hidden | {"audit_id", "blind_model", "blind_attack"}]
        event_columns = [c for c in ev.c if c.name not in hidden | {"audit_id"}]
        receipt_columns = [c for c in rc.c if c.name != "audit_id"]
        diff_columns = [df.c.item_id, df.c.path, df.c.op, df.c.before, df.c.after]
        items: dict[int, Any] = {}
        events: dict[int, list[StoredEvent]] = {}
        receipts: dict[int, list[StoredReceipt]] = {}
        diffs: dict[int, list[StoredDiffEntry]] = {}
        for chunk in chunks(sorted(set(item_ids))):
            for row in conn.execute(select(*item_columns).where(bi.c.audit_id == audit.id, bi.c.item_id.in_(chunk))):
                items[row.item_id] = row._mapping
                events[row.item_id], receipts[row.item_id], diffs[row.item_id] = [], [], []
            for row in conn.execute(
                select(*event_columns)
                .where(ev.c.audit_id == audit.id, ev.c.item_id.in_(chunk))
                .order_by(ev.c.item_id, ev.c.idx)
            ):
                events[row.item_id].append(stored_event(row._mapping))
            for row in conn.execute(
                select(*receipt_columns)
                .where(rc.c.audit_id == audit.id, rc.c.item_id.in_(chunk))
                .order_by(rc.c.item_id, rc.c.seq)
            ):
                receipts[row.item_id].append(stored_receipt(row._mapping))
            for row in conn.execute(
                select(*diff_columns)
                .where(df.c.audit_id == audit.id, df.c.item_id.in_(chunk))
                .order_by(df.c.item_id, df.c.entry_id)
            ):
                diffs[row.item_id].append(stored_diff_entry(row._mapping))
        shown = frozenset(hidden)
        return {
            item_id: BlindedRollout(
                events=tuple(events[item_id]),
                receipts=tuple(receipts[item_id]),
                diff=tuple(diffs[item_id]),
                item_id=item_id,
                alias=row["alias"],
                constraint=row["constraint"],
                harness=row["harness"],
                cue=row["cue"],
                defense=row["defense"],
                surfaces=tuple(row["surfaces"].split(",")) if row["surfaces"] else (),
                model=row.get("model"),
                strategy=row.get("strategy"),
                vulnerability=row.get("vulnerability"),
                channel=row.get("channel"),
                hidden=shown,
                evidence_tag=row.get("evidence_tag"),
                evidence_intact=row.get("evidence_intact") is not False and row.get("evidence_intact") != 0,
            )
            for item_id, row in items.items()
        }
