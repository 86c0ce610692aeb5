"""Tables for expert case review in construction rounds: rounds, the case versions sampled into them, and
the experts' rubric reviews.

On the same `StoreModel.metadata` as every other table (tables.py imports this module). A review is
append-only like a human audit label: version 1 is the expert's first submission, a correction is a
new row with the next version and the reason for it. The rubric is a JSON object whose keys and values
the store checks before writing (a JSON CHECK would not be portable between SQLite and PostgreSQL).
"""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Integer,
    Text,
    UniqueConstraint,
)
from sqlmodel import Field

from redagent.store.tables_base import JSONDocument, StoreModel, UTCDateTime, table_of

DECISION_CHECK = "decision IN ('accept', 'revise', 'exclude')"
# A first submission needs no reason; every later version (a correction) says why it was made.
REASON_CHECK = "version = 1 OR reason IS NOT NULL"


class ReviewRound(StoreModel, table=True):
    """A construction round: n case versions sampled with a seed for a panel of experts."""

    __tablename__ = "review_round"

    id: str = Field(sa_column=Column(Text, primary_key=True))
    seed: int = Field(sa_type=BigInteger, nullable=False)
    n: int = Field(sa_type=Integer, nullable=False)
    experts: list[str] = Field(sa_type=JSONDocument, nullable=False)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)


class RoundCase(StoreModel, table=True):
    """One case version of a round, pinned by its content hash, at its place in the review order."""

    __tablename__ = "round_case"
    __table_args__ = (UniqueConstraint("round_id", "position", name="uq_round_case_round_position"),)

    round_id: str = Field(sa_column=Column(Text, ForeignKey("review_round.id"), primary_key=True))
    case_id: str = Field(sa_column=Column(Text, primary_key=True))
    case_version: int = Field(sa_type=Integer, nullable=False)
    case_hash: str = Field(sa_type=Text, nullable=False)
    position: int = Field(sa_type=Integer, nullable=False)


class CaseReview(StoreModel, table=True):
    """An expert's review of one case of a round: the four rubric items, a decision and a note."""

    __tablename__ = "case_review"
    __table_args__ = (
        UniqueConstraint("round_id", "case_id", "expert", "version", name="uq_case_review_round_case_expert_version"),
        ForeignKeyConstraint(["round_id", "case_id"], ["round_case.round_id", "round_case.case_id"]),
        CheckConstraint(DECISION_CHECK, name="decision"),
        CheckConstraint("version >= 1", name="version"),
        CheckConstraint(REASON_CHECK, name="reason"),
    )

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True, autoincrement=True))
    round_id: str = Field(sa_type=Text, nullable=False)
    case_id: str = Field(sa_type=Text, nullable=False)
    expert: str = Field(sa_type=Text, nullable=False)
    rubric: dict[str, Any] = Field(sa_type=JSONDocument, nullable=False)
    decision: str = Field(sa_type=Text, nullable=False)
    note: str = Field(sa_type=Text, nullable=False)
    version: int = Field(sa_type=Integer, nullable=False)
    reason: str | None = Field(default=None, sa_type=Text, nullable=True)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)


review_round = table_of(ReviewRound)
round_case = table_of(RoundCase)
case_review = table_of(CaseReview)
