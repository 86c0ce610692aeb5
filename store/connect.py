"""From a database URL to a configured SQLAlchemy engine (SQLite file or PostgreSQL), with errors in one line.

SQLite gets WAL, foreign keys, a 10 s busy timeout and synchronous=NORMAL on every connection, and
SQLAlchemy (not the sqlite3 module) emits BEGIN, so DDL is transactional and a writer can ask for
BEGIN IMMEDIATE. PostgreSQL goes through psycopg 3 with a 5 s connect timeout. JSON is (de)serialised
by orjson on both.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from redagent.store.errors import StoreError

# What Store._insert hands out: the dialect's own INSERT, which has ON CONFLICT (do nothing / do update).
DialectInsert = postgresql.Insert | sqlite.Insert

DEFAULT_URL = "sqlite:///.redagent/redagent.db"
EXPECTED = (
    "a file path, sqlite:///path/to/file.db, pg:SERVICE (a pg_service.conf entry) or "
    "postgresql+psycopg://user@host:port/database (the password from ~/.pgpass or $PGPASSFILE)"
)
# `pg:NAME`: a PostgreSQL connection described by a pg_service.conf section (libpq's ~/.pg_service.conf or
# $PGSERVICEFILE), so no password need be typed on a command line.
_SERVICE = re.compile(r"pg:([A-Za-z0-9][A-Za-z0-9_.-]{0,127})")
CONNECT_TIMEOUT_S = 5
BUSY_TIMEOUT_MS = 10_000
SQLITE_HEADER = b"SQLite format 3\x00"

# Execution option asking for a write transaction: on SQLite it begins with BEGIN IMMEDIATE, taking
# the write lock up front, so a transaction that reads before it writes cannot fail half-way with
# SQLITE_BUSY when another connection committed in between.
WRITE = "redagent_write"

_SQLITE_DRIVERS = ("sqlite", "sqlite+pysqlite")
# A bare postgresql:// (or Heroku-style postgres://) would mean psycopg2, which is not installed.
_POSTGRES_DRIVERS = ("postgresql", "postgres", "postgresql+psycopg")


def resolve_url(url: str | None) -> str:
    """The URL given, else $REDAGENT_DB, else the default SQLite file under ./.redagent/.

    A value without a scheme (`store.db`, `~/stores/a.db`) is a SQLite file path: people type paths.
    `pg:NAME` is the PostgreSQL connection of pg_service entry NAME (`postgresql+psycopg:///?service=NAME`).
    A PostgreSQL URL need not carry a password: libpq then reads it from $PGPASSWORD, $PGPASSFILE or ~/.pgpass.
    """
    value = url or os.environ.get("REDAGENT_DB") or DEFAULT_URL
    service = _SERVICE.fullmatch(value)
    if service:
        return f"postgresql+psycopg:///?service={service.group(1)}"
    if value.startswith("pg:"):
        raise StoreError(
            value,
            "a service name is 1-128 letters, digits, '.', '_' or '-' (pg:NAME); a SQLite "
            "file whose name starts with pg: is ./pg:…",
        )
    if "://" not in value:
        return f"sqlite:///{Path(value).expanduser()}"
    return value


def _json_dumps(obj: Any) -> str:
    return orjson.dumps(obj).decode()


def create_store_engine(url: str, *, create: bool = True) -> Engine:
    """An engine for `url`; StoreError if the URL is malformed, the driver unsupported or the file unusable.

    Nothing is connected yet (except that a SQLite file's header and table names are read, and — only with
    `create` — a missing file and its directory are made). Without `create` a missing file is "no store at …".
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise StoreError(url, f"malformed database URL (expected {EXPECTED})") from None
    if parsed.drivername in _SQLITE_DRIVERS:
        return _sqlite_engine(url, parsed, create)
    if parsed.drivername in _POSTGRES_DRIVERS:
        return _postgres_engine(parsed.set(drivername="postgresql+psycopg"))
    raise StoreError(url, f"unknown database driver {parsed.drivername!r} (supported: sqlite, postgresql+psycopg)")


def _sqlite_engine(url: str, parsed: URL, create: bool) -> Engine:
    database = parsed.database or ""
    if database in ("", ":memory:") or parsed.query.get("mode") == "memory":
        raise StoreError(url, "an in-memory SQLite database would vanish with the process: give a file path")
    path = Path(database)
    # Only regular files: SQLite (and the header read below) would block forever opening a FIFO, read a
    # device, or fail on a folder with "disk I/O error". Its -wal, -shm and -journal files likewise.
    for name in (path, *(path.with_name(path.name + suffix) for suffix in _SIDECARS)):
        what = _file_kind(name)
        if what not in (None, "a regular file"):
            raise StoreError(url, f"{name} is {what}, not a database file")
    if path.exists():
        # Checked before SQLite touches the file, so a wrong path never gets a WAL file or a schema.
        try:
            # O_NONBLOCK: a FIFO put in the file's place since the check above must not block the open.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    raise StoreError(url, f"{path} is not a regular file, not a database file")
                header = handle.read(len(SQLITE_HEADER))
        except OSError as exc:
            raise StoreError(url, f"cannot read {path}: {exc.strerror}") from None
        if header and header != SQLITE_HEADER:
            raise StoreError(url, f"{path} is not a SQLite database (left untouched)")
        if header:
            _refuse_foreign(url, path)
    elif not create:
        raise StoreError(url, f"no store at {path} (a command that writes, such as `redagent run`, creates it)")
    else:
        try:
            _private_file(path)
        except OSError as exc:
            raise StoreError(url, f"cannot create {path}: {exc.strerror}") from None

    engine = create_engine(
        parsed,
        json_serializer=_json_dumps,
        json_deserializer=orjson.loads,
        connect_args={"timeout": BUSY_TIMEOUT_MS / 1000},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        # Let SQLAlchemy emit BEGIN (below); the sqlite3 module would skip it before DDL.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if connection.get_execution_options().get(WRITE) else "BEGIN")

    return engine


_SIDECARS = ("-wal", "-shm", "-journal")
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISREG, "a regular file"),
)


def _file_kind(path: Path) -> str | None:
    """What is at `path` (links followed) in words, or None when nothing is."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    return next((what for test, what in _KINDS if test(mode)), "not a file")


def _refuse_foreign(url: str, path: Path) -> None:
    """StoreError if the SQLite file holds tables but no alembic_version: someone else's database.

    Read through a read-only connection, before the engine's connections switch the file to WAL or a
    migration adds the project's tables to it. An empty database (no tables) is ours to fill.
    """
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError:
        return  # damaged or locked: opening it properly says why, in the usual words
    others = tables - {"alembic_version"}
    if others and "alembic_version" not in tables:
        raise StoreError(
            url,
            f"{path} is a SQLite database of something else (no alembic_version table, "
            f"{len(others)} other table{'s' if len(others) != 1 else ''}): left untouched",
        )


def _private_file(path: Path) -> None:
    """Create an empty store file readable by its owner only (0600), in a folder only they can enter (0700).

    A single-file store cannot blind anyone who can read it, so no one else may: the folder and file
    are created private before SQLite opens them (its -wal and -shm files take the file's mode).
    Folders that already exist are left as they are, except the default `.redagent/`, which is ours.
    """
    missing = [parent for parent in (path.parent, *path.parent.parents) if not parent.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)  # exist_ok: concurrent openers of a new store race here
    if path.parent.name == ".redagent" and not missing:
        path.parent.chmod(0o700)
    with contextlib.suppress(FileExistsError):  # another opener created it a moment ago, with the same mode
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def _postgres_engine(parsed: URL) -> Engine:
    return create_engine(
        parsed,
        json_serializer=_json_dumps,
        json_deserializer=orjson.loads,
        pool_pre_ping=True,
        connect_args={"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "redagent"},
    )


def _quoted_user(message: str) -> str:
    match = re.search(r'user "([^"]+)"', message)
    return match.group(1) if match else ""


def describe_db_error(exc: Exception, url: str) -> str:
    """The reason behind a driver error, as one short line (no SQL, no parameters, no hints block)."""
    orig = getattr(exc, "orig", None) or exc
    full = str(orig)
    lowered = full.lower()
    # The first line is the message; PostgreSQL's LINE/DETAIL/HINT lines follow it.
    text = " ".join(next((line for line in full.splitlines() if line.strip()), "").split())
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        parsed = None
    service = parsed.query.get("service") if parsed is not None else None
    if service:
        where = f"service {service}"
    else:
        where = f"{parsed.host or 'localhost'}:{parsed.port or 5432}" if parsed is not None else "the server"
    user = (parsed.username if parsed is not None else None) or _quoted_user(full)
    if "connection refused" in lowered:
        return f"connection refused by {where} (is PostgreSQL running there?)"
    if "timeout expired" in lowered or "timed out" in lowered:
        return f"no answer from {where} within {CONNECT_TIMEOUT_S} s"
    if "password authentication failed" in lowered:
        return f"password authentication failed for user {user!r}"
    if "no password supplied" in lowered:
        return (
            f"{where} asks a password for user {user!r} and none was found: put it in a pg_service entry "
            "(--db pg:NAME) or a password file (~/.pgpass, $PGPASSFILE), not in the URL"
        )
    if re.search(r'definition of service "[^"]*" not found|service file "[^"]*" not found', full):
        return f"{where} is in no pg_service file (~/.pg_service.conf, or the file $PGSERVICEFILE names)"
    if "failed to resolve host" in lowered or "name or service not known" in lowered:
        return f"cannot resolve host {parsed.host if parsed else ''!r}"
    match = re.search(r'database "([^"]+)" does not exist', full)
    if match:
        return f"database {match.group(1)!r} does not exist"
    if "file is not a database" in lowered:
        return "the file is not a SQLite database"
    if "unable to open database file" in lowered:
        return f"cannot open the database file {parsed.database if parsed else ''}"
    if "database is locked" in lowered:
        return f"the database is locked by another process (waited {BUSY_TIMEOUT_MS // 1000} s)"
    # Drivers prefix their own labels; keep the message after the last "FATAL:" or "failed:".
    text = re.split(r"FATAL:\s*|connection failed:\s*", text)[-1].strip()
    return text.split(" [SQL:")[0] or type(orig).__name__
