"""Migrations: the schema they create, reopening as a no-op, refusing newer schemas, all-or-nothing upgrades."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from redagent.store import StoreError, open_store
from redagent.store.errors import mask_url
from redagent.store.migrate import MIGRATIONS_DIR, current_revisions, head_revision
from redagent.store.tables import metadata
from tests.store.factory import make_rollout, make_run

TABLES = {
    "run",
    "rollout",
    "event",
    "receipt",
    "blob",
    "snapshot",
    "diff_entry",
    "judge_label",
    "recognition_label",
    "audit",
    "audit_item",
    "audit_assignment",
    "audit_label",
    "adjudication",
    "review_round",
    "round_case",
    "case_review",
    "team_member",
    "run_shard",
    "audit_closure",
    "evidence_link",
    "evidence_correction",
}
# The blinded views of migration 0005 (inspectors list them apart from tables), a member's own rows (0010) and,
# on PostgreSQL, the base views the definer functions under them read (0010).
VIEWS = {
    "blind_audit",
    "blind_queue",
    "blind_item",
    "blind_event",
    "blind_receipt",
    "blind_diff",
    "blind_slot_label",
    "own_label",
    "own_adjudication",
    "own_review",
    "my_round",
    "my_round_case",
}
PG_BASE_VIEWS = {f"{view}_base" for view in VIEWS}


def test_migrations_create_exactly_the_schema_of_the_models(store):
    with store.engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) == TABLES | {"alembic_version"}
        assert set(inspect(conn).get_view_names()) == VIEWS | (
            PG_BASE_VIEWS if conn.dialect.name == "postgresql" else set()
        )
        assert current_revisions(conn) == (head_revision(),)
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, metadata) == []


def test_schema_has_the_constraints_and_indexes_queries_rely_on(store):
    with store.engine.connect() as conn:
        inspector = inspect(conn)
        uniques = {u["name"]: u["column_names"] for u in inspector.get_unique_constraints("rollout")}
        assert uniques["uq_rollout_cell"] == ["run_id", "case_id", "model", "harness", "cue", "defense", "attempt"]
        indexes = {i["name"]: i["column_names"] for i in inspector.get_indexes("rollout")}
        assert indexes["ix_rollout_run_model_harness"] == ["run_id", "model", "harness"]
        assert indexes["ix_rollout_run_strategy"] == ["run_id", "strategy"]
        assert indexes["ix_rollout_run_constraint"] == ["run_id", "constraint"]
        assert {u["name"] for u in inspector.get_unique_constraints("event")} == {"uq_event_rollout_idx"}
        assert inspector.get_pk_constraint("snapshot")["constrained_columns"] == ["rollout_id", "kind"]
        assert [c["name"] for c in inspector.get_check_constraints("snapshot")] == ["ck_snapshot_kind"]
        fks = {fk["name"]: fk["referred_table"] for fk in inspector.get_foreign_keys("snapshot")}
        assert fks == {"fk_snapshot_rollout_id_rollout": "rollout", "fk_snapshot_blob_sha_blob": "blob"}


def test_reopening_is_a_no_op_and_keeps_the_data(store_url):
    first = open_store(store_url)
    first.create_run(make_run())
    first.write_rollouts([make_rollout()])
    first.close()
    again = open_store(store_url)
    try:
        with again.engine.connect() as conn:
            assert current_revisions(conn) == (head_revision(),)
        assert again.counts("run-1").completed == 1
    finally:
        again.close()


def test_a_schema_from_newer_code_is_refused_and_left_alone(store_url):
    open_store(store_url).close()
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    with pytest.raises(StoreError) as caught:
        open_store(store_url)
    assert str(caught.value) == (
        f"cannot open store {mask_url(store_url)}: store schema 9999_future is newer than "
        f"this redagent (head {head_revision()}): upgrade redagent"
    )
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == "9999_future"
    engine.dispose()


def test_a_failing_migration_leaves_no_half_written_schema(store_url):
    # A table in the way of the third CREATE TABLE: the two created before it must be rolled back. The empty
    # alembic_version makes it a store of ours at no revision (tables without one are refused as someone
    # else's database before any migration runs).
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)"))
        conn.execute(text("CREATE TABLE event (stranger INTEGER)"))
    with pytest.raises(StoreError) as caught:
        open_store(store_url)
    message = str(caught.value)
    assert message.startswith(
        f"cannot open store {mask_url(store_url)}: migrating the schema to "
        f"{head_revision()} failed, nothing was changed: "
    )
    assert "\n" not in message
    with engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) == {"alembic_version", "event"}
    engine.dispose()


def test_migration_scripts_are_an_installable_package():
    import redagent.store.migrations.versions as versions

    assert MIGRATIONS_DIR.joinpath("env.py").is_file()
    assert MIGRATIONS_DIR.joinpath("script.py.mako").is_file()
    assert versions.__file__ is not None
    assert head_revision() == "0016"


def test_the_head_and_the_stamp_read_without_alembic_are_alembics_own(store, tmp_path):
    """Opening a store reads the head from the scripts and the stamp from the version table, without Alembic (a
    CLI start's cost); both must be what Alembic itself reads, for a fresh database and for one at head."""
    from alembic.script import ScriptDirectory

    from redagent.store.migrate import alembic_config

    assert head_revision() == ScriptDirectory.from_config(alembic_config()).get_current_head()
    engine = create_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    with engine.connect() as conn:
        assert current_revisions(conn) == tuple(MigrationContext.configure(conn).get_current_heads()) == ()
    engine.dispose()
    with store.engine.connect() as conn:  # SQLite, and PostgreSQL where REDAGENT_TEST_PG names one
        stamped = tuple(MigrationContext.configure(conn).get_current_heads())
        assert current_revisions(conn) == stamped == (head_revision(),)
