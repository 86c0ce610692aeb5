"""Blinded readers see an audit item's alias, not its case id.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02

`blind_item` shows the column `alias` (0008) where it showed `case_id`, on both dialects. On PostgreSQL a
view cannot lose a column in place: it and the blinded views built on it are dropped and made again (as
0005 made them, the item's alias for its case id). Members' grants on them go with them; opening the
store after the upgrade gives every login its role's grants again (store/db.py: sync_grants), and 0010
puts these views behind definer functions anyway.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# 0005's view, written out (later changes cannot alter it), with the alias; {case} is where case_id was.
_VIEW = """{verb} VIEW blind_item AS
    SELECT ai.audit_id, ai.id AS item_id, a.blind_model, a.blind_attack, {case}r."constraint",
           r.surfaces, r.harness, r.cue, r.defense,
           CASE WHEN a.blind_model THEN NULL ELSE r.model END AS model,
           CASE WHEN a.blind_attack THEN NULL ELSE r.strategy END AS strategy,
           CASE WHEN a.blind_attack THEN NULL ELSE r.vulnerability END AS vulnerability,
           CASE WHEN a.blind_attack THEN NULL ELSE r.channel END AS channel{alias}
    FROM audit_item ai JOIN audit a ON a.id = ai.audit_id JOIN rollout r ON r.id = ai.rollout_id
    WHERE {analyst} OR a.adjudicator = {me}
       OR EXISTS (SELECT 1 FROM audit_assignment aa WHERE aa.item_id = ai.id AND aa.reviewer = {me})"""
_PG = {"analyst": "(redagent_role() IS NULL OR redagent_role() = 'researcher')", "me": "redagent_me()"}
_SQLITE = {"analyst": "1 = 1", "me": "NULL"}


# The blinded views 0005 built on blind_item (PostgreSQL binds a view to the columns it reads).
_DEPENDENT = ("blind_event", "blind_receipt", "blind_diff")


def _r0005_views(names: Sequence[str]) -> list[str]:
    """0005's CREATE VIEW statements (PostgreSQL) for the views `names`."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("_r0005", Path(__file__).with_name("0005_team_access.py"))
    assert spec is not None and spec.loader is not None
    r0005 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(r0005)
    return [statement for statement in r0005._views(True) if any(f"CREATE VIEW {view} " in statement for view in names)]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for view in (*reversed(_DEPENDENT), "blind_item"):
            op.execute(f"DROP VIEW {view}")
        op.execute(_VIEW.format(verb="CREATE", case="ai.alias, ", alias="", **_PG))
        for statement in _r0005_views(_DEPENDENT):
            op.execute(statement)
    else:
        op.execute("DROP VIEW blind_item")
        op.execute(_VIEW.format(verb="CREATE", case="ai.alias, ", alias="", **_SQLITE))


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP VIEW blind_item")
        op.execute(_VIEW.format(verb="CREATE", case="r.case_id, ", alias="", **_SQLITE))
        return
    # Back to 0005's views (members' grants on them go with them: opening the store gives them again).
    for view in (*reversed(_DEPENDENT), "blind_item"):
        op.execute(f"DROP VIEW {view}")
    for statement in _r0005_views(("blind_item", *_DEPENDENT)):
        op.execute(statement)
