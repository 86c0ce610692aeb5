"""A first label, decision or review that loses a race to a concurrent one is "taken", not a database error.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03

0010's writer functions take the next version themselves and write a reason only from version 2 on. Two
reviewers' clients (or one reviewer's two tabs) submitting a first label for one item at once: the one
whose function starts after the other's commit reads version 1 as taken, computes version 2 and writes it
without a reason, which the table's check (`version = 1 OR reason IS NOT NULL`) refuses — a database
error in place of LabelAlreadySubmitted. Each writer now returns NULL (taken) when the kind of write does
not match what is stored: a first write (no reason) when a version exists, and a correction (a reason)
when none does. The store already treats NULL, or a version other than the one it asked for, as a lost
race (store/audit.py, store/reviews.py), and nothing of that transaction is kept.

The functions are written out here (a migration is frozen), 0010's text plus the guard; the downgrade
writes them back without it. CREATE OR REPLACE keeps their owner and grants.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WRITER = "VOLATILE SECURITY DEFINER SET search_path = public, pg_temp"

# Where 0010 computed next_version: a write of the wrong kind for what is stored lost a race.
_GUARD = """
          IF (next_version = 1) <> (p_reason IS NULL) THEN RETURN NULL; END IF;"""

_WRITERS = [
    """CREATE OR REPLACE FUNCTION redagent_submit_label(p_audit text, p_item integer, p_reviewer text,
                                                         p_label text, p_note text, p_reason text)
        RETURNS integer LANGUAGE plpgsql {writer}
        AS $$
        DECLARE
          me text := redagent_me();
          next_version integer;
        BEGIN
          IF me IS NOT NULL AND (redagent_role() <> 'reviewer' OR p_reviewer IS DISTINCT FROM me) THEN
            RAISE EXCEPTION 'permission denied: % may label only as themselves', me USING ERRCODE = '42501';
          END IF;
          IF NOT EXISTS (SELECT 1 FROM audit_assignment WHERE audit_id = p_audit AND item_id = p_item
                                                          AND reviewer = p_reviewer) THEN
            RAISE EXCEPTION 'permission denied: item % is not in the queue', p_item USING ERRCODE = '42501';
          END IF;
          SELECT coalesce(max(version), 0) + 1 INTO next_version FROM audit_label
           WHERE item_id = p_item AND reviewer = p_reviewer;{guard}
          INSERT INTO audit_label (item_id, reviewer, label, note, version, reason, created_at)
          VALUES (p_item, p_reviewer, p_label, coalesce(p_note, ''), next_version,
                  CASE WHEN next_version = 1 THEN NULL ELSE p_reason END, now())
          ON CONFLICT (item_id, reviewer, version) DO NOTHING;
          IF NOT FOUND THEN RETURN NULL; END IF;
          RETURN next_version;
        END $$""",
    """CREATE OR REPLACE FUNCTION redagent_adjudicate(p_audit text, p_item integer, p_adjudicator text,
                                                       p_label text, p_note text, p_reason text)
        RETURNS integer LANGUAGE plpgsql {writer}
        AS $$
        DECLARE
          me text := redagent_me();
          next_version integer;
        BEGIN
          IF me IS NOT NULL AND (redagent_role() <> 'adjudicator' OR p_adjudicator IS DISTINCT FROM me) THEN
            RAISE EXCEPTION 'permission denied: % may decide only as themselves', me USING ERRCODE = '42501';
          END IF;
          IF NOT EXISTS (SELECT 1 FROM audit_item ai JOIN audit a ON a.id = ai.audit_id
                         WHERE ai.id = p_item AND a.id = p_audit AND a.adjudicator = p_adjudicator) THEN
            RAISE EXCEPTION 'permission denied: item % is not in the adjudication queue', p_item
              USING ERRCODE = '42501';
          END IF;
          SELECT coalesce(max(version), 0) + 1 INTO next_version FROM adjudication WHERE item_id = p_item;{guard}
          INSERT INTO adjudication (item_id, adjudicator, label, note, version, reason, created_at)
          VALUES (p_item, p_adjudicator, p_label, coalesce(p_note, ''), next_version,
                  CASE WHEN next_version = 1 THEN NULL ELSE p_reason END, now())
          ON CONFLICT (item_id, version) DO NOTHING;
          IF NOT FOUND THEN RETURN NULL; END IF;
          RETURN next_version;
        END $$""",
    """CREATE OR REPLACE FUNCTION redagent_submit_review(p_round text, p_case text, p_expert text, p_rubric json,
                                                          p_decision text, p_note text, p_reason text)
        RETURNS integer LANGUAGE plpgsql {writer}
        AS $$
        DECLARE
          me text := redagent_me();
          next_version integer;
        BEGIN
          IF me IS NOT NULL AND (redagent_role() <> 'expert' OR p_expert IS DISTINCT FROM me) THEN
            RAISE EXCEPTION 'permission denied: % may review only as themselves', me USING ERRCODE = '42501';
          END IF;
          IF NOT EXISTS (SELECT 1 FROM review_round rr JOIN round_case rc ON rc.round_id = rr.id
                         WHERE rr.id = p_round AND rc.case_id = p_case AND rr.experts::jsonb ? p_expert) THEN
            RAISE EXCEPTION 'permission denied: case % is not in the round', p_case USING ERRCODE = '42501';
          END IF;
          SELECT coalesce(max(version), 0) + 1 INTO next_version FROM case_review
           WHERE round_id = p_round AND case_id = p_case AND expert = p_expert;{guard}
          INSERT INTO case_review (round_id, case_id, expert, rubric, decision, note, version, reason, created_at)
          VALUES (p_round, p_case, p_expert, p_rubric, p_decision, coalesce(p_note, ''), next_version,
                  CASE WHEN next_version = 1 THEN NULL ELSE p_reason END, now())
          ON CONFLICT (round_id, case_id, expert, version) DO NOTHING;
          IF NOT FOUND THEN RETURN NULL; END IF;
          RETURN next_version;
        END $$""",
]


def _write(guard: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite has no writer functions: the store inserts, one person, one process at a time
    for statement in _WRITERS:
        op.execute(statement.format(writer=_WRITER, guard=guard))


def upgrade() -> None:
    _write(_GUARD)


def downgrade() -> None:
    _write("")
