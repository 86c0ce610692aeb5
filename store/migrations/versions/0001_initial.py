"""Initial schema: run, rollout and each rollout's events, receipts, snapshots (over blobs) and diff entries.

Revision ID: 0001
Revises:
Create Date: 2026-05-20

Written out in full rather than importing the table classes, so later changes to the models cannot
change what this revision does. Portable between SQLite and PostgreSQL. Names are wrapped in op.f()
so the metadata's naming convention takes them as final instead of templating them again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# JSON on PostgreSQL; TEXT on SQLite, whose JSON-declared columns would coerce numbers (see tables.JSONDocument).
JSON = sa.JSON(none_as_null=True).with_variant(sa.Text(), "sqlite")

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _when(name: str, nullable: bool) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _text(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.Text(), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "run",
        _text("id"),
        _text("status"),
        sa.Column("protocol", JSON, nullable=False),
        _text("case_set_hash"),
        _text("manifest_hash", nullable=True),
        _text("code_version"),
        sa.Column("planned", sa.Integer(), nullable=False),
        _text("parent_run_id", nullable=True),
        _when("created_at", nullable=False),
        _when("started_at", nullable=True),
        _when("finished_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run")),
        sa.ForeignKeyConstraint(["parent_run_id"], ["run.id"], name=op.f("fk_run_parent_run_id_run")),
    )
    op.create_table(
        "rollout",
        _text("id"),
        _text("run_id"),
        _text("case_id"),
        sa.Column("case_version", sa.Integer(), nullable=False),
        _text("case_hash"),
        _text("strategy"),
        _text("vulnerability"),
        _text("constraint"),
        _text("surfaces"),
        _text("channel"),
        _text("model"),
        _text("harness"),
        _text("cue"),
        _text("defense"),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("valid", sa.Boolean(), nullable=False),
        _text("invalid_reason", nullable=True),
        _text("invalid_detail", nullable=True),
        sa.Column("e", sa.Integer(), nullable=True),
        sa.Column("evidence", JSON, nullable=False),
        sa.Column("expected_e", sa.Integer(), nullable=True),
        sa.Column("reached", sa.Boolean(), nullable=False),
        _text("final_text"),
        _when("started_at", nullable=False),
        _when("finished_at", nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        _text("baseline_rollout_id", nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rollout")),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_rollout_run_id_run")),
        sa.ForeignKeyConstraint(
            ["baseline_rollout_id"],
            ["rollout.id"],
            name=op.f("fk_rollout_baseline_rollout_id_rollout"),
            deferrable=True,
            initially="DEFERRED",
        ),
        sa.UniqueConstraint(
            "run_id", "case_id", "model", "harness", "cue", "defense", "attempt", name=op.f("uq_rollout_cell")
        ),
    )
    op.create_index(op.f("ix_rollout_run_model_harness"), "rollout", ["run_id", "model", "harness"])
    op.create_index(op.f("ix_rollout_run_strategy"), "rollout", ["run_id", "strategy"])
    op.create_index(op.f("ix_rollout_run_constraint"), "rollout", ["run_id", "constraint"])

    op.create_table(
        "event",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        _text("rollout_id"),
        sa.Column("idx", sa.Integer(), nullable=False),
        _text("role"),
        _text("text"),
        sa.Column("tool_call", JSON, nullable=True),
        _text("original", nullable=True),
        _text("observation", nullable=True),
        sa.Column("receipts", JSON, nullable=False),
        sa.Column("tampered", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_event")),
        sa.ForeignKeyConstraint(
            ["rollout_id"], ["rollout.id"], name=op.f("fk_event_rollout_id_rollout"), ondelete="CASCADE"
        ),
        sa.UniqueConstraint("rollout_id", "idx", name=op.f("uq_event_rollout_idx")),
    )
    op.create_table(
        "receipt",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        _text("rollout_id"),
        _text("receipt_id"),
        sa.Column("seq", sa.Integer(), nullable=False),
        _text("service"),
        _text("action"),
        sa.Column("args", JSON, nullable=False),
        _text("outcome"),
        _text("actor"),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("effect", JSON, nullable=False),
        _text("error", nullable=True),
        _text("via", nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_receipt")),
        sa.ForeignKeyConstraint(
            ["rollout_id"], ["rollout.id"], name=op.f("fk_receipt_rollout_id_rollout"), ondelete="CASCADE"
        ),
        sa.UniqueConstraint("rollout_id", "seq", name=op.f("uq_receipt_rollout_seq")),
    )
    op.create_table(
        "blob",
        _text("sha256"),
        _text("data"),
        sa.PrimaryKeyConstraint("sha256", name=op.f("pk_blob")),
    )
    op.create_table(
        "snapshot",
        _text("rollout_id"),
        _text("kind"),
        _text("blob_sha"),
        sa.PrimaryKeyConstraint("rollout_id", "kind", name=op.f("pk_snapshot")),
        sa.ForeignKeyConstraint(
            ["rollout_id"], ["rollout.id"], name=op.f("fk_snapshot_rollout_id_rollout"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["blob_sha"], ["blob.sha256"], name=op.f("fk_snapshot_blob_sha_blob")),
        sa.CheckConstraint("kind IN ('baseline', 'final')", name=op.f("ck_snapshot_kind")),
    )
    op.create_table(
        "diff_entry",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        _text("rollout_id"),
        _text("path"),
        _text("op"),
        sa.Column("before", JSON, nullable=True),
        sa.Column("after", JSON, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_diff_entry")),
        sa.ForeignKeyConstraint(
            ["rollout_id"], ["rollout.id"], name=op.f("fk_diff_entry_rollout_id_rollout"), ondelete="CASCADE"
        ),
    )
    op.create_index(op.f("ix_diff_entry_rollout_id"), "diff_entry", ["rollout_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_diff_entry_rollout_id"), table_name="diff_entry")
    op.drop_table("diff_entry")
    op.drop_table("snapshot")
    op.drop_table("blob")
    op.drop_table("receipt")
    op.drop_table("event")
    op.drop_index(op.f("ix_rollout_run_constraint"), table_name="rollout")
    op.drop_index(op.f("ix_rollout_run_strategy"), table_name="rollout")
    op.drop_index(op.f("ix_rollout_run_model_harness"), table_name="rollout")
    op.drop_table("rollout")
    op.drop_table("run")
