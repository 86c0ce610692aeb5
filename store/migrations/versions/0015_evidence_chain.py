"""Evidence that cannot change unseen: append-only records, each run's hash chain, recorded corrections.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04

Issue 34: a researcher's login could change the text of an audited rollout's events, delete its receipts and flip
its judge labels — the evidence reviewers read and the census behind the judged ASR — and nothing showed it.

- `evidence_link` (each run's chain: seq, kind, ref, digest, head) and `evidence_correction` (who, why, and the
  record as it was), both append-only; `run.evidence_head` / `run.evidence_seq`, the chain's end, which a run's
  own row may take only from its last link. store/evidence.py computes the digests; every run already in the store
  is chained here from what it holds now (rollouts by id, then labels by key).
- Append-only for every login, the owner's maintenance included: UPDATE and DELETE of a rollout, its events,
  receipts, snapshots and diff, and of judge and recognition labels go through only when a correction of that
  record was recorded in the same transaction (PostgreSQL: the correction's `txid`; SQLite: the connection's last
  insert). A member (a researcher) may record only the store's own two kinds: an invalid rollout replaced by
  `--retry-invalid`, a failed label replaced by the next attempt. Children are refused once their rollout is
  chained. Blobs, the chain, corrections, audits, their items, assignments, labels, decisions, rounds and
  reviews are never updated or deleted; a run's record only in its status, driving process and chain end.
- Audit items carry their rollout's digest when drawn (`evidence_digest`, analysts only) and a random
  `evidence_tag` that names that version to the reviewer: `blind_item` shows the tag and whether the evidence
  is still that (`evidence_intact`); a label or decision records the tag, and is refused if the evidence changed.
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What Python's str.strip() removes (as 0012).
WHITESPACE = "".join(
    chr(code)
    for code in (
        *range(0x09, 0x0E),
        *range(0x1C, 0x21),
        0x85,
        0xA0,
        0x1680,
        *range(0x2000, 0x200B),
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
    )
)
# A record changes only through a correction of it (or of its rollout) in the same transaction.
CORRECTED = ("rollout", "event", "receipt", "snapshot", "diff_entry", "judge_label", "recognition_label")
# Never changed once written.
FIXED = (
    "blob",
    "evidence_link",
    "evidence_correction",
    "audit",
    "audit_item",
    "audit_assignment",
    "audit_label",
    "adjudication",
    "review_round",
    "round_case",
    "case_review",
)
CHILDREN = ("event", "receipt", "snapshot", "diff_entry")
LABELLED = ("audit_label", "adjudication")  # record the evidence version they were made on
RUN_FIXED = (
    "id",
    "protocol",
    "case_set_hash",
    "manifest_hash",
    "code_version",
    "planned",
    "parent_run_id",
    "created_at",
)
_TRIGGER = "SECURITY DEFINER SET search_path = public, pg_temp"
_LATEST = (
    "(SELECT l.{what} FROM evidence_link l WHERE l.ref = {ref} AND l.kind IN ('rollout', 'correction') "
    "ORDER BY l.seq DESC LIMIT 1)"
)
# blind_item as 0009 made it (the alias for the case id), and the evidence version it shows now.
_BLIND_ITEM = """SELECT ai.audit_id, ai.id AS item_id, a.blind_model, a.blind_attack, ai.alias, r."constraint",
           r.surfaces, r.harness, r.cue, r.defense,
           CASE WHEN a.blind_model THEN NULL ELSE r.model END AS model,
           CASE WHEN a.blind_attack THEN NULL ELSE r.strategy END AS strategy,
           CASE WHEN a.blind_attack THEN NULL ELSE r.vulnerability END AS vulnerability,
           CASE WHEN a.blind_attack THEN NULL ELSE r.channel END AS channel{evidence}
    FROM audit_item ai JOIN audit a ON a.id = ai.audit_id JOIN rollout r ON r.id = ai.rollout_id
    WHERE {analyst} OR a.adjudicator = {me}
       OR EXISTS (SELECT 1 FROM audit_assignment aa WHERE aa.item_id = ai.id AND aa.reviewer = {me})"""
_EVIDENCE = f""",
           ai.evidence_tag,
           (ai.evidence_digest IS NULL OR ai.evidence_digest = {_LATEST.format(what="digest", ref="ai.rollout_id")})
             AS evidence_intact"""
_PG_WHO = {"analyst": "(redagent_role() IS NULL OR redagent_role() = 'researcher')", "me": "redagent_me()"}
_SQLITE_WHO = {"analyst": "1 = 1", "me": "NULL"}


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _add_columns() -> None:
    op.add_column("run", sa.Column("evidence_head", sa.Text(), nullable=True))
    op.add_column("run", sa.Column("evidence_seq", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("audit_item", sa.Column("evidence_digest", sa.Text(), nullable=True))
    op.add_column("audit_item", sa.Column("evidence_tag", sa.Text(), nullable=True))
    for table in LABELLED:
        op.add_column(table, sa.Column("evidence_tag", sa.Text(), nullable=True))
    json = sa.JSON(none_as_null=True).with_variant(sa.Text(), "sqlite")
    op.create_table(
        "evidence_link",
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("ref", sa.Text(), nullable=False),
        sa.Column("digest", sa.Text(), nullable=False),
        sa.Column("parts", json, nullable=True),
        sa.Column("head", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind IN ('rollout', 'judge_label', 'recognition_label', 'correction')", name=op.f("ck_evidence_link_kind")
        ),
        sa.CheckConstraint("seq >= 1", name=op.f("ck_evidence_link_seq")),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_evidence_link_run_id_run")),
        sa.PrimaryKeyConstraint("run_id", "seq", name=op.f("pk_evidence_link")),
    )
    op.create_index("ix_evidence_link_ref_seq", "evidence_link", ["ref", "seq"])
    op.create_table(
        "evidence_correction",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("ref", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("made_by", sa.Text(), nullable=False),
        sa.Column("prior", json, nullable=False),
        sa.Column("prior_digest", sa.Text(), nullable=False),
        sa.Column("txid", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind IN ('rollout', 'judge_label', 'recognition_label')", name=op.f("ck_evidence_correction_kind")
        ),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name=op.f("fk_evidence_correction_run_id_run")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evidence_correction")),
    )
    op.create_index("ix_evidence_correction_ref", "evidence_correction", ["ref"])


def _chain_what_is_there() -> None:
    """Every run's records linked as they are now; every audit item given its evidence version."""
    from redagent.store import evidence

    bind = op.get_bind()
    evidence.seal_unchained(bind)
    items = sa.table(
        "audit_item",
        sa.column("id", sa.Integer()),
        sa.column("rollout_id", sa.Text()),
        sa.column("evidence_digest", sa.Text()),
        sa.column("evidence_tag", sa.Text()),
    )
    latest = sa.text(_LATEST.format(what="digest", ref=":ref").strip()[1:-1])
    for item_id, rollout_id in bind.execute(sa.select(items.c.id, items.c.rollout_id).order_by(items.c.id)).all():
        current = bind.execute(latest, {"ref": rollout_id}).scalar()
        bind.execute(
            items.update()
            .where(items.c.id == item_id)
            .values(evidence_digest=current, evidence_tag=f"ev-{secrets.token_hex(4)}")
        )


# ---------------------------------------------------------------- PostgreSQL


def _pg_statements() -> list[str]:
    blank = _literal(WHITESPACE)
    refs = """
      IF TG_TABLE_NAME = 'rollout' THEN the_rollout := OLD.id; the_ref := OLD.id;
      ELSIF TG_TABLE_NAME = 'judge_label' THEN
        the_rollout := OLD.rollout_id; the_ref := OLD.rollout_id || '|' || OLD.config_hash || '|' || OLD.backbone;
      ELSIF TG_TABLE_NAME = 'recognition_label' THEN
        the_rollout := OLD.rollout_id; the_ref := OLD.rollout_id || '|' || OLD.judge || '|' || OLD.contract_hash;
      ELSE the_rollout := OLD.rollout_id; the_ref := OLD.rollout_id;
      END IF;"""
    statements = [
        f"""CREATE FUNCTION redagent_corrected_only() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
            AS $$
            DECLARE
              the_rollout text;
              the_ref text;
            BEGIN{refs}
              IF EXISTS (SELECT 1 FROM evidence_correction c WHERE c.txid = txid_current()
                         AND c.ref IN (the_ref, the_rollout)) THEN
                RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
              END IF;
              RAISE EXCEPTION 'redagent: % is append-only: a record changes only through a recorded correction',
                TG_TABLE_NAME USING ERRCODE = '42501';
            END $$""",
        f"""CREATE FUNCTION redagent_unsealed_only() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
            AS $$
            BEGIN
              IF {_LATEST.format(what="kind", ref="NEW.rollout_id")} = 'rollout' THEN
                RAISE EXCEPTION 'redagent: rollout % is chained: nothing is added to it', NEW.rollout_id
                  USING ERRCODE = '42501';
              END IF;
              RETURN NEW;
            END $$""",
        f"""CREATE FUNCTION redagent_check_correction() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
            AS $$
            BEGIN
              NEW.txid := txid_current();
              IF btrim(NEW.reason, {blank}) = '' THEN
                RAISE EXCEPTION 'redagent: a correction needs a reason' USING ERRCODE = '23514';
              END IF;
              -- A member (a researcher) records only the store's own corrections: an invalid rollout replaced,
              -- a failed label replaced. Anything else is the owner's.
              IF redagent_role() IS NOT NULL AND (
                   (NEW.kind = 'rollout' AND EXISTS (SELECT 1 FROM rollout WHERE id = NEW.ref AND valid))
                OR (NEW.kind = 'judge_label' AND EXISTS (SELECT 1 FROM judge_label
                    WHERE rollout_id || '|' || config_hash || '|' || backbone = NEW.ref AND status = 'ok'))
                OR (NEW.kind = 'recognition_label' AND EXISTS (SELECT 1 FROM recognition_label
                    WHERE rollout_id || '|' || judge || '|' || contract_hash = NEW.ref AND status = 'ok'))) THEN
                RAISE EXCEPTION 'redagent: only the store''s owner corrects a valid rollout or an ok label'
                  USING ERRCODE = '42501';
              END IF;
              RETURN NEW;
            END $$""",
        f"""CREATE FUNCTION redagent_check_run() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
            AS $$
            BEGIN
              IF TG_OP = 'DELETE' THEN
                RAISE EXCEPTION 'redagent: a run is never deleted' USING ERRCODE = '42501';
              END IF;
              IF {" OR ".join(f"NEW.{c}::text IS DISTINCT FROM OLD.{c}::text" for c in RUN_FIXED)} THEN
                RAISE EXCEPTION 'redagent: a run''s record changes only in its status, process and chain end'
                  USING ERRCODE = '42501';
              END IF;
              IF (NEW.evidence_seq, NEW.evidence_head) IS DISTINCT FROM (OLD.evidence_seq, OLD.evidence_head)
                 AND NOT (NEW.evidence_seq = 0 AND OLD.evidence_head IS NULL AND NEW.evidence_head IS NOT NULL)
                 AND NOT EXISTS (SELECT 1 FROM evidence_link l WHERE l.run_id = NEW.id AND l.seq = NEW.evidence_seq
                                 AND l.head = NEW.evidence_head)
                 OR EXISTS (SELECT 1 FROM evidence_link l WHERE l.run_id = NEW.id AND l.seq > NEW.evidence_seq) THEN
                RAISE EXCEPTION 'redagent: run %: its chain ends only at its last link', NEW.id USING ERRCODE = '42501';
              END IF;
              RETURN NEW;
            END $$""",
        f"""CREATE FUNCTION redagent_label_evidence() RETURNS trigger LANGUAGE plpgsql {_TRIGGER}
            AS $$
            DECLARE
              item record;
            BEGIN
              SELECT ai.evidence_tag, ai.evidence_digest, ai.rollout_id INTO item FROM audit_item ai
               WHERE ai.id = NEW.item_id;
              NEW.evidence_tag := item.evidence_tag;
              IF item.evidence_digest IS NOT NULL
                 AND item.evidence_digest IS DISTINCT FROM {_LATEST.format(what="digest", ref="item.rollout_id")} THEN
                RAISE EXCEPTION 'redagent: the evidence of item % changed after the audit was drawn: nothing is '
                                'labelled on it (the owner draws the audit again)', NEW.item_id USING ERRCODE = '23514';
              END IF;
              RETURN NEW;
            END $$""",
        "CREATE TRIGGER redagent_run_record BEFORE UPDATE OR DELETE ON run FOR EACH ROW "
        "EXECUTE FUNCTION redagent_check_run()",
        "CREATE TRIGGER redagent_run_no_truncate BEFORE TRUNCATE ON run FOR EACH STATEMENT "
        "EXECUTE FUNCTION redagent_append_only()",
        "CREATE TRIGGER redagent_evidence_correction_check BEFORE INSERT ON evidence_correction FOR EACH ROW "
        "EXECUTE FUNCTION redagent_check_correction()",
    ]
    for table in CORRECTED:
        statements.append(
            f"CREATE TRIGGER redagent_{table}_corrected_only BEFORE UPDATE OR DELETE ON {table} FOR EACH ROW "
            "EXECUTE FUNCTION redagent_corrected_only()"
        )
    for table in FIXED:
        statements.append(
            f"CREATE TRIGGER redagent_{table}_append_only BEFORE UPDATE OR DELETE ON {table} FOR EACH ROW "
            "EXECUTE FUNCTION redagent_append_only()"
        )
    for table in (*CORRECTED, *FIXED):
        statements.append(
            f"CREATE TRIGGER redagent_{table}_no_truncate BEFORE TRUNCATE ON {table} FOR EACH STATEMENT "
            "EXECUTE FUNCTION redagent_append_only()"
        )
    for table in CHILDREN:
        statements.append(
            f"CREATE TRIGGER redagent_{table}_unsealed BEFORE INSERT ON {table} FOR EACH ROW "
            "EXECUTE FUNCTION redagent_unsealed_only()"
        )
    for table in LABELLED:
        statements.append(
            f"CREATE TRIGGER redagent_{table}_evidence BEFORE INSERT ON {table} FOR EACH ROW "
            "EXECUTE FUNCTION redagent_label_evidence()"
        )
    # blind_item shows the evidence version: the base view gains two columns at its end, and the views over it
    # (the member's over the definer function, the analysts' over the base) are made again to show them.
    statements += [
        "CREATE OR REPLACE VIEW blind_item_base WITH (security_barrier) AS "
        + _BLIND_ITEM.format(evidence=_EVIDENCE, **_PG_WHO),
        "CREATE OR REPLACE VIEW public.blind_item WITH (security_barrier) AS SELECT * FROM redagent_blind_item()",
        "CREATE OR REPLACE VIEW redagent_analyst.blind_item AS SELECT * FROM public.blind_item_base",
    ]
    return statements


_PG_FUNCTIONS = (
    "redagent_corrected_only()",
    "redagent_unsealed_only()",
    "redagent_check_correction()",
    "redagent_check_run()",
    "redagent_label_evidence()",
)


# ---------------------------------------------------------------- SQLite


def _sqlite_statements() -> list[str]:
    blank = _literal(WHITESPACE)
    corrected = (
        "NOT EXISTS (SELECT 1 FROM evidence_correction c WHERE c.id = last_insert_rowid() AND c.ref IN ({refs}))"
    )
    refs = {
        "rollout": "OLD.id",
        "judge_label": "OLD.rollout_id || '|' || OLD.config_hash || '|' || OLD.backbone, OLD.rollout_id",
        "recognition_label": "OLD.rollout_id || '|' || OLD.judge || '|' || OLD.contract_hash, OLD.rollout_id",
    }
    statements = []
    for table in CORRECTED:
        for event in ("UPDATE", "DELETE"):
            statements.append(f"""CREATE TRIGGER redagent_{table}_corrected_only_{event.lower()}
                BEFORE {event} ON {table}
                WHEN {corrected.format(refs=refs.get(table, "OLD.rollout_id"))}
                BEGIN SELECT RAISE(ABORT, 'redagent: {table} is append-only: a record changes only through a recorded
                correction'); END""")
    for table in FIXED:
        for event in ("UPDATE", "DELETE"):
            statements.append(f"""CREATE TRIGGER redagent_{table}_append_only_{event.lower()} BEFORE {event} ON {table}
                BEGIN SELECT RAISE(ABORT, 'redagent: {table} is append-only'); END""")
    for table in CHILDREN:
        statements.append(f"""CREATE TRIGGER redagent_{table}_unsealed BEFORE INSERT ON {table}
            WHEN {_LATEST.format(what="kind", ref="NEW.rollout_id")} = 'rollout'
            BEGIN SELECT RAISE(ABORT, 'redagent: the rollout is chained: nothing is added to it'); END""")
    fixed = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in RUN_FIXED)
    statements += [
        f"""CREATE TRIGGER redagent_run_record BEFORE UPDATE ON run
            WHEN {fixed}
              OR ((NEW.evidence_seq IS NOT OLD.evidence_seq OR NEW.evidence_head IS NOT OLD.evidence_head)
                  AND NOT (NEW.evidence_seq = 0 AND OLD.evidence_head IS NULL AND NEW.evidence_head IS NOT NULL)
                  AND NOT EXISTS (SELECT 1 FROM evidence_link l WHERE l.run_id = NEW.id AND l.seq = NEW.evidence_seq
                                  AND l.head = NEW.evidence_head))
              OR EXISTS (SELECT 1 FROM evidence_link l WHERE l.run_id = NEW.id AND l.seq > NEW.evidence_seq)
            BEGIN SELECT RAISE(ABORT, 'redagent: a run''s record changes only in its status, process and chain end');
            END""",
        """CREATE TRIGGER redagent_run_never_deleted BEFORE DELETE ON run
            BEGIN SELECT RAISE(ABORT, 'redagent: a run is never deleted'); END""",
        f"""CREATE TRIGGER redagent_evidence_correction_reason BEFORE INSERT ON evidence_correction
            WHEN trim(NEW.reason, {blank}) = ''
            BEGIN SELECT RAISE(ABORT, 'redagent: a correction needs a reason'); END""",
    ]
    for table in LABELLED:
        statements.append(f"""CREATE TRIGGER redagent_{table}_evidence BEFORE INSERT ON {table}
            WHEN NEW.evidence_tag IS NOT (SELECT ai.evidence_tag FROM audit_item ai WHERE ai.id = NEW.item_id)
              OR NOT (SELECT ai.evidence_digest IS NULL
                             OR ai.evidence_digest IS {_LATEST.format(what="digest", ref="ai.rollout_id")}
                      FROM audit_item ai WHERE ai.id = NEW.item_id)
            BEGIN SELECT RAISE(ABORT, 'redagent: the evidence of the item changed after the audit was drawn (or the
            label names another version): nothing is labelled on it'); END""")
    statements += [
        "DROP VIEW blind_item",
        "CREATE VIEW blind_item AS " + _BLIND_ITEM.format(evidence=_EVIDENCE, **_SQLITE_WHO),
    ]
    return statements


def upgrade() -> None:
    _add_columns()
    _chain_what_is_there()
    pg = op.get_bind().dialect.name == "postgresql"
    for statement in _pg_statements() if pg else _sqlite_statements():
        op.execute(statement)
    if pg:
        for function in _PG_FUNCTIONS:
            op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")


def _sqlite_triggers() -> list[str]:
    names = [f"redagent_{t}_corrected_only_{e}" for t in CORRECTED for e in ("update", "delete")]
    names += [f"redagent_{t}_append_only_{e}" for t in FIXED for e in ("update", "delete")]
    names += [f"redagent_{t}_unsealed" for t in CHILDREN] + [f"redagent_{t}_evidence" for t in LABELLED]
    return names + ["redagent_run_record", "redagent_run_never_deleted", "redagent_evidence_correction_reason"]


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        for name in _sqlite_triggers():
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP VIEW blind_item")
        op.execute("CREATE VIEW blind_item AS " + _BLIND_ITEM.format(evidence="", **_SQLITE_WHO))
    else:
        for function in _PG_FUNCTIONS:
            op.execute(f"DROP FUNCTION IF EXISTS {function} CASCADE")  # their triggers with them
        for table in (*CORRECTED, *FIXED, "run"):
            op.execute(f"DROP TRIGGER IF EXISTS redagent_{table}_no_truncate ON {table}")
        for table in FIXED:
            op.execute(f"DROP TRIGGER IF EXISTS redagent_{table}_append_only ON {table}")
        # A view cannot lose a column: blind_item_base goes (and with it what is built on it: the other base views,
        # the definer functions returning them, the member's and the analysts' views) and is made again as 0014 had
        # it. Members' grants on the views go with them; opening the store gives them again.
        built_on = ("blind_event", "blind_receipt", "blind_diff")
        texts = {
            name: bind.exec_driver_sql(f"SELECT pg_get_viewdef('{name}_base'::regclass)").scalar() for name in built_on
        }
        op.execute("DROP VIEW blind_item_base CASCADE")
        op.execute(
            "CREATE VIEW blind_item_base WITH (security_barrier) AS " + _BLIND_ITEM.format(evidence="", **_PG_WHO)
        )
        for name, text in texts.items():
            op.execute(f"CREATE VIEW {name}_base WITH (security_barrier) AS {text}")
        stable = "STABLE SECURITY DEFINER SET search_path = public, pg_temp"
        for name in ("blind_item", *built_on):
            op.execute(
                f"CREATE OR REPLACE FUNCTION redagent_{name}() RETURNS SETOF {name}_base LANGUAGE sql {stable} "
                f"ROWS 100 AS $$ SELECT * FROM {name}_base $$"
            )
            op.execute(f"REVOKE ALL ON FUNCTION redagent_{name}() FROM PUBLIC")
            op.execute(
                f"CREATE OR REPLACE VIEW public.{name} WITH (security_barrier) AS SELECT * FROM redagent_{name}()"
            )
            op.execute(f"CREATE OR REPLACE VIEW redagent_analyst.{name} AS SELECT * FROM public.{name}_base")
    op.drop_index("ix_evidence_correction_ref", table_name="evidence_correction")
    op.drop_table("evidence_correction")
    op.drop_index("ix_evidence_link_ref_seq", table_name="evidence_link")
    op.drop_table("evidence_link")
    for table in LABELLED:
        op.drop_column(table, "evidence_tag")
    op.drop_column("audit_item", "evidence_tag")
    op.drop_column("audit_item", "evidence_digest")
    op.drop_column("run", "evidence_seq")
    op.drop_column("run", "evidence_head")
