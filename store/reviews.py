"""Expert case review in construction rounds: rounds of sampled case versions, write-once rubric reviews
with versioned corrections; and the audit lookup the console needs to open a reviewer's queue.

Exposed as methods of `Store` (this module's `ReviewQueries` is one of its mixins): `store.create_round`,
`store.expert_queue`, `store.submit_review`, `store.correct_review`, `store.case_reviews`, ...

As with audit labels, a review is write-once: a second submission by the same expert is refused
(ReviewAlreadySubmitted) and a correction appends the next version with a reason. The expert-facing
method (`expert_queue`) returns only the expert's own reviews, so one expert cannot read the other's
while the round is open; agreement is measured on first submissions (`case_reviews(first_only=True)`).
The expert-facing methods read the own-row views of migration 0010 (`my_round`, `my_round_case`,
`own_review`); on a PostgreSQL team store those name no other expert and return no other expert's row,
and reviews are written through `redagent_submit_review`, which names the expert from the login.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Table, func, select, text

from redagent.errors import UserError
from redagent.store import tables_reviews as tr
from redagent.store import tables_team as tv
from redagent.store.connect import DialectInsert
from redagent.store.errors import InvalidRecord
from redagent.store.rows import aware, clean_text

RUBRIC_ITEMS = ("ivc_consistency", "threat_model_compliance", "task_attack_coherence", "verifier_correctness")
RUBRIC_VALUES = ("pass", "fail", "unsure")
DECISIONS = ("accept", "revise", "exclude")
ROLES = ("reviewer", "adjudicator")


# ---------------------------------------------------------------- errors


class ReviewError(UserError, ValueError):
    """A request about a case review that cannot be honoured; `str()` is one line for the user.

    Messages never show another expert's review: they may be read by an expert mid-round.
    """

    title = "Case review error"


class UnknownRound(ReviewError, LookupError):
    def __init__(self, round_id: str) -> None:
        self.round_id = round_id
        super().__init__(f"no review round {round_id!r} in the store")


class UnknownExpert(ReviewError):
    def __init__(self, round_id: str, name: str) -> None:
        self.round_id, self.name = round_id, name
        super().__init__(f"{name!r} is not an expert of review round {round_id}")


class CaseNotInRound(ReviewError):
    def __init__(self, round_id: str, case_id: str) -> None:
        self.round_id, self.case_id = round_id, case_id
        super().__init__(f"case {case_id} is not in review round {round_id}")


class ReviewAlreadySubmitted(ReviewError):
    def __init__(self, case_id: str, name: str) -> None:
        self.case_id, self.name = case_id, name
        super().__init__(
            f"case {case_id}: {name} already submitted a review (reviews are write-once: correct it with a reason)"
        )


class BadReview(ReviewError):
    """A rubric or decision outside the allowed values (the message names the field)."""


class ReviewCorrectionWithoutReason(ReviewError):
    def __init__(self, case_id: str) -> None:
        self.case_id = case_id
        super().__init__(f"case {case_id}: a correction needs a reason")


class NoReviewToCorrect(ReviewError):
    def __init__(self, case_id: str, name: str) -> None:
        self.case_id, self.name = case_id, name
        super().__init__(f"case {case_id}: {name} has no review to correct yet (submit one first)")


class ReviewConflict(ReviewError):
    def __init__(self, case_id: str, name: str) -> None:
        self.case_id, self.name = case_id, name
        super().__init__(f"case {case_id}: another review by {name} was saved at the same time; reload and retry")


# ---------------------------------------------------------------- records and checks


@dataclass(frozen=True)
class RoundCaseRecord:
    """A case version sampled into a round, pinned by its content hash."""

    case_id: str
    case_version: int
    case_hash: str


@dataclass(frozen=True, slots=True)
class ReviewRound:
    """A construction round as analysts read it: its id, seed, size, the two experts and when it was made."""

    id: str
    seed: int
    n: int
    experts: tuple[str, ...]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RoundCase:
    """A case version of a round at its review position, pinned by its content hash."""

    position: int
    case_id: str
    case_version: int
    case_hash: str


@dataclass(frozen=True, slots=True)
class CaseReview:
    """One version of an expert's review of a case (analysts' view: names the expert)."""

    case_id: str
    expert: str
    rubric: Mapping[str, str]
    decision: str
    note: str
    version: int
    reason: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class OwnReview:
    """An expert's own latest review of a case: rubric item → pass/fail/unsure, the decision, their note, its version
    (1 for the first submission) and the reason given for it when it is a correction."""

    case_id: str
    rubric: Mapping[str, str]
    decision: str  # accept | revise | exclude
    note: str
    version: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ExpertQueueEntry:
    """One case version of an expert's round, in review order, with their own latest review (None: not yet)."""

    position: int
    case_id: str
    case_version: int
    case_hash: str
    review: OwnReview | None

    @property
    def reviewed(self) -> bool:
        return self.review is not None


def check_review(rubric: Mapping[str, Any], decision: object) -> dict[str, str]:
    """The rubric as a plain dict with exactly the four items, each pass/fail/unsure; BadReview otherwise."""
    if not isinstance(rubric, Mapping):
        raise BadReview(f"rubric must be an object with {', '.join(RUBRIC_ITEMS)}")
    unknown = sorted(set(rubric) - set(RUBRIC_ITEMS))
    if unknown:
        raise BadReview(f"rubric: unknown item {unknown[0]!r} (items: {', '.join(RUBRIC_ITEMS)})")
    for item in RUBRIC_ITEMS:
        if item not in rubric:
            raise BadReview(f"rubric.{item}: missing (one of {', '.join(RUBRIC_VALUES)})")
        if rubric[item] not in RUBRIC_VALUES:
            raise BadReview(f"rubric.{item}: bad value {rubric[item]!r} (one of {', '.join(RUBRIC_VALUES)})")
    if decision not in DECISIONS:
        raise BadReview(f"decision: bad value {decision!r} (one of {', '.join(DECISIONS)})")
    return {item: str(rubric[item]) for item in RUBRIC_ITEMS}


def _round_record(row: Any) -> ReviewRound:
    return ReviewRound(id=row.id, seed=row.seed, n=row.n, experts=tuple(row.experts), created_at=row.created_at)


def _validate_round(round_id: str, seed: int, experts: Sequence[str], cases: Sequence[RoundCaseRecord]) -> None:
    where = f"review round {round_id}"
    if not round_id:
        raise InvalidRecord("a review round needs an id")
    names = list(experts)
    if len(names) != 2 or len(set(names)) != 2 or not all(isinstance(n, str) and n and n == n.strip() for n in names):
        raise InvalidRecord(f"{where}: needs exactly two distinct, non-empty expert names, not {names!r}")
    if not -(2**63) <= seed <= 2**63 - 1:
        raise InvalidRecord(f"{where}: seed {seed} does not fit in 64 bits")
    if not cases:
        raise InvalidRecord(f"{where}: a round needs at least one case")
    if len({c.case_id for c in cases}) != len(cases):
        raise InvalidRecord(f"{where}: a case is sampled twice")
    for c in cases:
        if not c.case_id or not c.case_hash or not isinstance(c.case_version, int) or c.case_version < 1:
            raise InvalidRecord(f"{where}: case {c.case_id!r} needs an id, a positive version and a content hash")


def _pg_write_review(conn: Connection, row: dict[str, Any]) -> int | None:
    """A review written through `redagent_submit_review` (migration 0010), which names the expert from the
    login and takes the next version; the version written, or None when a concurrent one took it."""
    return conn.execute(
        text(
            "SELECT redagent_submit_review(:round_id, :case_id, :expert, CAST(:rubric AS json), :decision, :note, "
            ":reason)"
        ),
        {
            **{key: row[key] for key in ("round_id", "case_id", "expert", "decision", "note", "reason")},
            "rubric": json.dumps(row["rubric"]),
        },
    ).scalar_one_or_none()


class ReviewQueries:
    """Store methods for case review rounds (mixed into `Store`, which provides the plumbing)."""

    if TYPE_CHECKING:
        url: str
        _reading: Callable[[], AbstractContextManager[Connection]]
        _writing: Callable[[], AbstractContextManager[Connection]]

        @staticmethod
        def _insert(conn: Connection, table: Table) -> DialectInsert: ...

    # ------------------------------------------------------------ rounds

    def create_round(
        self,
        round_id: str,
        seed: int,
        experts: Sequence[str],
        cases: Sequence[RoundCaseRecord],
        *,
        created_at: datetime | None = None,
    ) -> str:
        """Store a round and its case versions (positions 1..n in the order given) in one transaction."""
        _validate_round(round_id, seed, experts, cases)
        created = aware(created_at, f"review round {round_id}: created_at") or datetime.now(UTC)
        with self._writing() as conn:
            conn.execute(
                tr.review_round.insert(),
                {"id": round_id, "seed": seed, "n": len(cases), "experts": list(experts), "created_at": created},
            )
            conn.execute(
                tr.round_case.insert(),
                [
                    {
                        "round_id": round_id,
                        "case_id": c.case_id,
                        "case_version": c.case_version,
                        "case_hash": c.case_hash,
                        "position": position,
                    }
                    for position, c in enumerate(cases, start=1)
                ],
            )
        return round_id

    def get_round(self, round_id: str) -> ReviewRound:
        """The round (UnknownRound if there is none)."""
        with self._reading() as conn:
            return _round_record(self._round_row(conn, round_id))

    def review_rounds(self) -> list[ReviewRound]:
        """Every round, newest first."""
        query = select(tr.review_round).order_by(tr.review_round.c.created_at.desc(), tr.review_round.c.id)
        with self._reading() as conn:
            return [_round_record(row) for row in conn.execute(query)]

    def round_cases(self, round_id: str) -> list[RoundCase]:
        """The round's case versions in review order."""
        rc = tr.round_case
        with self._reading() as conn:
            self._round_row(conn, round_id)
            query = (
                select(rc.c.position, rc.c.case_id, rc.c.case_version, rc.c.case_hash)
                .where(rc.c.round_id == round_id)
                .order_by(rc.c.position)
            )
            return [
                RoundCase(
                    position=row.position, case_id=row.case_id, case_version=row.case_version, case_hash=row.case_hash
                )
                for row in conn.execute(query)
            ]

    def latest_round_for(self, expert: str) -> str | None:
        """The id of the newest round naming `expert`, or None."""
        rr = tv.my_round  # an expert's login reads only their own rounds
        query = select(rr.c.id, rr.c.experts).order_by(rr.c.created_at.desc(), rr.c.id)
        with self._reading() as conn:
            for round_id, experts in conn.execute(query):
                if expert in (experts or []):
                    return str(round_id)
        return None

    # ------------------------------------------------------------ experts

    def expert_queue(self, round_id: str, expert: str) -> list[ExpertQueueEntry]:
        """The round's cases for one expert, in order, each with their own latest review (or None). Only their rows
        are read."""
        rc, cr = tv.my_round_case, tv.own_review
        with self._reading() as conn:
            self._check_expert(self._my_round_row(conn, round_id), expert)
            own = (
                select(cr.c.case_id, cr.c.rubric, cr.c.decision, cr.c.note, cr.c.version, cr.c.reason)
                .where(cr.c.round_id == round_id, cr.c.expert == expert)
                .order_by(cr.c.case_id, cr.c.version)
            )
            mine = {
                case_id: OwnReview(
                    case_id=case_id, rubric=dict(rubric), decision=decision, note=note, version=version, reason=reason
                )
                for case_id, rubric, decision, note, version, reason in conn.execute(own)
            }  # later ones overwrite
            query = (
                select(rc.c.position, rc.c.case_id, rc.c.case_version, rc.c.case_hash)
                .where(rc.c.round_id == round_id)
                .order_by(rc.c.position)
            )
            return [
                ExpertQueueEntry(
                    position=row.position,
                    case_id=row.case_id,
                    case_version=row.case_version,
                    case_hash=row.case_hash,
                    review=mine.get(row.case_id),
                )
                for row in conn.execute(query)
            ]

    def submit_review(
        self, round_id: str, case_id: str, expert: str, rubric: Mapping[str, Any], decision: str, note: str = ""
    ) -> OwnReview:
        """The expert's first review of a case (write-once: a second one raises ReviewAlreadySubmitted)."""
        clean = check_review(rubric, decision)
        with self._writing() as conn:
            self._check_expert(self._my_round_row(conn, round_id), expert)
            self._check_case(conn, round_id, case_id)
            row = {
                "round_id": round_id,
                "case_id": case_id,
                "expert": expert,
                "rubric": clean,
                "decision": decision,
                "note": clean_text(note or "") or "",
                "version": 1,
                "reason": None,
                "created_at": datetime.now(UTC),
            }
            written = self._current_review(conn, round_id, case_id, expert) is None and self._write_review(conn, row)
            if not written:
                raise ReviewAlreadySubmitted(case_id, expert)
        return self._own_latest_review(round_id, case_id, expert)

    def correct_review(
        self,
        round_id: str,
        case_id: str,
        expert: str,
        rubric: Mapping[str, Any],
        decision: str,
        reason: str,
        note: str = "",
    ) -> OwnReview:
        """Append the next version of the expert's review with the reason for the change; returns it."""
        clean = check_review(rubric, decision)
        if not reason or not reason.strip():
            raise ReviewCorrectionWithoutReason(case_id)
        with self._writing() as conn:
            self._check_expert(self._my_round_row(conn, round_id), expert)
            self._check_case(conn, round_id, case_id)
            current = self._current_review(conn, round_id, case_id, expert)
            if current is None:
                raise NoReviewToCorrect(case_id, expert)
            row = {
                "round_id": round_id,
                "case_id": case_id,
                "expert": expert,
                "rubric": clean,
                "decision": decision,
                "note": clean_text(note or "") or "",
                "version": int(current) + 1,
                "reason": clean_text(reason.strip()),
                "created_at": datetime.now(UTC),
            }
            if not self._write_review(conn, row):
                raise ReviewConflict(case_id, expert)
        return self._own_latest_review(round_id, case_id, expert)

    def _write_review(self, conn: Connection, row: dict[str, Any]) -> bool:
        """Store version row["version"] of a review; False when that version exists already (a concurrent write).
        On PostgreSQL through the definer function (no member may write the table), which takes the version
        itself: written when it took the one expected."""
        if conn.dialect.name == "postgresql":
            return _pg_write_review(conn, row) == row["version"]
        cr = tr.case_review
        insert = (
            self._insert(conn, cr)
            .on_conflict_do_nothing(index_elements=["round_id", "case_id", "expert", "version"])
            .returning(cr.c.id)
        )
        return conn.execute(insert, row).first() is not None

    # ------------------------------------------------------------ results (analysts)

    def case_reviews(self, round_id: str, first_only: bool = True) -> list[CaseReview]:
        """Reviews by case, expert and version. first_only keeps first submissions (what agreement is measured on);
        else every version."""
        cr = tr.case_review
        query = (
            select(
                cr.c.case_id,
                cr.c.expert,
                cr.c.rubric,
                cr.c.decision,
                cr.c.note,
                cr.c.version,
                cr.c.reason,
                cr.c.created_at,
            )
            .where(cr.c.round_id == round_id)
            .order_by(cr.c.case_id, cr.c.expert, cr.c.version)
        )
        if first_only:
            query = query.where(cr.c.version == 1)
        with self._reading() as conn:
            self._round_row(conn, round_id)
            return [
                CaseReview(
                    case_id=row.case_id,
                    expert=row.expert,
                    rubric=dict(row.rubric),
                    decision=row.decision,
                    note=row.note,
                    version=row.version,
                    reason=row.reason,
                    created_at=row.created_at,
                )
                for row in conn.execute(query)
            ]

    def review_progress(self, round_id: str) -> dict[str, int]:
        """How many cases each expert has reviewed (first submissions): {expert: n}. Counts only, no content."""
        cr = tr.case_review
        with self._reading() as conn:
            experts = list(self._round_row(conn, round_id).experts)
            counts: dict[str, int] = dict(
                conn.execute(
                    select(cr.c.expert, func.count())
                    .where(cr.c.round_id == round_id, cr.c.version == 1)
                    .group_by(cr.c.expert)
                ).all()
            )
        return {name: int(counts.get(name, 0)) for name in experts}

    # ------------------------------------------------------------ audits: which one a person works on

    def latest_audit_for(self, name: str, role: str = "reviewer") -> str | None:
        """The id of the newest audit naming `name` as a reviewer (or as the adjudicator), or None."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r} (one of {', '.join(ROLES)})")
        # Through the blinded views, so a reviewer's or adjudicator's own login may ask.
        ba, bq = tv.blind_audit, tv.blind_queue
        if role == "reviewer":
            query = select(ba.c.id).where(
                select(bq.c.item_id).where(bq.c.audit_id == ba.c.id, bq.c.reviewer == name).exists()
            )
        else:
            query = select(ba.c.id).where(ba.c.adjudicator == name)
        with self._reading() as conn:
            found = conn.execute(query.order_by(ba.c.created_at.desc(), ba.c.id).limit(1)).scalar_one_or_none()
        return None if found is None else str(found)

    # ------------------------------------------------------------ helpers

    @staticmethod
    def _round_row(conn: Connection, round_id: str) -> Any:
        row = conn.execute(select(tr.review_round).where(tr.review_round.c.id == round_id)).first()
        if row is None:
            raise UnknownRound(round_id)
        return row

    @staticmethod
    def _my_round_row(conn: Connection, round_id: str) -> Any:
        """The round as an expert's login may read it (my_round: on a team store only their own rounds, naming
        no other expert); the whole round for analysts."""
        row = conn.execute(select(tv.my_round).where(tv.my_round.c.id == round_id)).first()
        if row is None:
            raise UnknownRound(round_id)
        return row

    @staticmethod
    def _current_review(conn: Connection, round_id: str, case_id: str, expert: str) -> int | None:
        cr = tv.own_review
        return conn.execute(
            select(func.max(cr.c.version)).where(
                cr.c.round_id == round_id, cr.c.case_id == case_id, cr.c.expert == expert
            )
        ).scalar_one_or_none()

    @staticmethod
    def _check_expert(round_row: Any, expert: str) -> None:
        if expert not in round_row.experts:
            raise UnknownExpert(round_row.id, expert)

    @staticmethod
    def _check_case(conn: Connection, round_id: str, case_id: str) -> None:
        rc = tv.my_round_case
        if conn.execute(select(rc.c.case_id).where(rc.c.round_id == round_id, rc.c.case_id == case_id)).first() is None:
            raise CaseNotInRound(round_id, case_id)

    def _own_latest_review(self, round_id: str, case_id: str, expert: str) -> OwnReview:
        cr = tv.own_review
        with self._reading() as conn:
            row = conn.execute(
                select(cr.c.rubric, cr.c.decision, cr.c.note, cr.c.version, cr.c.reason)
                .where(cr.c.round_id == round_id, cr.c.case_id == case_id, cr.c.expert == expert)
                .order_by(cr.c.version.desc())
                .limit(1)
            ).one()
        return OwnReview(
            case_id=case_id,
            rubric=dict(row.rubric),
            decision=row.decision,
            note=row.note,
            version=row.version,
            reason=row.reason,
        )
