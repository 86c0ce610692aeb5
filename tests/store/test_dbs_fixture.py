"""The PostgreSQL half of `store_url` is skipped on a developer machine but fails in CI when not configured."""

from __future__ import annotations

import pytest

from tests.dbs import PG_ENV, require_pg


def test_missing_postgresql_skips_locally(monkeypatch):
    monkeypatch.delenv(PG_ENV, raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        require_pg()


def test_missing_postgresql_fails_in_ci(monkeypatch):
    monkeypatch.delenv(PG_ENV, raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=PG_ENV):
        require_pg()


def test_configured_postgresql_is_used(monkeypatch):
    monkeypatch.setenv(PG_ENV, "postgresql+psycopg://u:p@127.0.0.1:5432/postgres")
    assert require_pg() == "postgresql+psycopg://u:p@127.0.0.1:5432/postgres"
