"""A reviewer's own write never closes an audit: it closes when an analyst reads its figures complete, or when the
adjudicator's decision completes it.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05

0012 closed an audit inside the write that gave its last item a final label, whoever wrote it. When that write was a
reviewer's own last first label, whether the audit closed at once told her whether any item was disputed — and so,
in the common case where the adjudicator had not begun, whether her peer had agreed with her on every item (her next
correction refused, or the closure counted in the statistics views every login reads). A reviewer's write now
closes nothing. An audit closes

- when the adjudicator's decision gives its last item a final label (the adjudicator sees every label by slot: she
  learns nothing from it), or
- when an analyst reads its figures (`final_labels`: `audit stats`, `audit status`, `stats … audit`, the report,
  the statistics screen) and every item has its final label, if it was never closed before: what has been
  reported stays as reported. The store calls `redagent_close_complete` (a definer function: researchers write
  no close row themselves), or on SQLite writes the row. An audit the owner re-opened stays open until the
  owner closes it again, or a decision completes it.

Everything else of 0012 stands: closed, an audit takes no label, correction or decision, and only the owner
re-opens it, with a reason.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WRITER = "VOLATILE SECURITY DEFINER SET search_path = public, pg_temp"
REASON = "its figures were read with every item final"


def upgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    if not pg:
        op.execute("DROP TRIGGER redagent_audit_label_closes")
        return
    op.execute("DROP TRIGGER redagent_audit_label_closes ON audit_label")
    op.execute(f"""CREATE FUNCTION redagent_close_complete(p_audit text) RETURNS boolean LANGUAGE plpgsql {_WRITER}
        AS $$
        BEGIN
          -- Only an audit never closed: one the owner re-opened stays open until the owner closes it again.
          IF EXISTS (SELECT 1 FROM audit_closure WHERE audit_id = p_audit) OR NOT redagent_audit_complete(p_audit) THEN
            RETURN false;
          END IF;
          INSERT INTO audit_closure (audit_id, action, made_by, reason, created_at)
          VALUES (p_audit, 'close', 'redagent', '{REASON}', now());
          RETURN true;
        END $$""")
    op.execute("REVOKE ALL ON FUNCTION redagent_close_complete(text) FROM PUBLIC")


def downgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    if pg:
        op.execute("DROP FUNCTION redagent_close_complete(text)")
        op.execute(
            "CREATE TRIGGER redagent_audit_label_closes AFTER INSERT ON audit_label "
            "FOR EACH ROW EXECUTE FUNCTION redagent_close_if_complete()"
        )
        return
    # 0012's trigger, as it wrote it.
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("_r0012", Path(__file__).with_name("0012_one_set_of_write_rules.py"))
    assert spec is not None and spec.loader is not None
    r0012 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(r0012)
    for statement in r0012._sqlite_triggers():
        if "CREATE TRIGGER redagent_audit_label_closes " in statement:
            op.execute(statement)
