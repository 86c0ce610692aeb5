"""Credentials off the command line: `--db pg:SERVICE` (a pg_service.conf section), URLs without a password
(libpq reads ~/.pgpass or $PGPASSFILE), and errors that never ask for a password in the URL."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from redagent.store import open_store
from redagent.store.access import REVIEWER
from redagent.store.connect import resolve_url
from redagent.store.errors import StoreError
from tests.store.test_team_access import pg_url, store  # noqa: F401


def test_pg_names_a_service_and_nothing_else():
    assert resolve_url("pg:audits-alice") == "postgresql+psycopg:///?service=audits-alice"
    for bad in ("pg:", "pg:a b", "pg:../x", "pg:x?sslmode=disable"):
        with pytest.raises(StoreError, match="a service name is"):
            resolve_url(bad)
    assert resolve_url("./pg:file.db").startswith("sqlite:///")


def private(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_a_member_connects_by_service_or_password_file_and_the_url_holds_no_password(
    store,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    member = store.add_member("alice", REVIEWER)
    assert member.password and member.password not in member.url and member.login in member.url
    monkeypatch.setenv("PGSERVICEFILE", str(private(tmp_path / "services", member.service_entry())))
    with open_store(f"pg:{member.service}") as theirs:
        identity = theirs.identity()
        assert (identity.name, identity.role, identity.enforced) == ("alice", REVIEWER, True)
    monkeypatch.setenv("PGPASSFILE", str(private(tmp_path / "pgpass", member.pgpass_line() + "\n")))
    with open_store(member.url) as theirs:
        assert theirs.identity().name == "alice"


def test_an_owner_on_a_service_adds_members(store, tmp_path, monkeypatch):  # noqa: F811
    """The owner's own connection may be a service too: the database comes from the server, not the URL."""
    from sqlalchemy.engine import make_url

    owner = make_url(store.url)
    monkeypatch.setenv(
        "PGSERVICEFILE",
        str(
            private(
                tmp_path / "services",
                (
                    f"[owner]\nhost={owner.host}\nport={owner.port}\ndbname={owner.database}\nuser={owner.username}\n"
                    f"password={owner.password}\n"
                ),
            )
        ),
    )
    with open_store("pg:owner") as mine:
        member = mine.add_member("bob", REVIEWER)
    assert member.database == owner.database and member.login.startswith(store.login_prefix(owner.database))


def test_a_missing_password_or_service_is_one_line_that_asks_for_no_password_in_the_url(
    store,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    member = store.add_member("carol", REVIEWER)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    monkeypatch.setenv("PGSERVICEFILE", str(private(tmp_path / "services", "[other]\nhost=127.0.0.1\n")))
    with pytest.raises(StoreError) as missing:
        open_store(member.url)
    message = str(missing.value)
    assert "\n" not in message and "pg_service" in message and "~/.pgpass" in message and "not in the URL" in message
    with pytest.raises(StoreError) as unknown:
        open_store("pg:nosuch")
    assert "service nosuch is in no pg_service file" in str(unknown.value)


def test_team_add_writes_the_connection_to_a_private_file_and_prints_no_password(store, tmp_path):  # noqa: F811
    env = {"COLUMNS": "200", "PATH": "/usr/bin:/bin"}

    def redagent(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "redagent", *args],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
            env={**env, **extra},
        )

    added = redagent("team", "add", "alice", "--role", "reviewer", "--db", store.url)
    assert added.returncode == 0, added.stderr
    written = tmp_path / "redagent-alice.pg_service.conf"
    assert oct(written.stat().st_mode & 0o777) == "0o600"
    password = next(line.split("=", 1)[1] for line in written.read_text().splitlines() if line.startswith("password="))
    assert password not in added.stdout + added.stderr and "--db pg:" in added.stdout
    again = redagent(
        "team",
        "add",
        "bob",
        "--role",
        "reviewer",
        "--json",
        "--format",
        "pgpass",
        "--out",
        str(tmp_path / "bob.pgpass"),
        "--db",
        store.url,
    )
    shown = json.loads(again.stdout)
    assert shown["db"].startswith("postgresql+psycopg://ra_") and ":" not in shown["db"].split("//")[1].split("@")[0]
    assert oct(os.stat(shown["connection_file"]).st_mode & 0o777) == "0o600"
    # Connected as the member (the store answers that there is no such audit, which needs a connection).
    status = redagent("audit", "status", "nosuch", "--db", shown["db"], PGPASSFILE=shown["connection_file"])
    assert status.returncode == 2 and "nosuch" in status.stderr and "password" not in status.stderr, status.stderr
    service = json.loads(redagent("team", "add", "carol", "--role", "reviewer", "--json", "--db", store.url).stdout)
    whoami = redagent("audit", "status", "nosuch", "--db", service["db"], PGSERVICEFILE=service["connection_file"])
    assert whoami.returncode == 2 and "nosuch" in whoami.stderr and "service" not in whoami.stderr, whoami.stderr
    taken = redagent("team", "add", "dave", "--role", "reviewer", "--out", str(written), "--db", store.url)
    assert taken.returncode == 2 and taken.stderr.count("\n") == 1 and "File exists" in taken.stderr


def test_team_add_sends_the_server_a_verifier_never_the_password(store):  # noqa: F811
    """Every statement (and parameter) the owner's connection sends while adding a member: none holds the member's
    password, so neither statement logs nor pg_stat_statements (which keeps a utility statement's text) can; the
    role gets libpq's SCRAM-SHA-256 verifier, and the password still opens it."""
    from sqlalchemy import event

    sent: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        sent.append(f"{statement} {parameters!r}")

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        member = store.add_member("alice", REVIEWER)
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    created = [statement for statement in sent if "CREATE ROLE" in statement]
    assert len(created) == 1 and "SCRAM-SHA-256$4096:" in created[0], created
    assert not [statement for statement in sent if member.password in statement]
    with open_store(member.secret_url) as theirs:
        assert theirs.identity().name == "alice"


def test_team_add_works_whatever_extensions_live_in_schema_public(store):  # noqa: F811
    """A server whose schema public holds someone else's objects — an extension such as pg_stat_statements,
    whose reset function PUBLIC may not execute, and pgcrypto where it is installed — still adds, re-grants and
    removes members of every role, and gives none of them anything of those objects."""
    import psycopg
    from psycopg import sql as pgsql

    from tests.dbs import _libpq_conninfo

    stranger = "ext_" + os.urandom(5).hex()
    with psycopg.connect(_libpq_conninfo(store.url), autocommit=True) as conn:
        # pg_stat_statements' shape, owned by another role (as an extension's objects are, by the superuser).
        ident = pgsql.Identifier(stranger)
        conn.execute(pgsql.SQL("CREATE ROLE {} NOLOGIN").format(ident))
        conn.execute(pgsql.SQL("GRANT {} TO current_user").format(ident))
        conn.execute(pgsql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(ident))
        conn.execute(pgsql.SQL("SET ROLE {}").format(ident))
        conn.execute("CREATE FUNCTION public.pg_stat_statements_reset() RETURNS void LANGUAGE sql AS 'SELECT'")
        conn.execute("REVOKE ALL ON FUNCTION public.pg_stat_statements_reset() FROM PUBLIC")
        conn.execute("CREATE VIEW public.pg_stat_statements AS SELECT 1 AS calls")
        conn.execute("CREATE TABLE public.stranger_table (a int)")
        conn.execute("REVOKE ALL ON public.stranger_table FROM PUBLIC")
        conn.execute("RESET ROLE")
        conn.execute(pgsql.SQL("REVOKE {} FROM current_user").format(ident))
        with contextlib.suppress(psycopg.Error):  # not installed on this server: the stranger's objects stand for it
            conn.execute("CREATE EXTENSION IF NOT EXISTS pgcrypto SCHEMA public")
    try:
        members = {role: store.add_member(f"m-{role}", role) for role in ("researcher", "reviewer", "adjudicator")}
        assert store.sync_grants() == len(members)
        for role, member in members.items():
            with psycopg.connect(_libpq_conninfo(member.secret_url), autocommit=True) as conn:
                held = conn.execute(
                    "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = 'public' AND c.relname = 'stranger_table' "
                    "AND has_table_privilege(c.oid, 'SELECT')"
                ).fetchone()[0]
                assert held == 0, role
        for role in members:
            store.remove_member(f"m-{role}")
    finally:
        with psycopg.connect(_libpq_conninfo(store.url), autocommit=True) as conn:
            conn.execute("DROP VIEW IF EXISTS public.pg_stat_statements")
            conn.execute("DROP FUNCTION IF EXISTS public.pg_stat_statements_reset()")
            conn.execute("DROP TABLE IF EXISTS public.stranger_table")
            conn.execute(pgsql.SQL("REVOKE CREATE ON SCHEMA public FROM {}").format(pgsql.Identifier(stranger)))
            conn.execute(pgsql.SQL("DROP ROLE {}").format(pgsql.Identifier(stranger)))
