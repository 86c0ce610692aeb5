"""Who is using the store, and the team of a PostgreSQL store: logins, roles, grants, console tokens.

A SQLite store is one file: whoever can read it can read everything, so its user is the *owner* and
nothing is blinded against them (the file is kept 0600 in a 0700 folder so other local users
cannot). A PostgreSQL store can hold a team: `add_member` creates one login per person and grants
it only what its role needs — reviewers and adjudicators the blinded views of their own audits and
inserting their own labels (row-level security, migration 0005), experts their own case reviews,
researchers everything but the team itself. The database then enforces the blinding; the command
line and the console take the role from the login (`identity`), never from a flag.

Exposed as methods of `Store` (this module's `AccessQueries` is one of its mixins).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from redagent.store import tables_team as tt
from redagent.store.errors import InvalidRecord, StoreError

OWNER = "owner"
RESEARCHER, REVIEWER, ADJUDICATOR, EXPERT = tt.TEAM_ROLES
# Roles that see unblinded data: the owner (who set the store up) and researchers.
ANALYSTS = (OWNER, RESEARCHER)
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,39}")

_BLIND_VIEWS = ("blind_audit", "blind_queue", "blind_item", "blind_event", "blind_receipt", "blind_diff")
_FUNCTIONS = ("redagent_me()", "redagent_role()", "redagent_adjudicates(integer)")
# What each role's login is granted (beyond connecting, the schema, the migration stamp, the functions).
_GRANTS: dict[str, list[str]] = {
    REVIEWER: [f"SELECT ON {view}" for view in _BLIND_VIEWS]
    + ["SELECT, INSERT ON audit_label", "USAGE ON SEQUENCE audit_label_id_seq"],
    ADJUDICATOR: [f"SELECT ON {view}" for view in (*_BLIND_VIEWS, "blind_slot_label")]
    + ["SELECT, INSERT ON adjudication", "USAGE ON SEQUENCE adjudication_id_seq"],
    EXPERT: ["SELECT ON review_round", "SELECT ON round_case", "SELECT, INSERT ON case_review",
             "USAGE ON SEQUENCE case_review_id_seq"],
    RESEARCHER: ["SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public",
                 "USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public"],
}


@dataclass(frozen=True)
class Identity:
    """The user of an opened store. `enforced`: the database itself holds them to their role."""

    role: str
    name: str | None = None
    login: str | None = None
    enforced: bool = False

    @property
    def analyst(self) -> bool:
        return self.role in ANALYSTS

    def describe(self) -> str:
        who = f"{self.name} ({self.role})" if self.name else self.role
        return f"{who}, login {self.login}" if self.login else who


@dataclass(frozen=True)
class NewMember:
    """What `add_member` hands out once: the member's connection URL (PostgreSQL) and console token."""

    name: str
    role: str
    login: str | None
    url: str | None
    token: str


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidRecord(f"team member name {name!r}: 1-40 letters, digits, '.', '_' or '-', starting with a "
                            "letter")
    return name


def check_role(role: object) -> str:
    if role not in tt.TEAM_ROLES:
        raise InvalidRecord(f"unknown role {role!r} (known: {', '.join(tt.TEAM_ROLES)})")
    return str(role)


class AccessQueries:
    """Store methods for identity and the team (mixed into `Store`, which provides the plumbing)."""

    if TYPE_CHECKING:
        url: str
        engine: Any
        _reading: Callable[[], AbstractContextManager[Connection]]
        _writing: Callable[[], AbstractContextManager[Connection]]

    _identity: Identity | None = None

    @property
    def dialect(self) -> str:
        return str(self.engine.dialect.name)

    def identity(self) -> Identity:
        """Who this connection is. SQLite: the owner. PostgreSQL: the team member its login belongs to, or
        the owner when the login is no member but can read the runs; StoreError for a login that is neither."""
        if self._identity is not None:
            return self._identity
        if self.dialect != "postgresql":
            self._identity = Identity(OWNER)
            return self._identity
        with self._reading() as conn:
            login = conn.exec_driver_sql("SELECT current_user").scalar_one()
            try:
                with conn.begin_nested():
                    name, role = conn.exec_driver_sql("SELECT redagent_me(), redagent_role()").one()
            except DBAPIError:  # no EXECUTE on the functions: not a member of this store's team
                name, role = None, None
            if role is not None:
                self._identity = Identity(role, name, login, enforced=True)
            elif conn.exec_driver_sql("SELECT has_table_privilege('rollout', 'SELECT')").scalar_one():
                self._identity = Identity(OWNER, None, login)
            else:
                raise StoreError(self.url, f"login {login} is not a member of this store's team (the owner adds "
                                           "people with `redagent team add`)")
        return self._identity

    # ------------------------------------------------------------ the team (the owner)

    def team(self) -> list[dict[str, Any]]:
        """Every member: name, role, login, created_at (never the token digest)."""
        tm = tt.team_member
        with self._reading() as conn:
            rows = conn.execute(select(tm.c.name, tm.c.role, tm.c.login, tm.c.created_at).order_by(tm.c.name))
            return [dict(row._mapping) for row in rows]

    def add_member(self, name: str, role: str, *, host: str | None = None) -> NewMember:
        """Add a person to the team; on PostgreSQL also their login with their role's grants.

        The password and the console token are random and returned once (only the token's SHA-256
        is stored; the password only by PostgreSQL). `host` replaces the server's host in the
        returned URL (the owner may reach it at 127.0.0.1, the member by a name)."""
        check_name(name)
        check_role(role)
        self._require_owner("add team members")
        token = secrets.token_urlsafe(24)
        login = password = url = None
        tm = tt.team_member
        with self._writing() as conn:
            if conn.execute(select(tm.c.name).where(tm.c.name == name)).first() is not None:
                raise InvalidRecord(f"{name} is already a member of this store's team")
            if self.dialect == "postgresql":
                login = self._login_name(conn, name)
                password = secrets.token_urlsafe(24)
                self._ddl(conn, "CREATE ROLE {} LOGIN PASSWORD {}", login, password)
                self._grant(conn, login, role)
            conn.execute(tm.insert(), {"name": name, "role": role, "login": login,
                                       "token_sha256": token_digest(token), "created_at": datetime.now(UTC)})
        if login is not None:
            parsed = make_url(self.url).set(username=login, password=password)
            url = (parsed.set(host=host) if host else parsed).render_as_string(hide_password=False)
        return NewMember(name=name, role=role, login=login, url=url, token=token)

    def remove_member(self, name: str) -> None:
        """Take a person off the team: their login loses every grant and is dropped; their labels stay."""
        self._require_owner("remove team members")
        tm = tt.team_member
        with self._writing() as conn:
            row = conn.execute(select(tm.c.login).where(tm.c.name == name)).first()
            if row is None:
                raise InvalidRecord(f"{name} is not a member of this store's team")
            if row.login is not None:
                database = make_url(self.url).database
                self._ddl(conn, "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {}", row.login)
                self._ddl(conn, "REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {}", row.login)
                self._ddl(conn, "REVOKE ALL ON SCHEMA public FROM {}", row.login)
                for function in _FUNCTIONS:
                    self._ddl(conn, f"REVOKE ALL ON FUNCTION {function} FROM {{}}", row.login)
                self._ddl(conn, f"REVOKE ALL ON DATABASE {_quote(database)} FROM {{}}", row.login)
                self._ddl(conn, "DROP ROLE {}", row.login)
            conn.execute(tm.delete().where(tm.c.name == name))

    def sync_grants(self) -> int:
        """Re-apply every member's grants (after an upgrade added tables); returns how many logins."""
        self._require_owner("grant access")
        if self.dialect != "postgresql":
            return 0
        tm = tt.team_member
        with self._writing() as conn:
            members = conn.execute(select(tm.c.login, tm.c.role).where(tm.c.login.is_not(None))).all()
            for login, role in members:
                self._grant(conn, login, role)
        return len(members)

    def member_for_token(self, token: str) -> Identity | None:
        """The member a console token belongs to (the web console's login), or None."""
        tm = tt.team_member
        with self._reading() as conn:
            row = conn.execute(select(tm.c.name, tm.c.role, tm.c.login)
                               .where(tm.c.token_sha256 == token_digest(token))).first()
        return None if row is None else Identity(row.role, row.name, row.login, enforced=row.login is not None)

    # ------------------------------------------------------------ helpers

    def _require_owner(self, doing: str) -> None:
        identity = self.identity()
        if identity.role != OWNER:
            raise InvalidRecord(f"only the store's owner may {doing} (you are {identity.describe()})")

    @staticmethod
    def login_prefix(database: str) -> str:
        """What every login of this database's team starts with."""
        return f"ra_{hashlib.sha256(database.encode()).hexdigest()[:8]}_"

    def _login_name(self, conn: Connection, name: str) -> str:
        # Logins are cluster-wide and a store is one database: the database's name is part of the
        # login, hashed so two stores' alices never collide and the name stays under 63 bytes.
        login = self.login_prefix(make_url(self.url).database or "") + name.lower()
        taken = conn.exec_driver_sql("SELECT 1 FROM pg_roles WHERE rolname = %(login)s", {"login": login}).first()
        if taken is not None:
            raise InvalidRecord(f"the PostgreSQL login {login} already exists (a member removed by hand?); "
                                "drop it or choose another name")
        return login

    def _grant(self, conn: Connection, login: str, role: str) -> None:
        database = make_url(self.url).database
        self._ddl(conn, f"GRANT CONNECT ON DATABASE {_quote(database)} TO {{}}", login)
        self._ddl(conn, "GRANT USAGE ON SCHEMA public TO {}", login)
        self._ddl(conn, "GRANT SELECT ON alembic_version TO {}", login)
        for function in _FUNCTIONS:
            self._ddl(conn, f"GRANT EXECUTE ON FUNCTION {function} TO {{}}", login)
        for grant in _GRANTS[role]:
            self._ddl(conn, f"GRANT {grant} TO {{}}", login)
        if role == RESEARCHER:
            # Researchers read the team, but only the owner changes who is in it (and with which login).
            self._ddl(conn, "REVOKE INSERT, UPDATE, DELETE ON team_member FROM {}", login)

    @staticmethod
    def _ddl(conn: Connection, template: str, login: str, password: str | None = None) -> None:
        """DDL naming a login (quoted as an identifier) and maybe a password (as a literal): statements
        that take no bind parameters, so the values are quoted by the driver's own functions."""
        from psycopg import sql

        driver = conn.connection.driver_connection
        parts: list[Any] = [sql.Identifier(login)] + ([sql.Literal(password)] if password is not None else [])
        conn.exec_driver_sql(sql.SQL(template).format(*parts).as_string(driver))


def _quote(identifier: str | None) -> str:
    return '"' + (identifier or "").replace('"', '""') + '"'
