"""open_store's refusals: each one line naming the URL (password masked) and the reason, never a traceback."""

from __future__ import annotations

import os
import socket

import pytest

from redagent.store import StoreError, open_store
from redagent.store.connect import DEFAULT_URL, resolve_url


def _refusal(url: str) -> str:
    with pytest.raises(StoreError) as caught:
        open_store(url)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_malformed_url():
    # Anything without "scheme://" is a path now (below); a URL that is broken is still refused as one.
    assert _refusal("://no-scheme") == (
        "cannot open store ://no-scheme: malformed database URL (expected a file path, sqlite:///path/to/file.db, "
        "pg:SERVICE (a pg_service.conf entry) or postgresql+psycopg://user@host:port/database (the password from "
        "~/.pgpass or $PGPASSFILE))"
    )


def test_a_plain_path_is_a_sqlite_store(tmp_path):
    path = tmp_path / "plain.db"
    with open_store(str(path)) as store:
        assert store.url == f"sqlite:///{path}"
    assert path.exists()
    assert resolve_url("relative/store.db") == "sqlite:///relative/store.db"


def test_a_foreign_sqlite_database_is_refused_and_left_untouched(tmp_path):
    import sqlite3

    path = tmp_path / "theirs.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    content, stat = path.read_bytes(), path.stat()
    message = _refusal(str(path))
    assert message == (
        f"cannot open store sqlite:///{path}: {path} is a SQLite database of something else "
        "(no alembic_version table, 1 other table): left untouched"
    )
    assert path.read_bytes() == content and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.db"]  # no -wal, no -shm


def test_a_missing_store_is_created_only_when_asked(tmp_path):
    path = tmp_path / "missing" / "store.db"
    with pytest.raises(StoreError) as caught:
        open_store(str(path), create=False)
    assert str(caught.value) == (
        f"cannot open store sqlite:///{path}: no store at {path} (a command that writes, "
        "such as `redagent run`, creates it)"
    )
    assert not path.parent.exists()  # not even the folder
    with open_store(str(path), create=True):
        pass
    with open_store(str(path), create=False):
        pass


def test_malformed_url_still_masks_its_password():
    message = _refusal("postgresql+psycopg://ana:s3cret@db.example:notaport/x")
    assert "s3cret" not in message
    assert message.startswith("cannot open store postgresql+psycopg://ana:***@db.example:notaport/x: malformed")


def test_unknown_driver():
    assert _refusal("mysql+pymysql://ana:s3cret@127.0.0.1/redagent") == (
        "cannot open store mysql+pymysql://ana:***@127.0.0.1/redagent: unknown database driver 'mysql+pymysql' "
        "(supported: sqlite, postgresql+psycopg)"
    )


def test_unreachable_postgresql():
    # A loopback port nobody listens on: bind one, note it, release it.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert _refusal(f"postgresql+psycopg://redagent:s3cret@127.0.0.1:{port}/postgres") == (
        f"cannot open store postgresql+psycopg://redagent:***@127.0.0.1:{port}/postgres: "
        f"connection refused by 127.0.0.1:{port} (is PostgreSQL running there?)"
    )


def test_a_file_that_is_not_a_database_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "notes.db"
    content = b"these are my notes, not a database\n" * 200
    path.write_bytes(content)
    stat = path.stat()
    assert _refusal(f"sqlite:///{path}") == (
        f"cannot open store sqlite:///{path}: {path} is not a SQLite database (left untouched)"
    )
    assert path.read_bytes() == content
    assert path.stat().st_mtime_ns == stat.st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_a_damaged_database_is_refused(tmp_path):
    path = tmp_path / "damaged.db"
    # A valid SQLite header followed by garbage: passes the header check, fails in SQLite.
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)
    message = _refusal(f"sqlite:///{path}")
    assert message.startswith(f"cannot open store sqlite:///{path}: ")


def test_a_directory_is_refused(tmp_path):
    assert _refusal(f"sqlite:///{tmp_path}") == (
        f"cannot open store sqlite:///{tmp_path}: {tmp_path} is a directory, not a database file"
    )


def test_in_memory_sqlite_is_refused():
    assert _refusal("sqlite://") == (
        "cannot open store sqlite://: an in-memory SQLite database would vanish with the process: give a file path"
    )


def test_url_resolution(monkeypatch):
    monkeypatch.delenv("REDAGENT_DB", raising=False)
    assert resolve_url(None) == DEFAULT_URL == "sqlite:///.redagent/redagent.db"
    monkeypatch.setenv("REDAGENT_DB", "sqlite:///elsewhere.db")
    assert resolve_url(None) == "sqlite:///elsewhere.db"
    assert resolve_url("sqlite:///given.db") == "sqlite:///given.db"


def test_default_store_is_created_under_dot_redagent(tmp_path, monkeypatch):
    monkeypatch.delenv("REDAGENT_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    store = open_store()
    try:
        assert store.url == DEFAULT_URL
        assert (tmp_path / ".redagent" / "redagent.db").is_file()
    finally:
        store.close()
    assert os.path.getsize(tmp_path / ".redagent" / "redagent.db") > 0
