"""What every `redagent` sub-command shares: its consoles, the --db option, JSON output, comma lists,
and the rule that a user-caused error ends as one line on stderr, `error: …`, with exit code 2."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import orjson
import typer
from rich.console import Console

if TYPE_CHECKING:
    from redagent.store.db import Store

out = Console()
err = Console(stderr=True)

DB_OPTION = typer.Option(None, "--db", help="store URL (default: $REDAGENT_DB or sqlite:///.redagent/redagent.db)")


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


@contextmanager
def opened_store(db: str | None, catch: tuple[type[BaseException], ...] = ()) -> Iterator[Store]:
    """An opened store for one command; store errors, case-file errors and `catch` end as one line."""
    from redagent.cases.loader import CaseFileError
    from redagent.store.db import open_store
    from redagent.store.errors import InvalidRecord, StoreError

    try:
        store = open_store(db)
    except StoreError as exc:
        fail(str(exc))
    try:
        yield store
    except CaseFileError as exc:
        fail(f"{len(exc.problems)} problem(s) in case files; first: {exc.problems[0]}")
    except (*catch, InvalidRecord, StoreError) as exc:
        fail(first_line(exc))
    finally:
        store.close()
