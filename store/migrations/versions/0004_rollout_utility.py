"""Utility (U) beside E on every rollout, and whether the rollout ran without its attack.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

Two columns on `rollout`: `utility`, the case's deterministic utility check (1/0; NULL where the case
states none, for invalid rollouts, and for every rollout stored before this revision), and
`benign`, true for a rollout of a benign case (a benign variant file or a run's benign arm, whose
ids end in "-benign" — which is how the rows stored before this revision are backfilled). Adding
columns needs no table rebuild on SQLite (ALTER TABLE ADD COLUMN), so existing rows keep their ids.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("rollout", sa.Column("utility", sa.Integer(), nullable=True))
    op.add_column("rollout", sa.Column("benign", sa.Boolean(), nullable=False, server_default=sa.false()))
    rollout = sa.table("rollout", sa.column("case_id", sa.Text()), sa.column("benign", sa.Boolean()))
    op.execute(rollout.update().where(rollout.c.case_id.like("%-benign")).values(benign=sa.true()))


def downgrade() -> None:
    with op.batch_alter_table("rollout") as batch:
        batch.drop_column("benign")
        batch.drop_column("utility")
