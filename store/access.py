"""Who is using the store, and the team of a PostgreSQL store: logins, roles, grants, console tokens.

A SQLite store is one file: whoever can read it can read everything, so its user is the *owner* and
nothing is blinded against them (the file is kept 0600 in a 0700 folder so other local users
cannot). A PostgreSQL store can hold a team: `add_member` creates one login per person (its name random, since
every login can list every role) and grants it only what its role needs — reviewers, adjudicators and
experts no table at all, only the views over the definer functions of migration 0010 that return their
own rows and the functions that write as them; researchers every table but the team's, labels,
decisions and reviews, and no changing an audit once written. The database then enforces the
blinding; the command line and the console take the role from the login (`identity`), never from a
flag. The member's password is handed out in a pg_service entry or a pgpass line (`NewMember`),
never in a URL meant to be typed.

Exposed as methods of `Store` (this module's `AccessQueries` is one of its mixins).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError

from redagent.store import tables_team as tt
from redagent.store.connect import describe_db_error
from redagent.store.errors import InvalidRecord, StoreError

OWNER = "owner"
RESEARCHER, REVIEWER, ADJUDICATOR, EXPERT = tt.TEAM_ROLES
# Roles that see unblinded data: the owner (who set the store up) and researchers.
ANALYSTS = (OWNER, RESEARCHER)
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,39}")

_BLIND_VIEWS = ("blind_audit", "blind_queue", "blind_item", "blind_event", "blind_receipt", "blind_diff")
_IDENTITY = ("redagent_me()", "redagent_role()", "redagent_analyst()")


def _reads(*views: str) -> list[str]:
    """SELECT on the views and EXECUTE on the definer function each one reads a member's rows through (a
    function's EXECUTE is checked for the querying login even when the view's gate never calls it)."""
    return [grant for view in views for grant in (f"SELECT ON {view}", f"EXECUTE ON FUNCTION redagent_{view}()")]


# What each role's login is granted (beyond connecting, the schema, the migration stamp, the identity functions).
# Blinded members (reviewer, adjudicator, expert) get no privilege on any table or sequence: they read through
# security_barrier views over definer functions that return only their own rows, and write through definer
# functions that name them from their login (migration 0010).
_GRANTS: dict[str, list[str]] = {
    REVIEWER: _reads(*_BLIND_VIEWS, "own_label")
    + ["EXECUTE ON FUNCTION redagent_submit_label(text, integer, text, text, text, text)"],
    ADJUDICATOR: _reads(*_BLIND_VIEWS, "blind_slot_label", "own_adjudication")
    + ["EXECUTE ON FUNCTION redagent_adjudicate(text, integer, text, text, text, text)"],
    EXPERT: _reads("my_round", "my_round_case", "own_review")
    + ["EXECUTE ON FUNCTION redagent_submit_review(text, text, text, json, text, text, text)"],
    RESEARCHER: [
        "SELECT ON ALL TABLES IN SCHEMA public",
        "INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public",
        "USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public",
        # The blinded and own-row views as analysts read them (migration 0014): every row.
        f"USAGE ON SCHEMA {tt.ANALYST_SCHEMA}",
        f"SELECT ON ALL TABLES IN SCHEMA {tt.ANALYST_SCHEMA}",
        # Reading a complete audit's figures closes it (migration 0016); a researcher writes no close row himself.
        "EXECUTE ON FUNCTION redagent_close_complete(text)",
    ]
    + _reads(
        *_BLIND_VIEWS, "blind_slot_label", "own_label", "own_adjudication", "own_review", "my_round", "my_round_case"
    ),
}
# A researcher creates audits and rounds (the owner's workflow, held to it by 0010's triggers) but never labels,
# decides or reviews, and never changes or removes what an audit or round holds once written.
_RESEARCHER_REVOKES = [
    "INSERT, UPDATE, DELETE ON audit_label, adjudication, case_review, team_member, audit_closure",
    "UPDATE, DELETE ON audit, audit_item, audit_assignment, review_round, round_case",
]


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


@dataclass(frozen=True, slots=True)
class TeamMember:
    """A member of the team as the owner lists them (never the token digest); `login` is None on SQLite."""

    name: str
    role: str
    login: str | None
    created_at: datetime


@dataclass(frozen=True)
class NewMember:
    """What `add_member` hands out once: the member's connection (PostgreSQL) and console token.

    `url` carries no password: libpq takes it from a pg_service entry (`service_entry`, used as
    `--db pg:SERVICE`) or a password file (`pgpass_line`). `secret_url` has it, for programs that connect
    at once; the command line never prints it (a password on a command line is in every user's `ps`)."""

    name: str
    role: str
    login: str | None
    url: str | None
    token: str
    password: str | None = field(default=None, repr=False)
    host: str | None = None
    port: int | None = None
    database: str | None = None

    @property
    def service(self) -> str | None:
        """The pg_service section name: the database and the member, so one file can hold several stores."""
        return None if self.login is None else f"{self.database}-{self.name}"

    @property
    def secret_url(self) -> str | None:
        if self.url is None:
            return None
        return make_url(self.url).set(password=self.password).render_as_string(hide_password=False)

    def service_entry(self) -> str:
        """The member's connection as a pg_service.conf section (password included: keep the file 0600)."""
        if self.login is None:
            raise InvalidRecord("a SQLite store has no logins: there is no connection to write")
        return (
            f"[{self.service}]\nhost={self.host}\nport={self.port}\ndbname={self.database}\n"
            f"user={self.login}\npassword={self.password}\n"
        )

    def pgpass_line(self) -> str:
        """The member's password as a ~/.pgpass line (for `--db` URLs without a password)."""

        def escape(value: object) -> str:
            return str(value).replace("\\", "\\\\").replace(":", "\\:")

        return ":".join(escape(part) for part in (self.host, self.port, self.database, self.login, self.password))


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidRecord(f"team member name {name!r}: 1-40 letters, digits, '.', '_' or '-', starting with a letter")
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

    @contextmanager
    def _identifying(self) -> Iterator[Connection]:
        """A plain read connection for `identity` (the store's `_reading` asks the identity which views to read)."""
        try:
            with self.engine.connect() as conn:
                yield conn
        except DBAPIError as exc:
            raise StoreError(self.url, describe_db_error(exc, self.url), doing="read from") from exc

    def identity(self) -> Identity:
        """Who this connection is. SQLite: the owner. PostgreSQL: the team member its login belongs to, or
        the owner when the login is no member but can read the runs; StoreError for a login that is neither."""
        if self._identity is not None:
            return self._identity
        if self.dialect != "postgresql":
            self._identity = Identity(OWNER)
            return self._identity
        with self._identifying() as conn:
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
                raise StoreError(
                    self.url,
                    f"login {login} is not a member of this store's team (the owner adds "
                    "people with `redagent team add`)",
                )
        return self._identity

    # ------------------------------------------------------------ the team (the owner)

    def team(self) -> list[TeamMember]:
        """Every member, by name (never the token digest)."""
        tm = tt.team_member
        with self._reading() as conn:
            rows = conn.execute(select(tm.c.name, tm.c.role, tm.c.login, tm.c.created_at).order_by(tm.c.name))
            return [
                TeamMember(name=row.name, role=row.role, login=row.login, created_at=row.created_at) for row in rows
            ]

    def add_member(self, name: str, role: str, *, host: str | None = None) -> NewMember:
        """Add a person to the team; on PostgreSQL also their login with their role's grants.

        The password and the console token are random and returned once (only the token's SHA-256
        is stored; the password only by PostgreSQL). The login's name is random too (`ra_<store>_<hex>`):
        every login can read the cluster's role names, so a name in them would give the roster away.
        `host` replaces the server's host in the returned connection (the owner may reach it at
        127.0.0.1, the member by a name)."""
        check_name(name)
        check_role(role)
        self._require_owner("add team members")
        token = secrets.token_urlsafe(24)
        login = password = url = database = server = None
        port = None
        tm = tt.team_member
        with self._writing() as conn:
            if conn.execute(select(tm.c.name).where(tm.c.name == name)).first() is not None:
                raise InvalidRecord(f"{name} is already a member of this store's team")
            if self.dialect == "postgresql":
                database = _database(conn)
                login = self._login_name(conn, database)
                password = secrets.token_urlsafe(24)
                # The server gets a SCRAM-SHA-256 verifier that libpq computes here (as psql's \password does),
                # never the password: statement logs and pg_stat_statements keep a utility statement's text.
                self._ddl(conn, "CREATE ROLE {} LOGIN PASSWORD {}", login, _scram_verifier(conn, login, password))
                self._grant(conn, login, role)
                driver = conn.connection.driver_connection
                assert driver is not None  # an open connection of a checked-out pool entry
                server, port = host or driver.info.host, int(driver.info.port)
            conn.execute(
                tm.insert(),
                {
                    "name": name,
                    "role": role,
                    "login": login,
                    "token_sha256": token_digest(token),
                    "created_at": datetime.now(UTC),
                },
            )
        if login is not None:
            url = URL.create(
                "postgresql+psycopg", username=login, host=server, port=port, database=database
            ).render_as_string(hide_password=False)
        return NewMember(
            name=name,
            role=role,
            login=login,
            url=url,
            token=token,
            password=password,
            host=server,
            port=port,
            database=database,
        )

    def remove_member(self, name: str) -> None:
        """Take a person off the team: their login loses every grant and is dropped; their labels stay."""
        self._require_owner("remove team members")
        tm = tt.team_member
        with self._writing() as conn:
            row = conn.execute(select(tm.c.login).where(tm.c.name == name)).first()
            if row is None:
                raise InvalidRecord(f"{name} is not a member of this store's team")
            if row.login is not None:
                self._revoke_all(conn, row.login)
                self._ddl(conn, f"REVOKE ALL ON DATABASE {_quote(_database(conn))} FROM {{}}", row.login)
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
            row = conn.execute(
                select(tm.c.name, tm.c.role, tm.c.login).where(tm.c.token_sha256 == token_digest(token))
            ).first()
        return None if row is None else Identity(row.role, row.name, row.login, enforced=row.login is not None)

    # ------------------------------------------------------------ helpers

    def _made_by(self) -> str:
        """Who a recorded action names: the login on PostgreSQL, "owner" on SQLite (one person)."""
        identity = self.identity()
        return identity.login or identity.name or identity.role

    def _require_owner(self, doing: str) -> None:
        identity = self.identity()
        if identity.role != OWNER:
            raise InvalidRecord(f"only the store's owner may {doing} (you are {identity.describe()})")

    @staticmethod
    def login_prefix(database: str) -> str:
        """What every login of this database's team starts with."""
        return f"ra_{hashlib.sha256(database.encode()).hexdigest()[:8]}_"

    def _login_name(self, conn: Connection, database: str) -> str:
        # Logins are cluster-wide and a store is one database: the database's name is part of the login,
        # hashed so two stores' teams never collide and the name stays under 63 bytes; the rest is random.
        for _ in range(8):
            login = self.login_prefix(database) + secrets.token_hex(5)
            taken = conn.exec_driver_sql("SELECT 1 FROM pg_roles WHERE rolname = %(login)s", {"login": login}).first()
            if taken is None:
                return login
        raise InvalidRecord("could not find a free PostgreSQL login name for this store")  # 2^40 names each try

    def _revoke_all(self, conn: Connection, login: str) -> None:
        # The store's own objects only, never "ALL … IN SCHEMA public": an extension installed there (such as
        # pg_stat_statements, whose reset function PUBLIC may not execute) belongs to someone else, and a REVOKE
        # on an object the owner holds no privilege on fails outright.
        for schema in _store_schemas(conn):
            relations, functions = _store_objects(conn, schema)
            if relations:
                self._ddl(conn, f"REVOKE ALL ON TABLE {', '.join(relations)} FROM {{}}", login)
            sequences = _store_sequences(conn, schema)
            if sequences:
                self._ddl(conn, f"REVOKE ALL ON SEQUENCE {', '.join(sequences)} FROM {{}}", login)
            if functions:
                self._ddl(conn, f"REVOKE ALL ON FUNCTION {', '.join(functions)} FROM {{}}", login)
            self._ddl(conn, f"REVOKE ALL ON SCHEMA {schema} FROM {{}}", login)

    def _grant(self, conn: Connection, login: str, role: str) -> None:
        """Exactly the role's grants: whatever the login held before (an older revision's grants, a role it
        had) is revoked first, in the same transaction."""
        database = _database(conn)
        self._revoke_all(conn, login)
        # TEMPORARY and CREATE come from PUBLIC, which migration 0010 revokes; never from the login itself.
        self._ddl(conn, f"REVOKE TEMPORARY, CREATE ON DATABASE {_quote(database)} FROM {{}}", login)
        self._ddl(conn, f"GRANT CONNECT ON DATABASE {_quote(database)} TO {{}}", login)
        self._ddl(conn, "GRANT USAGE ON SCHEMA public TO {}", login)
        self._ddl(conn, "GRANT SELECT ON alembic_version TO {}", login)
        for function in _IDENTITY:
            self._ddl(conn, f"GRANT EXECUTE ON FUNCTION {function} TO {{}}", login)
        for grant in _GRANTS[role]:
            self._ddl(conn, f"GRANT {_store_grant(conn, grant)} TO {{}}", login)
        if role == RESEARCHER:
            for revoke in _RESEARCHER_REVOKES:
                self._ddl(conn, f"REVOKE {revoke} FROM {{}}", login)

    @staticmethod
    def _ddl(conn: Connection, template: str, login: str, password: str | None = None) -> None:
        """DDL naming a login (quoted as an identifier) and maybe a password (as a literal): statements
        that take no bind parameters, so the values are quoted by the driver's own functions."""
        from psycopg import sql

        driver = conn.connection.driver_connection
        parts: list[Any] = [sql.Identifier(login)] + ([sql.Literal(password)] if password is not None else [])
        conn.exec_driver_sql(sql.SQL(template).format(*parts).as_string(driver))


def _scram_verifier(conn: Connection, login: str, password: str) -> str:
    """The SCRAM-SHA-256 verifier of `password` for `login` (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:
    <ServerKey>`), computed by libpq on this side of the connection: the server stores it as it is, and no
    statement text, log line or pg_stat_statements entry ever holds the password."""
    driver = conn.connection.driver_connection
    assert driver is not None  # an open connection of a checked-out pool entry
    return bytes(driver.pgconn.encrypt_password(password.encode(), login.encode(), b"scram-sha-256")).decode()


# Objects of schema public that are the store's: its owner's (or a role it inherits), and not an extension's.
_OWNED = (
    "pg_has_role({owner}, 'USAGE') AND NOT EXISTS (SELECT 1 FROM pg_depend d "
    "WHERE d.classid = '{catalog}'::regclass AND d.objid = {oid} AND d.deptype = 'e')"
)


def _store_schemas(conn: Connection) -> list[str]:
    """public, and the analysts' schema of migration 0014 where the store has it."""
    analyst = conn.exec_driver_sql(
        "SELECT 1 FROM pg_namespace WHERE nspname = %(name)s", {"name": tt.ANALYST_SCHEMA}
    ).first()
    return ["public"] + ([tt.ANALYST_SCHEMA] if analyst is not None else [])


def _store_objects(conn: Connection, schema: str = "public") -> tuple[list[str], list[str]]:
    """The store's tables and views, and its functions, in `schema`, quoted (regclass / regprocedure)."""
    relations = conn.exec_driver_sql(
        "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'v', 'm', 'p', 'f') AND "
        + _OWNED.format(owner="c.relowner", catalog="pg_class", oid="c.oid")
        + " ORDER BY 1",
        {"schema": schema},
    ).scalars()
    functions = conn.exec_driver_sql(
        "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = %(schema)s AND "
        + _OWNED.format(owner="p.proowner", catalog="pg_proc", oid="p.oid")
        + " ORDER BY 1",
        {"schema": schema},
    ).scalars()
    return list(relations), list(functions)


def _store_sequences(conn: Connection, schema: str = "public") -> list[str]:
    return list(
        conn.exec_driver_sql(
            "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %(schema)s AND c.relkind = 'S' AND "
            + _OWNED.format(owner="c.relowner", catalog="pg_class", oid="c.oid")
            + " ORDER BY 1",
            {"schema": schema},
        ).scalars()
    )


def _store_grant(conn: Connection, grant: str) -> str:
    """A grant of `_GRANTS` with "ALL TABLES / SEQUENCES IN SCHEMA s" spelt out as the store's own objects there:
    an extension's relations in schema public are not the store's to give."""
    for kind, objects in (
        (" ON ALL TABLES IN SCHEMA ", lambda schema: "TABLE " + ", ".join(_store_objects(conn, schema)[0])),
        (" ON ALL SEQUENCES IN SCHEMA ", lambda schema: "SEQUENCE " + ", ".join(_store_sequences(conn, schema))),
    ):
        if kind in grant:
            privileges, schema = grant.split(kind)
            return f"{privileges} ON {objects(schema)}"
    return grant


def _database(conn: Connection) -> str:
    """The database the connection is in (a URL naming a pg_service entry names none itself)."""
    return str(conn.exec_driver_sql("SELECT current_database()").scalar_one())


def _quote(identifier: str | None) -> str:
    return '"' + (identifier or "").replace('"', '""') + '"'
