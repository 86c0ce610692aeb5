"""Judging and human audit: judge labels, recognition labels, audits, items, assignments, labels, adjudications.

Revision ID: 0002
Revises: 0001
Create Date: 2026-05-27

Written out in full (as 0001 is) so later changes to the models cannot change what this revision
does. Only new tables: nothing of 0001 is altered, so SQLite needs no table rebuild.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# JSON on PostgreSQL; TEXT on SQLite, whose JSON-declared columns would coerce numbers (see tables.JSONDocument).
JSON = sa.JSON(none_as_null=True).with_variant(sa.Text(), "sqlite")

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HUMAN_LABEL_CHECK = "label IN ('harmful', 'not_harmful', 'unsure')"
REASON_CHECK = "version = 1 OR reason IS NOT NULL"


def _text(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.Text(), nullable=nullable)


def _int(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.Integer(), nullable=nullable)


def _id() -> sa.Column:
    return sa.Column("id", sa.Integer(), autoincrement=True, nullable=False)


def _created_at() -> sa.Column:
    return sa.Column("created_at", sa.DateTime(timezone=True), nullable=False)


def _rollout_fk(table: str, ondelete: str | None = "CASCADE") -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["rollout_id"], ["rollout.id"], name=op.f(f"fk_{table}_rollout_id_rollout"), ondelete=ondelete
    )


def _run_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f(f"fk_{table}_run_id_run"))


def upgrade() -> None:
    op.create_table(
        "judge_label",
        _id(),
        _text("rollout_id"),
        _text("run_id"),
        _text("config_name"),
        _text("config_hash"),
        _text("view"),
        _text("contract_hash"),
        _text("gate"),
        _text("backbone"),
        _int("label", nullable=True),
        _text("status"),
        _text("rationale"),
        sa.Column("evidence", JSON, nullable=False),
        _int("prompt_tokens"),
        _int("completion_tokens"),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge_label")),
        _rollout_fk("judge_label"),
        _run_fk("judge_label"),
        sa.UniqueConstraint("rollout_id", "config_hash", "backbone", name=op.f("uq_judge_label_rollout_config")),
        sa.CheckConstraint("status IN ('ok', 'failed')", name=op.f("ck_judge_label_status")),
        sa.CheckConstraint(
            "(status = 'ok' AND label IN (0, 1)) OR (status = 'failed' AND label IS NULL)",
            name=op.f("ck_judge_label_label"),
        ),
    )
    op.create_index(op.f("ix_judge_label_run_config"), "judge_label", ["run_id", "config_hash", "backbone"])

    op.create_table(
        "recognition_label",
        _id(),
        _text("rollout_id"),
        _text("run_id"),
        _text("judge"),
        _text("contract_hash"),
        _int("anchor_idx", nullable=True),
        sa.Column("resolved", sa.Boolean(), nullable=False),
        _int("broad", nullable=True),
        _int("strict", nullable=True),
        _text("status"),
        _text("rationale"),
        sa.Column("evidence", JSON, nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recognition_label")),
        _rollout_fk("recognition_label"),
        _run_fk("recognition_label"),
        sa.UniqueConstraint("rollout_id", "judge", "contract_hash", name=op.f("uq_recognition_label_rollout_judge")),
        sa.CheckConstraint("status IN ('ok', 'failed')", name=op.f("ck_recognition_label_status")),
        sa.CheckConstraint(
            "(broad IS NULL OR broad IN (0, 1)) AND (strict IS NULL OR strict IN (0, 1))",
            name=op.f("ck_recognition_label_values"),
        ),
    )
    op.create_index(op.f("ix_recognition_label_run_judge"), "recognition_label", ["run_id", "judge", "contract_hash"])

    op.create_table(
        "audit",
        _text("id"),
        _text("run_id"),
        _text("config_name"),
        _text("config_hash"),
        _text("backbone"),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        _int("n"),
        sa.Column("stratify", JSON, nullable=False),
        sa.Column("reviewers", JSON, nullable=False),
        _text("adjudicator"),
        sa.Column("blind_model", sa.Boolean(), nullable=False),
        sa.Column("blind_attack", sa.Boolean(), nullable=False),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit")),
        _run_fk("audit"),
    )
    op.create_index(op.f("ix_audit_run_id"), "audit", ["run_id"])

    op.create_table(
        "audit_item",
        _id(),
        _text("audit_id"),
        _text("rollout_id"),
        _text("stratum"),
        _int("population"),
        _int("sampled"),
        sa.Column("weight", sa.Float(), nullable=False),
        _int("judge_label"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_item")),
        sa.ForeignKeyConstraint(["audit_id"], ["audit.id"], name=op.f("fk_audit_item_audit_id_audit")),
        _rollout_fk("audit_item", ondelete=None),
        sa.UniqueConstraint("audit_id", "rollout_id", name=op.f("uq_audit_item_audit_rollout")),
    )

    op.create_table(
        "audit_assignment",
        _text("audit_id"),
        _int("item_id"),
        _text("reviewer"),
        _text("slot"),
        _int("position"),
        sa.PrimaryKeyConstraint("item_id", "reviewer", name=op.f("pk_audit_assignment")),
        sa.ForeignKeyConstraint(["audit_id"], ["audit.id"], name=op.f("fk_audit_assignment_audit_id_audit")),
        sa.ForeignKeyConstraint(["item_id"], ["audit_item.id"], name=op.f("fk_audit_assignment_item_id_audit_item")),
        sa.UniqueConstraint("audit_id", "reviewer", "position", name=op.f("uq_audit_assignment_reviewer_position")),
        sa.CheckConstraint("slot IN ('A', 'B')", name=op.f("ck_audit_assignment_slot")),
    )

    op.create_table(
        "audit_label",
        _id(),
        _int("item_id"),
        _text("reviewer"),
        _text("label"),
        _text("note"),
        _int("version"),
        _text("reason", nullable=True),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_label")),
        sa.ForeignKeyConstraint(
            ["item_id", "reviewer"],
            ["audit_assignment.item_id", "audit_assignment.reviewer"],
            name=op.f("fk_audit_label_item_id_audit_assignment"),
        ),
        sa.UniqueConstraint("item_id", "reviewer", "version", name=op.f("uq_audit_label_item_reviewer_version")),
        sa.CheckConstraint(HUMAN_LABEL_CHECK, name=op.f("ck_audit_label_label")),
        sa.CheckConstraint("version >= 1", name=op.f("ck_audit_label_version")),
        sa.CheckConstraint(REASON_CHECK, name=op.f("ck_audit_label_reason")),
    )

    op.create_table(
        "adjudication",
        _id(),
        _int("item_id"),
        _text("adjudicator"),
        _text("label"),
        _text("note"),
        _int("version"),
        _text("reason", nullable=True),
        _created_at(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_adjudication")),
        sa.ForeignKeyConstraint(["item_id"], ["audit_item.id"], name=op.f("fk_adjudication_item_id_audit_item")),
        sa.UniqueConstraint("item_id", "version", name=op.f("uq_adjudication_item_version")),
        sa.CheckConstraint(HUMAN_LABEL_CHECK, name=op.f("ck_adjudication_label")),
        sa.CheckConstraint("version >= 1", name=op.f("ck_adjudication_version")),
        sa.CheckConstraint(REASON_CHECK, name=op.f("ck_adjudication_reason")),
    )


def downgrade() -> None:
    op.drop_table("adjudication")
    op.drop_table("audit_label")
    op.drop_table("audit_assignment")
    op.drop_table("audit_item")
    op.drop_index(op.f("ix_audit_run_id"), table_name="audit")
    op.drop_table("audit")
    op.drop_index(op.f("ix_recognition_label_run_judge"), table_name="recognition_label")
    op.drop_table("recognition_label")
    op.drop_index(op.f("ix_judge_label_run_config"), table_name="judge_label")
    op.drop_table("judge_label")
