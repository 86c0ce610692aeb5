"""Run health: which process drives a run, and when it last said it was alive.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-08

Three nullable columns on `run`: `host` and `pid` of the process that last started driving the run,
and `heartbeat_at`, refreshed by that process while it runs. A run still marked "running" whose
process is gone (same host, no such pid) or whose heartbeat went stale is shown as interrupted, not
running. Runs stored before this revision have none of the three, so a "running" one among them is
shown as interrupted — no process of this code can be driving it. Adding columns needs no table
rebuild on SQLite.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# Written out rather than importing the table classes, as 0001 does: later model changes cannot alter it.

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("run", sa.Column("host", sa.Text(), nullable=True))
    op.add_column("run", sa.Column("pid", sa.Integer(), nullable=True))
    op.add_column("run", sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run") as batch:
        batch.drop_column("heartbeat_at")
        batch.drop_column("pid")
        batch.drop_column("host")
