"""Case review in construction rounds: review_round, round_case, case_review.

Revision ID: 0003
Revises: 0002
Create Date: 2026-05-29

Written out in full (as 0001 and 0002 are) so later changes to the models cannot change what this
revision does. Only new tables: nothing earlier is altered, so SQLite needs no table rebuild.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# JSON on PostgreSQL; TEXT on SQLite, whose JSON-declared columns would coerce numbers (see tables.JSONDocument).
JSON = sa.JSON(none_as_null=True).with_variant(sa.Text(), "sqlite")

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "review_round",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("experts", JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_review_round")),
    )

    op.create_table(
        "round_case",
        sa.Column("round_id", sa.Text(), nullable=False),
        sa.Column("case_id", sa.Text(), nullable=False),
        sa.Column("case_version", sa.Integer(), nullable=False),
        sa.Column("case_hash", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("round_id", "case_id", name=op.f("pk_round_case")),
        sa.ForeignKeyConstraint(["round_id"], ["review_round.id"], name=op.f("fk_round_case_round_id_review_round")),
        sa.UniqueConstraint("round_id", "position", name=op.f("uq_round_case_round_position")),
    )

    op.create_table(
        "case_review",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("round_id", sa.Text(), nullable=False),
        sa.Column("case_id", sa.Text(), nullable=False),
        sa.Column("expert", sa.Text(), nullable=False),
        sa.Column("rubric", JSON, nullable=False),
        sa.Column("decision", sa.Text(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_case_review")),
        sa.ForeignKeyConstraint(
            ["round_id", "case_id"],
            ["round_case.round_id", "round_case.case_id"],
            name=op.f("fk_case_review_round_id_round_case"),
        ),
        sa.UniqueConstraint(
            "round_id", "case_id", "expert", "version", name=op.f("uq_case_review_round_case_expert_version")
        ),
        sa.CheckConstraint("decision IN ('accept', 'revise', 'exclude')", name=op.f("ck_case_review_decision")),
        sa.CheckConstraint("version >= 1", name=op.f("ck_case_review_version")),
        sa.CheckConstraint("version = 1 OR reason IS NOT NULL", name=op.f("ck_case_review_reason")),
    )


def downgrade() -> None:
    op.drop_table("case_review")
    op.drop_table("round_case")
    op.drop_table("review_round")
