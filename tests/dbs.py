"""The `store_url` fixture: every store test runs on a fresh SQLite file and a fresh PostgreSQL database.

PostgreSQL comes from $REDAGENT_TEST_PG (a URL whose role may CREATE DATABASE and CREATE ROLE — the team
access-control tests make one login per member; .ci/run sets it up).
Without it the PostgreSQL half is skipped on a developer machine, and fails in CI (CI=true), where
both databases must be tested.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

from tests.ci import in_ci

PG_ENV = "REDAGENT_TEST_PG"


def pg_admin_url() -> str | None:
    return os.environ.get(PG_ENV) or None


def _libpq_conninfo(url: str) -> str:
    """psycopg's connection string for a SQLAlchemy URL (drops the +psycopg driver suffix)."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def require_pg() -> str:
    """The admin URL, or skip (developer machine) / fail (CI) when it is not configured."""
    url = pg_admin_url()
    if url is None:
        message = f"${PG_ENV} is not set: PostgreSQL tests need it (.ci/run sets it up)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return url


def create_database(admin_url: str) -> str:
    name = f"redagent_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_libpq_conninfo(admin_url), autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_database(admin_url: str, url: str) -> None:
    name = make_url(url).database
    with psycopg.connect(_libpq_conninfo(admin_url), autocommit=True, connect_timeout=5) as conn:
        # A test that failed half-way may have left a connection of ours open: end those. Not WITH (FORCE):
        # that also tries to end an autovacuum worker, a superuser's process the test role may not signal,
        # while a plain DROP DATABASE asks autovacuum to leave by itself.
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND usename = current_user AND pid <> pg_backend_pid()",
            (name,),
        )
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    admin = require_pg()
    url = create_database(admin)
    try:
        yield url
    finally:
        drop_database(admin, url)
