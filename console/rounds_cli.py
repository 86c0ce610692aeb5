"""`redagent cases round …`: draw a construction round of case versions for two experts, and follow it.

A typer sub-app (console/cli.py registers it under `cases` as `round`). Like the main command line,
every error the user can cause ends as one line on stderr, `error: …`, and exit code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import orjson
import typer
from rich.console import Console
from rich.table import Table

rounds_app = typer.Typer(no_args_is_help=True, help="Construction rounds: sample case versions for expert review.")

out = Console()
err = Console(stderr=True)

DB_OPTION = typer.Option(None, "--db", help="store URL (default: $REDAGENT_DB or sqlite:///.redagent/redagent.db)")


def _fail(message: str) -> NoReturn:
    err.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=str).decode() + "\n")


@contextmanager
def _store(db: str | None) -> Iterator[Any]:
    """An opened store; store, round and case-file errors become one line and exit code 2."""
    from redagent.cases.loader import CaseFileError
    from redagent.judges.rounds import RoundError
    from redagent.store.db import open_store
    from redagent.store.errors import InvalidRecord, StoreError
    from redagent.store.reviews import ReviewError

    try:
        store = open_store(db)
    except StoreError as exc:
        _fail(str(exc))
    try:
        yield store
    except (RoundError, ReviewError, InvalidRecord, StoreError) as exc:
        _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except CaseFileError as exc:
        _fail(f"{len(exc.problems)} problem(s) in case files; first: {exc.problems[0]}")
    finally:
        store.close()


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


@rounds_app.command("new")
def new_cmd(
    n: int = typer.Option(40, "--n", help="case versions in the round"),
    seed: int = typer.Option(0, "--seed", help="the sample and the review order follow from it"),
    experts: str = typer.Option(..., "--experts", help="two expert names, comma-separated"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Sample case versions of the built-in library, stratified by surface, into a new review round."""
    from redagent.judges.rounds import new_round

    names = [name.strip() for name in experts.split(",") if name.strip()]
    with _store(db) as store:
        round_id = new_round(store, n, seed, names)
        cases = store.round_cases(round_id)
    if as_json:
        _json({"round_id": round_id, "n": len(cases), "seed": seed, "experts": names, "cases": cases})
        return
    table = Table(title=f"{round_id}: {len(cases)} case versions, seed {seed}, experts {', '.join(names)}")
    for column in ("#", "case", "version", "hash"):
        table.add_column(column)
    for case in cases:
        table.add_row(str(case["position"]), case["case_id"], str(case["case_version"]), case["case_hash"][:12])
    out.print(table)


@rounds_app.command("status")
def status_cmd(round_id: str = typer.Argument(...), db: str | None = DB_OPTION,
               as_json: bool = typer.Option(False, "--json")) -> None:
    """Each expert's progress and their agreement (raw and Cohen's kappa) per rubric item and on the decision."""
    from redagent.judges.rounds import agreement

    with _store(db) as store:
        result = agreement(store, round_id)
    if as_json:
        _json(result)
        return
    out.print(f"{round_id}: {result['cases']} cases; " + ", ".join(
        f"{name} {done}/{result['cases']}" for name, done in result["progress"].items()), highlight=False)
    table = Table(title=f"agreement on first reviews ({result['both_reviewed']} cases reviewed by both)")
    for column in ("item", "n", "agreement", "kappa"):
        table.add_column(column)
    for item, entry in result["items"].items():
        kappa = _fmt(entry["kappa"], ".3f") if entry["kappa_defined"] else f"— ({entry['why_undefined']})"
        table.add_row(item, str(entry["n"]), _fmt(entry["agreement"], ".1%"), kappa)
    out.print(table)
