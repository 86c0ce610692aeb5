"""Judge labels, recognition labels and the per-rollout rows the statistics layer reads.

Exposed as methods of `Store` (this module's `JudgingQueries` is one of its mixins), so callers
write `store.write_judge_labels(...)`, `store.cached_judge_labels(...)`, `store.outcome_rows(run_id)`.

A judge label is keyed by (rollout, configuration hash, backbone): labels made under different
configurations never mix, and the key is the LLM judge's cache. Writes are insert-if-absent on that
key, with one exception: a `failed` label is replaced by the next label for the same key (an `ok`
one, or a failure with the fresh reason), so re-running a judge retries its failures and the stored
reason is always the latest; an `ok` label is never overwritten. The same holds for
recognition labels on (rollout, judge, contract hash).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Select, Table, case, func, select, tuple_

from redagent.store import evidence
from redagent.store import tables as t
from redagent.store import tables_judging as tj
from redagent.store.connect import DialectInsert
from redagent.store.errors import InvalidRecord
from redagent.store.records import (
    JUDGE_VIEWS,
    LABEL_STATUSES,
    JudgeLabelRecord,
    LabelledRow,
    OutcomeRow,
    RecognitionLabelRecord,
)
from redagent.store.rows import aware, clean_text, json_checked

ROWS_PAGE = 5_000  # rollouts per query round when reading a run's outcome rows
IN_CHUNK = 1_000  # ids per IN (...) list

# The order of a run's rollouts (as in db.py): the matrix cell, then the attempt; the keyset for paging.
_CELL = (
    t.rollout.c.case_id,
    t.rollout.c.model,
    t.rollout.c.harness,
    t.rollout.c.cue,
    t.rollout.c.defense,
    t.rollout.c.attempt,
)
_OUTCOME_COLUMNS = (
    t.rollout.c.id,
    *_CELL,
    t.rollout.c.strategy,
    t.rollout.c.vulnerability,
    t.rollout.c.constraint,
    t.rollout.c.channel,
    t.rollout.c.surfaces,
    t.rollout.c.e,
    t.rollout.c.utility,
    t.rollout.c.benign,
)

_JUDGE_KEY = ("rollout_id", "config_hash", "backbone")
_RECOGNITION_KEY = ("rollout_id", "judge", "contract_hash")


def chunks(values: Sequence[Any], size: int = IN_CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _binary(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if value in (0, 1) and not isinstance(value, float):
        return int(value)  # bools from an LLM's JSON become 0/1
    raise InvalidRecord(f"{what} must be 0, 1 or None, not {value!r}")


def judge_label_row(r: JudgeLabelRecord, now: datetime) -> dict[str, Any]:
    where = f"judge label for rollout {r.rollout_id} ({r.config_name}, {r.backbone})"
    if r.status not in LABEL_STATUSES:
        raise InvalidRecord(f"{where}: unknown status {r.status!r} (one of {', '.join(LABEL_STATUSES)})")
    label = _binary(r.label, f"{where}: label")
    if (r.status == "ok") != (label is not None):
        raise InvalidRecord(
            f"{where}: an ok label needs a 0/1 label and a failed one none (status {r.status}, label {r.label!r})"
        )
    if r.view not in JUDGE_VIEWS:
        raise InvalidRecord(f"{where}: unknown view {r.view!r} (one of {', '.join(JUDGE_VIEWS)})")
    for name in ("config_name", "config_hash", "contract_hash", "gate", "backbone"):
        if not getattr(r, name):
            raise InvalidRecord(f"{where}: {name} is empty")
    return {
        "rollout_id": r.rollout_id,
        "run_id": r.run_id,
        "config_name": r.config_name,
        "config_hash": r.config_hash,
        "view": r.view,
        "contract_hash": r.contract_hash,
        "gate": r.gate,
        "backbone": r.backbone,
        "label": label,
        "status": r.status,
        "rationale": clean_text(r.rationale or ""),
        "evidence": json_checked(list(r.evidence or []), f"{where}: evidence"),
        "prompt_tokens": int(r.prompt_tokens or 0),
        "completion_tokens": int(r.completion_tokens or 0),
        "cost_usd": float(r.cost_usd or 0.0),
        "created_at": aware(r.created_at, f"{where}: created_at") or now,
    }


def recognition_label_row(r: RecognitionLabelRecord, now: datetime) -> dict[str, Any]:
    where = f"recognition label for rollout {r.rollout_id} ({r.judge})"
    if r.status not in LABEL_STATUSES:
        raise InvalidRecord(f"{where}: unknown status {r.status!r} (one of {', '.join(LABEL_STATUSES)})")
    broad, strict = _binary(r.broad, f"{where}: broad"), _binary(r.strict, f"{where}: strict")
    if r.status == "failed" and (broad is not None or strict is not None):
        raise InvalidRecord(f"{where}: a failed label carries no broad/strict values")
    if strict == 1 and broad != 1:
        raise InvalidRecord(f"{where}: strict recognition is nested in broad (strict 1 needs broad 1)")
    if bool(r.resolved) != (r.anchor_idx is not None):
        raise InvalidRecord(
            f"{where}: a resolved anchor needs anchor_idx, an unresolved one none "
            f"(resolved {r.resolved}, anchor_idx {r.anchor_idx!r})"
        )
    if not r.judge or not r.contract_hash:
        raise InvalidRecord(f"{where}: judge and contract_hash must not be empty")
    return {
        "rollout_id": r.rollout_id,
        "run_id": r.run_id,
        "judge": r.judge,
        "contract_hash": r.contract_hash,
        "anchor_idx": r.anchor_idx,
        "resolved": bool(r.resolved),
        "broad": broad,
        "strict": strict,
        "status": r.status,
        "rationale": clean_text(r.rationale or ""),
        "evidence": json_checked(list(r.evidence or []), f"{where}: evidence"),
        "created_at": aware(r.created_at, f"{where}: created_at") or now,
    }


def _judge_record(row: Any) -> JudgeLabelRecord:
    return JudgeLabelRecord(
        rollout_id=row.rollout_id,
        run_id=row.run_id,
        config_name=row.config_name,
        config_hash=row.config_hash,
        view=row.view,
        contract_hash=row.contract_hash,
        gate=row.gate,
        backbone=row.backbone,
        label=row.label,
        status=row.status,
        rationale=row.rationale,
        evidence=row.evidence,
        prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens,
        cost_usd=row.cost_usd,
        created_at=row.created_at,
    )


def _recognition_record(row: Any) -> RecognitionLabelRecord:
    return RecognitionLabelRecord(
        rollout_id=row.rollout_id,
        run_id=row.run_id,
        judge=row.judge,
        contract_hash=row.contract_hash,
        anchor_idx=row.anchor_idx,
        resolved=bool(row.resolved),
        broad=row.broad,
        strict=row.strict,
        status=row.status,
        rationale=row.rationale,
        evidence=row.evidence,
        created_at=row.created_at,
    )


class JudgingQueries:
    """Store methods for judge and recognition labels (mixed into `Store`, which provides the plumbing)."""

    if TYPE_CHECKING:
        url: str
        _reading: Callable[[], AbstractContextManager[Connection]]
        _writing: Callable[[], AbstractContextManager[Connection]]

        @staticmethod
        def _insert(conn: Connection, table: Table) -> DialectInsert: ...

        def _made_by(self) -> str: ...

    # ------------------------------------------------------------ judge labels

    def write_judge_labels(self, labels: Iterable[JudgeLabelRecord]) -> int:
        """Store labels in one transaction; returns how many were written (new, or replacing a failed one).

        Every record is checked first (InvalidRecord): status and label agree, the view is known, the
        rollout exists and belongs to the record's run. A repeated key within the batch keeps the first.
        """
        now = datetime.now(UTC)
        rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        for record in labels:
            row = judge_label_row(record, now)
            rows.setdefault((row["rollout_id"], row["config_hash"], row["backbone"]), row)
        return self._upsert_labels(tj.judge_label, _JUDGE_KEY, rows, "judge label")

    def write_recognition_labels(self, labels: Iterable[RecognitionLabelRecord]) -> int:
        """As write_judge_labels, keyed on (rollout, judge, contract hash)."""
        now = datetime.now(UTC)
        rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        for record in labels:
            row = recognition_label_row(record, now)
            rows.setdefault((row["rollout_id"], row["judge"], row["contract_hash"]), row)
        return self._upsert_labels(tj.recognition_label, _RECOGNITION_KEY, rows, "recognition label")

    def _upsert_labels(
        self, table: Table, key: tuple[str, ...], rows: dict[tuple[str, str, str], dict[str, Any]], what: str
    ) -> int:
        if not rows:
            return 0
        with self._writing() as conn:
            ids = sorted({row["rollout_id"] for row in rows.values()})
            owners: dict[str, str] = {}
            for chunk in chunks(ids):
                owners.update(
                    conn.execute(select(t.rollout.c.id, t.rollout.c.run_id).where(t.rollout.c.id.in_(chunk))).all()
                )
            for row in rows.values():
                owner = owners.get(row["rollout_id"])
                if owner is None:
                    raise InvalidRecord(f"{what} for rollout {row['rollout_id']}: no such rollout in the store")
                if owner != row["run_id"]:
                    raise InvalidRecord(
                        f"{what} for rollout {row['rollout_id']}: run_id {row['run_id']!r} is not "
                        f"the rollout's run {owner!r}"
                    )
            insert = self._insert(conn, table)
            kept = [c.name for c in table.columns if c.name != "id" and c.name not in key]
            # A failed label gives way to the retry's label: an ok one, or a failure with the fresh reason
            # (the stored rationale says why the latest attempt failed, not the first). An ok label is final.
            upsert = insert.on_conflict_do_update(
                index_elements=list(key),
                set_={name: insert.excluded[name] for name in kept},
                where=table.c.status == "failed",
            ).returning(table.c.id)
            kind = evidence.JUDGE if table is tj.judge_label else evidence.RECOGNITION
            # The runs' chains are locked first (one order for every writer), then what is stored under these keys:
            # a failed label is replaced through a recorded correction (the failure kept whole), one at a time so
            # each change directly follows its correction; new keys go in one statement; ok labels stay.
            chains = evidence.ChainWriter(conn, {row["run_id"] for row in rows.values()})
            stored = self._stored_labels(conn, table, key, sorted(rows))
            written: list[dict[str, Any]] = []
            fresh = [rows[k] for k in sorted(rows) if k not in stored]
            if fresh:
                # A concurrent writer's label under the same key wins; this one is not written (the next run retries).
                new = insert.on_conflict_do_nothing(index_elements=list(key)).returning(*[table.c[n] for n in key])
                inserted = {tuple(found) for found in conn.execute(new, fresh).all()}
                written += [row for row in fresh if tuple(row[n] for n in key) in inserted]
            for k in sorted(k for k in rows if k in stored and stored[k]["status"] == "failed"):
                row = rows[k]
                chains.correct(
                    row["run_id"],
                    kind,
                    evidence.label_ref(kind, row),
                    evidence.label_document(kind, stored[k]),
                    "a failed label replaced by the next attempt",
                    self._made_by(),
                )
                if conn.execute(upsert, row).first() is not None:
                    written.append(row)
            for row in written:
                chains.append(
                    row["run_id"],
                    kind,
                    evidence.label_ref(kind, row),
                    evidence.digest(evidence.label_document(kind, row)),
                )
            chains.close()
            return len(written)

    @staticmethod
    def _stored_labels(
        conn: Connection, table: Table, key: tuple[str, ...], keys: list[tuple[str, str, str]]
    ) -> dict[tuple[Any, ...], Any]:
        """The labels stored under these keys, by key (every column: a replaced one is kept whole)."""
        found: dict[tuple[Any, ...], Any] = {}
        for chunk in chunks(keys):
            query = select(table).where(tuple_(*[table.c[name] for name in key]).in_(chunk))
            if conn.dialect.name == "postgresql":
                query = query.with_for_update()
            for row in conn.execute(query).mappings():
                found[tuple(row[name] for name in key)] = row
        return found

    def judge_labels(self, run_id: str, config_hash: str, backbone: str) -> list[JudgeLabelRecord]:
        """Every label (ok and failed) of the run under one configuration and backbone, by rollout id."""
        jl = tj.judge_label
        query = (
            select(jl)
            .where(jl.c.run_id == run_id, jl.c.config_hash == config_hash, jl.c.backbone == backbone)
            .order_by(jl.c.rollout_id)
        )
        with self._reading() as conn:
            return [_judge_record(row) for row in conn.execute(query)]

    def cached_judge_labels(
        self, rollout_ids: Iterable[str], config_hash: str, backbone: str, *, include_failed: bool = False
    ) -> dict[str, JudgeLabelRecord]:
        """Stored labels for these rollouts under (config_hash, backbone), by rollout id.

        Only ok labels unless include_failed: a judge skips what is returned and retries the rest.
        """
        jl = tj.judge_label
        ids = sorted(set(rollout_ids))
        found: dict[str, JudgeLabelRecord] = {}
        with self._reading() as conn:
            for chunk in chunks(ids):
                query = select(jl).where(
                    jl.c.rollout_id.in_(chunk), jl.c.config_hash == config_hash, jl.c.backbone == backbone
                )
                if not include_failed:
                    query = query.where(jl.c.status == "ok")
                for row in conn.execute(query):
                    found[row.rollout_id] = _judge_record(row)
        return found

    def judged_configs(self, run_id: str) -> list[dict[str, Any]]:
        """The configurations the run has labels under: config_name, config_hash, view, contract_hash, gate,
        backbone, labels (ok labels) and failed, ordered by name, backbone and hash."""
        jl = tj.judge_label
        group = (jl.c.config_name, jl.c.config_hash, jl.c.view, jl.c.contract_hash, jl.c.gate, jl.c.backbone)
        query = (
            select(
                *group,
                func.sum(case((jl.c.status == "ok", 1), else_=0)),
                func.sum(case((jl.c.status == "failed", 1), else_=0)),
            )
            .where(jl.c.run_id == run_id)
            .group_by(*group)
            .order_by(jl.c.config_name, jl.c.backbone, jl.c.config_hash)
        )
        with self._reading() as conn:
            return [
                {
                    "config_name": name,
                    "config_hash": config_hash,
                    "view": view,
                    "contract_hash": contract_hash,
                    "gate": gate,
                    "backbone": backbone,
                    "labels": int(ok),
                    "failed": int(failed),
                }
                for name, config_hash, view, contract_hash, gate, backbone, ok, failed in conn.execute(query)
            ]

    # ------------------------------------------------------------ recognition labels

    def recognition_labels(self, run_id: str, judge: str, contract_hash: str) -> list[RecognitionLabelRecord]:
        """Every recognition label (ok and failed) of the run by one judge and contract, by rollout id."""
        rl = tj.recognition_label
        query = (
            select(rl)
            .where(rl.c.run_id == run_id, rl.c.judge == judge, rl.c.contract_hash == contract_hash)
            .order_by(rl.c.rollout_id)
        )
        with self._reading() as conn:
            return [_recognition_record(row) for row in conn.execute(query)]

    def recognition_judges(self, run_id: str) -> list[tuple[str, str]]:
        """The (judge, contract hash) pairs the run has recognition labels under, sorted."""
        rl = tj.recognition_label
        query = (
            select(rl.c.judge, rl.c.contract_hash)
            .where(rl.c.run_id == run_id)
            .distinct()
            .order_by(rl.c.judge, rl.c.contract_hash)
        )
        with self._reading() as conn:
            return [(judge, contract_hash) for judge, contract_hash in conn.execute(query)]

    # ------------------------------------------------------------ rows for statistics and sampling

    def outcome_rows(self, run_id: str) -> list[OutcomeRow]:
        """One row per valid rollout of the run, in cell order (pandas takes the records as columns)."""
        query = select(*_OUTCOME_COLUMNS).where(t.rollout.c.run_id == run_id, t.rollout.c.valid)
        return [OutcomeRow(**_outcome_fields(row)) for row in self._paged(query)]

    def labelled_rows(self, run_id: str, config_hash: str, backbone: str) -> list[LabelledRow]:
        """outcome_rows restricted to rollouts with an ok label under (config_hash, backbone), plus `label`."""
        jl = tj.judge_label
        query = (
            select(*_OUTCOME_COLUMNS, jl.c.label)
            .join(
                jl,
                (jl.c.rollout_id == t.rollout.c.id)
                & (jl.c.config_hash == config_hash)
                & (jl.c.backbone == backbone)
                & (jl.c.status == "ok"),
            )
            .where(t.rollout.c.run_id == run_id, t.rollout.c.valid)
        )
        return [LabelledRow(**_outcome_fields(row), label=row.label) for row in self._paged(query)]

    def _paged(self, query: Select[Any]) -> Iterator[Any]:
        """Rows of `query` in cell order, ROWS_PAGE at a time (keyset paging on the cell)."""
        after: tuple[Any, ...] | None = None
        with self._reading() as conn:
            while True:
                page_query = query.order_by(*_CELL).limit(ROWS_PAGE)
                if after is not None:
                    page_query = page_query.where(tuple_(*_CELL) > tuple_(*after))
                page = conn.execute(page_query).all()
                yield from page
                if len(page) < ROWS_PAGE:
                    return
                last = page[-1]
                after = tuple(getattr(last, column.key) for column in _CELL)


def _outcome_fields(row: Any) -> dict[str, Any]:
    return {
        "rollout_id": row.id,
        "case_id": row.case_id,
        "model": row.model,
        "harness": row.harness,
        "cue": row.cue,
        "defense": row.defense,
        "attempt": row.attempt,
        "strategy": row.strategy,
        "vulnerability": row.vulnerability,
        "constraint": row.constraint,
        "channel": row.channel,
        "surface": row.surfaces.split(",")[0] if row.surfaces else None,
        "E": row.e,
        "U": row.utility,
        "benign": bool(row.benign),
    }
