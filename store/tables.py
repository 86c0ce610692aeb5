"""The store's tables as SQLModel classes: runs, rollouts, and each rollout's events, receipts, snapshots and diff.

Everything here is portable between SQLite and PostgreSQL. Constraint names follow one naming
convention so later migrations can address them by name (SQLite's batch mode needs that). Later
issues add judge labels, audits and case reviews as new tables on the same `StoreModel.metadata`. The base
and the column types every table module shares are in tables_base.py, so those modules need not import this one.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    Text,
    UniqueConstraint,
    false,
)
from sqlmodel import Field

from redagent.store.tables_base import JSONDocument, StoreModel, UTCDateTime, table_of


class Run(StoreModel, table=True):
    __tablename__ = "run"

    id: str = Field(sa_column=Column(Text, primary_key=True))
    status: str = Field(sa_type=Text, nullable=False)
    protocol: dict[str, Any] = Field(sa_type=JSONDocument, nullable=False)
    case_set_hash: str = Field(sa_type=Text, nullable=False)
    manifest_hash: str | None = Field(default=None, sa_type=Text, nullable=True)
    code_version: str = Field(sa_type=Text, nullable=False)
    planned: int = Field(sa_type=Integer, nullable=False)
    parent_run_id: str | None = Field(default=None, sa_column=Column(Text, ForeignKey("run.id"), nullable=True))
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)
    started_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    # The process driving the run and its last sign of life (0006): a dead one shows as interrupted.
    host: str | None = Field(default=None, sa_type=Text, nullable=True)
    pid: int | None = Field(default=None, sa_type=Integer, nullable=True)
    heartbeat_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    # The head of the run's evidence chain and how many records it holds (0015, store/evidence.py).
    evidence_head: str | None = Field(default=None, sa_type=Text, nullable=True)
    evidence_seq: int = Field(default=0, sa_column=Column(Integer, nullable=False, server_default="0"))


class Rollout(StoreModel, table=True):
    __tablename__ = "rollout"
    __table_args__ = (
        # One rollout per cell of the matrix and attempt; this index also serves lookups by run_id
        # and is the keyset the export pages through (same column order).
        UniqueConstraint("run_id", "case_id", "model", "harness", "cue", "defense", "attempt", name="uq_rollout_cell"),
        Index("ix_rollout_run_model_harness", "run_id", "model", "harness"),
        Index("ix_rollout_run_strategy", "run_id", "strategy"),
        Index("ix_rollout_run_constraint", "run_id", "constraint"),
    )

    id: str = Field(sa_column=Column(Text, primary_key=True))
    run_id: str = Field(sa_column=Column(Text, ForeignKey("run.id"), nullable=False))
    case_id: str = Field(sa_type=Text, nullable=False)
    case_version: int = Field(sa_type=Integer, nullable=False)
    case_hash: str = Field(sa_type=Text, nullable=False)
    strategy: str = Field(sa_type=Text, nullable=False)
    vulnerability: str = Field(sa_type=Text, nullable=False)
    constraint: str = Field(sa_type=Text, nullable=False)
    surfaces: str = Field(sa_type=Text, nullable=False)  # comma-joined surface names
    channel: str = Field(sa_type=Text, nullable=False)
    model: str = Field(sa_type=Text, nullable=False)
    harness: str = Field(sa_type=Text, nullable=False)
    cue: str = Field(sa_type=Text, nullable=False)
    defense: str = Field(sa_type=Text, nullable=False)
    attempt: int = Field(sa_type=Integer, nullable=False)
    valid: bool = Field(sa_type=Boolean, nullable=False)
    invalid_reason: str | None = Field(default=None, sa_type=Text, nullable=True)
    invalid_detail: str | None = Field(default=None, sa_type=Text, nullable=True)
    # Lower-case column names (records say E / expected_E) so plain SQL on PostgreSQL needs no quoting.
    e: int | None = Field(default=None, sa_type=Integer, nullable=True)
    evidence: dict[str, Any] = Field(sa_type=JSONDocument, nullable=False)
    expected_e: int | None = Field(default=None, sa_type=Integer, nullable=True)
    # U (the case's utility check) — NULL when the case states none or the rollout is invalid (0004).
    utility: int | None = Field(default=None, sa_type=Integer, nullable=True)
    # The rollout ran without its attack (benign variant or benign arm); old rows backfilled by id (0004).
    benign: bool = Field(default=False, sa_column=Column(Boolean, nullable=False, server_default=false()))
    reached: bool = Field(sa_type=Boolean, nullable=False)
    final_text: str = Field(sa_type=Text, nullable=False)
    started_at: datetime = Field(sa_type=UTCDateTime, nullable=False)
    finished_at: datetime = Field(sa_type=UTCDateTime, nullable=False)
    duration_ms: float = Field(sa_type=Float, nullable=False)
    prompt_tokens: int = Field(sa_type=Integer, nullable=False)
    completion_tokens: int = Field(sa_type=Integer, nullable=False)
    cost_usd: float = Field(sa_type=Float, nullable=False)
    # Deferred: a rollout may name a baseline written later in the same batch; checked at commit.
    baseline_rollout_id: str | None = Field(
        default=None,
        sa_column=Column(Text, ForeignKey("rollout.id", deferrable=True, initially="DEFERRED"), nullable=True),
    )


def _rollout_fk() -> Column[str]:
    # The parts of a rollout go with it if it is ever deleted.
    return Column("rollout_id", Text, ForeignKey("rollout.id", ondelete="CASCADE"), nullable=False)


class Event(StoreModel, table=True):
    __tablename__ = "event"
    # Also the index on rollout_id (its leading column).
    __table_args__ = (UniqueConstraint("rollout_id", "idx", name="uq_event_rollout_idx"),)

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True, autoincrement=True))
    rollout_id: str = Field(sa_column=_rollout_fk())
    idx: int = Field(sa_type=Integer, nullable=False)
    role: str = Field(sa_type=Text, nullable=False)
    text: str = Field(sa_type=Text, nullable=False)
    tool_call: dict[str, Any] | None = Field(default=None, sa_type=JSONDocument, nullable=True)
    original: str | None = Field(default=None, sa_type=Text, nullable=True)
    observation: str | None = Field(default=None, sa_type=Text, nullable=True)
    receipts: list[str] = Field(sa_type=JSONDocument, nullable=False)
    tampered: bool = Field(sa_type=Boolean, nullable=False)


class Receipt(StoreModel, table=True):
    __tablename__ = "receipt"
    # Receipt sequence numbers are unique within a rollout; also the index on rollout_id.
    __table_args__ = (UniqueConstraint("rollout_id", "seq", name="uq_receipt_rollout_seq"),)

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True, autoincrement=True))
    rollout_id: str = Field(sa_column=_rollout_fk())
    receipt_id: str = Field(sa_type=Text, nullable=False)
    seq: int = Field(sa_type=Integer, nullable=False)
    service: str = Field(sa_type=Text, nullable=False)
    action: str = Field(sa_type=Text, nullable=False)
    args: dict[str, Any] = Field(sa_type=JSONDocument, nullable=False)
    outcome: str = Field(sa_type=Text, nullable=False)
    actor: str = Field(sa_type=Text, nullable=False)
    step: int | None = Field(default=None, sa_type=Integer, nullable=True)
    effect: dict[str, Any] = Field(sa_type=JSONDocument, nullable=False)
    error: str | None = Field(default=None, sa_type=Text, nullable=True)
    via: str | None = Field(default=None, sa_type=Text, nullable=True)


class Blob(StoreModel, table=True):
    """Content-addressed JSON: identical snapshots across thousands of rollouts are stored once."""

    __tablename__ = "blob"

    sha256: str = Field(sa_column=Column(Text, primary_key=True))
    data: str = Field(sa_type=Text, nullable=False)  # canonical JSON (sorted keys); sha256 is of its UTF-8 bytes


class Snapshot(StoreModel, table=True):
    __tablename__ = "snapshot"
    __table_args__ = (CheckConstraint("kind IN ('baseline', 'final')", name="kind"),)

    rollout_id: str = Field(
        sa_column=Column("rollout_id", Text, ForeignKey("rollout.id", ondelete="CASCADE"), primary_key=True)
    )
    kind: str = Field(sa_column=Column(Text, primary_key=True))
    blob_sha: str = Field(sa_column=Column(Text, ForeignKey("blob.sha256"), nullable=False))


class DiffEntry(StoreModel, table=True):
    __tablename__ = "diff_entry"

    # Entries are read back in insertion order (by id), which is the order the diff listed them.
    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True, autoincrement=True))
    rollout_id: str = Field(
        sa_column=Column(Text, ForeignKey("rollout.id", ondelete="CASCADE"), nullable=False, index=True)
    )
    path: str = Field(sa_type=Text, nullable=False)
    op: str = Field(sa_type=Text, nullable=False)
    before: Any | None = Field(default=None, sa_type=JSONDocument, nullable=True)
    after: Any | None = Field(default=None, sa_type=JSONDocument, nullable=True)


metadata = StoreModel.metadata
run = table_of(Run)
rollout = table_of(Rollout)
event = table_of(Event)
receipt = table_of(Receipt)
blob = table_of(Blob)
snapshot = table_of(Snapshot)
diff_entry = table_of(DiffEntry)

# Judge labels, recognition labels and audits are defined in their own module on the same metadata;
# importing it here registers them, so everything that reads `metadata` (migrations, schema checks)
# sees the whole schema. Imported last: that module builds on the classes above.
from redagent.store import tables_evidence, tables_judging, tables_reviews, tables_team, tables_workers  # noqa: E402, F401
