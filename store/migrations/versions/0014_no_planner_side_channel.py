"""No planner or statistics side channel: a member's views are function scans only; analysts read their own.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04

Issue 34: 0010's member-facing views (`blind_*`, `own_*`, `my_*`) were `security_barrier` views with two branches:
the member's rows from a definer function, and, behind a gate a member's query never passes, the analysts' rows
read from the tables. The gate kept the analysts' branch from running, not from being planned: `EXPLAIN` of a
query on her own view showed a reviewer the planner's row estimates for that branch, which after an ANALYZE come
from the statistics of every member's rows — her peer's label counts, exactly.

PostgreSQL:

- Every member-facing view is now only its definer function (`SELECT * FROM redagent_<view>()`), whose estimate is
  the function's fixed ROWS: nothing a member can plan or run names a table, so no estimate is computed from
  anyone's rows.
- Analysts (the owner, researchers) read the same relations under schema `redagent_analyst`: `blind_*` as 0005's
  filtering views (`public.blind_*_base`), `own_*` and `my_*` as the tables whole. The store picks the schema by
  who is connected (`schema_translate_map`), so its queries are the same text for both; a member has no USAGE on
  that schema, so she can neither read nor plan anything in it.

Both dialects: `blind_diff.entry_id` numbers an item's diff entries 1, 2, … (its order) where it showed the table's
serial id: those ranges followed the order rollouts were written in, which a replay of the public run reproduces,
and so named the rollout (issue 34, item 1: nothing a member sees is a function of what she may not see).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ANALYST_SCHEMA = "redagent_analyst"
BLIND = ("blind_audit", "blind_queue", "blind_item", "blind_event", "blind_receipt", "blind_diff", "blind_slot_label")
# 0010's member-facing views over their tables, as an analyst reads them (every row).
OWN = {
    "own_label": "SELECT item_id, reviewer, label, note, version, reason, created_at FROM public.audit_label",
    "own_adjudication": "SELECT item_id, adjudicator, label, note, version, reason, created_at "
    "FROM public.adjudication",
    "own_review": "SELECT round_id, case_id, expert, rubric, decision, note, version, reason, created_at "
    "FROM public.case_review",
    "my_round": "SELECT id, seed, n, experts, created_at FROM public.review_round",
    "my_round_case": "SELECT round_id, case_id, case_version, case_hash, position FROM public.round_case",
}

# 0005's blind_diff with the entry's number within its item in place of the table's id. {item} is the item view.
_DIFF = """SELECT bi.audit_id, bi.item_id,
       CAST(row_number() OVER (PARTITION BY bi.audit_id, bi.item_id ORDER BY df.id) AS INTEGER) AS entry_id,
       df.path, df.op, df.before, df.after
    FROM {item} bi JOIN audit_item ai ON ai.id = bi.item_id
    JOIN diff_entry df ON df.rollout_id = ai.rollout_id"""
_OLD_DIFF = """SELECT bi.audit_id, bi.item_id, df.id AS entry_id, df.path, df.op, df.before, df.after
    FROM {item} bi JOIN audit_item ai ON ai.id = bi.item_id
    JOIN diff_entry df ON df.rollout_id = ai.rollout_id"""


def _pg_upgrade() -> None:
    op.execute(
        f"CREATE OR REPLACE VIEW blind_diff_base WITH (security_barrier) AS {_DIFF.format(item='blind_item_base')}"
    )
    op.execute(f"CREATE SCHEMA {ANALYST_SCHEMA}")
    op.execute(f"REVOKE ALL ON SCHEMA {ANALYST_SCHEMA} FROM PUBLIC")
    for view in BLIND:
        op.execute(f"CREATE VIEW {ANALYST_SCHEMA}.{view} AS SELECT * FROM public.{view}_base")
        op.execute(f"CREATE OR REPLACE VIEW public.{view} WITH (security_barrier) AS SELECT * FROM redagent_{view}()")
    for view, select in OWN.items():
        op.execute(f"CREATE VIEW {ANALYST_SCHEMA}.{view} AS {select}")
        op.execute(f"CREATE OR REPLACE VIEW public.{view} WITH (security_barrier) AS SELECT * FROM redagent_{view}()")


def _pg_downgrade() -> None:
    gate = "redagent_analyst()"
    for view in BLIND:
        op.execute(
            f"CREATE OR REPLACE VIEW public.{view} WITH (security_barrier) AS SELECT * FROM redagent_{view}() "
            f"WHERE NOT {gate} UNION ALL SELECT * FROM public.{view}_base WHERE {gate}"
        )
    for view, select in OWN.items():  # 0010's analysts' branch: the table whole
        op.execute(
            f"CREATE OR REPLACE VIEW public.{view} WITH (security_barrier) AS SELECT * FROM redagent_{view}() "
            f"WHERE NOT {gate} UNION ALL {select} WHERE {gate}"
        )
    op.execute(f"DROP SCHEMA {ANALYST_SCHEMA} CASCADE")
    op.execute(
        f"CREATE OR REPLACE VIEW blind_diff_base WITH (security_barrier) AS {_OLD_DIFF.format(item='blind_item_base')}"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _pg_upgrade()
        return
    op.execute("DROP VIEW blind_diff")
    op.execute(f"CREATE VIEW blind_diff AS {_DIFF.format(item='blind_item')}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _pg_downgrade()
        return
    op.execute("DROP VIEW blind_diff")
    op.execute(f"CREATE VIEW blind_diff AS {_OLD_DIFF.format(item='blind_item')}")
