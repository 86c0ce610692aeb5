"""Each run's evidence bound by a hash chain, so nothing changes unseen (issue 34, item 5).

Every record a run's evidence consists of — each rollout with its events, receipts, diff and snapshots, each judge
and recognition label, each recorded correction — is appended to the run's chain when it is written:
`evidence_link` (run, seq, kind, ref, digest, head), where `digest` is the SHA-256 of the record's canonical
document and `head` = SHA-256(previous head, seq, kind, ref, digest). The chain starts at the run's genesis, the
digest of its immutable record (id, protocol, case set, code version, …), and its latest head is stored with the
run (`run.evidence_head`, `run.evidence_seq`) and carried by every export and Inspect log.

The tables are append-only for every login (migration 0015's triggers): a record changes only through a
recorded correction (`evidence_correction`: who, why, and the prior record whole), which is itself a link of
the chain. Two corrections are made by the store itself — a resume with --retry-invalid replacing an invalid
rollout, and a judge replacing a failed label — and any other only by the owner.

`verify` recomputes every record's digest from what is stored now and every head from the genesis, and names the
first record that differs (by its place in the chain), or that was written past the chain, or is gone. What it
cannot see is a store rewritten by its owner whole — records, chain and head alike, triggers dropped: a head from
an earlier export (`runs verify RUN --head H`) catches that.

The documents' columns are frozen (the `*_COLUMNS` below): a digest must read the same forever, so a column added
to a table later is added to a new chain version, never to these lists.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import Connection, Table, func, insert, select, update

CHAIN = "redagent-evidence-v1"

# What each document holds (frozen: see the module docstring). Surrogate ids and the rollout id of a child are left
# out; a child's place is its order (events by idx, receipts by seq, diff entries as listed).
RUN_COLUMNS = (
    "id",
    "protocol",
    "case_set_hash",
    "manifest_hash",
    "code_version",
    "planned",
    "parent_run_id",
    "created_at",
)
ROLLOUT_COLUMNS = (
    "id",
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
    "e",
    "evidence",
    "expected_e",
    "utility",
    "benign",
    "reached",
    "final_text",
    "started_at",
    "finished_at",
    "duration_ms",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "baseline_rollout_id",
)
EVENT_COLUMNS = ("idx", "role", "text", "tool_call", "original", "observation", "receipts", "tampered")
RECEIPT_COLUMNS = (
    "receipt_id",
    "seq",
    "service",
    "action",
    "args",
    "outcome",
    "actor",
    "step",
    "effect",
    "error",
    "via",
)
DIFF_COLUMNS = ("path", "op", "before", "after")
JUDGE_COLUMNS = (
    "rollout_id",
    "run_id",
    "config_name",
    "config_hash",
    "view",
    "contract_hash",
    "gate",
    "backbone",
    "label",
    "status",
    "rationale",
    "evidence",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "created_at",
)
RECOGNITION_COLUMNS = (
    "rollout_id",
    "run_id",
    "judge",
    "contract_hash",
    "anchor_idx",
    "resolved",
    "broad",
    "strict",
    "status",
    "rationale",
    "evidence",
    "created_at",
)
CORRECTION_COLUMNS = ("id", "run_id", "kind", "ref", "reason", "made_by", "prior", "prior_digest", "created_at")
_BOOLEAN = {"valid", "benign", "reached", "tampered", "resolved"}
_FLOAT = {"duration_ms", "cost_usd"}
_INTEGER = {"planned", "case_version", "attempt", "e", "expected_e", "utility", "prompt_tokens", "completion_tokens"}
_INTEGER |= {"idx", "seq", "step", "label", "anchor_idx", "broad", "strict", "id"}
_JSON = {"protocol", "evidence", "tool_call", "receipts", "args", "effect", "before", "after", "prior"}

# A row read by column name (SQLAlchemy's RowMapping) or a plain dict.
Row = Mapping[Any, Any]

ROLLOUT, JUDGE, RECOGNITION, CORRECTION = "rollout", "judge_label", "recognition_label", "correction"
KINDS = (ROLLOUT, JUDGE, RECOGNITION, CORRECTION)
PARTS = ("rollout", "events", "receipts", "diff", "snapshots")


# ---------------------------------------------------------------- documents and digests


def _value(name: str, value: Any) -> Any:
    """A column's value as every reader sees it, whatever the dialect handed back or the writer handed in."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if name in _BOOLEAN:
        return bool(value)
    if name in _FLOAT:
        return float(value)
    if name in _INTEGER and not isinstance(value, str):
        return int(value)
    if name in _JSON:
        return orjson.loads(orjson.dumps(value))  # tuples as lists, what a JSON column gives back
    return value


def document(row: Row, columns: Sequence[str]) -> dict[str, Any]:
    return {name: _value(name, row.get(name)) for name in columns}


def canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def digest(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


def rollout_document(
    row: Row,
    events: Iterable[Row],
    receipts: Iterable[Row],
    diff: Iterable[Row],
    snapshots: Mapping[str, str],
) -> dict[str, Any]:
    """A rollout whole, in its canonical form: the row, its children in their order, its snapshots' blob hashes."""
    return {
        "rollout": document(row, ROLLOUT_COLUMNS),
        "events": [document(e, EVENT_COLUMNS) for e in sorted(events, key=lambda e: int(e["idx"]))],
        "receipts": [document(r, RECEIPT_COLUMNS) for r in sorted(receipts, key=lambda r: int(r["seq"]))],
        "diff": [document(d, DIFF_COLUMNS) for d in diff],
        "snapshots": {kind: snapshots[kind] for kind in sorted(snapshots)},
    }


def parts_of(doc: Row) -> dict[str, str]:
    """Each part's digest: what `verify` compares to say which part of a rollout differs."""
    return {part: digest(doc[part]) for part in PARTS}


def rollout_digest(parts: Mapping[str, str]) -> str:
    return digest(dict(parts))


def label_ref(kind: str, row: Row) -> str:
    """How a chain link names a label: its key (rollout | configuration hash | backbone, or | judge | contract)."""
    if kind == JUDGE:
        return f"{row['rollout_id']}|{row['config_hash']}|{row['backbone']}"
    return f"{row['rollout_id']}|{row['judge']}|{row['contract_hash']}"


def label_document(kind: str, row: Row) -> dict[str, Any]:
    return document(row, JUDGE_COLUMNS if kind == JUDGE else RECOGNITION_COLUMNS)


def genesis(run_row: Row) -> str:
    """The head before the first record: the run's immutable record."""
    run_digest = digest(document(run_row, RUN_COLUMNS))
    return hashlib.sha256(f"{CHAIN}\n{run_row['id']}\n{run_digest}".encode()).hexdigest()


def next_head(previous: str, seq: int, kind: str, ref: str, record_digest: str) -> str:
    return hashlib.sha256(f"{previous}\n{seq}\n{kind}\n{ref}\n{record_digest}".encode()).hexdigest()


# ---------------------------------------------------------------- appending


@dataclass
class Tail:
    """Where a run's chain ends, while a write transaction appends to it."""

    run_id: str
    seq: int
    head: str
    links: list[dict[str, Any]] = field(default_factory=list)
    flushed: int = 0  # links already inserted


class ChainWriter:
    """Appends to the chains of the runs a write transaction touches. Opening it locks those runs' rows (FOR UPDATE
    on PostgreSQL; SQLite's write transaction is already the only one), so concurrent writers of one run append one
    after the other; open it before writing anything else, so every writer takes its locks in one order. `close`
    inserts the links and stores each run's new head."""

    def __init__(self, conn: Connection, run_ids: Iterable[str]) -> None:
        from redagent.store.tables import run

        self.conn, self.run = conn, run
        self.tails: dict[str, Tail] = {}
        columns = [run.c[name] for name in (*RUN_COLUMNS, "evidence_head", "evidence_seq")]
        query = select(*columns).where(run.c.id.in_(sorted(set(run_ids)))).order_by(run.c.id)
        if conn.dialect.name == "postgresql":
            query = query.with_for_update()
        for row in conn.execute(query).mappings():
            head = row["evidence_head"] or genesis(row)  # a run written before 0015: its genesis
            self.tails[row["id"]] = Tail(row["id"], int(row["evidence_seq"] or 0), head)

    def append(
        self, run_id: str, kind: str, ref: str, record_digest: str, parts: Mapping[str, str] | None = None
    ) -> int:
        tail = self.tails.get(run_id)
        if tail is None:
            from redagent.store.errors import InvalidRecord

            raise InvalidRecord(f"{kind} {ref}: run {run_id!r} is not in the store")
        tail.seq += 1
        tail.head = next_head(tail.head, tail.seq, kind, ref, record_digest)
        tail.links.append(
            {
                "run_id": run_id,
                "seq": tail.seq,
                "kind": kind,
                "ref": ref,
                "digest": record_digest,
                "parts": dict(parts) if parts is not None else None,
                "head": tail.head,
                "created_at": datetime.now(UTC),
            }
        )
        return tail.seq

    def correct(self, run_id: str, kind: str, ref: str, prior: Row, reason: str, made_by: str) -> int:
        """Record a correction of the record `ref` (its prior document whole) and link it; the change it allows must
        follow in the same transaction (PostgreSQL: the triggers match the transaction; SQLite: the correction must
        be the connection's last insert, so make the change before the next one). Returns the correction's id."""
        from redagent.store.tables_evidence import evidence_correction

        prior_digest = rollout_digest(parts_of(prior)) if kind == ROLLOUT else digest(prior)
        row = {
            "run_id": run_id,
            "kind": kind,
            "ref": ref,
            "reason": reason,
            "made_by": made_by,
            "prior": dict(prior),
            "prior_digest": prior_digest,
            "created_at": datetime.now(UTC),
        }
        if self.conn.dialect.name == "postgresql":
            row["txid"] = func.txid_current()
        correction_id = self.conn.execute(
            insert(evidence_correction).values(**row).returning(evidence_correction.c.id)
        ).scalar_one()
        self.append(run_id, CORRECTION, ref, digest(document({**row, "id": correction_id}, CORRECTION_COLUMNS)))
        return int(correction_id)

    def flush(self) -> None:
        """Insert the links appended so far (a correction's link must be stored before its rollout's new children,
        which the triggers refuse while the rollout's latest link is a record)."""
        from redagent.store.tables_evidence import evidence_link

        for tail in self.tails.values():
            if tail.flushed < len(tail.links):
                self.conn.execute(evidence_link.insert(), tail.links[tail.flushed :])
                tail.flushed = len(tail.links)

    def close(self) -> dict[str, Tail]:
        self.flush()
        for tail in self.tails.values():
            if not tail.links:
                continue
            self.conn.execute(
                update(self.run)
                .where(self.run.c.id == tail.run_id)
                .values(evidence_seq=tail.seq, evidence_head=tail.head)
            )
        return self.tails


# ---------------------------------------------------------------- reading a run's records back


def rollout_documents(conn: Connection, rollout_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The canonical documents of these rollouts as stored now (rollouts that do not exist are absent)."""
    from redagent.store.tables import diff_entry, event, receipt, rollout, snapshot

    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(rollout_ids), 500):
        ids = list(rollout_ids[start : start + 500])
        # Only the frozen columns are read: the migration that chains older runs reads these tables as they are then.
        rows = {
            row["id"]: row
            for row in conn.execute(_columns(rollout, ROLLOUT_COLUMNS).where(rollout.c.id.in_(ids))).mappings()
        }
        children: dict[str, dict[str, list[Any]]] = {key: {"events": [], "receipts": [], "diff": []} for key in rows}
        snaps: dict[str, dict[str, str]] = {key: {} for key in rows}
        for table, part, columns, order in (
            (event, "events", EVENT_COLUMNS, event.c.idx),
            (receipt, "receipts", RECEIPT_COLUMNS, receipt.c.seq),
            (diff_entry, "diff", DIFF_COLUMNS, diff_entry.c.id),
        ):
            query = _columns(table, ("rollout_id", *columns)).where(table.c.rollout_id.in_(ids)).order_by(order)
            for child in conn.execute(query).mappings():
                children[child["rollout_id"]][part].append(child)
        for rollout_id, kind, sha in conn.execute(
            select(snapshot.c.rollout_id, snapshot.c.kind, snapshot.c.blob_sha).where(snapshot.c.rollout_id.in_(ids))
        ):
            snaps[rollout_id][kind] = sha
        for key, row in rows.items():
            parts = children[key]
            found[key] = rollout_document(row, parts["events"], parts["receipts"], parts["diff"], snaps[key])
    return found


def _columns(table: Table, names: Sequence[str]) -> Any:
    return select(*[table.c[name] for name in names])


def latest_digests(conn: Connection, rollout_ids: Sequence[str]) -> dict[str, str]:
    """Each rollout's digest in its run's chain now (its latest record link), by id."""
    from redagent.store.tables_evidence import evidence_link

    found: dict[str, str] = {}
    for start in range(0, len(rollout_ids), 500):
        query = (
            select(evidence_link.c.ref, evidence_link.c.digest)
            .where(evidence_link.c.ref.in_(list(rollout_ids[start : start + 500])), evidence_link.c.kind == ROLLOUT)
            .order_by(evidence_link.c.seq)
        )
        found.update(dict(conn.execute(query).all()))  # later links overwrite earlier ones
    return found


def label_rows(conn: Connection, table: Table, run_id: str) -> Iterator[Row]:
    columns = JUDGE_COLUMNS if table.name == JUDGE else RECOGNITION_COLUMNS
    yield from conn.execute(_columns(table, columns).where(table.c.run_id == run_id)).mappings()


# ---------------------------------------------------------------- verifying


@dataclass(frozen=True, slots=True)
class Difference:
    """One place the stored evidence and its chain disagree. `seq` is the record's place in the chain (None for a
    record written past it)."""

    seq: int | None
    kind: str
    ref: str
    what: str

    def line(self) -> str:
        where = f"record {self.seq} ({self.kind} {self.ref})" if self.seq is not None else f"{self.kind} {self.ref}"
        return f"{where}: {self.what}"


@dataclass(frozen=True, slots=True)
class EvidenceCheck:
    """What `runs verify` reports: the run's chain recomputed from what is stored now."""

    run_id: str
    records: int  # links in the chain
    head: str | None  # the head stored with the run
    differences: tuple[Difference, ...]
    export_head: str | None = None  # a head given from an export, and where it is in the chain
    export_seq: int | None = None

    @property
    def intact(self) -> bool:
        return not self.differences

    @property
    def first(self) -> Difference | None:
        return self.differences[0] if self.differences else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "records": self.records,
            "head": self.head,
            "intact": self.intact,
            "first_difference": None if self.first is None else self.first.line(),
            "differences": [{"seq": d.seq, "kind": d.kind, "ref": d.ref, "what": d.what} for d in self.differences],
            "export_head": self.export_head,
            "export_seq": self.export_seq,
        }


def verify(conn: Connection, run_id: str, export_head: str | None = None) -> EvidenceCheck:
    """Recompute the run's chain from its genesis and every record from what is stored now (see the module
    docstring). Differences come ordered by their place in the chain, then records written past it."""
    from redagent.store.tables import blob, rollout, run
    from redagent.store.tables_evidence import evidence_correction, evidence_link
    from redagent.store.tables_judging import judge_label, recognition_label

    run_row: Row | None = conn.execute(select(run).where(run.c.id == run_id)).mappings().first()
    assert run_row is not None  # the caller checked the run exists
    found: list[Difference] = []
    links = list(
        conn.execute(select(evidence_link).where(evidence_link.c.run_id == run_id).order_by(evidence_link.c.seq))
        .mappings()
        .all()
    )
    head = genesis(run_row)
    export_seq = 0 if export_head == head else None
    for expected, link in enumerate(links, start=1):
        if link["seq"] != expected:
            found.append(Difference(expected, "chain", str(expected), "is missing from the chain"))
            break
        head = next_head(head, link["seq"], link["kind"], link["ref"], link["digest"])
        if head != link["head"]:
            found.append(Difference(link["seq"], link["kind"], link["ref"], "the chain was rewritten from here"))
            break
        if export_head is not None and head == export_head:
            export_seq = link["seq"]
    stored_head = run_row["evidence_head"] if run_row["evidence_head"] is not None or links else head
    if not found and (stored_head != head or int(run_row["evidence_seq"] or 0) != len(links)):
        found.append(Difference(len(links), "run", run_id, "the head stored with the run is not its chain's last head"))
    # Each record's history in the chain: its record links and corrections, in order.
    history: dict[tuple[str, str], list[Row]] = {}
    corrections_of: dict[str, list[Row]] = {}
    for link in links:
        if link["kind"] == CORRECTION:
            corrections_of.setdefault(link["ref"], []).append(link)
            for family in (ROLLOUT, JUDGE, RECOGNITION):
                if (family, link["ref"]) in history:
                    history[(family, link["ref"])].append(link)
        else:
            history.setdefault((link["kind"], link["ref"]), []).append(link)
    found += _check_corrections(conn, run_id, history, corrections_of, evidence_correction)
    # Rollouts: the latest record of each must be what is stored now.
    stored_ids = set(conn.execute(select(rollout.c.id).where(rollout.c.run_id == run_id)).scalars())
    chained = {ref for kind, ref in history if kind == ROLLOUT}
    documents = rollout_documents(conn, sorted(stored_ids | chained))
    for ref in sorted(chained):
        last = history[(ROLLOUT, ref)][-1]
        doc = documents.get(ref)
        if last["kind"] == CORRECTION:
            if doc is not None:
                found.append(
                    Difference(None, ROLLOUT, ref, f"was written past the chain (after correction {last['seq']})")
                )
            continue
        if doc is None:
            found.append(Difference(last["seq"], ROLLOUT, ref, "is gone from the store"))
            continue
        parts = parts_of(doc)
        if rollout_digest(parts) != last["digest"]:
            changed = [part for part in PARTS if (last["parts"] or {}).get(part) != parts[part]] or ["record"]
            found.append(
                Difference(last["seq"], ROLLOUT, ref, f"its {', '.join(changed)} differ from what was written")
            )
    for ref in sorted(stored_ids - chained):
        found.append(Difference(None, ROLLOUT, ref, "is in no record of the chain: written past it"))
    # Snapshots name their content by its hash: the content must still have it.
    shas = {sha for doc in documents.values() for sha in doc["snapshots"].values()}
    blobs = {}
    for start in range(0, len(shas), 500):
        chunk = sorted(shas)[start : start + 500]
        blobs.update(dict(conn.execute(select(blob.c.sha256, blob.c.data).where(blob.c.sha256.in_(chunk))).all()))
    for ref in sorted(documents):
        for kind, sha in documents[ref]["snapshots"].items():
            data = blobs.get(sha)
            if data is None or hashlib.sha256(data.encode()).hexdigest() != sha:
                seq = history.get((ROLLOUT, ref), [{"seq": None}])[-1]["seq"]
                found.append(Difference(seq, ROLLOUT, ref, f"its {kind} snapshot's content differs from its hash"))
    # Labels.
    for kind, table in ((JUDGE, judge_label), (RECOGNITION, recognition_label)):
        stored = {label_ref(kind, row): row for row in label_rows(conn, table, run_id)}
        refs = {ref for family, ref in history if family == kind}
        for ref in sorted(refs):
            last = history[(kind, ref)][-1]
            row = stored.get(ref)
            if last["kind"] == CORRECTION:
                if row is not None:
                    found.append(
                        Difference(None, kind, ref, f"was written past the chain (after correction {last['seq']})")
                    )
                continue
            if row is None:
                found.append(Difference(last["seq"], kind, ref, "is gone from the store"))
            elif digest(label_document(kind, row)) != last["digest"]:
                found.append(Difference(last["seq"], kind, ref, "differs from what was written"))
        for ref in sorted(set(stored) - refs):
            found.append(Difference(None, kind, ref, "is in no record of the chain: written past it"))
    found.sort(key=lambda d: (d.seq is None, d.seq or 0))
    return EvidenceCheck(
        run_id=run_id,
        records=len(links),
        head=stored_head,
        differences=tuple(found),
        export_head=export_head,
        export_seq=export_seq,
    )


def _check_corrections(
    conn: Connection,
    run_id: str,
    history: dict[tuple[str, str], list[Row]],
    corrections_of: dict[str, list[Row]],
    table: Table,
) -> list[Difference]:
    """Each correction link must be a stored correction, and name exactly the record it replaced."""
    found: list[Difference] = []
    rows: dict[str, list[Row]] = {}
    for row in conn.execute(select(table).where(table.c.run_id == run_id).order_by(table.c.id)).mappings():
        rows.setdefault(row["ref"], []).append(row)
    for ref, links in corrections_of.items():
        stored = rows.get(ref, [])
        for n, link in enumerate(links):
            if n >= len(stored):
                found.append(Difference(link["seq"], CORRECTION, ref, "the correction it records is gone"))
                continue
            correction = stored[n]
            if digest(document(correction, CORRECTION_COLUMNS)) != link["digest"]:
                found.append(Difference(link["seq"], CORRECTION, ref, "the correction differs from what was recorded"))
                continue
            prior = correction["prior"] or {}
            kind = correction["kind"]
            prior_digest = rollout_digest(parts_of(prior)) if kind == ROLLOUT else digest(prior)
            before = [x for x in history.get((kind, ref), []) if x["seq"] < link["seq"] and x["kind"] != CORRECTION]
            if prior_digest != correction["prior_digest"] or not before or before[-1]["digest"] != prior_digest:
                found.append(
                    Difference(link["seq"], CORRECTION, ref, "the correction does not name the record it replaced")
                )
    return found


# ---------------------------------------------------------------- chaining what came before (migration 0015)


def seal_unchained(conn: Connection, run_ids: Iterable[str] | None = None) -> int:
    """Chain what runs hold but no chain names: a run written before migration 0015 gets its rollouts and labels
    linked as they are when the store is upgraded (rollouts by id, then judge and recognition labels by key).
    Returns how many records were linked."""
    from redagent.store.tables import rollout, run
    from redagent.store.tables_evidence import evidence_link
    from redagent.store.tables_judging import judge_label, recognition_label

    ids = list(run_ids) if run_ids is not None else list(conn.execute(select(run.c.id).order_by(run.c.id)).scalars())
    linked = 0
    for run_id in ids:
        chained = set(conn.execute(select(evidence_link.c.ref).where(evidence_link.c.run_id == run_id)).scalars())
        writer = ChainWriter(conn, [run_id])
        if not writer.tails:
            continue
        stored = sorted(set(conn.execute(select(rollout.c.id).where(rollout.c.run_id == run_id)).scalars()) - chained)
        for start in range(0, len(stored), 500):
            docs = rollout_documents(conn, stored[start : start + 500])
            for ref in sorted(docs):
                parts = parts_of(docs[ref])
                writer.append(run_id, ROLLOUT, ref, rollout_digest(parts), parts)
        for kind, table in ((JUDGE, judge_label), (RECOGNITION, recognition_label)):
            labels = {label_ref(kind, row): row for row in label_rows(conn, table, run_id)}
            for ref in sorted(set(labels) - chained):
                writer.append(run_id, kind, ref, digest(label_document(kind, labels[ref])))
        linked += len(writer.tails[run_id].links)
        writer.close()
    return linked


# ---------------------------------------------------------------- as Store methods


class EvidenceQueries:
    """Store methods for the evidence chain (mixed into `Store`, which provides the plumbing)."""

    if TYPE_CHECKING:
        url: str
        _reading: Callable[[], AbstractContextManager[Connection]]

        def identity(self) -> Any: ...

    def verify_evidence(self, run_id: str, export_head: str | None = None) -> EvidenceCheck:
        """The run's chain recomputed from what is stored now (`verify`); UnknownRun if there is no such run.
        `export_head`: a head from an export or Inspect log, located in the chain (or not)."""
        from redagent.store.errors import InvalidRecord, UnknownRun
        from redagent.store.tables import run

        if not self.identity().analyst:
            raise InvalidRecord("only the owner and researchers verify a run's evidence (it reads every record)")
        with self._reading() as conn:
            if conn.execute(select(run.c.id).where(run.c.id == run_id)).first() is None:
                raise UnknownRun(run_id)
            return verify(conn, run_id, export_head)

    def evidence_links(self, run_id: str) -> tuple[str | None, int, dict[tuple[str, str], tuple[int, str]]]:
        """The run's head, its number of records, and each record's latest place and digest in the chain by
        (kind, ref): what an export writes beside each rollout and label."""
        from redagent.store.tables import run
        from redagent.store.tables_evidence import evidence_link

        with self._reading() as conn:
            columns = [run.c[name] for name in (*RUN_COLUMNS, "evidence_head", "evidence_seq")]
            row = conn.execute(select(*columns).where(run.c.id == run_id)).mappings().first()
            links: dict[tuple[str, str], tuple[int, str]] = {}
            for kind, ref, seq, record in conn.execute(
                select(evidence_link.c.kind, evidence_link.c.ref, evidence_link.c.seq, evidence_link.c.digest)
                .where(evidence_link.c.run_id == run_id, evidence_link.c.kind != CORRECTION)
                .order_by(evidence_link.c.seq)
            ):
                links[(kind, ref)] = (int(seq), record)
        if row is None:
            return None, 0, {}
        # A run with no record yet has its genesis for a head (the row takes it with the first record).
        return row["evidence_head"] or genesis(row), int(row["evidence_seq"] or 0), links
