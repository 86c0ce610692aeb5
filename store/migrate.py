"""Bring a store's schema to this code's Alembic head, in one transaction, refusing schemas from newer code.

The whole upgrade runs in a single transaction (PostgreSQL and, because SQLAlchemy emits BEGIN,
SQLite too), so a failure leaves the schema exactly as it was. Concurrent openers are serialised:
BEGIN IMMEDIATE on SQLite, a transaction-scoped advisory lock on PostgreSQL.
"""

from __future__ import annotations

import ast
import functools
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.exc import DBAPIError

import redagent.store.migrations as migrations_package
from redagent.store.connect import WRITE, describe_db_error
from redagent.store.errors import StoreError

# Alembic is imported only where a schema is migrated: every CLI start opens a store, almost always one already at
# head, and importing Alembic and reading its script directory cost ~0.2 s of each start.
if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

MIGRATIONS_DIR = Path(migrations_package.__file__).resolve().parent
# Arbitrary but fixed key for pg_advisory_xact_lock: only redagent's migrations take it.
_PG_MIGRATION_LOCK = 0x7265_6461_6765_6E74 >> 1  # "redagent", shifted into a signed bigint


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """Alembic configuration without an alembic.ini: scripts from the installed package.

    With `connection`, env.py migrates over it (and inside its transaction); otherwise over `url`.
    To write a new revision: `command.revision(alembic_config(url=...), "message", autogenerate=True)`
    against a scratch database upgraded to head.
    """
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


@functools.cache
def head_revision() -> str:
    """This code's head: the one revision no other revision names as its `down_revision`. Read from the scripts'
    module-level assignments without importing them or Alembic (tests/store/test_migrations.py holds it equal to
    Alembic's own `get_current_head`)."""
    revisions: dict[str, tuple[str, ...]] = {}
    for script in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        found = _assignments(script)
        if "revision" in found:
            down = found.get("down_revision")
            downs = down if isinstance(down, tuple) else (down,) if down else ()
            revisions[str(found["revision"])] = tuple(str(parent) for parent in downs)
    parents = {parent for downs in revisions.values() for parent in downs}
    heads = sorted(set(revisions) - parents)
    if len(heads) != 1:
        raise RuntimeError(f"{MIGRATIONS_DIR / 'versions'} has {len(heads)} heads ({', '.join(heads)}), not one")
    return heads[0]


def _assignments(script: Path) -> dict[str, object]:
    values: dict[str, object] = {}
    for node in ast.parse(script.read_text(), str(script)).body:
        target: ast.expr | None = None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id in ("revision", "down_revision") and value is not None:
            values[target.id] = ast.literal_eval(value)
    return values


def current_revisions(connection: Connection) -> tuple[str, ...]:
    """The revisions the database is stamped with (empty for a fresh database): Alembic's version table, read
    without Alembic."""
    if not inspect(connection).has_table("alembic_version"):
        return ()
    return tuple(sorted(row[0] for row in connection.execute(text("SELECT version_num FROM alembic_version"))))


_process_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def upgrade_to_head(engine: Engine, url: str) -> bool:
    """Apply pending migrations (True if any were); StoreError if the database carries a revision this
    code does not know.

    Failing migrations become StoreError; failing to connect propagates (DBAPIError) for the caller to word.
    """
    with engine.connect() as connection:
        # The common case — a store already at head — needs no write lock at all.
        if current_revisions(connection) == (head_revision(),):
            return False
    # Openers in one process queue on a lock of their own before they contend for the database's
    # write lock, so a burst of threads opening a fresh store cannot exhaust SQLite's busy timeout.
    with _locks_guard:
        lock = _process_locks.setdefault(url, threading.Lock())
    with lock:
        return _upgrade(engine, url)


def _upgrade(engine: Engine, url: str) -> bool:
    from alembic import command
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    script = ScriptDirectory.from_config(alembic_config())
    head = head_revision()
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # Table rebuilds (SQLite's batch migrations) must not fire ON DELETE actions or FK
            # checks mid-way; the pragma only takes effect outside a transaction, and the
            # integrity is checked before commit instead.
            _raw_pragma(connection, "foreign_keys=OFF")
        try:
            connection = connection.execution_options(**{WRITE: True})
            with connection.begin():
                if connection.dialect.name == "postgresql":
                    connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_MIGRATION_LOCK})")
                current = current_revisions(connection)
                unknown = [rev for rev in current if not _known(script, rev)]
                if unknown:
                    raise StoreError(
                        url,
                        f"store schema {', '.join(unknown)} is newer than this redagent "
                        f"(head {head}): upgrade redagent",
                    )
                if current == (head,):
                    return False
                try:
                    command.upgrade(alembic_config(connection), "head")
                except (CommandError, DBAPIError) as exc:
                    reason = describe_db_error(exc, url) if isinstance(exc, DBAPIError) else str(exc)
                    raise StoreError(
                        url, f"migrating the schema to {head} failed, nothing was changed: {reason}"
                    ) from exc
                if sqlite:
                    problems = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if problems:
                        raise StoreError(url, f"migration to {head} broke {len(problems)} foreign key(s); rolled back")
            return True
        finally:
            if sqlite:
                _raw_pragma(connection, "foreign_keys=ON")


def _raw_pragma(connection: Connection, pragma: str) -> None:
    # Straight to the driver (autocommit): through SQLAlchemy it would autobegin a transaction,
    # inside which SQLite ignores this pragma.
    driver = connection.connection.driver_connection
    assert driver is not None  # a live connection always has its driver's
    driver.execute(f"PRAGMA {pragma}")


def _known(script: ScriptDirectory, revision: str) -> bool:
    from alembic.util import CommandError

    try:
        return script.get_revision(revision) is not None
    except CommandError:
        return False
