"""Tables for judging and human audit: judge labels, recognition labels, audits with their items,
reviewer assignments, reviewer labels and adjudications.

On the same `StoreModel.metadata` as the run and rollout tables (tables.py imports this module, so
whatever reads that metadata sees the whole schema). Portable between SQLite and PostgreSQL.
Human labels are append-only: a correction is a new row with the next version and a reason, so the
history of who said what, and why it changed, is never lost.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    Text,
    UniqueConstraint,
    false,
)
from sqlmodel import Field

from redagent.store.tables_base import JSONDocument, StoreModel, UTCDateTime, table_of

HUMAN_LABEL_CHECK = "label IN ('harmful', 'not_harmful', 'unsure')"
# A first submission needs no reason; every later version (a correction) says why it was made.
REASON_CHECK = "version = 1 OR reason IS NOT NULL"


def _int_pk() -> Column[int]:
    return Column(Integer, primary_key=True, autoincrement=True)


class JudgeLabel(StoreModel, table=True):
    """Y_i(c, b): one rollout's label under one judging configuration (by content hash) and backbone."""

    __tablename__ = "judge_label"
    __table_args__ = (
        # Labels from different configurations never mix; also the LLM judge's cache key and the
        # index on rollout_id (its leading column).
        UniqueConstraint("rollout_id", "config_hash", "backbone", name="uq_judge_label_rollout_config"),
        Index("ix_judge_label_run_config", "run_id", "config_hash", "backbone"),
        CheckConstraint("status IN ('ok', 'failed')", name="status"),
        CheckConstraint("(status = 'ok' AND label IN (0, 1)) OR (status = 'failed' AND label IS NULL)", name="label"),
    )

    id: int | None = Field(default=None, sa_column=_int_pk())
    rollout_id: str = Field(sa_column=Column(Text, ForeignKey("rollout.id", ondelete="CASCADE"), nullable=False))
    run_id: str = Field(sa_column=Column(Text, ForeignKey("run.id"), nullable=False))  # denormalised
    config_name: str = Field(sa_type=Text, nullable=False)
    config_hash: str = Field(sa_type=Text, nullable=False)
    view: str = Field(sa_type=Text, nullable=False)
    contract_hash: str = Field(sa_type=Text, nullable=False)
    gate: str = Field(sa_type=Text, nullable=False)
    backbone: str = Field(sa_type=Text, nullable=False)
    label: int | None = Field(default=None, sa_type=Integer, nullable=True)
    status: str = Field(sa_type=Text, nullable=False)
    rationale: str = Field(sa_type=Text, nullable=False)
    evidence: list[Any] = Field(sa_type=JSONDocument, nullable=False)
    prompt_tokens: int = Field(sa_type=Integer, nullable=False)
    completion_tokens: int = Field(sa_type=Integer, nullable=False)
    cost_usd: float = Field(sa_type=Float, nullable=False)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)


class RecognitionLabel(StoreModel, table=True):
    """R broad / strict for a harmful rollout, judged on the agent's text before the action anchor."""

    __tablename__ = "recognition_label"
    __table_args__ = (
        UniqueConstraint("rollout_id", "judge", "contract_hash", name="uq_recognition_label_rollout_judge"),
        Index("ix_recognition_label_run_judge", "run_id", "judge", "contract_hash"),
        CheckConstraint("status IN ('ok', 'failed')", name="status"),
        CheckConstraint("(broad IS NULL OR broad IN (0, 1)) AND (strict IS NULL OR strict IN (0, 1))", name="values"),
    )

    id: int | None = Field(default=None, sa_column=_int_pk())
    rollout_id: str = Field(sa_column=Column(Text, ForeignKey("rollout.id", ondelete="CASCADE"), nullable=False))
    run_id: str = Field(sa_column=Column(Text, ForeignKey("run.id"), nullable=False))
    judge: str = Field(sa_type=Text, nullable=False)
    contract_hash: str = Field(sa_type=Text, nullable=False)
    anchor_idx: int | None = Field(default=None, sa_type=Integer, nullable=True)
    resolved: bool = Field(sa_type=Boolean, nullable=False)
    broad: int | None = Field(default=None, sa_type=Integer, nullable=True)
    strict: int | None = Field(default=None, sa_type=Integer, nullable=True)
    status: str = Field(sa_type=Text, nullable=False)
    rationale: str = Field(sa_type=Text, nullable=False)
    evidence: list[Any] = Field(sa_type=JSONDocument, nullable=False)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)


class Audit(StoreModel, table=True):
    """A human audit of one run's labels under one configuration and backbone."""

    __tablename__ = "audit"
    __table_args__ = (Index("ix_audit_run_id", "run_id"),)

    id: str = Field(sa_column=Column(Text, primary_key=True))
    run_id: str = Field(sa_column=Column(Text, ForeignKey("run.id"), nullable=False))
    config_name: str = Field(sa_type=Text, nullable=False)
    config_hash: str = Field(sa_type=Text, nullable=False)
    backbone: str = Field(sa_type=Text, nullable=False)
    seed: int = Field(sa_type=BigInteger, nullable=False)
    n: int = Field(sa_type=Integer, nullable=False)
    stratify: list[str] = Field(sa_type=JSONDocument, nullable=False)
    reviewers: list[str] = Field(sa_type=JSONDocument, nullable=False)  # exactly two: slot A, slot B
    adjudicator: str = Field(sa_type=Text, nullable=False)
    blind_model: bool = Field(sa_type=Boolean, nullable=False)
    blind_attack: bool = Field(sa_type=Boolean, nullable=False)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)
    # How the sample was drawn (cases within strata, merged strata); NULL for audits drawn before (migration 0008).
    design: dict[str, Any] | None = Field(default=None, sa_type=JSONDocument, nullable=True)
    # Drawn before issue 34 (migration 0013): its item ids and queue orders follow its seed, so a reviewer who knows
    # the seed can tell her items apart; audits drawn since take them from the CSPRNG.
    seeded_order: bool = Field(default=False, sa_column=Column(Boolean, nullable=False, server_default=false()))


class AuditItem(StoreModel, table=True):
    """One sampled rollout. stratum, weights and judge_label are for analysis: never shown to reviewers.
    `alias` is what blinded readers see in place of the case id: random, unique within the audit."""

    __tablename__ = "audit_item"
    # Also the index on audit_id.
    __table_args__ = (
        UniqueConstraint("audit_id", "rollout_id", name="uq_audit_item_audit_rollout"),
        Index("uq_audit_item_audit_alias", "audit_id", "alias", unique=True),
    )

    id: int | None = Field(default=None, sa_column=_int_pk())
    audit_id: str = Field(sa_column=Column(Text, ForeignKey("audit.id"), nullable=False))
    rollout_id: str = Field(sa_column=Column(Text, ForeignKey("rollout.id"), nullable=False))
    stratum: str = Field(sa_type=Text, nullable=False)
    population: int = Field(sa_type=Integer, nullable=False)
    sampled: int = Field(sa_type=Integer, nullable=False)
    weight: float = Field(sa_type=Float, nullable=False)
    judge_label: int = Field(sa_type=Integer, nullable=False)
    # NULL only in the schema: migration 0008 added the column to a table SQLite cannot alter without a rebuild,
    # and filled every existing row; the store writes one for every new item.
    alias: str | None = Field(default=None, sa_type=Text, nullable=True)
    # The item's evidence when the audit was drawn (0015): its rollout's digest in the run's chain (analysts only),
    # and a random tag that names that version to the reviewer (what her screen shows, what her label records).
    evidence_digest: str | None = Field(default=None, sa_type=Text, nullable=True)
    evidence_tag: str | None = Field(default=None, sa_type=Text, nullable=True)


class AuditAssignment(StoreModel, table=True):
    """An item in one reviewer's queue, at that reviewer's own position."""

    __tablename__ = "audit_assignment"
    __table_args__ = (
        UniqueConstraint("audit_id", "reviewer", "position", name="uq_audit_assignment_reviewer_position"),
        CheckConstraint("slot IN ('A', 'B')", name="slot"),
    )

    audit_id: str = Field(sa_column=Column(Text, ForeignKey("audit.id"), nullable=False))
    item_id: int = Field(sa_column=Column(Integer, ForeignKey("audit_item.id"), primary_key=True))
    reviewer: str = Field(sa_column=Column(Text, primary_key=True))
    slot: str = Field(sa_type=Text, nullable=False)
    position: int = Field(sa_type=Integer, nullable=False)


class AuditLabel(StoreModel, table=True):
    """A reviewer's label for an item: version 1 is the first submission, later versions are corrections."""

    __tablename__ = "audit_label"
    __table_args__ = (
        UniqueConstraint("item_id", "reviewer", "version", name="uq_audit_label_item_reviewer_version"),
        # Only a reviewer the item is assigned to can label it.
        ForeignKeyConstraint(["item_id", "reviewer"], ["audit_assignment.item_id", "audit_assignment.reviewer"]),
        CheckConstraint(HUMAN_LABEL_CHECK, name="label"),
        CheckConstraint("version >= 1", name="version"),
        CheckConstraint(REASON_CHECK, name="reason"),
    )

    id: int | None = Field(default=None, sa_column=_int_pk())
    item_id: int = Field(sa_type=Integer, nullable=False)
    reviewer: str = Field(sa_type=Text, nullable=False)
    label: str = Field(sa_type=Text, nullable=False)
    note: str = Field(sa_type=Text, nullable=False)
    version: int = Field(sa_type=Integer, nullable=False)
    reason: str | None = Field(default=None, sa_type=Text, nullable=True)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)
    # The evidence version labelled (the item's evidence_tag, filled and checked by 0015's trigger).
    evidence_tag: str | None = Field(default=None, sa_type=Text, nullable=True)


class Adjudication(StoreModel, table=True):
    """The adjudicator's label for an item the reviewers disagreed on (versions as for reviewer labels)."""

    __tablename__ = "adjudication"
    __table_args__ = (
        UniqueConstraint("item_id", "version", name="uq_adjudication_item_version"),
        CheckConstraint(HUMAN_LABEL_CHECK, name="label"),
        CheckConstraint("version >= 1", name="version"),
        CheckConstraint(REASON_CHECK, name="reason"),
    )

    id: int | None = Field(default=None, sa_column=_int_pk())
    item_id: int = Field(sa_column=Column(Integer, ForeignKey("audit_item.id"), nullable=False))
    adjudicator: str = Field(sa_type=Text, nullable=False)
    label: str = Field(sa_type=Text, nullable=False)
    note: str = Field(sa_type=Text, nullable=False)
    version: int = Field(sa_type=Integer, nullable=False)
    reason: str | None = Field(default=None, sa_type=Text, nullable=True)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)
    evidence_tag: str | None = Field(default=None, sa_type=Text, nullable=True)  # as for a reviewer's label


class AuditClosure(StoreModel, table=True):
    """An audit closed or re-opened (migration 0012, append-only): closed by itself when a write gives its last item
    a final label (`made_by` "redagent"), or by the owner with a reason; re-opened only by the owner, with a reason.
    The latest row is the audit's state; while it says "close", no label, correction or decision is written."""

    __tablename__ = "audit_closure"
    __table_args__ = (
        CheckConstraint("action IN ('close', 'reopen')", name="action"),
        Index("ix_audit_closure_audit_id", "audit_id", "id"),
    )

    id: int | None = Field(default=None, sa_column=_int_pk())
    audit_id: str = Field(sa_column=Column(Text, ForeignKey("audit.id"), nullable=False))
    action: str = Field(sa_type=Text, nullable=False)
    made_by: str = Field(sa_type=Text, nullable=False)
    reason: str = Field(sa_type=Text, nullable=False)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)


judge_label = table_of(JudgeLabel)
recognition_label = table_of(RecognitionLabel)
audit = table_of(Audit)
audit_item = table_of(AuditItem)
audit_assignment = table_of(AuditAssignment)
audit_label = table_of(AuditLabel)
adjudication = table_of(Adjudication)
audit_closure = table_of(AuditClosure)
