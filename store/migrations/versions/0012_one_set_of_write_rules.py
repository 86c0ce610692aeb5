"""One set of rules for every write path: a correction says why, and a closed audit stays closed.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04

Issue 34: the definer functions of 0010/0011 wrote what the Python API refuses — a correction whose reason is
empty or blank, and a correction that re-opened an audit whose every item had its final label (60/60 final, then
provisional again). The rules now live in the database, as triggers every writer meets (a member through the
definer functions, a researcher's or the owner's own SQL, SQLite's one person), on both dialects:

- `audit_label`, `adjudication`, `case_review`: a version after the first needs a reason that is not blank
  (blank: nothing but the characters Python's `str.strip()` removes, the rule `CorrectionWithoutReason` applies).
- `audit_closure` (new, append-only): an audit's closes and re-opens, each with who and why. An audit closes by
  itself when a label or decision gives its last item a final label (`made_by` 'redagent'); the owner may close
  it by hand and is the only one who may re-open it (`redagent audit reopen AUDIT --reason …`), with a reason.
  While the latest row says 'close', no label, correction or decision of that audit is written.

The store maps the triggers' refusals to `AuditClosed` and `CorrectionWithoutReason`, so the API's errors are the
database's rules, not a second copy of them.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What Python's str.strip() removes (every character whose isspace() is true): a reason of only these is blank.
WHITESPACE = "".join(
    chr(code)
    for code in (
        *range(0x09, 0x0E),
        *range(0x1C, 0x21),
        0x85,
        0xA0,
        0x1680,
        *range(0x2000, 0x200B),
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
    )
)
LABEL_TABLES = ("audit_label", "adjudication", "case_review")
CLOSES = ("audit_label", "adjudication")  # the writes an audit's closing and closed state are about
CLOSED_MESSAGE = "audit % is closed: every item has its final label (the owner re-opens it: redagent audit reopen)"
_DEFINER = "STABLE SECURITY DEFINER SET search_path = public, pg_temp"
_TRIGGER = "SECURITY DEFINER SET search_path = public, pg_temp"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# The items of an audit still without a final label (store/audit.py final_labels: adjudicated, or both first labels
# in and neither first nor latest labels differing nor unsure). `{audit}` is an expression naming the audit.
_LATEST = "(SELECT max(l2.version) FROM audit_label l2 WHERE l2.item_id = l.item_id AND l2.reviewer = l.reviewer)"
_PENDING = f"""SELECT count(*) FROM audit_item ai WHERE ai.audit_id = {{audit}}
      AND NOT EXISTS (SELECT 1 FROM adjudication ad WHERE ad.item_id = ai.id)
      AND NOT ((SELECT count(*) FROM audit_label l WHERE l.item_id = ai.id AND l.version = 1) = 2
           AND (SELECT count(DISTINCT l.label) FROM audit_label l WHERE l.item_id = ai.id AND l.version = 1) = 1
           AND (SELECT count(DISTINCT l.label) FROM audit_label l WHERE l.item_id = ai.id
                AND l.version = {_LATEST}) = 1
           AND NOT EXISTS (SELECT 1 FROM audit_label l WHERE l.item_id = ai.id AND l.label = 'unsure'
                AND (l.version = 1 OR l.version = {_LATEST})))"""
# Cheap first: every item has both first labels (2n version-1 rows) before the item-by-item check runs.
_COMPLETE = f"""(SELECT count(*) FROM audit_label l JOIN audit_item ai ON ai.id = l.item_id
       WHERE ai.audit_id = {{audit}} AND l.version = 1) = 2 * (SELECT a.n FROM audit a WHERE a.id = {{audit}})
   AND ({_PENDING}) = 0"""
_CLOSED = """coalesce((SELECT c.action FROM audit_closure c WHERE c.audit_id = {audit}
                   ORDER BY c.id DESC LIMIT 1), 'reopen') = 'close'"""


def _sqlite_triggers() -> list[str]:
    blank = _literal(WHITESPACE)
    now = "strftime('%Y-%m-%d %H:%M:%f000', 'now')"  # SQLAlchemy's SQLite datetime text, microseconds
    statements = []
    for table in LABEL_TABLES:
        statements.append(f"""CREATE TRIGGER redagent_{table}_reason BEFORE INSERT ON {table}
            WHEN NEW.version > 1 AND (NEW.reason IS NULL OR trim(NEW.reason, {blank}) = '')
            BEGIN SELECT RAISE(ABORT, 'redagent: a correction needs a reason'); END""")
    for table in CLOSES:
        # SQLite's RAISE takes a literal only: the message cannot name the audit (the store names it).
        audit = "(SELECT ai.audit_id FROM audit_item ai WHERE ai.id = NEW.item_id)"
        message = _literal("redagent: " + CLOSED_MESSAGE.replace("% ", ""))
        statements.append(f"""CREATE TRIGGER redagent_{table}_closed BEFORE INSERT ON {table}
            WHEN {_CLOSED.format(audit=audit)}
            BEGIN SELECT RAISE(ABORT, {message}); END""")
        statements.append(f"""CREATE TRIGGER redagent_{table}_closes AFTER INSERT ON {table}
            BEGIN
              INSERT INTO audit_closure (audit_id, action, made_by, reason, created_at)
              SELECT ai.audit_id, 'close', 'redagent', 'every item has its final label', {now}
              FROM audit_item ai WHERE ai.id = NEW.item_id
               AND NOT {_CLOSED.format(audit="ai.audit_id")} AND {_COMPLETE.format(audit="ai.audit_id")};
            END""")
    statements += [
        f"""CREATE TRIGGER redagent_audit_closure_insert BEFORE INSERT ON audit_closure
            WHEN trim(NEW.reason, {blank}) = ''
              OR (NEW.action = 'close') = {_CLOSED.format(audit="NEW.audit_id")}
            BEGIN SELECT RAISE(ABORT, 'redagent: a close or re-open needs a reason, and an audit not already so');
            END""",
        """CREATE TRIGGER redagent_audit_closure_update BEFORE UPDATE ON audit_closure
            BEGIN SELECT RAISE(ABORT, 'redagent: an audit''s closes and re-opens are append-only'); END""",
        """CREATE TRIGGER redagent_audit_closure_delete BEFORE DELETE ON audit_closure
            BEGIN SELECT RAISE(ABORT, 'redagent: an audit''s closes and re-opens are append-only'); END""",
    ]
    return statements


def _pg_statements() -> list[str]:
    blank = _literal(WHITESPACE)
    statements = [
        f"""CREATE FUNCTION redagent_audit_closed(p_audit text) RETURNS boolean LANGUAGE sql {_DEFINER}
            AS $$ SELECT {_CLOSED.format(audit="p_audit")} $$""",
        f"""CREATE FUNCTION redagent_audit_complete(p_audit text) RETURNS boolean LANGUAGE sql {_DEFINER}
            AS $$ SELECT {_COMPLETE.format(audit="p_audit")} $$""",
        f"""CREATE FUNCTION redagent_check_reason() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
            AS $$
            BEGIN
              IF NEW.version > 1 AND (NEW.reason IS NULL OR btrim(NEW.reason, {blank}) = '') THEN
                RAISE EXCEPTION 'redagent: a correction needs a reason' USING ERRCODE = '23514';
              END IF;
              RETURN NEW;
            END $$""",
        f"""CREATE FUNCTION redagent_check_open() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
            AS $$
            DECLARE
              audit_of text := (SELECT audit_id FROM audit_item WHERE id = NEW.item_id);
            BEGIN
              IF redagent_audit_closed(audit_of) THEN
                RAISE EXCEPTION 'redagent: {CLOSED_MESSAGE}', audit_of USING ERRCODE = '23514';
              END IF;
              RETURN NEW;
            END $$""",
        f"""CREATE FUNCTION redagent_close_if_complete() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
            AS $$
            DECLARE
              audit_of text := (SELECT audit_id FROM audit_item WHERE id = NEW.item_id);
            BEGIN
              IF NOT redagent_audit_closed(audit_of) AND redagent_audit_complete(audit_of) THEN
                INSERT INTO audit_closure (audit_id, action, made_by, reason, created_at)
                VALUES (audit_of, 'close', 'redagent', 'every item has its final label', now());
              END IF;
              RETURN NULL;
            END $$""",
        # Who may close and re-open: anyone's write closes a complete audit (the trigger above, or the same row by
        # hand); a member may do nothing else; the owner (no member) closes or re-opens with a reason.
        f"""CREATE FUNCTION redagent_check_closure() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
            AS $$
            BEGIN
              IF btrim(NEW.reason, {blank}) = '' THEN
                RAISE EXCEPTION 'redagent: a close or re-open needs a reason' USING ERRCODE = '23514';
              END IF;
              IF (NEW.action = 'close') = redagent_audit_closed(NEW.audit_id) THEN
                RAISE EXCEPTION 'redagent: audit % is already %', NEW.audit_id,
                  CASE NEW.action WHEN 'close' THEN 'closed' ELSE 'open' END USING ERRCODE = '23514';
              END IF;
              IF redagent_role() IS NOT NULL
                 AND (NEW.action <> 'close' OR NOT redagent_audit_complete(NEW.audit_id)) THEN
                RAISE EXCEPTION 'redagent: only the store''s owner closes or re-opens an audit'
                  USING ERRCODE = '42501';
              END IF;
              RETURN NEW;
            END $$""",
        """CREATE FUNCTION redagent_append_only() RETURNS trigger LANGUAGE plpgsql SET search_path = public, pg_temp
            AS $$
            BEGIN
              RAISE EXCEPTION 'redagent: % is append-only', TG_TABLE_NAME USING ERRCODE = '42501';
            END $$""",
        """CREATE TRIGGER redagent_audit_closure_check BEFORE INSERT ON audit_closure
           FOR EACH ROW EXECUTE FUNCTION redagent_check_closure()""",
        """CREATE TRIGGER redagent_audit_closure_append_only BEFORE UPDATE OR DELETE ON audit_closure
           FOR EACH ROW EXECUTE FUNCTION redagent_append_only()""",
        """CREATE TRIGGER redagent_audit_closure_no_truncate BEFORE TRUNCATE ON audit_closure
           FOR EACH STATEMENT EXECUTE FUNCTION redagent_append_only()""",
    ]
    for table in LABEL_TABLES:
        statements.append(f"""CREATE TRIGGER redagent_{table}_reason BEFORE INSERT ON {table}
            FOR EACH ROW EXECUTE FUNCTION redagent_check_reason()""")
    for table in CLOSES:
        statements.append(f"""CREATE TRIGGER redagent_{table}_closed BEFORE INSERT ON {table}
            FOR EACH ROW EXECUTE FUNCTION redagent_check_open()""")
        statements.append(f"""CREATE TRIGGER redagent_{table}_closes AFTER INSERT ON {table}
            FOR EACH ROW EXECUTE FUNCTION redagent_close_if_complete()""")
    return statements


_PG_FUNCTIONS = (
    "redagent_audit_closed(text)",
    "redagent_audit_complete(text)",
    "redagent_check_reason()",
    "redagent_check_open()",
    "redagent_close_if_complete()",
    "redagent_check_closure()",
    "redagent_append_only()",
)


def upgrade() -> None:
    op.create_table(
        "audit_closure",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("audit_id", sa.Text(), nullable=False),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("made_by", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("action IN ('close', 'reopen')", name=op.f("ck_audit_closure_action")),
        sa.ForeignKeyConstraint(["audit_id"], ["audit.id"], name=op.f("fk_audit_closure_audit_id_audit")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_closure")),
    )
    op.create_index("ix_audit_closure_audit_id", "audit_closure", ["audit_id", "id"])
    pg = op.get_bind().dialect.name == "postgresql"
    for statement in _pg_statements() if pg else _sqlite_triggers():
        op.execute(statement)
    if pg:
        for function in _PG_FUNCTIONS:
            op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
    # Audits already complete when the rules arrive are closed now, as a write completing them would have closed them.
    bind = op.get_bind()
    for (audit_id,) in bind.execute(sa.text("SELECT id FROM audit ORDER BY id")).all():
        if bind.execute(sa.text("SELECT " + _COMPLETE.format(audit=":a")), {"a": audit_id}).scalar():
            bind.execute(
                sa.text(
                    "INSERT INTO audit_closure (audit_id, action, made_by, reason, created_at) "
                    "VALUES (:a, 'close', 'redagent', 'every item had its final label at migration 0012', :now)"
                ),
                {"a": audit_id, "now": _now(pg)},
            )


def _now(pg: bool) -> object:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    return now if pg else now.replace(tzinfo=None).isoformat(sep=" ")


def downgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    triggers = [
        ("audit_closure", "redagent_audit_closure_check"),
        ("audit_closure", "redagent_audit_closure_append_only"),
    ]
    triggers += [("audit_closure", "redagent_audit_closure_no_truncate")] if pg else []
    triggers += [("audit_closure", "redagent_audit_closure_insert"), ("audit_closure", "redagent_audit_closure_update")]
    triggers += [("audit_closure", "redagent_audit_closure_delete")]
    triggers += [(table, f"redagent_{table}_reason") for table in LABEL_TABLES]
    triggers += [(table, f"redagent_{table}_{what}") for table in CLOSES for what in ("closed", "closes")]
    for table, trigger in triggers:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}" if pg else f"DROP TRIGGER IF EXISTS {trigger}")
    if pg:
        for function in _PG_FUNCTIONS:
            op.execute(f"DROP FUNCTION IF EXISTS {function}")
    op.drop_index("ix_audit_closure_audit_id", table_name="audit_closure")
    op.drop_table("audit_closure")
