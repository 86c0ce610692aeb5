"""Team members, the blinded views every reviewer-facing query reads, and (on PostgreSQL) access control.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

- `team_member`: one person of a team store — name, role (researcher, reviewer, adjudicator, expert),
  their PostgreSQL login, and the SHA-256 of their console token.
- The blinded views (`blind_audit`, `blind_queue`, `blind_item`, `blind_event`, `blind_receipt`,
  `blind_diff`, `blind_slot_label`): the only relations the reviewer- and adjudicator-facing store
  queries read, on both dialects, so the blinding is written once, in SQL. The model (and the
  provider-minted tool-call ids and the agent CLI's transcript, which name it) is NULL/absent under
  blind_model; strategy, vulnerability, channel and the tampering marks under blind_attack. An
  adaptive attacker's own moves (role `attacker`: its reasoning, channel and model) are never shown:
  what it placed reaches the reviewer as the agent saw it, in the user turns and tool outputs.
- PostgreSQL only: `redagent_me()` / `redagent_role()` (SECURITY DEFINER, keyed on session_user) name
  the logged-in member; the views return only that member's own queue (a reviewer) or audits (an
  adjudicator), everything to researchers and the owner; row-level security on `audit_label`,
  `adjudication` and `case_review` lets a member read and insert only their own rows. Grants to
  each member's login are given by `redagent team add` (store/access.py), not here: logins are
  cluster-wide, a store is one database.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VIEWS = ("blind_slot_label", "blind_diff", "blind_receipt", "blind_event", "blind_item", "blind_queue", "blind_audit")
RLS_TABLES = ("audit_label", "adjudication", "case_review")

# Who may see a row of a blinded view. On SQLite (one person, no logins) everyone; on PostgreSQL
# analysts (the owner, who is no member, and researchers) everything, a member only their own.
_PG_ANALYST = "(redagent_role() IS NULL OR redagent_role() = 'researcher')"


def _views(pg: bool) -> list[str]:
    analyst = _PG_ANALYST if pg else "1 = 1"
    me = "redagent_me()" if pg else "NULL"
    strip_id = "(ev.tool_call::jsonb - 'id')::json" if pg else "json_remove(ev.tool_call, '$.id')"
    return [
        f"""CREATE VIEW blind_audit AS
            SELECT a.id, a.n, a.adjudicator, a.blind_model, a.blind_attack, a.created_at FROM audit a
            WHERE {analyst} OR a.adjudicator = {me}
               OR EXISTS (SELECT 1 FROM audit_assignment aa WHERE aa.audit_id = a.id AND aa.reviewer = {me})""",
        f"""CREATE VIEW blind_queue AS
            SELECT aa.audit_id, aa.item_id, aa.reviewer, aa.position FROM audit_assignment aa
            WHERE {analyst} OR aa.reviewer = {me}""",
        f"""CREATE VIEW blind_item AS
            SELECT ai.audit_id, ai.id AS item_id, a.blind_model, a.blind_attack, r.case_id, r."constraint",
                   r.surfaces, r.harness, r.cue, r.defense,
                   CASE WHEN a.blind_model THEN NULL ELSE r.model END AS model,
                   CASE WHEN a.blind_attack THEN NULL ELSE r.strategy END AS strategy,
                   CASE WHEN a.blind_attack THEN NULL ELSE r.vulnerability END AS vulnerability,
                   CASE WHEN a.blind_attack THEN NULL ELSE r.channel END AS channel
            FROM audit_item ai JOIN audit a ON a.id = ai.audit_id JOIN rollout r ON r.id = ai.rollout_id
            WHERE {analyst} OR a.adjudicator = {me}
               OR EXISTS (SELECT 1 FROM audit_assignment aa WHERE aa.item_id = ai.id AND aa.reviewer = {me})""",
        # Children are joined through the item (never exposing the rollout id) and through blind_item,
        # so they are visible exactly when their item is.
        f"""CREATE VIEW blind_event AS
            SELECT bi.audit_id, bi.item_id, ev.idx, ev.role, ev.text,
                   CASE WHEN bi.blind_model AND ev.tool_call IS NOT NULL THEN {strip_id}
                        ELSE ev.tool_call END AS tool_call,
                   ev.observation, ev.receipts,
                   CASE WHEN bi.blind_attack THEN NULL ELSE ev.original END AS original,
                   CASE WHEN bi.blind_attack THEN NULL ELSE ev.tampered END AS tampered
            FROM blind_item bi JOIN audit_item ai ON ai.id = bi.item_id JOIN event ev ON ev.rollout_id = ai.rollout_id
            WHERE ev.role <> 'attacker' AND NOT (bi.blind_model AND ev.role = 'transcript')""",
        """CREATE VIEW blind_receipt AS
            SELECT bi.audit_id, bi.item_id, rc.receipt_id, rc.seq, rc.service, rc.action, rc.args, rc.outcome,
                   rc.actor, rc.step, rc.effect, rc.error, rc.via
            FROM blind_item bi JOIN audit_item ai ON ai.id = bi.item_id
            JOIN receipt rc ON rc.rollout_id = ai.rollout_id""",
        """CREATE VIEW blind_diff AS
            SELECT bi.audit_id, bi.item_id, df.id AS entry_id, df.path, df.op, df.before, df.after
            FROM blind_item bi JOIN audit_item ai ON ai.id = bi.item_id
            JOIN diff_entry df ON df.rollout_id = ai.rollout_id""",
        # The reviewers' labels by slot letter, never their names or notes: the adjudicator's view.
        f"""CREATE VIEW blind_slot_label AS
            SELECT aa.audit_id, al.item_id, aa.slot, al.label, al.version
            FROM audit_label al JOIN audit_assignment aa ON aa.item_id = al.item_id AND aa.reviewer = al.reviewer
            JOIN audit a ON a.id = aa.audit_id
            WHERE {analyst} OR a.adjudicator = {me}""",
    ]


_PG_FUNCTIONS = [
    # session_user, not current_user: inside a SECURITY DEFINER function current_user is the owner.
    """CREATE FUNCTION redagent_me() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
       AS $$ SELECT name FROM team_member WHERE login = session_user $$""",
    """CREATE FUNCTION redagent_role() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
       AS $$ SELECT role FROM team_member WHERE login = session_user $$""",
    """CREATE FUNCTION redagent_adjudicates(item integer) RETURNS boolean LANGUAGE sql STABLE
       SECURITY DEFINER SET search_path FROM CURRENT
       AS $$ SELECT EXISTS (SELECT 1 FROM audit_item ai JOIN audit a ON a.id = ai.audit_id
                            WHERE ai.id = item AND a.adjudicator = redagent_me()) $$""",
]

_PG_POLICIES = [
    f"""CREATE POLICY own_labels_read ON audit_label FOR SELECT USING ({_PG_ANALYST} OR reviewer = redagent_me())""",
    """CREATE POLICY own_labels_write ON audit_label FOR INSERT WITH CHECK (reviewer = redagent_me())""",
    f"""CREATE POLICY own_adjudications_read ON adjudication FOR SELECT
        USING ({_PG_ANALYST} OR adjudicator = redagent_me())""",
    """CREATE POLICY own_adjudications_write ON adjudication FOR INSERT
        WITH CHECK (adjudicator = redagent_me() AND redagent_adjudicates(item_id))""",
    f"""CREATE POLICY own_reviews_read ON case_review FOR SELECT USING ({_PG_ANALYST} OR expert = redagent_me())""",
    """CREATE POLICY own_reviews_write ON case_review FOR INSERT WITH CHECK (expert = redagent_me())""",
]


def upgrade() -> None:
    op.create_table(
        "team_member",
        sa.Column("name", sa.Text(), primary_key=True),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("login", sa.Text(), nullable=True, unique=True),
        sa.Column("token_sha256", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("role IN ('researcher', 'reviewer', 'adjudicator', 'expert')", name="ck_team_member_role"),
    )
    pg = op.get_bind().dialect.name == "postgresql"
    if pg:
        for statement in _PG_FUNCTIONS:
            op.execute(statement)
        for function in ("redagent_me()", "redagent_role()", "redagent_adjudicates(integer)"):
            op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
    for statement in _views(pg):
        op.execute(statement)
    if pg:
        for table in RLS_TABLES:
            op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        for statement in _PG_POLICIES:
            op.execute(statement)


def downgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    if pg:
        for statement in _PG_POLICIES:
            name, table = statement.split()[2], statement.split()[4]
            op.execute(f"DROP POLICY IF EXISTS {name} ON {table}")
        for table in RLS_TABLES:
            op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    for view in VIEWS:
        op.execute(f"DROP VIEW IF EXISTS {view}")
    if pg:
        for function in ("redagent_adjudicates(integer)", "redagent_role()", "redagent_me()"):
            op.execute(f"DROP FUNCTION IF EXISTS {function}")
    op.drop_table("team_member")
