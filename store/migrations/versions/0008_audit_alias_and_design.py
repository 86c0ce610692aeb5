"""Audit items get an opaque alias; audits record how their sample was drawn.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02

- `audit_item.alias`: what blinded readers see in place of the case id, which names the attack strategy
  and, with its `-benign` suffix, the benign arm. Random, unique within an audit (a unique index on
  (audit_id, alias)); every existing item gets one here. Nullable in the schema only: SQLite cannot make
  an added column NOT NULL without rebuilding a table that views and foreign keys point at.
- `audit.design`: the sampling design (cases within strata, the strata merged for lack of two cases);
  NULL for audits drawn before, whose unit was the rollout.

Nothing reviewers read changes here; 0009 shows them the alias.
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def new_alias(taken: set[str]) -> str:
    """A random alias not in `taken` (which it joins)."""
    while True:
        alias = f"case-{secrets.token_hex(4)}"
        if alias not in taken:
            taken.add(alias)
            return alias


def upgrade() -> None:
    op.add_column("audit_item", sa.Column("alias", sa.Text(), nullable=True))
    # JSON on PostgreSQL; TEXT on SQLite, whose JSON-declared columns would coerce numbers (tables.JSONDocument).
    op.add_column(
        "audit", sa.Column("design", sa.JSON(none_as_null=True).with_variant(sa.Text(), "sqlite"), nullable=True)
    )
    bind = op.get_bind()
    items = sa.table(
        "audit_item", sa.column("id", sa.Integer()), sa.column("audit_id", sa.Text()), sa.column("alias", sa.Text())
    )
    taken: dict[str, set[str]] = {}
    rows = bind.execute(sa.select(items.c.id, items.c.audit_id).order_by(items.c.id)).all()
    updates = [{"item": item_id, "alias": new_alias(taken.setdefault(audit_id, set()))} for item_id, audit_id in rows]
    if updates:
        bind.execute(
            items.update().where(items.c.id == sa.bindparam("item")).values(alias=sa.bindparam("alias")), updates
        )
    op.create_index("uq_audit_item_audit_alias", "audit_item", ["audit_id", "alias"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_audit_item_audit_alias", table_name="audit_item")
    # ALTER TABLE … DROP COLUMN in place (SQLite has it since 3.35): a batch rebuild renames a copy over the
    # table, which SQLite refuses while 0005's blinded views name it ("error in view blind_audit").
    op.drop_column("audit", "design")
    op.drop_column("audit_item", "alias")
