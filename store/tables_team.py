"""The team of a store: who may log in, in which role, and the blinded views reviewers read.

`team_member` is on `StoreModel.metadata` like every other table (tables.py imports this module).
The blinded views are created by migration 0005 (on PostgreSQL, 0010 puts definer functions under
them); they are described here as plain `Table` objects on a metadata of their own, so queries can
name their columns while schema tools (create_all, autogenerate) never mistake them for tables.
"""

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, CheckConstraint, Column, Integer, MetaData, Table, Text
from sqlmodel import Field

from redagent.store.tables_base import JSONDocument, StoreModel, UTCDateTime, table_of

TEAM_ROLES = ("researcher", "reviewer", "adjudicator", "expert")


class TeamMember(StoreModel, table=True):
    """One person of a team store: name, role, PostgreSQL login and the SHA-256 of their console token."""

    __tablename__ = "team_member"
    __table_args__ = (
        CheckConstraint("role IN ('researcher', 'reviewer', 'adjudicator', 'expert')", name="ck_team_member_role"),
    )

    name: str = Field(sa_column=Column(Text, primary_key=True))
    role: str = Field(sa_type=Text, nullable=False)
    login: str | None = Field(default=None, sa_column=Column(Text, nullable=True, unique=True))
    token_sha256: str | None = Field(default=None, sa_type=Text, nullable=True)
    created_at: datetime = Field(sa_type=UTCDateTime, nullable=False)


team_member = table_of(TeamMember)

views = MetaData()
# The views' schema as the queries name it: a placeholder the store maps per connection (`schema_translate_map`) —
# to the default schema on SQLite and for a PostgreSQL member, whose views are only her definer functions (0014), and
# to `redagent_analyst` for a PostgreSQL analyst, whose views read every row. One query text serves both.
VIEW_SCHEMA = "redagent_views"
ANALYST_SCHEMA = "redagent_analyst"
blind_audit = Table(
    "blind_audit",
    views,
    Column("id", Text),
    Column("n", Integer),
    Column("adjudicator", Text),
    Column("blind_model", Boolean),
    Column("blind_attack", Boolean),
    Column("created_at", UTCDateTime),
    schema=VIEW_SCHEMA,
)
blind_queue = Table(
    "blind_queue",
    views,
    Column("audit_id", Text),
    Column("item_id", Integer),
    Column("reviewer", Text),
    Column("position", Integer),
    schema=VIEW_SCHEMA,
)
blind_item = Table(
    "blind_item",
    views,
    Column("audit_id", Text),
    Column("item_id", Integer),
    Column("blind_model", Boolean),
    Column("blind_attack", Boolean),
    Column("alias", Text),
    Column("constraint", Text),
    Column("surfaces", Text),
    Column("harness", Text),
    Column("cue", Text),
    Column("defense", Text),
    Column("model", Text),
    Column("strategy", Text),
    Column("vulnerability", Text),
    Column("channel", Text),
    # Migration 0015: the evidence version the reviewer is shown, and whether the evidence is still that version.
    Column("evidence_tag", Text),
    Column("evidence_intact", Boolean),
    schema=VIEW_SCHEMA,
)
blind_event = Table(
    "blind_event",
    views,
    Column("audit_id", Text),
    Column("item_id", Integer),
    Column("idx", Integer),
    Column("role", Text),
    Column("text", Text),
    Column("tool_call", JSONDocument),
    Column("observation", Text),
    Column("receipts", JSONDocument),
    Column("original", Text),
    Column("tampered", Boolean),
    schema=VIEW_SCHEMA,
)
blind_receipt = Table(
    "blind_receipt",
    views,
    Column("audit_id", Text),
    Column("item_id", Integer),
    Column("receipt_id", Text),
    Column("seq", Integer),
    Column("service", Text),
    Column("action", Text),
    Column("args", JSONDocument),
    Column("outcome", Text),
    Column("actor", Text),
    Column("step", Integer),
    Column("effect", JSONDocument),
    Column("error", Text),
    Column("via", Text),
    schema=VIEW_SCHEMA,
)
blind_diff = Table(
    "blind_diff",
    views,
    Column("audit_id", Text),
    Column("item_id", Integer),
    Column("entry_id", Integer),
    Column("path", Text),
    Column("op", Text),
    Column("before", JSONDocument),
    Column("after", JSONDocument),
    schema=VIEW_SCHEMA,
)
blind_slot_label = Table(
    "blind_slot_label",
    views,
    Column("audit_id", Text),
    Column("item_id", Integer),
    Column("slot", Text),
    Column("label", Text),
    Column("version", Integer),
    schema=VIEW_SCHEMA,
)

# Migration 0010: a member's own rows (their labels, decisions, case reviews, rounds). On PostgreSQL these are
# security_barrier views over definer functions (members have no privilege on the tables under them); on
# SQLite plain views over the tables.
own_label = Table(
    "own_label",
    views,
    Column("item_id", Integer),
    Column("reviewer", Text),
    Column("label", Text),
    Column("note", Text),
    Column("version", Integer),
    Column("reason", Text),
    Column("created_at", UTCDateTime),
    schema=VIEW_SCHEMA,
)
own_adjudication = Table(
    "own_adjudication",
    views,
    Column("item_id", Integer),
    Column("adjudicator", Text),
    Column("label", Text),
    Column("note", Text),
    Column("version", Integer),
    Column("reason", Text),
    Column("created_at", UTCDateTime),
    schema=VIEW_SCHEMA,
)
own_review = Table(
    "own_review",
    views,
    Column("round_id", Text),
    Column("case_id", Text),
    Column("expert", Text),
    Column("rubric", JSONDocument),
    Column("decision", Text),
    Column("note", Text),
    Column("version", Integer),
    Column("reason", Text),
    Column("created_at", UTCDateTime),
    schema=VIEW_SCHEMA,
)
my_round = Table(
    "my_round",
    views,
    Column("id", Text),
    Column("seed", BigInteger),
    Column("n", Integer),
    Column("experts", JSONDocument),
    Column("created_at", UTCDateTime),
    schema=VIEW_SCHEMA,
)
my_round_case = Table(
    "my_round_case",
    views,
    Column("round_id", Text),
    Column("case_id", Text),
    Column("case_version", Integer),
    Column("case_hash", Text),
    Column("position", Integer),
    schema=VIEW_SCHEMA,
)
