"""Run shards: per-worker progress and failures of multi-worker and Ray runs.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

One new table, `run_shard`: a row per attempt at a shard of a run's rollout keys, with the worker that
ran it (host:pid, Ray node), its progress (done, invalid), heartbeat and, for a failed attempt, the
error. Nothing existing changes, so runs stored before this revision read as they did (no shard rows:
they were run by one process).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# Written out rather than importing the table classes, as 0001 does: later model changes cannot alter it.

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "run_shard",
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("shard", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("attempt", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("worker", sa.Text(), nullable=True),
        sa.Column("node", sa.Text(), nullable=True),
        sa.Column("planned", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("invalid", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('running', 'done', 'stopped', 'failed')", name="ck_run_shard_status"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_run_shard_run_id_run"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "shard", "attempt", name=op.f("pk_run_shard")),
    )


def downgrade() -> None:
    op.drop_table("run_shard")
