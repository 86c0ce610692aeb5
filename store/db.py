"""The store: open (and migrate) a database, write runs and rollout batches, and answer the engine's queries.

This is the only module that composes SQL for the rest of the project. Writes of rollouts are one
transaction per batch with bulk (executemany) inserts, idempotent on the rollout id the engine
computes; reads stream in pages so exporting a large run keeps memory flat.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, RowMapping, Table, case, delete, exists, func, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, IntegrityError

from redagent.store import evidence
from redagent.store import tables as t
from redagent.store.access import AccessQueries
from redagent.store.attacks import AttackQueries
from redagent.store.audit import AuditQueries
from redagent.store.browse import BrowseQueries
from redagent.store.connect import (
    DEFAULT_URL,
    WRITE,
    DialectInsert,
    create_store_engine,
    describe_db_error,
    resolve_url,
)
from redagent.store.errors import InvalidRecord, StoreError, UnknownRun, WriteRejected, mask_url
from redagent.store.judging import JudgingQueries
from redagent.store.migrate import upgrade_to_head
from redagent.store.readmodel import StoredRollout
from redagent.store.records import (
    RUN_STATUSES,
    CellAsr,
    CellHealth,
    ExportCell,
    InvalidReason,
    RolloutCost,
    RolloutRecord,
    RolloutSummary,
    RunCounts,
    RunListing,
    RunRecord,
    UtilityCount,
)
from redagent.store.reviews import ReviewQueries
from redagent.store.rows import (
    PreparedRollout,
    aware,
    diff_dict,
    event_dict,
    prepare_rollout,
    receipt_dict,
    rollout_export,
    rollout_record,
    run_record,
    run_row,
    stored_diff_entry,
    stored_event,
    stored_receipt,
    stored_rollout,
)
from redagent.store.tables_team import ANALYST_SCHEMA, VIEW_SCHEMA
from redagent.store.workers import WorkerQueries

__all__ = ["DEFAULT_URL", "Store", "StoreError", "open_store", "resolve_url"]

EXPORT_PAGE = 200  # rollouts per query round when streaming an export

# The order of a run's rollouts everywhere (export, replay): the matrix cell, then the attempt. It
# is also the column order of uq_rollout_cell, so paging walks that index.
_CELL = (
    t.rollout.c.case_id,
    t.rollout.c.model,
    t.rollout.c.harness,
    t.rollout.c.cue,
    t.rollout.c.defense,
    t.rollout.c.attempt,
)


# A driving process refreshes its run's heartbeat every HEARTBEAT_SECONDS; one silent for STALE_SECONDS
# is taken for dead (on another host, where its pid cannot be checked, or a reused pid here).
HEARTBEAT_SECONDS = 15.0
STALE_SECONDS = 120.0


def this_host() -> str:
    return socket.gethostname()


def shown_status(
    status: str, host: str | None, pid: int | None, heartbeat_at: datetime | None, now: datetime | None = None
) -> str:
    """A stored status as it should be shown: "running" only while the driving process is alive.

    A process killed with SIGKILL, or a machine that went down, cannot mark its run; so a "running" run
    whose pid is gone from this host, or whose heartbeat is stale (or was never written), is
    "interrupted" — resumable, like a stopped run.
    """
    if status != "running":
        return status
    if host == this_host() and pid is not None and not _alive(pid):
        return "interrupted"
    now = now or datetime.now(UTC)
    if heartbeat_at is None or (now - aware(heartbeat_at, "heartbeat_at")).total_seconds() > STALE_SECONDS:
        return "interrupted"
    return "running"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _postgres_errors() -> tuple[type[Exception], ...]:
    """psycopg's base error when the driver is loaded: a PostgreSQL URL loads it; a SQLite store never pays the
    0.2 s of importing it (every `redagent` command opens a store)."""
    psycopg = sys.modules.get("psycopg")
    return (psycopg.Error,) if psycopg is not None else ()


def open_store(url: str | None = None, *, create: bool = True) -> Store:
    """Open the store at `url` (or $REDAGENT_DB, or ./.redagent/redagent.db) and bring its schema to head.

    Raises StoreError — one line naming the URL and the reason — if the URL is malformed or names an
    unsupported driver, the database cannot be opened or reached, a SQLite file is not a database,
    or the schema was written by a newer redagent. A failed migration leaves the schema unchanged.
    A plain path is a SQLite file; a SQLite database without the project's alembic_version is refused
    untouched. `create=False` (read-only commands) refuses a missing SQLite file ("no store at …").
    """
    resolved = resolve_url(url)
    engine = create_store_engine(resolved, create=create)
    driver_errors: tuple[type[Exception], ...] = (DBAPIError, sqlite3.Error, *_postgres_errors())  # engine loaded it
    try:
        migrated = upgrade_to_head(engine, resolved)
    except StoreError:
        engine.dispose()
        raise
    except driver_errors as exc:
        # SQLAlchemy wraps driver errors; the two raw types cover statements sent straight to the driver.
        engine.dispose()
        raise StoreError(resolved, describe_db_error(exc, resolved)) from exc
    store = Store(resolved, engine)
    if migrated and store.dialect == "postgresql":
        # Tables a migration added are the owner's alone until granted: give every member's login
        # what its role allows again, so an upgrade never silently locks researchers out.
        store.sync_grants()
    return store


class Store(
    JudgingQueries,
    AuditQueries,
    BrowseQueries,
    ReviewQueries,
    AccessQueries,
    WorkerQueries,
    AttackQueries,
    evidence.EvidenceQueries,
):
    """A migrated database. Thread-safe (one engine, pooled connections); close() when done.

    Judge and recognition labels (store/judging.py) and human audits (store/audit.py) are mixins.
    """

    def __init__(self, url: str, engine: Engine) -> None:
        self.url = url
        self.engine = engine

    def __repr__(self) -> str:
        return f"Store({mask_url(self.url)!r})"

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------ plumbing

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        views = self._view_schemas()
        try:
            with self.engine.connect() as conn:
                yield conn.execution_options(schema_translate_map=views)
        except DBAPIError as exc:
            raise StoreError(self.url, describe_db_error(exc, self.url), doing="read from") from exc

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """One write transaction (BEGIN IMMEDIATE on SQLite); any database error rolls it all back."""
        views = self._view_schemas()
        try:
            with self.engine.connect() as conn:
                conn = conn.execution_options(**{WRITE: True}, schema_translate_map=views)
                with conn.begin():
                    yield conn
        except DBAPIError as exc:
            raise WriteRejected(self.url, describe_db_error(exc, self.url)) from exc

    def _view_schemas(self) -> dict[str | None, str | None]:
        """Where the blinded and own-row views are for this connection's user (tables_team.VIEW_SCHEMA): a
        PostgreSQL analyst reads schema redagent_analyst (every row); a member, and SQLite, the default schema."""
        analyst = self.dialect == "postgresql" and self.identity().analyst
        return {VIEW_SCHEMA: ANALYST_SCHEMA if analyst else None}

    @staticmethod
    def _insert(conn: Connection, table: Table) -> DialectInsert:
        # ON CONFLICT DO NOTHING exists on both dialects but is spelled through each one's insert().
        dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
        return dialect_insert(table)

    # ------------------------------------------------------------ runs

    def create_run(self, run: RunRecord) -> None:
        """Store a run's record. Its evidence chain starts at the record's digest (store/evidence.py genesis), which
        the run's row takes with its first record (the row is written as older revisions wrote it, so migration
        tests can make runs in stores of any revision)."""
        row = run_row(run)
        with self._writing() as conn:
            conn.execute(t.run.insert(), row)

    def update_run(
        self,
        run_id: str,
        *,
        status: str | None = None,
        started_at: datetime | None = None,
        finished_at: datetime | None = None,
        host: str | None = None,
        pid: int | None = None,
        heartbeat_at: datetime | None = None,
    ) -> None:
        values: dict[str, Any] = {}
        if host is not None:
            values["host"] = host
        if pid is not None:
            values["pid"] = pid
        if heartbeat_at is not None:
            values["heartbeat_at"] = aware(heartbeat_at, f"run {run_id}: heartbeat_at")
        if status is not None:
            if status not in RUN_STATUSES:
                raise InvalidRecord(f"run {run_id}: unknown status {status!r} (one of {', '.join(RUN_STATUSES)})")
            values["status"] = status
        if started_at is not None:
            values["started_at"] = aware(started_at, f"run {run_id}: started_at")
        if finished_at is not None:
            values["finished_at"] = aware(finished_at, f"run {run_id}: finished_at")
        with self._writing() as conn:
            if values:
                changed = conn.execute(update(t.run).where(t.run.c.id == run_id).values(**values)).rowcount
            else:
                changed = conn.execute(select(func.count()).select_from(t.run).where(t.run.c.id == run_id)).scalar_one()
            if not changed:
                raise UnknownRun(run_id)

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._reading() as conn:
            row = conn.execute(select(t.run).where(t.run.c.id == run_id)).mappings().first()
        return run_record(row) if row is not None else None

    def heartbeat(self, run_id: str) -> None:
        """The driving process is alive: refresh the run's heartbeat (one tiny transaction)."""
        with self._writing() as conn:
            conn.execute(update(t.run).where(t.run.c.id == run_id).values(heartbeat_at=datetime.now(UTC)))

    def list_runs(self) -> list[RunListing]:
        """Every run, newest first, with how many of its rollouts are stored.

        The status is as `shown_status` tells it: a "running" run whose process is gone is "interrupted".
        """
        done = select(t.rollout.c.run_id, func.count().label("completed")).group_by(t.rollout.c.run_id).subquery()
        query = (
            select(
                t.run.c.id,
                t.run.c.status,
                t.run.c.planned,
                func.coalesce(done.c.completed, 0),
                t.run.c.created_at,
                t.run.c.host,
                t.run.c.pid,
                t.run.c.heartbeat_at,
            )
            .outerjoin(done, done.c.run_id == t.run.c.id)
            .order_by(t.run.c.created_at.desc(), t.run.c.id.desc())
        )
        with self._reading() as conn:
            return [
                RunListing(
                    run_id=run_id,
                    status=shown_status(status, host, pid, heartbeat_at),
                    planned=planned,
                    completed=int(completed),
                    created_at=created_at,
                )
                for run_id, status, planned, completed, created_at, host, pid, heartbeat_at in conn.execute(query)
            ]

    # ------------------------------------------------------------ rollouts: writing

    def write_rollouts(self, rollouts: Iterable[RolloutRecord], *, replace_invalid: Collection[str] = ()) -> int:
        """Store a batch in one transaction; returns how many were new.

        Rollouts whose id is already stored (or repeated within the batch) are skipped with all their
        children, so re-sending a batch after a crash is safe. Every record is checked before any SQL
        is sent (InvalidRecord); if the database rejects anything, nothing of the batch is written
        (WriteRejected).

        `replace_invalid` names invalid reasons that a stored rollout of the same id gives way for (a
        `--retry-invalid` resume): such a row and its children are deleted in the same transaction
        before the new rollout is inserted, so a crash leaves either the old rollout or the new one. The
        replacement is a recorded correction (the old rollout kept whole in it, a link of the run's chain).

        Every new rollout is appended to its run's evidence chain in the same transaction (store/evidence.py).
        """
        prepared: dict[str, PreparedRollout] = {}
        for record in rollouts:
            if record.id not in prepared:
                prepared[record.id] = prepare_rollout(record)
        if not prepared:
            return 0
        try:
            return self._write_prepared(prepared, tuple(replace_invalid))
        except WriteRejected as exc:
            # PostgreSQL checks only the id as the ON CONFLICT arbiter: a concurrent writer's uncommitted copy
            # of the same rollout trips the cell's unique index instead. Once it has committed, the same batch
            # finds it by id and skips it; anything else is a real rejection.
            if not isinstance(exc.__cause__, IntegrityError) or "uq_rollout_cell" not in str(exc.__cause__):
                raise
            return self._write_prepared(prepared, tuple(replace_invalid))

    def _write_prepared(self, prepared: dict[str, PreparedRollout], replace_invalid: tuple[str, ...] = ()) -> int:
        with self._writing() as conn:
            # The runs' chains first: their rows are locked before any rollout, one order for every writer.
            chains = evidence.ChainWriter(conn, {p.row["run_id"] for p in prepared.values()})
            if replace_invalid:
                # Children go with the row (ON DELETE CASCADE); a replay's reference to it is deferred
                # to commit, by when the same id is back. Each replaced rollout is a recorded correction first.
                r = t.rollout
                replaced = conn.execute(
                    select(r.c.id, r.c.run_id, r.c.invalid_reason)
                    .where(r.c.id.in_(sorted(prepared)), ~r.c.valid, r.c.invalid_reason.in_(replace_invalid))
                    .order_by(r.c.id)
                ).all()
                prior = evidence.rollout_documents(conn, [row.id for row in replaced])
                for row in replaced:
                    chains.correct(
                        row.run_id,
                        evidence.ROLLOUT,
                        row.id,
                        prior[row.id],
                        f"invalid ({row.invalid_reason}): replaced by a resume with --retry-invalid",
                        self._made_by(),
                    )
                    conn.execute(delete(r).where(r.c.id == row.id))
                chains.flush()
            # Sorted ids and shas give concurrent writers one lock order (no deadlocks on PostgreSQL).
            insert_rollouts = (
                self._insert(conn, t.rollout).on_conflict_do_nothing(index_elements=["id"]).returning(t.rollout.c.id)
            )
            rows = [prepared[rollout_id].row for rollout_id in sorted(prepared)]
            new = set(conn.execute(insert_rollouts, rows).scalars())
            if not new:
                chains.close()
                return 0
            fresh = [prepared[rollout_id] for rollout_id in sorted(new)]
            blobs = {sha: text for p in fresh for sha, text in p.blobs.items()}
            # Most snapshots are already stored (every rollout of a case starts from the same
            # baseline): ask first so their text is not shipped again, then insert the rest with
            # insert-if-absent in case a concurrent writer adds one meanwhile.
            present = set(conn.execute(select(t.blob.c.sha256).where(t.blob.c.sha256.in_(list(blobs)))).scalars())
            missing = [{"sha256": sha, "data": blobs[sha]} for sha in sorted(blobs) if sha not in present]
            if missing:
                conn.execute(self._insert(conn, t.blob).on_conflict_do_nothing(index_elements=["sha256"]), missing)
            for table, key in (
                (t.event, "events"),
                (t.receipt, "receipts"),
                (t.diff_entry, "diff"),
                (t.snapshot, "snapshots"),
            ):
                child_rows = [row for p in fresh for row in getattr(p, key)]
                if child_rows:
                    conn.execute(table.insert(), child_rows)
            for p in fresh:
                doc = evidence.rollout_document(
                    p.row, p.events, p.receipts, p.diff, {s["kind"]: s["blob_sha"] for s in p.snapshots}
                )
                parts = evidence.parts_of(doc)
                chains.append(p.row["run_id"], evidence.ROLLOUT, p.row["id"], evidence.rollout_digest(parts), parts)
            chains.close()
            return len(new)

    # ------------------------------------------------------------ rollouts: reading

    def completed_ids(self, run_id: str) -> set[str]:
        """Ids of the run's rollouts already stored (the engine skips them on resume)."""
        with self._reading() as conn:
            return set(conn.execute(select(t.rollout.c.id).where(t.rollout.c.run_id == run_id)).scalars())

    def invalid_ids(self, run_id: str, reasons: Collection[str]) -> set[str]:
        """Ids of the run's stored invalid rollouts whose reason is one of `reasons` (what --retry-invalid redoes)."""
        r = t.rollout
        with self._reading() as conn:
            return set(
                conn.execute(
                    select(r.c.id).where(r.c.run_id == run_id, ~r.c.valid, r.c.invalid_reason.in_(sorted(reasons)))
                ).scalars()
            )

    def cell_health(self, run_id: str) -> list[CellHealth]:
        """Per (model, harness, cue, defense) cell, what says whether the setup worked: rollouts, valid,
        valid ones without a single tool call, valid attacked ones and those the attack reached, harmful ones
        the attack never reached, and the invalid ones by reason with their most frequent stored detail (and how
        many share it)."""
        r, e = t.rollout, t.event
        cell = (r.c.model, r.c.harness, r.c.cue, r.c.defense)
        called = exists().where(e.c.rollout_id == r.c.id, e.c.role == "assistant", e.c.tool_call.is_not(None))

        def number(condition: Any) -> Any:
            return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)

        counts = (
            select(
                *cell,
                func.count(),
                number(r.c.valid),
                number(r.c.valid & ~called),
                number(r.c.valid & ~r.c.benign),
                number(r.c.valid & ~r.c.benign & r.c.reached),
                number(r.c.valid & ~r.c.benign & ~r.c.reached & (r.c.e == 1)),
            )
            .where(r.c.run_id == run_id)
            .group_by(*cell)
            .order_by(*cell)
        )
        # Most frequent detail first within each reason, so the first one seen is the one shown.
        n_detail = func.count()
        details = (
            select(*cell, r.c.invalid_reason, r.c.invalid_detail, n_detail)
            .where(r.c.run_id == run_id, ~r.c.valid)
            .group_by(*cell, r.c.invalid_reason, r.c.invalid_detail)
            .order_by(n_detail.desc(), r.c.invalid_detail)
        )
        with self._reading() as conn:
            cells = {tuple(row[:4]): row for row in conn.execute(counts)}
            invalid: dict[tuple[Any, ...], dict[str, InvalidReason]] = {key: {} for key in cells}
            for *key, reason, detail, n in conn.execute(details):
                by_reason = invalid[tuple(key)]
                seen = by_reason.get(reason or "unknown")
                # The first detail seen of a reason is its most frequent one (the query's order); later ones add n.
                by_reason[reason or "unknown"] = (
                    InvalidReason(n=int(n), detail=detail, detail_n=int(n))
                    if seen is None
                    else InvalidReason(n=seen.n + int(n), detail=seen.detail, detail_n=seen.detail_n)
                )
        return [
            CellHealth(
                model=row[0],
                harness=row[1],
                cue=row[2],
                defense=row[3],
                rollouts=int(row[4]),
                valid=int(row[5]),
                no_tool_call=int(row[6]),
                attacked=int(row[7]),
                reached=int(row[8]),
                invalid=invalid[key],
                harmful_unreached=int(row[9]),
            )
            for key, row in cells.items()
        ]

    def rollout_history(self, case_hashes: Collection[str]) -> list[RolloutCost]:
        """What valid rollouts of these case versions cost before, per (case_hash, model, harness): rollouts,
        mean model replies (assistant turns: tool calls and answers), mean prompt and completion tokens,
        mean duration in ms. What `redagent run --plan-only` estimates from."""
        r, e = t.rollout, t.event
        turns = (
            select(e.c.rollout_id, func.count().label("turns"))
            .where(e.c.role == "assistant")
            .group_by(e.c.rollout_id)
            .subquery()
        )
        group = (r.c.case_hash, r.c.model, r.c.harness)
        found: list[RolloutCost] = []
        hashes = sorted(set(case_hashes))
        with self._reading() as conn:
            for start in range(0, len(hashes), 500):
                query = (
                    select(
                        *group,
                        func.count(),
                        func.avg(func.coalesce(turns.c.turns, 0)),
                        func.avg(r.c.prompt_tokens),
                        func.avg(r.c.completion_tokens),
                        func.avg(r.c.duration_ms),
                    )
                    .outerjoin(turns, turns.c.rollout_id == r.c.id)
                    .where(r.c.valid, r.c.case_hash.in_(hashes[start : start + 500]))
                    .group_by(*group)
                )
                found += [
                    RolloutCost(
                        case_hash=h,
                        model=m,
                        harness=hn,
                        rollouts=int(n),
                        turns=float(c or 0),
                        prompt_tokens=float(p or 0),
                        completion_tokens=float(o or 0),
                        duration_ms=float(d or 0),
                    )
                    for h, m, hn, n, c, p, o, d in conn.execute(query)
                ]
        return found

    def case_ids(self, run_id: str) -> list[str]:
        """The case ids the run's stored rollouts used (what judging a run has to resolve)."""
        with self._reading() as conn:
            return list(
                conn.execute(
                    select(t.rollout.c.case_id)
                    .where(t.rollout.c.run_id == run_id)
                    .distinct()
                    .order_by(t.rollout.c.case_id)
                ).scalars()
            )

    def counts(self, run_id: str) -> RunCounts:
        """planned, completed, valid, invalid and invalid_reasons {reason: n} for one run (UnknownRun if none)."""
        r = t.rollout
        with self._reading() as conn:
            planned = conn.execute(select(t.run.c.planned).where(t.run.c.id == run_id)).scalar_one_or_none()
            if planned is None:
                raise UnknownRun(run_id)
            completed, valid = conn.execute(
                select(func.count(), func.coalesce(func.sum(case((r.c.valid, 1), else_=0)), 0)).where(
                    r.c.run_id == run_id
                )
            ).one()
            reasons = conn.execute(
                select(r.c.invalid_reason, func.count())
                .where(r.c.run_id == run_id, ~r.c.valid)
                .group_by(r.c.invalid_reason)
                .order_by(r.c.invalid_reason)
            ).all()
        return RunCounts(
            planned=int(planned),
            completed=int(completed),
            valid=int(valid),
            invalid=int(completed) - int(valid),
            invalid_reasons={reason: int(n) for reason, n in reasons},
        )

    def execution_asr(self, run_id: str) -> list[CellAsr]:
        """Execution ASR per (model, harness, cue, defense) cell, over valid attacked rollouts only.

        harmful = valid rollouts with E == 1, unresolved = valid ones with E None (the verifier could not
        decide); rate = harmful / valid and upper = (harmful + unresolved) / valid, None when no rollout of the
        cell is valid (an all-invalid cell has no rate, it is not "safe"). Benign rollouts (the
        benign arm, benign variants) carry no attack, so they are not attacks that failed: they are
        left out here and reported through utility_counts.
        """
        r = t.rollout
        cell = (r.c.model, r.c.harness, r.c.cue, r.c.defense)
        harmful = func.sum(case((r.c.valid & (r.c.e == 1), 1), else_=0))
        unresolved = func.sum(case((r.c.valid & r.c.e.is_(None), 1), else_=0))
        valid = func.sum(case((r.c.valid, 1), else_=0))
        query = (
            select(*cell, harmful, unresolved, valid)
            .where(r.c.run_id == run_id, ~r.c.benign)
            .group_by(*cell)
            .order_by(*cell)
        )
        with self._reading() as conn:
            rows = conn.execute(query).all()
        return [
            CellAsr(
                model=model,
                harness=harness,
                cue=cue,
                defense=defense,
                harmful=int(n_harmful),
                valid=int(n_valid),
                rate=n_harmful / n_valid if n_valid else None,
                unresolved=int(n_open),
                upper=(n_harmful + n_open) / n_valid if n_valid else None,
            )
            for model, harness, cue, defense, n_harmful, n_open, n_valid in rows
        ]

    def utility_counts(self, run_id: str) -> list[UtilityCount]:
        """Utility counts per (model, harness, cue, defense) cell and arm (benign, then under attack last).

        valid = valid rollouts; checked = those with a utility outcome (U not NULL: the case states a
        check), the rate's denominator; done = those with U == 1. An invalid rollout has no U.
        """
        r = t.rollout
        group = (r.c.model, r.c.harness, r.c.cue, r.c.defense, r.c.benign)
        valid = func.sum(case((r.c.valid, 1), else_=0))
        checked = func.sum(case((r.c.valid & r.c.utility.is_not(None), 1), else_=0))
        done = func.sum(case((r.c.valid & (r.c.utility == 1), 1), else_=0))
        query = select(*group, valid, checked, done).where(r.c.run_id == run_id).group_by(*group).order_by(*group)
        with self._reading() as conn:
            rows = conn.execute(query).all()
        return [
            UtilityCount(
                model=model,
                harness=harness,
                cue=cue,
                defense=defense,
                benign=bool(benign),
                valid=int(n_valid),
                checked=int(n_checked),
                done=int(n_done),
            )
            for model, harness, cue, defense, benign, n_valid, n_checked, n_done in rows
        ]

    def rollouts(self, run_id: str, *, harmful_only: bool = False) -> list[RolloutSummary]:
        """The run's rollouts without their children, in cell order; harmful_only keeps valid ones with E == 1."""
        r = t.rollout
        query = (
            select(r.c.id, *_CELL, r.c.e, r.c.valid, r.c.utility, r.c.benign)
            .where(r.c.run_id == run_id)
            .order_by(*_CELL)
        )
        if harmful_only:
            query = query.where(r.c.valid, r.c.e == 1)
        with self._reading() as conn:
            return [
                RolloutSummary(
                    id=row.id,
                    case_id=row.case_id,
                    model=row.model,
                    harness=row.harness,
                    cue=row.cue,
                    defense=row.defense,
                    attempt=row.attempt,
                    E=row.e,
                    valid=bool(row.valid),
                    U=row.utility,
                    benign=bool(row.benign),
                )
                for row in conn.execute(query)
            ]

    def get_rollout(self, rollout_id: str) -> RolloutRecord | None:
        """One rollout with all its children, as the record the engine wrote (for the browser and replay)."""
        with self._reading() as conn:
            row = conn.execute(select(t.rollout).where(t.rollout.c.id == rollout_id)).mappings().first()
            if row is None:
                return None
            return rollout_record(self._with_children(conn, [row])[0])

    def iter_export(self, run_id: str, cell: ExportCell | None = None) -> Iterator[dict[str, Any]]:
        """Every rollout of the run with its events, receipts, diff and snapshots, in cell order, as the
        export's JSON-ready dicts (`redagent export`). Dicts on purpose: this is the export's serialisation
        format (and what `rollout_record` reads back), not a read API; readers that want the rollouts
        themselves use iter_rollouts. With `cell`, only that (model, harness, cue, defense) cell's rollouts
        (an Inspect log holds one cell).

        Pages of EXPORT_PAGE rollouts, keyed on the cell (keyset paging, not OFFSET), so memory
        stays flat and each page costs the same however deep into the run it is.
        """
        with self._reading() as conn:
            for page in self._pages(conn, run_id, cell):
                yield from self._with_children(conn, page)

    def export_cells(self, run_id: str) -> list[ExportCell]:
        """The run's (model, harness, cue, defense) cells that have a stored rollout, sorted."""
        r = t.rollout
        query = (
            select(r.c.model, r.c.harness, r.c.cue, r.c.defense)
            .where(r.c.run_id == run_id)
            .distinct()
            .order_by(r.c.model, r.c.harness, r.c.cue, r.c.defense)
        )
        with self._reading() as conn:
            return [ExportCell(*row) for row in conn.execute(query)]

    def iter_rollouts(self, run_id: str, *, snapshots: bool = True) -> Iterator[StoredRollout]:
        """Every rollout of the run as the typed read model (events, receipts, diff and, with `snapshots`,
        the baseline and final snapshots), in cell order, paged as iter_export is. No judge labels."""
        with self._reading() as conn:
            for page in self._pages(conn, run_id):
                ids = [row["id"] for row in page]
                children = self._children(conn, ids)
                states = self._snapshots(conn, ids) if snapshots else {}
                for row in page:
                    events, receipts, diff = children[row["id"]]
                    baseline, final = states.get(row["id"], (None, None))
                    yield stored_rollout(
                        row,
                        events=[stored_event(e) for e in events],
                        receipts=[stored_receipt(c) for c in receipts],
                        diff=[stored_diff_entry(d) for d in diff],
                        baseline=baseline,
                        final=final,
                    )

    @staticmethod
    def _pages(conn: Connection, run_id: str, cell: ExportCell | None = None) -> Iterator[Sequence[RowMapping]]:
        """The run's rollout rows in cell order, EXPORT_PAGE at a time (keyset paging on the cell); with `cell`,
        only that cell's."""
        r = t.rollout
        after: tuple[Any, ...] | None = None
        where = [r.c.run_id == run_id]
        if cell is not None:
            where += [r.c.model == cell.model, r.c.harness == cell.harness, r.c.cue == cell.cue]
            where.append(r.c.defense == cell.defense)
        while True:
            query = select(r).where(*where).order_by(*_CELL).limit(EXPORT_PAGE)
            if after is not None:
                query = query.where(tuple_(*_CELL) > tuple_(*after))
            page = conn.execute(query).mappings().all()
            if not page:
                return
            yield page
            last = page[-1]
            after = tuple(last[column.key] for column in _CELL)
            if len(page) < EXPORT_PAGE:
                return

    @staticmethod
    def _children(
        conn: Connection, ids: list[str]
    ) -> dict[str, tuple[list[RowMapping], list[RowMapping], list[RowMapping]]]:
        """Per rollout id: its event, receipt and diff rows in order, fetched with one query per table."""
        found: dict[str, tuple[list[RowMapping], list[RowMapping], list[RowMapping]]] = {
            rollout_id: ([], [], []) for rollout_id in ids
        }
        for number, (table, order) in enumerate(
            ((t.event, t.event.c.idx), (t.receipt, t.receipt.c.seq), (t.diff_entry, t.diff_entry.c.id))
        ):
            query = select(table).where(table.c.rollout_id.in_(ids)).order_by(table.c.rollout_id, order)
            for child in conn.execute(query).mappings():
                found[child["rollout_id"]][number].append(child)
        return found

    @staticmethod
    def _snapshots(conn: Connection, ids: list[str]) -> dict[str, tuple[Any, Any]]:
        """Per rollout id: (baseline, final), each parsed per rollout (not shared: callers may mutate the export)."""
        found: dict[str, list[Any]] = {}
        snapshots = (
            select(t.snapshot.c.rollout_id, t.snapshot.c.kind, t.blob.c.data)
            .join(t.blob, t.blob.c.sha256 == t.snapshot.c.blob_sha)
            .where(t.snapshot.c.rollout_id.in_(ids))
        )
        for rollout_id, kind, data in conn.execute(snapshots):
            found.setdefault(rollout_id, [None, None])[0 if kind == "baseline" else 1] = orjson.loads(data)
        return {rollout_id: (pair[0], pair[1]) for rollout_id, pair in found.items()}

    @classmethod
    def _with_children(cls, conn: Connection, page: Sequence[RowMapping]) -> list[dict[str, Any]]:
        """Export dicts for a page of rollout rows, children fetched with one query per table."""
        ids = [row["id"] for row in page]
        children = cls._children(conn, ids)
        states = cls._snapshots(conn, ids)
        items = []
        for row in page:
            events, receipts, diff = children[row["id"]]
            baseline, final = states.get(row["id"], (None, None))
            items.append(
                {
                    **rollout_export(row),
                    "events": [event_dict(e) for e in events],
                    "receipts": [receipt_dict(c) for c in receipts],
                    "diff": [diff_dict(d) for d in diff],
                    "baseline": baseline,
                    "final": final,
                }
            )
        return items
