"""`redagent team …`: the people of a store and their roles — on PostgreSQL, one login each, held to its
role by the database (store/access.py); on SQLite, names and console tokens only (a single file blinds
no one who can read it, and the commands say so).

A typer sub-app (registered by console/cli.py as `team`); errors take cli_common's one path (one line,
exit code 2), and `team list`, which only reads, never creates a missing store.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import typer
from rich.table import Table

from redagent.console.cli_common import (
    DB_OPTION,
    Commands,
    err,
    examples,
    fail,
    opened_store,
    print_json,
    single_file_note,
)
from redagent.console.cli_common import out as out_console

team_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="Team members of a store: add, list, remove, re-grant.",
    epilog=examples("redagent team list", "redagent team add alice --role reviewer"),
)


@team_app.command(
    "add",
    epilog=examples(
        "redagent team add alice --role reviewer --db pg:audits-owner",
        "redagent team add bob --role researcher --format pgpass --out bob.pgpass --db pg:audits-owner",
    ),
)
def add_cmd(
    name: str = typer.Argument(..., help="the person's name, as audits and rounds name them"),
    role: str = typer.Option(..., "--role", help="researcher | reviewer | adjudicator | expert"),
    host: str | None = typer.Option(
        None, "--host", help="the database host as the person reaches it (default: as your own connection reaches it)"
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="where to write the person's connection (PostgreSQL; a new "
        "file, 0600; default ./redagent-NAME.pg_service.conf or "
        "./redagent-NAME.pgpass)",
    ),
    form: str = typer.Option(
        "service",
        "--format",
        help="service: a pg_service.conf section (--db pg:SERVICE); "
        "pgpass: a ~/.pgpass line and a URL without password",
    ),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Add a person: on PostgreSQL a login of their own with only their role's rights, whose connection (with
    its password) is written to a new 0600 file — never printed, since a password on a command line is in
    every local user's `ps`. Prints how they connect and their console token, once.
    """
    if form not in ("service", "pgpass"):
        fail(f"--format {form!r}: service or pgpass")
    with opened_store(db, roles=("owner",)) as store:
        member = store.add_member(name, role, host=host)
        note = single_file_note(store) if store.dialect == "sqlite" else None
    written, connect = None, None
    if member.login is not None:
        suffix = "pg_service.conf" if form == "service" else "pgpass"
        written = out or Path(f"redagent-{member.name}.{suffix}")
        text = member.service_entry() if form == "service" else member.pgpass_line() + "\n"
        try:
            _write_private(written, text)
        except OSError as exc:
            # The login exists already: say how to get a connection for it without one more member.
            fail(
                f"cannot write {written}: {exc.strerror}; {member.name} was added (login {member.login}) — run "
                f"`redagent team remove {member.name}` and add them again with another --out"
            )
        connect = f"pg:{member.service}" if form == "service" else member.url
    if as_json:
        print_json(
            {
                "name": member.name,
                "role": member.role,
                "login": member.login,
                "db": connect,
                "connection_file": str(written) if written else None,
                "token": member.token,
            }
        )
        return
    out_console.print(f"added {member.name} as {member.role}", highlight=False)
    if written is not None:
        where = (
            "they add it to ~/.pg_service.conf (or set PGSERVICEFILE to it)"
            if form == "service"
            else "they add it to ~/.pgpass (or set PGPASSFILE to it; the file must stay 0600)"
        )
        out_console.print(
            f"  connection: written to {written} (0600; it holds the password — hand it over privately); "
            f"{where} and use --db {connect}",
            highlight=False,
            soft_wrap=True,
        )
    out_console.print(f"  console token (for `redagent console --web`; shown once): {member.token}", highlight=False)
    if note:
        err.print(f"note: {note}", highlight=False, soft_wrap=True)


def _write_private(path: Path, text: str) -> None:
    """A new file only its owner can read; an existing one is never overwritten (nor followed if a link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


@team_app.command("list", epilog=examples("redagent team list --json"))
def list_cmd(db: str | None = DB_OPTION, as_json: bool = typer.Option(False, "--json")) -> None:
    """The store's members, their roles and logins."""
    with opened_store(db, create=False) as store:
        members = store.team()
    if as_json:
        print_json([asdict(member) for member in members])
        return
    table = Table(title=f"{len(members)} team member(s)")
    for column in ("name", "role", "login", "added"):
        table.add_column(column)
    for member in members:
        table.add_row(member.name, member.role, member.login or "—", f"{member.created_at:%Y-%m-%d}")
    out_console.print(table)


@team_app.command("remove", epilog=examples("redagent team remove alice"))
def remove_cmd(name: str = typer.Argument(...), db: str | None = DB_OPTION) -> None:
    """Take a person off the team: their login loses every grant and is dropped; their labels stay."""
    with opened_store(db, roles=("owner",)) as store:
        store.remove_member(name)
    out_console.print(f"removed {name}", highlight=False)


@team_app.command("sync", epilog=examples("redagent team sync"))
def sync_cmd(db: str | None = DB_OPTION) -> None:
    """Re-apply every member's grants (opening the store after an upgrade does this by itself)."""
    with opened_store(db, roles=("owner",)) as store:
        count = store.sync_grants()
    out_console.print(f"re-granted {count} login(s)", highlight=False)
