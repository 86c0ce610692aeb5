"""Paged queries for browsing rollouts: filtered keyset pages of summaries, one rollout's detail, trajectory windows.

Exposed as methods of `Store` (this module's `BrowseQueries` is one of its mixins). Pages are keyed
on (run_id, case_id, model, harness, cue, defense, attempt) — the column order of uq_rollout_cell —
so the next page is an index range scan however deep into a 100,000-rollout store it starts, and
filters on model/harness, strategy and constraint use the run-prefixed indexes.

Filters (keys of the `filters` dict; absent or empty values do not filter):
  model, harness, cue, defense, strategy, constraint, case — equality;
  surface — a substring of the comma-joined surface list (LIKE);
  E — "0" / "1" (valid rollouts with that outcome), "unresolved" (valid ones the verifier could not decide) or
      "invalid";
  label — {"config_hash" or "config_name", "backbone", "label": 0 | 1}: rollouts with such an ok judge label.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, Select, and_, exists, func, select, tuple_

from redagent.store import tables as t
from redagent.store import tables_judging as tj
from redagent.store.errors import InvalidRecord
from redagent.store.readmodel import StoredEvent, StoredLabel, StoredRollout
from redagent.store.rows import stored_diff_entry, stored_event, stored_label, stored_receipt, stored_rollout

# The keyset of every page: the unique cell index's column order, run first.
PAGE_KEY = (
    t.rollout.c.run_id,
    t.rollout.c.case_id,
    t.rollout.c.model,
    t.rollout.c.harness,
    t.rollout.c.cue,
    t.rollout.c.defense,
    t.rollout.c.attempt,
)
_EQUALITY = ("model", "harness", "cue", "defense", "strategy", "constraint")
_SUMMARY = (
    t.rollout.c.id,
    *PAGE_KEY,
    t.rollout.c.strategy,
    t.rollout.c.vulnerability,
    t.rollout.c.constraint,
    t.rollout.c.surfaces,
    t.rollout.c.channel,
    t.rollout.c.e,
    t.rollout.c.valid,
    t.rollout.c.invalid_reason,
    t.rollout.c.utility,
    t.rollout.c.benign,
)
FILTER_KEYS = ("model", "harness", "cue", "defense", "surface", "strategy", "constraint", "case", "E", "label")
COUNT_CAP = 10_000  # count_rollouts stops counting here: a list needs "10,000+", not an exact full scan


@dataclass(frozen=True, slots=True)
class BrowsedRollout:
    """One line of the rollout browser: a rollout without its children."""

    rollout_id: str
    run_id: str
    case_id: str
    model: str
    harness: str
    cue: str
    defense: str
    attempt: int
    strategy: str
    vulnerability: str
    constraint: str
    surfaces: tuple[str, ...]
    channel: str
    E: int | None
    valid: bool
    invalid_reason: str | None
    U: int | None
    benign: bool


def page_key(summary: BrowsedRollout) -> tuple[Any, ...]:
    """The keyset position of a summary returned by rollout_page: pass the last one's as `after`."""
    return (
        summary.run_id,
        summary.case_id,
        summary.model,
        summary.harness,
        summary.cue,
        summary.defense,
        summary.attempt,
    )


def _conditions(run_id: str | None, filters: Mapping[str, Any]) -> list[ColumnElement[bool]]:
    r = t.rollout
    where: list[ColumnElement[bool]] = []
    unknown = sorted(set(filters) - set(FILTER_KEYS))
    if unknown:
        raise InvalidRecord(f"unknown rollout filter(s) {', '.join(unknown)} (known: {', '.join(FILTER_KEYS)})")
    if run_id:
        where.append(r.c.run_id == run_id)
    for key in _EQUALITY:
        if filters.get(key):
            where.append(r.c[key] == filters[key])
    if filters.get("case"):
        where.append(r.c.case_id == filters["case"])
    if filters.get("surface"):
        # Surfaces are stored comma-joined; names are free of commas and LIKE wildcards are escaped.
        pattern = str(filters["surface"]).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        where.append(r.c.surfaces.like(f"%{pattern}%", escape="\\"))
    outcome = filters.get("E")
    if outcome not in (None, ""):
        outcome = str(outcome)
        if outcome == "invalid":
            where.append(~r.c.valid)
        elif outcome in ("0", "1"):
            where.append(and_(r.c.valid, r.c.e == int(outcome)))
        elif outcome == "unresolved":
            where.append(and_(r.c.valid, r.c.e.is_(None)))
        else:
            raise InvalidRecord(f"filter E must be 0, 1, unresolved or invalid, not {outcome!r}")
    label = filters.get("label")
    if label:
        where.append(_label_exists(label))
    return where


def _label_exists(label: Mapping[str, Any]) -> ColumnElement[bool]:
    jl = tj.judge_label
    if label.get("label") not in (0, 1, "0", "1"):
        raise InvalidRecord(f"filter label needs label 0 or 1, not {label.get('label')!r}")
    if not label.get("backbone") or not (label.get("config_hash") or label.get("config_name")):
        raise InvalidRecord("filter label needs backbone and config_hash (or config_name)")
    match = [
        jl.c.rollout_id == t.rollout.c.id,
        jl.c.backbone == label["backbone"],
        jl.c.status == "ok",
        jl.c.label == int(label["label"]),
    ]
    if label.get("config_hash"):
        match.append(jl.c.config_hash == label["config_hash"])
    else:
        match.append(jl.c.config_name == label["config_name"])
    return exists(select(jl.c.id).where(*match))


def _summary(row: Any) -> BrowsedRollout:
    return BrowsedRollout(
        rollout_id=row.id,
        run_id=row.run_id,
        case_id=row.case_id,
        model=row.model,
        harness=row.harness,
        cue=row.cue,
        defense=row.defense,
        attempt=row.attempt,
        strategy=row.strategy,
        vulnerability=row.vulnerability,
        constraint=row.constraint,
        surfaces=tuple(row.surfaces.split(",")) if row.surfaces else (),
        channel=row.channel,
        E=row.e,
        valid=bool(row.valid),
        invalid_reason=row.invalid_reason,
        U=row.utility,
        benign=bool(row.benign),
    )


class BrowseQueries:
    """Store methods for the rollout browser (mixed into `Store`, which provides the plumbing)."""

    if TYPE_CHECKING:
        url: str
        _reading: Callable[[], AbstractContextManager[Connection]]

    def rollout_page(
        self,
        run_id: str | None,
        filters: Mapping[str, Any] | None = None,
        after: tuple[Any, ...] | None = None,
        limit: int = 100,
    ) -> list[BrowsedRollout]:
        """Up to `limit` rollout summaries (no children) after the keyset position `after`, in page-key order.

        The next page starts after page_key(last summary); a previous page is the caller's remembered `after`.
        """
        if limit < 1:
            raise InvalidRecord(f"page limit must be >= 1, not {limit}")
        query: Select[Any] = select(*_SUMMARY).where(*_conditions(run_id, filters or {}))
        if after is not None:
            if len(after) != len(PAGE_KEY):
                raise InvalidRecord(f"page position needs {len(PAGE_KEY)} values, not {len(after)}")
            query = query.where(tuple_(*PAGE_KEY) > tuple_(*after))
        query = query.order_by(*PAGE_KEY).limit(limit)
        with self._reading() as conn:
            return [_summary(row) for row in conn.execute(query)]

    def count_rollouts(
        self, run_id: str | None, filters: Mapping[str, Any] | None = None, *, cap: int = COUNT_CAP
    ) -> int:
        """How many rollouts match, counted up to `cap`: a result equal to `cap` means "cap or more".

        Capped so that a filter the indexes cannot serve (surface, E, label) on a huge store costs a
        bounded scan; an exact count needs cap=None.
        """
        inner = select(t.rollout.c.id).where(*_conditions(run_id, filters or {}))
        if cap is not None:
            inner = inner.limit(cap)
        query = select(func.count()).select_from(inner.subquery())
        with self._reading() as conn:
            return int(conn.execute(query).scalar_one())

    def rollout_detail(
        self, rollout_id: str, *, labels: bool = True, event_limit: int | None = None
    ) -> StoredRollout | None:
        """One rollout as the read model with its events, receipts and diff (no snapshots) and `event_count`;
        only when `labels`, every judge label (by configuration name, then backbone). None if absent.

        Reviewer-facing callers pass labels=False, so no label text is even read (`labels` is then None).
        `event_limit` keeps only the first events (a huge trajectory is then read with events_window).
        """
        r = t.rollout
        with self._reading() as conn:
            row = conn.execute(select(r).where(r.c.id == rollout_id)).mappings().first()
            if row is None:
                return None
            events_query = select(t.event).where(t.event.c.rollout_id == rollout_id).order_by(t.event.c.idx)
            if event_limit is not None:
                events_query = events_query.limit(event_limit)
            events = [stored_event(e) for e in conn.execute(events_query).mappings()]
            count = (
                len(events) if event_limit is None or len(events) < event_limit else self._event_count(conn, rollout_id)
            )
            receipts = [
                stored_receipt(c)
                for c in conn.execute(
                    select(t.receipt).where(t.receipt.c.rollout_id == rollout_id).order_by(t.receipt.c.seq)
                ).mappings()
            ]
            diff = [
                stored_diff_entry(d)
                for d in conn.execute(
                    select(t.diff_entry).where(t.diff_entry.c.rollout_id == rollout_id).order_by(t.diff_entry.c.id)
                ).mappings()
            ]
            found: list[StoredLabel] | None = None
            if labels:
                jl = tj.judge_label
                query = (
                    select(
                        jl.c.config_name,
                        jl.c.config_hash,
                        jl.c.view,
                        jl.c.backbone,
                        jl.c.label,
                        jl.c.status,
                        jl.c.rationale,
                        jl.c.evidence,
                    )
                    .where(jl.c.rollout_id == rollout_id)
                    .order_by(jl.c.config_name, jl.c.backbone)
                )
                found = [stored_label(m) for m in conn.execute(query).mappings()]
        return stored_rollout(row, events=events, receipts=receipts, diff=diff, event_count=count, labels=found)

    def events_window(self, rollout_id: str, start: int, stop: int) -> list[StoredEvent]:
        """The rollout's events with start <= idx < stop, by idx (a slice of a huge trajectory)."""
        e = t.event
        query = select(e).where(e.c.rollout_id == rollout_id, e.c.idx >= start, e.c.idx < stop).order_by(e.c.idx)
        with self._reading() as conn:
            return [stored_event(row) for row in conn.execute(query).mappings()]

    def event_count(self, rollout_id: str) -> int:
        """How many trajectory events the rollout has (0 for an unknown rollout)."""
        with self._reading() as conn:
            return self._event_count(conn, rollout_id)

    @staticmethod
    def _event_count(conn: Connection, rollout_id: str) -> int:
        return int(
            conn.execute(
                select(func.count()).select_from(t.event).where(t.event.c.rollout_id == rollout_id)
            ).scalar_one()
        )
