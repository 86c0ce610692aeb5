"""Members read and write only through definer functions: no table of labels is readable by a member.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02

Both dialects: the views `own_label` and `own_adjudication` (a reviewer's own labels, an adjudicator's
own decisions) that the reviewer- and adjudicator-facing store queries read instead of the tables.
On SQLite (one person, no logins) they are plain views over the tables.

PostgreSQL (issue 23: a reviewer with a SQL prompt recovered her peer's labels by timing row-level
security, and rows past the views' filters with a cheap function of her own):

- Each blinded view `blind_*` of 0005 is renamed `blind_*_base` and read by members only through a
  SECURITY DEFINER function (`redagent_blind_*()`, fixed search_path) that runs the whole base query —
  a definer function with a SET clause is never inlined, so none of the caller's clauses reach the rows
  it filters out — and returns the caller's own rows. The public `blind_*` views are `security_barrier`
  views over that function, plus, for analysts (the owner, researchers), a branch over the base view
  behind a one-time gate (`redagent_analyst()`), which a member's query never executes.
  `own_label`, `own_adjudication` and `own_review` (an expert's own case reviews) likewise.
- Members get no privilege on any table: they write through `redagent_submit_label`,
  `redagent_adjudicate` and `redagent_submit_review`, which take the name from the session's login
  (session_user), check the item is in the caller's queue, the version is the next one and — for a
  decision — that the item is disputed. Experts read their rounds through `my_round` and
  `my_round_case`, which name no other expert.
- Triggers hold everyone, researchers included, to the audit's workflow: an adjudication only on a
  disputed item by the audit's adjudicator; assignments only to the reviewer the audit names for that
  slot, at most one per slot and two per item; items only up to the audit's n, with the judge label
  stored for its configuration. store/access.py revokes UPDATE and DELETE on the audit tables and every
  write on labels, decisions and reviews from researchers.
- TEMPORARY on the database and CREATE on schema public are revoked from PUBLIC, and functions created
  later are not executable by PUBLIC by default: a member can create no function of their own.
- blind_audit names the adjudicator only to the adjudicator.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BLIND = ("blind_audit", "blind_queue", "blind_item", "blind_event", "blind_receipt", "blind_diff", "blind_slot_label")
OWN = ("own_label", "own_adjudication", "own_review", "my_round", "my_round_case")
WRITERS = (
    "redagent_submit_label(text, integer, text, text, text, text)",
    "redagent_adjudicate(text, integer, text, text, text, text)",
    "redagent_submit_review(text, text, text, json, text, text, text)",
)
_DEFINER = "STABLE SECURITY DEFINER SET search_path = public, pg_temp"
_WRITER = "VOLATILE SECURITY DEFINER SET search_path = public, pg_temp"
_TRIGGER = "SECURITY DEFINER SET search_path = public, pg_temp"  # volatile: sees the statement's earlier rows

_SQLITE_OWN = {
    "own_label": "SELECT item_id, reviewer, label, note, version, reason, created_at FROM audit_label",
    "own_adjudication": "SELECT item_id, adjudicator, label, note, version, reason, created_at FROM adjudication",
    "own_review": "SELECT round_id, case_id, expert, rubric, decision, note, version, reason, created_at "
    "FROM case_review",
    "my_round": "SELECT id, seed, n, experts, created_at FROM review_round",
    "my_round_case": "SELECT round_id, case_id, case_version, case_hash, position FROM round_case",
}

# What a member's own rows are, in the base views (the analysts' branch reads the tables whole).
_PG_OWN_BASE = {
    "own_label": (
        "SELECT item_id, reviewer, label, note, version, reason, created_at FROM audit_label",
        "reviewer = redagent_me()",
    ),
    "own_adjudication": (
        "SELECT ad.item_id, ad.adjudicator, ad.label, ad.note, ad.version, ad.reason, ad.created_at "
        "FROM adjudication ad",
        "ad.adjudicator = redagent_me() AND redagent_adjudicates(ad.item_id)",
    ),
    "own_review": (
        "SELECT round_id, case_id, expert, rubric, decision, note, version, reason, created_at FROM case_review",
        "expert = redagent_me()",
    ),
    # An expert's rounds, naming only them among the round's experts (the others are the roster).
    "my_round": (
        "SELECT id, seed, n, json_build_array(redagent_me()) AS experts, created_at FROM review_round",
        "redagent_role() = 'expert' AND experts::jsonb ? redagent_me()",
    ),
    "my_round_case": (
        "SELECT rc.round_id, rc.case_id, rc.case_version, rc.case_hash, rc.position FROM round_case rc",
        "redagent_role() = 'expert' AND EXISTS (SELECT 1 FROM review_round rr WHERE rr.id = rc.round_id "
        "AND rr.experts::jsonb ? redagent_me())",
    ),
}

_PG_FUNCTIONS = [
    # The 0005 functions again, with a fixed search_path (FROM CURRENT kept the migration's "$user").
    f"""CREATE OR REPLACE FUNCTION redagent_me() RETURNS text LANGUAGE sql {_DEFINER}
        AS $$ SELECT name FROM team_member WHERE login = session_user $$""",
    f"""CREATE OR REPLACE FUNCTION redagent_role() RETURNS text LANGUAGE sql {_DEFINER}
        AS $$ SELECT role FROM team_member WHERE login = session_user $$""",
    f"""CREATE OR REPLACE FUNCTION redagent_adjudicates(item integer) RETURNS boolean LANGUAGE sql {_DEFINER}
        AS $$ SELECT EXISTS (SELECT 1 FROM audit_item ai JOIN audit a ON a.id = ai.audit_id
                             WHERE ai.id = item AND a.adjudicator = redagent_me()) $$""",
    # The owner (no member) and researchers read everything; the gate of the views' analyst branch.
    f"""CREATE FUNCTION redagent_analyst() RETURNS boolean LANGUAGE sql {_DEFINER}
        AS $$ SELECT NOT EXISTS (SELECT 1 FROM team_member WHERE login = session_user AND role <> 'researcher') $$""",
    # Whether an item needs adjudication: both slots' first labels exist and first or latest labels
    # differ, or one of them is unsure (store/audit.py: needs_adjudication).
    f"""CREATE FUNCTION redagent_disputed(item integer) RETURNS boolean LANGUAGE sql {_DEFINER}
        AS $$
        WITH l AS (SELECT aa.slot, al.label, al.version, max(al.version) OVER (PARTITION BY aa.slot) AS latest
                   FROM audit_label al JOIN audit_assignment aa ON aa.item_id = al.item_id AND aa.reviewer = al.reviewer
                   WHERE al.item_id = item),
             shown AS (SELECT slot, label, version = 1 AS first FROM l WHERE version = 1 OR version = latest)
        SELECT (SELECT count(*) FROM shown WHERE first) = 2
           AND ((SELECT count(DISTINCT label) FROM shown WHERE first) = 2
                OR (SELECT count(DISTINCT label) FROM l WHERE version = latest) = 2
                OR EXISTS (SELECT 1 FROM shown WHERE label = 'unsure'))
        $$""",
]


def _pg_read_functions() -> list[str]:
    statements = [
        f"""CREATE FUNCTION redagent_{view}() RETURNS SETOF {view}_base LANGUAGE sql {_DEFINER}
                      ROWS 100 AS $$ SELECT * FROM {view}_base $$"""
        for view in (*BLIND, *OWN)
    ]
    return statements


_PG_WRITERS = [
    # A reviewer's label: the name is the login's, the item must be in that reviewer's queue of that
    # audit, the version is the next one. The owner (no member) may write for any assigned reviewer.
    f"""CREATE FUNCTION redagent_submit_label(p_audit text, p_item integer, p_reviewer text, p_label text,
                                              p_note text, p_reason text) RETURNS integer LANGUAGE plpgsql {_WRITER}
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
           WHERE item_id = p_item AND reviewer = p_reviewer;
          INSERT INTO audit_label (item_id, reviewer, label, note, version, reason, created_at)
          VALUES (p_item, p_reviewer, p_label, coalesce(p_note, ''), next_version,
                  CASE WHEN next_version = 1 THEN NULL ELSE p_reason END, now())
          ON CONFLICT (item_id, reviewer, version) DO NOTHING;
          IF NOT FOUND THEN RETURN NULL; END IF;
          RETURN next_version;
        END $$""",
    f"""CREATE FUNCTION redagent_adjudicate(p_audit text, p_item integer, p_adjudicator text, p_label text,
                                            p_note text, p_reason text) RETURNS integer LANGUAGE plpgsql {_WRITER}
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
          SELECT coalesce(max(version), 0) + 1 INTO next_version FROM adjudication WHERE item_id = p_item;
          INSERT INTO adjudication (item_id, adjudicator, label, note, version, reason, created_at)
          VALUES (p_item, p_adjudicator, p_label, coalesce(p_note, ''), next_version,
                  CASE WHEN next_version = 1 THEN NULL ELSE p_reason END, now())
          ON CONFLICT (item_id, version) DO NOTHING;
          IF NOT FOUND THEN RETURN NULL; END IF;
          RETURN next_version;
        END $$""",
    f"""CREATE FUNCTION redagent_submit_review(p_round text, p_case text, p_expert text, p_rubric json,
                                               p_decision text, p_note text, p_reason text) RETURNS integer
        LANGUAGE plpgsql {_WRITER}
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
           WHERE round_id = p_round AND case_id = p_case AND expert = p_expert;
          INSERT INTO case_review (round_id, case_id, expert, rubric, decision, note, version, reason, created_at)
          VALUES (p_round, p_case, p_expert, p_rubric, p_decision, coalesce(p_note, ''), next_version,
                  CASE WHEN next_version = 1 THEN NULL ELSE p_reason END, now())
          ON CONFLICT (round_id, case_id, expert, version) DO NOTHING;
          IF NOT FOUND THEN RETURN NULL; END IF;
          RETURN next_version;
        END $$""",
]

# Triggers: the audit's workflow, for every writer (a researcher has INSERT on the audit tables).
_PG_TRIGGERS = [
    f"""CREATE FUNCTION redagent_check_adjudication() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
        AS $$
        BEGIN
          IF NOT EXISTS (SELECT 1 FROM audit_item ai JOIN audit a ON a.id = ai.audit_id
                         WHERE ai.id = NEW.item_id AND a.adjudicator = NEW.adjudicator) THEN
            RAISE EXCEPTION 'adjudication of item % by %: not the audit''s adjudicator', NEW.item_id, NEW.adjudicator
              USING ERRCODE = '42501';
          END IF;
          IF NOT redagent_disputed(NEW.item_id) THEN
            RAISE EXCEPTION 'adjudication of item %: the reviewers do not disagree', NEW.item_id
              USING ERRCODE = '23514';
          END IF;
          RETURN NEW;
        END $$""",
    """CREATE TRIGGER redagent_adjudication_disputed BEFORE INSERT ON adjudication
       FOR EACH ROW EXECUTE FUNCTION redagent_check_adjudication()""",
    f"""CREATE FUNCTION redagent_check_assignment() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
        AS $$
        DECLARE
          named text;
        BEGIN
          SELECT a.reviewers ->> (CASE NEW.slot WHEN 'A' THEN 0 ELSE 1 END) INTO named FROM audit a
           WHERE a.id = NEW.audit_id;
          IF named IS DISTINCT FROM NEW.reviewer
             OR NOT EXISTS (SELECT 1 FROM audit_item WHERE id = NEW.item_id AND audit_id = NEW.audit_id)
             OR EXISTS (SELECT 1 FROM audit_assignment WHERE item_id = NEW.item_id AND slot = NEW.slot) THEN
            RAISE EXCEPTION 'assignment of item % to %: the audit names another reviewer for slot %, or the slot is '
                            'taken', NEW.item_id, NEW.reviewer, NEW.slot USING ERRCODE = '42501';
          END IF;
          RETURN NEW;
        END $$""",
    """CREATE TRIGGER redagent_assignment_slot BEFORE INSERT ON audit_assignment
       FOR EACH ROW EXECUTE FUNCTION redagent_check_assignment()""",
    f"""CREATE FUNCTION redagent_check_item() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
        AS $$
        DECLARE
          a record;
        BEGIN
          SELECT * INTO a FROM audit WHERE id = NEW.audit_id;
          IF (SELECT count(*) FROM audit_item WHERE audit_id = NEW.audit_id) >= a.n THEN
            RAISE EXCEPTION 'audit %: already has its % items', NEW.audit_id, a.n USING ERRCODE = '42501';
          END IF;
          IF NOT EXISTS (SELECT 1 FROM judge_label jl WHERE jl.rollout_id = NEW.rollout_id
                         AND jl.config_hash = a.config_hash AND jl.backbone = a.backbone AND jl.status = 'ok'
                         AND jl.label = NEW.judge_label) THEN
            RAISE EXCEPTION 'audit %: item % does not carry the stored judge label', NEW.audit_id, NEW.rollout_id
              USING ERRCODE = '42501';
          END IF;
          RETURN NEW;
        END $$""",
    """CREATE TRIGGER redagent_item_judge_label BEFORE INSERT ON audit_item
       FOR EACH ROW EXECUTE FUNCTION redagent_check_item()""",
]


def _pg_views() -> list[str]:
    statements = []
    for view in BLIND:
        statements.append(f"""CREATE VIEW {view} WITH (security_barrier) AS
            SELECT * FROM redagent_{view}() WHERE NOT redagent_analyst()
            UNION ALL SELECT * FROM {view}_base WHERE redagent_analyst()""")
    for view, (select, _mine) in _PG_OWN_BASE.items():
        whole = _SQLITE_OWN[view] if view == "my_round" else select  # analysts see every expert of a round
        statements.append(f"""CREATE VIEW {view} WITH (security_barrier) AS
            SELECT * FROM redagent_{view}() WHERE NOT redagent_analyst()
            UNION ALL {whole} WHERE redagent_analyst()""")
    return statements


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        for view, select in _SQLITE_OWN.items():
            op.execute(f"CREATE VIEW {view} AS {select}")
        return
    bind = op.get_bind()
    # Members' old grants (tables, sequences, the views about to become internal) go now, in this
    # transaction; opening the store re-grants each login what its role has at this revision.
    for (login,) in bind.exec_driver_sql("SELECT login FROM team_member WHERE login IS NOT NULL").all():
        quoted = '"' + login.replace('"', '""') + '"'
        if bind.exec_driver_sql("SELECT 1 FROM pg_roles WHERE rolname = %(login)s", {"login": login}).first():
            for kind in ("TABLES", "SEQUENCES"):
                op.execute(f"REVOKE ALL ON ALL {kind} IN SCHEMA public FROM {quoted}")
    database = bind.exec_driver_sql("SELECT current_database()").scalar_one()
    op.execute(f'REVOKE TEMPORARY ON DATABASE "{database.replace(chr(34), chr(34) * 2)}" FROM PUBLIC')
    op.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    op.execute("ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC")
    for statement in _PG_FUNCTIONS:
        op.execute(statement)
    # blind_audit's adjudicator only to the adjudicator (a reviewer learnt a member's name from it).
    op.execute("""CREATE OR REPLACE VIEW blind_audit AS
        SELECT a.id, a.n, CASE WHEN (redagent_role() IS NULL OR redagent_role() = 'researcher')
                                 OR a.adjudicator = redagent_me() THEN a.adjudicator END AS adjudicator,
               a.blind_model, a.blind_attack, a.created_at FROM audit a
        WHERE (redagent_role() IS NULL OR redagent_role() = 'researcher') OR a.adjudicator = redagent_me()
           OR EXISTS (SELECT 1 FROM audit_assignment aa WHERE aa.audit_id = a.id AND aa.reviewer = redagent_me())""")
    for view in BLIND:
        op.execute(f"ALTER VIEW {view} RENAME TO {view}_base")
        op.execute(f"ALTER VIEW {view}_base SET (security_barrier = true)")
    for view, (select, mine) in _PG_OWN_BASE.items():
        op.execute(f"CREATE VIEW {view}_base WITH (security_barrier) AS {select} WHERE {mine}")
    for statement in (*_pg_read_functions(), *_PG_WRITERS, *_PG_TRIGGERS, *_pg_views()):
        op.execute(statement)
    functions = (
        bind.exec_driver_sql(
            "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'public' AND p.proname LIKE 'redagent\\_%%'"
        )
        .scalars()
        .all()
    )
    for function in functions:
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        for view in _SQLITE_OWN:
            op.execute(f"DROP VIEW IF EXISTS {view}")
        return
    for view in (*BLIND, *OWN):
        op.execute(f"DROP VIEW IF EXISTS {view}")
    for table, trigger in (
        ("adjudication", "redagent_adjudication_disputed"),
        ("audit_assignment", "redagent_assignment_slot"),
        ("audit_item", "redagent_item_judge_label"),
    ):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
    for function in (
        "redagent_check_adjudication()",
        "redagent_check_assignment()",
        "redagent_check_item()",
        *WRITERS,
        *(f"redagent_{view}()" for view in (*BLIND, *OWN)),
        "redagent_disputed(integer)",
    ):
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    for view in OWN:
        op.execute(f"DROP VIEW IF EXISTS {view}_base")
    for view in BLIND:
        op.execute(f"ALTER VIEW {view}_base RESET (security_barrier)")
        op.execute(f"ALTER VIEW {view}_base RENAME TO {view}")
    op.execute("DROP FUNCTION IF EXISTS redagent_analyst()")
    op.execute("ALTER DEFAULT PRIVILEGES GRANT EXECUTE ON FUNCTIONS TO PUBLIC")
    database = op.get_bind().exec_driver_sql("SELECT current_database()").scalar_one()
    op.execute(f'GRANT TEMPORARY ON DATABASE "{database.replace(chr(34), chr(34) * 2)}" TO PUBLIC')
