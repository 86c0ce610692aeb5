"""`redagent team …`: the people of a store and their roles — on PostgreSQL, one login each, held to its
role by the database (store/access.py); on SQLite, names and console tokens only (a single file blinds
no one who can read it, and the commands say so).

A typer sub-app (registered by console/cli.py as `team`); errors take cli_common's one path (one line,
exit code 2), and `team list`, which only reads, never creates a missing store.
"""

from __future__ import annotations

import typer
from rich.table import Table

from redagent.console.cli_common import DB_OPTION, err, examples, opened_store, out, print_json, single_file_note

team_app = typer.Typer(no_args_is_help=True, help="Team members of a store: add, list, remove, re-grant.",
                       epilog=examples("redagent team list", "redagent team add alice --role reviewer"))


@team_app.command("add", epilog=examples(
    "redagent team add alice --role reviewer --db postgresql+psycopg://owner:pw@db:5432/audits"))
def add_cmd(
    name: str = typer.Argument(..., help="the person's name, as audits and rounds name them"),
    role: str = typer.Option(..., "--role", help="researcher | reviewer | adjudicator | expert"),
    host: str | None = typer.Option(None, "--host", help="the database host as the person reaches it "
                                                         "(default: as in your own URL)"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Add a person: on PostgreSQL a login of their own with only their role's rights; prints its connection
    URL and their console token once (neither is stored in a form that can be shown again).
    """
    with opened_store(db, roles=("owner",)) as store:
        member = store.add_member(name, role, host=host)
        note = single_file_note(store) if store.dialect == "sqlite" else None
    if as_json:
        print_json({"name": member.name, "role": member.role, "login": member.login, "url": member.url,
                    "token": member.token})
        return
    out.print(f"added {member.name} as {member.role}", highlight=False)
    if member.url:
        out.print(f"  connection (give it to {member.name}; shown once): {member.url}", highlight=False,
                  soft_wrap=True)
    out.print(f"  console token (for `redagent console --web`; shown once): {member.token}", highlight=False)
    if note:
        err.print(f"note: {note}", highlight=False, soft_wrap=True)


@team_app.command("list", epilog=examples("redagent team list --json"))
def list_cmd(db: str | None = DB_OPTION, as_json: bool = typer.Option(False, "--json")) -> None:
    """The store's members, their roles and logins."""
    with opened_store(db, create=False) as store:
        members = store.team()
    if as_json:
        print_json(members)
        return
    table = Table(title=f"{len(members)} team member(s)")
    for column in ("name", "role", "login", "added"):
        table.add_column(column)
    for member in members:
        table.add_row(member["name"], member["role"], member["login"] or "—", f"{member['created_at']:%Y-%m-%d}")
    out.print(table)


@team_app.command("remove", epilog=examples("redagent team remove alice"))
def remove_cmd(name: str = typer.Argument(...), db: str | None = DB_OPTION) -> None:
    """Take a person off the team: their login loses every grant and is dropped; their labels stay."""
    with opened_store(db, roles=("owner",)) as store:
        store.remove_member(name)
    out.print(f"removed {name}", highlight=False)


@team_app.command("sync", epilog=examples("redagent team sync"))
def sync_cmd(db: str | None = DB_OPTION) -> None:
    """Re-apply every member's grants (opening the store after an upgrade does this by itself)."""
    with opened_store(db, roles=("owner",)) as store:
        count = store.sync_grants()
    out.print(f"re-granted {count} login(s)", highlight=False)
