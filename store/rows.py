"""Records ↔ table rows: checks a record's invariants, flattens it into rows per table, and reads rows back.

Kept apart from the SQL so the write path can validate a whole batch before it sends anything.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, overload

import orjson

from redagent.store.errors import InvalidRecord
from redagent.store.readmodel import (
    StoredDiffEntry,
    StoredEvent,
    StoredLabel,
    StoredReceipt,
    StoredRollout,
    VerdictEvidence,
)
from redagent.store.records import RUN_STATUSES, RolloutRecord, RunRecord

# A result row read by column name: SQLAlchemy's RowMapping (keyed by names and by columns) or a plain dict.
Row = Mapping[Any, Any]

# PostgreSQL's TEXT cannot hold NUL, and a tool's raw output can contain one; both dialects store
# U+FFFD instead so they keep identical data (JSON columns escape NUL and need no help).
_NUL = "\x00"
_NUL_STAND_IN = "\ufffd"


def clean_text(value: str | None) -> str | None:
    if value is None or _NUL not in value:
        return value
    return value.replace(_NUL, _NUL_STAND_IN)


def canonical_json(value: Any, what: str = "snapshot") -> str:
    """The one serialisation a blob is hashed and stored under: orjson with sorted keys."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError as exc:
        raise InvalidRecord(f"{what} is not JSON-serialisable: {exc}") from None


def json_checked(value: Any, what: str) -> Any:
    """`value` if orjson can serialise it (the drivers will, later); else InvalidRecord naming the field.

    Checked up front because the failure would otherwise surface differently per dialect (wrapped by
    SQLAlchemy on SQLite, a bare TypeError from psycopg), and only once the batch is half-sent.
    """
    try:
        orjson.dumps(value)
    except TypeError as exc:
        raise InvalidRecord(f"{what} is not JSON-serialisable: {exc}") from None
    return value


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@overload
def aware(value: datetime, what: str) -> datetime: ...
@overload
def aware(value: None, what: str) -> None: ...
def aware(value: datetime | None, what: str) -> datetime | None:
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise InvalidRecord(f"{what} is a naive datetime ({value.isoformat()}): the store needs timezone-aware ones")
    return value


# ---------------------------------------------------------------- runs


def run_row(run: RunRecord) -> dict[str, Any]:
    if run.status not in RUN_STATUSES:
        raise InvalidRecord(f"run {run.id}: unknown status {run.status!r} (one of {', '.join(RUN_STATUSES)})")
    if run.planned < 0:
        raise InvalidRecord(f"run {run.id}: planned must be >= 0, not {run.planned}")
    # Who drives the run (0006) is written only when known: the engine sets it through update_run, and a
    # record without it then inserts into a store of any revision (as the migration tests' old releases do).
    health = {"host": run.host, "pid": run.pid, "heartbeat_at": aware(run.heartbeat_at, f"run {run.id}: heartbeat_at")}
    return {
        **{k: v for k, v in health.items() if v is not None},
        "id": run.id,
        "status": run.status,
        "protocol": json_checked(run.protocol, f"run {run.id}: protocol"),
        "case_set_hash": run.case_set_hash,
        "manifest_hash": run.manifest_hash,
        "code_version": run.code_version,
        "planned": run.planned,
        "parent_run_id": run.parent_run_id,
        "created_at": aware(run.created_at, f"run {run.id}: created_at"),
        "started_at": aware(run.started_at, f"run {run.id}: started_at"),
        "finished_at": aware(run.finished_at, f"run {run.id}: finished_at"),
    }


def run_record(row: Row) -> RunRecord:
    return RunRecord(
        id=row["id"],
        status=row["status"],
        protocol=row["protocol"],
        case_set_hash=row["case_set_hash"],
        code_version=row["code_version"],
        planned=row["planned"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        parent_run_id=row["parent_run_id"],
        manifest_hash=row["manifest_hash"],
        host=row.get("host"),
        pid=row.get("pid"),
        heartbeat_at=row.get("heartbeat_at"),
    )


# ---------------------------------------------------------------- rollouts


@dataclass
class PreparedRollout:
    """One rollout flattened into the rows of every table it touches (child rows without ids)."""

    row: dict[str, Any]
    events: list[dict[str, Any]]
    receipts: list[dict[str, Any]]
    diff: list[dict[str, Any]]
    snapshots: list[dict[str, Any]]
    blobs: dict[str, str] = field(default_factory=dict)  # sha256 → canonical JSON


def prepare_rollout(r: RolloutRecord) -> PreparedRollout:
    """Check the rollout's invariants and flatten it; InvalidRecord names the rollout and what is wrong."""
    where = f"rollout {r.id}"
    if r.valid and r.E is None and (r.evidence or {}).get("outcome") != "unresolved":
        # E None on a valid rollout means the verifier could not decide (harm unresolved), which its evidence says
        # with why; without that, a missing E would read as a hole in the record.
        raise InvalidRecord(
            f"{where}: a valid rollout needs an execution outcome E (or an evidence outcome 'unresolved')"
        )
    if r.E is not None and r.E not in (0, 1):
        raise InvalidRecord(f"{where}: execution outcome E must be 0, 1 or None, not {r.E!r}")
    if not r.valid and not r.invalid_reason:
        raise InvalidRecord(f"{where}: an invalid rollout needs an invalid_reason")
    if r.U is not None and (isinstance(r.U, float) or r.U not in (0, 1)):
        raise InvalidRecord(f"{where}: utility U must be 0, 1 or None, not {r.U!r}")
    if not r.valid and r.U is not None:
        raise InvalidRecord(f"{where}: an invalid rollout has no utility outcome U")
    bad_surfaces = [s for s in r.surfaces if not s or "," in s]
    if bad_surfaces:
        raise InvalidRecord(f"{where}: surface names must be non-empty and free of commas: {bad_surfaces!r}")
    row = {
        "id": r.id,
        "run_id": r.run_id,
        "case_id": r.case_id,
        "case_version": r.case_version,
        "case_hash": r.case_hash,
        "strategy": r.strategy,
        "vulnerability": r.vulnerability,
        "constraint": r.constraint,
        "surfaces": ",".join(r.surfaces),
        "channel": r.channel,
        "model": r.model,
        "harness": r.harness,
        "cue": r.cue,
        "defense": r.defense,
        "attempt": r.attempt,
        "valid": bool(r.valid),
        "invalid_reason": r.invalid_reason,
        "invalid_detail": clean_text(r.invalid_detail),
        "e": r.E,
        "evidence": json_checked(r.evidence, f"{where}: evidence"),
        "expected_e": r.expected_E,
        "utility": None if r.U is None else int(r.U),
        "benign": bool(r.benign),
        "reached": bool(r.reached),
        "final_text": clean_text(r.final_text),
        "started_at": aware(r.started_at, f"{where}: started_at"),
        "finished_at": aware(r.finished_at, f"{where}: finished_at"),
        "duration_ms": r.duration_ms,
        "prompt_tokens": r.prompt_tokens,
        "completion_tokens": r.completion_tokens,
        "cost_usd": r.cost_usd,
        "baseline_rollout_id": r.baseline_rollout_id,
    }
    try:
        events = [_event_row(r.id, ev) for ev in r.events]
        receipts = [_receipt_row(r.id, rc) for rc in r.receipts]
        diff = [
            {"rollout_id": r.id, "path": d["path"], "op": d["op"], "before": d.get("before"), "after": d.get("after")}
            for d in r.diff
        ]
        # One serialisation of all JSON-bearing child values: cheaper than one per field.
        json_checked([[e["tool_call"], e["receipts"]] for e in events], f"{where}: an event")
        json_checked([[c["args"], c["effect"]] for c in receipts], f"{where}: a receipt")
        json_checked([[d["before"], d["after"]] for d in diff], f"{where}: a diff entry")
    except KeyError as exc:
        raise InvalidRecord(f"{where}: an event, receipt or diff entry lacks the key {exc}") from None
    prepared = PreparedRollout(row, events, receipts, diff, [])
    for kind, value in (("baseline", r.baseline), ("final", r.final)):
        text = canonical_json(value, f"{where}: {kind} snapshot")
        sha = sha256_hex(text)
        prepared.blobs[sha] = text
        prepared.snapshots.append({"rollout_id": r.id, "kind": kind, "blob_sha": sha})
    return prepared


def _event_row(rollout_id: str, ev: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "rollout_id": rollout_id,
        "idx": ev["idx"],
        "role": ev["role"],
        "text": clean_text(ev.get("text") or ""),
        "tool_call": ev.get("tool_call"),
        "original": clean_text(ev.get("original")),
        "observation": clean_text(ev.get("observation")),
        "receipts": list(ev.get("receipts") or []),
        "tampered": bool(ev.get("tampered", False)),
    }


def _receipt_row(rollout_id: str, rc: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "rollout_id": rollout_id,
        "receipt_id": rc["id"],
        "seq": rc["seq"],
        "service": rc["service"],
        "action": rc["action"],
        "args": rc.get("args") or {},
        "outcome": rc["outcome"],
        "actor": rc["actor"],
        "step": rc.get("step"),
        "effect": rc.get("effect") or {},
        "error": clean_text(rc.get("error")),
        "via": rc.get("via"),
    }


# ---------------------------------------------------------------- reading back

# Rollout columns in export order, with the record's name for each (columns E/expected_E are lower-case, U is
# `utility`).
ROLLOUT_KEYS = (
    ("id", "rollout_id"),
    ("run_id", "run_id"),
    ("case_id", "case_id"),
    ("case_version", "case_version"),
    ("case_hash", "case_hash"),
    ("strategy", "strategy"),
    ("vulnerability", "vulnerability"),
    ("constraint", "constraint"),
    ("surfaces", "surfaces"),
    ("channel", "channel"),
    ("model", "model"),
    ("harness", "harness"),
    ("cue", "cue"),
    ("defense", "defense"),
    ("attempt", "attempt"),
    ("valid", "valid"),
    ("invalid_reason", "invalid_reason"),
    ("invalid_detail", "invalid_detail"),
    ("e", "E"),
    ("evidence", "evidence"),
    ("expected_e", "expected_E"),
    ("reached", "reached"),
    ("final_text", "final_text"),
    ("started_at", "started_at"),
    ("finished_at", "finished_at"),
    ("duration_ms", "duration_ms"),
    ("prompt_tokens", "prompt_tokens"),
    ("completion_tokens", "completion_tokens"),
    ("cost_usd", "cost_usd"),
    ("baseline_rollout_id", "baseline_rollout_id"),
    ("utility", "U"),
    ("benign", "benign"),
)


def rollout_export(row: Row) -> dict[str, Any]:
    """A rollout row as the export's flat dict (children are added by the caller)."""
    out = {key: row[column] for column, key in ROLLOUT_KEYS}
    out["surfaces"] = row["surfaces"].split(",") if row["surfaces"] else []
    # SQLite hands booleans back as integers.
    out["valid"] = bool(out["valid"])
    out["reached"] = bool(out["reached"])
    out["benign"] = bool(out["benign"])
    return out


def event_dict(row: Row) -> dict[str, Any]:
    return {
        "idx": row["idx"],
        "role": row["role"],
        "text": row["text"],
        "tool_call": row["tool_call"],
        "original": row["original"],
        "observation": row["observation"],
        "receipts": row["receipts"],
        "tampered": bool(row["tampered"]),
    }


def receipt_dict(row: Row) -> dict[str, Any]:
    return {
        "id": row["receipt_id"],
        "seq": row["seq"],
        "service": row["service"],
        "action": row["action"],
        "args": row["args"],
        "outcome": row["outcome"],
        "actor": row["actor"],
        "step": row["step"],
        "effect": row["effect"],
        "error": row["error"],
        "via": row["via"],
    }


def diff_dict(row: Row) -> dict[str, Any]:
    return {"path": row["path"], "op": row["op"], "before": row["before"], "after": row["after"]}


def rollout_record(item: Mapping[str, Any]) -> RolloutRecord:
    """An exported rollout dict (with children) back into the record the engine wrote."""
    fields = {key: item[key] for _, key in ROLLOUT_KEYS if key != "rollout_id"}
    return RolloutRecord(
        id=item["rollout_id"],
        **fields,
        events=item["events"],
        receipts=item["receipts"],
        baseline=item["baseline"],
        final=item["final"],
        diff=item["diff"],
    )


# ---------------------------------------------------------------- reading back into the typed read model


def stored_event(row: Row) -> StoredEvent:
    """An event row (of the event table or the blind_event view, whose hidden columns may be absent) as a record."""
    tampered = row.get("tampered")
    return StoredEvent(
        idx=row["idx"],
        role=row["role"],
        text=row["text"] or "",
        tool_call=row["tool_call"],
        original=row.get("original"),
        observation=row["observation"],
        receipts=tuple(row["receipts"] or ()),
        tampered=None if tampered is None else bool(tampered),
    )


def stored_receipt(row: Row) -> StoredReceipt:
    return StoredReceipt(
        id=row["receipt_id"],
        seq=row["seq"],
        service=row["service"],
        action=row["action"],
        args=row["args"] or {},
        outcome=row["outcome"],
        actor=row["actor"],
        step=row["step"],
        effect=row["effect"] or {},
        error=row["error"],
        via=row["via"],
    )


def stored_diff_entry(row: Row) -> StoredDiffEntry:
    return StoredDiffEntry(path=row["path"], op=row["op"], before=row["before"], after=row["after"])


def stored_label(row: Row) -> StoredLabel:
    return StoredLabel(
        config_name=row["config_name"],
        config_hash=row["config_hash"],
        view=row["view"],
        backbone=row["backbone"],
        label=row["label"],
        status=row["status"],
        rationale=row["rationale"] or "",
        evidence=tuple(str(e) for e in row["evidence"] or ()),
    )


def stored_rollout(
    row: Row,
    *,
    events: list[StoredEvent],
    receipts: list[StoredReceipt],
    diff: list[StoredDiffEntry],
    event_count: int = -1,
    labels: list[StoredLabel] | None = None,
    baseline: Mapping[str, Any] | None = None,
    final: Mapping[str, Any] | None = None,
) -> StoredRollout:
    """A rollout row and its children as the read model (SQLite hands booleans back as integers)."""
    return StoredRollout(
        events=tuple(events),
        receipts=tuple(receipts),
        diff=tuple(diff),
        event_count=event_count,
        rollout_id=row["id"],
        run_id=row["run_id"],
        case_id=row["case_id"],
        case_version=row["case_version"],
        case_hash=row["case_hash"],
        strategy=row["strategy"],
        vulnerability=row["vulnerability"],
        constraint=row["constraint"],
        surfaces=tuple(row["surfaces"].split(",")) if row["surfaces"] else (),
        channel=row["channel"],
        model=row["model"],
        harness=row["harness"],
        cue=row["cue"],
        defense=row["defense"],
        attempt=row["attempt"],
        valid=bool(row["valid"]),
        invalid_reason=row["invalid_reason"],
        invalid_detail=row["invalid_detail"],
        E=row["e"],
        U=row["utility"],
        benign=bool(row["benign"]),
        reached=bool(row["reached"]),
        expected_E=row["expected_e"],
        verdict=VerdictEvidence.of(row["evidence"]),
        final_text=row["final_text"] or "",
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        duration_ms=row["duration_ms"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        cost_usd=row["cost_usd"],
        baseline_rollout_id=row["baseline_rollout_id"],
        labels=None if labels is None else tuple(labels),
        baseline=baseline,
        final=final,
    )
