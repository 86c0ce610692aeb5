"""What every `redagent` sub-command shares: its consoles, the --db option, JSON output, comma lists, the
examples its --help ends with, and the one error path: a user-caused error ends as one line on stderr,
`error: …`, with exit code 2 (`fail`, or `opened_store` for the errors of a command that opens the store)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import orjson
import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from redagent.store.db import Store

out = Console()
err = Console(stderr=True, emoji=False)  # an error line is shown as written: "x.yaml:100:" is no emoji

DB_OPTION = typer.Option(None, "--db", help="store: a SQLite file path or a URL (sqlite:///…, postgresql+psycopg://…); "
                         "default $REDAGENT_DB or .redagent/redagent.db. Only commands that write create a "
                         "missing store")


def examples(*invocations: str) -> str:
    """The epilog of a command's or group's --help: its example invocations, one a line, each a whole
    `redagent …` command line (tests/console/test_cli_help.py holds every command to having one)."""
    if not invocations or not all(line.startswith("redagent ") for line in invocations):
        raise ValueError(f"an example is a whole `redagent …` command line, not {invocations!r}")
    title = "Example:" if len(invocations) == 1 else "Examples:"
    # Rich markup mode reads the epilog as markup: a literal `[` in an example must stay literal.
    return title + "\n" + "\n".join(f"  {escape(line)}" for line in invocations)


def fail(message: str) -> NoReturn:
    err.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def print_json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=str).decode() + "\n")


def split(value: str) -> list[str]:
    """`a, b,,c` → ['a', 'b', 'c']."""
    return [v.strip() for v in value.split(",") if v.strip()]


def first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


# Who may run a command that opens the store. The default is the analysts': a command that does not
# say otherwise shows unblinded data, so reviewers, adjudicators and experts may not run it.
ANALYSTS = ("owner", "researcher")


def command_name() -> str:
    """`redagent audit status`, for messages (the running command's path)."""
    # typer 0.29 runs on a click of its own (typer._click): the installed click package never holds its context.
    from typer._click.globals import get_current_context

    context = get_current_context(silent=True)
    return f"`{context.command_path}`" if context is not None else "this command"


def check_role(store: Store, roles: tuple[str, ...]) -> None:
    """Refuse (one line, exit 2) a command the store's user may not run in their role."""
    identity = store.identity()
    if identity.role not in roles:
        allowed = ", ".join("the owner" if role == "owner" else f"{role}s" for role in roles)
        fail(f"{command_name()} is open to {allowed}, not to {identity.describe()}")


def acting_as(store: Store, flag: str | None, role: str, option: str = "--reviewer") -> str:
    """The name a reviewer, adjudicator or expert command acts as: the login's on a team store (a
    flag naming someone else is refused), else the flag (the owner of a single-file store may act
    for anyone, and is told that nothing is blinded against them)."""
    identity = store.identity()
    if identity.enforced:
        if flag is not None and flag != identity.name:
            fail(f"you are logged in as {identity.name}; {option} {flag} would act as someone else")
        if identity.role != role:
            fail(f"{command_name()} acts as a {role}; you are {identity.describe()}")
        assert identity.name is not None
        return identity.name
    if flag is None:
        fail(f"{command_name()} needs {option} NAME (on a team store it is taken from your login)")
    return flag


def single_file_note(store: Store) -> str | None:
    """What an unenforced store tells anyone using a blinded role, or None on a team login."""
    identity = store.identity()
    if identity.enforced:
        return None
    if store.dialect == "sqlite":
        return ("a single-file store cannot blind its owner: whoever can read the file can read every rollout "
                "and label; blinded audits need a PostgreSQL team store (`redagent team add`)")
    return ("you are this store's owner: nothing is blinded against you; reviewers log in with the URL "
            "`redagent team add` gives them")


@contextmanager
def opened_store(db: str | None, catch: tuple[type[BaseException], ...] = (),
                 roles: tuple[str, ...] = ANALYSTS, *, create: bool = True) -> Iterator[Store]:
    """An opened store for one command that the user's role may run; store errors, case-file errors and
    `catch` end as one line. A reader passes `create=False`: a missing store is "no store at …", not made."""
    from redagent.cases.loader import CaseFileError
    from redagent.store.db import open_store
    from redagent.store.errors import InvalidRecord, StoreError

    try:
        store = open_store(db, create=create)
    except StoreError as exc:
        fail(str(exc))
    try:
        check_role(store, roles)
        yield store
    except CaseFileError as exc:
        fail(f"{len(exc.problems)} problem(s) in case files; first: {exc.problems[0]}")
    except (*catch, InvalidRecord, StoreError) as exc:
        fail(first_line(exc))
    finally:
        store.close()
