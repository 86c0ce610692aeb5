"""Tables of the evidence chain (migration 0015, store/evidence.py): each run's chain of records, and the recorded
corrections that are the only way a record changes.

On the same `StoreModel.metadata` as every other table (tables.py imports this module). Both are append-only for
every login: the migration's triggers refuse UPDATE and DELETE.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, CheckConstraint, Column, ForeignKey, Index, Integer, Text
from sqlmodel import Field

from redagent.store.tables_base import JSONDocument, StoreModel, UTCDateTime, table_of


class EvidenceLink(StoreModel, table=True):
    """Record `seq` of a run's chain: what it is (`kind`, `ref`), the digest of its canonical document, the digests
    of a rollout's parts (row, events, receipts, diff, snapshots: what `runs verify` names when one differs) and the
    head up to it."""

    __tablename__ = "evidence_link"
    __table_args__ = (
        CheckConstraint("kind IN ('rollout', 'judge_label', 'recognition_label', 'correction')", name="kind"),
        CheckConstraint("seq >= 1", name="seq"),
        # What the triggers ask on every child written: the latest link naming a rollout.
        Index("ix_evidence_link_ref_seq", "ref", "seq"),
    )

    run_id: str = Field(sa_column=Column(Text, ForeignKey("run.id"), primary_key=True))
    seq: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    kind: str = Field(sa_type=Text, nullable=False)
    ref: str = Field(sa_type=Text, nullable=False)
    digest: str = Field(sa_type=Text, nullable=False)
    parts: dict[str, Any] | None = Field(default=None, sa_type=JSONDocument, nullable=True)
    head: str = Field(sa_type=Text, nullable=False)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)


class EvidenceCorrection(StoreModel, table=True):
    """A recorded change of a record: who, why, and the record as it was (its canonical document whole). On
    PostgreSQL `txid` is the transaction that made it, the only one the triggers let change that record; on SQLite
    the change must follow the correction's insert directly."""

    __tablename__ = "evidence_correction"
    __table_args__ = (
        CheckConstraint("kind IN ('rollout', 'judge_label', 'recognition_label')", name="kind"),
        Index("ix_evidence_correction_ref", "ref"),
    )

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True, autoincrement=True))
    run_id: str = Field(sa_column=Column(Text, ForeignKey("run.id"), nullable=False))
    kind: str = Field(sa_type=Text, nullable=False)
    ref: str = Field(sa_type=Text, nullable=False)
    reason: str = Field(sa_type=Text, nullable=False)
    made_by: str = Field(sa_type=Text, nullable=False)
    prior: dict[str, Any] = Field(sa_type=JSONDocument, nullable=False)
    prior_digest: str = Field(sa_type=Text, nullable=False)
    txid: int | None = Field(default=None, sa_type=BigInteger, nullable=True)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)


evidence_link = table_of(EvidenceLink)
evidence_correction = table_of(EvidenceCorrection)
