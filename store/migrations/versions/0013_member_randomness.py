"""Audits drawn before members' randomness left the seed are marked (`audit.seeded_order`).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04

Issue 34: an audit's item ids, item order and each reviewer's queue order followed the sampler's seed, so a reviewer
who replayed the public run and tried seeds recovered every item's stratum, case, E and judge label. From this
revision `audit sample` draws what members see from the operating system's CSPRNG and the store draws item ids the
same way; the seed decides only which rollouts are drawn.

Audits drawn before keep their ids and orders — renumbering them would break the labelling files reviewers already
hold and the labels already written against them — and are marked `seeded_order`, which `audit status` states with
the remedy (draw the audit again before anyone labels it). New audits are never marked.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("audit", sa.Column("seeded_order", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute(sa.text("UPDATE audit SET seeded_order = :yes").bindparams(yes=True))


def downgrade() -> None:
    # In place (SQLite 3.35+): a batch rebuild would copy over a table the blinded views name.
    op.drop_column("audit", "seeded_order")
