"""`redagent cases round …`: draw a construction round of case versions for two experts, and follow it.

A typer sub-app (console/cases_cli.py registers it under `cases` as `round`). Every error the user can
cause takes cli_common's one path: one line on stderr, `error: …`, exit code 2. `status` only reads and
never creates a missing store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

import typer
from rich.table import Table

from redagent.console.cli_common import DB_OPTION, Commands, examples, opened_store, out, print_json, split

rounds_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="Construction rounds: sample case versions for expert review.",
    epilog=examples("redagent cases round new --n 40 --experts dana,eli", "redagent cases round status round-1"),
)


@contextmanager
def _store(db: str | None, *, create: bool = True) -> Iterator[Any]:
    """The store for one round command; a reader passes `create=False` (a missing store is "no store at …")."""
    with opened_store(db, create=create) as store:
        yield store


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


@rounds_app.command("new", epilog=examples("redagent cases round new --n 40 --experts dana,eli"))
def new_cmd(
    n: int = typer.Option(40, "--n", help="case versions in the round"),
    seed: int = typer.Option(0, "--seed", help="the sample and the review order follow from it"),
    experts: str = typer.Option(..., "--experts", help="two expert names, comma-separated"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Sample case versions of the built-in library, stratified by surface, into a new review round."""
    from redagent.judges.rounds import new_round

    names = split(experts)
    with _store(db) as store:
        round_id = new_round(store, n, seed, names)
        cases = store.round_cases(round_id)
    if as_json:
        print_json(
            {
                "round_id": round_id,
                "n": len(cases),
                "seed": seed,
                "experts": names,
                "cases": [asdict(case) for case in cases],
            }
        )
        return
    table = Table(title=f"{round_id}: {len(cases)} case versions, seed {seed}, experts {', '.join(names)}")
    for column in ("#", "case", "version", "hash"):
        table.add_column(column)
    for case in cases:
        table.add_row(str(case.position), case.case_id, str(case.case_version), case.case_hash[:12])
    out.print(table)


@rounds_app.command("status", epilog=examples("redagent cases round status round-1 --json"))
def status_cmd(
    round_id: str = typer.Argument(...), db: str | None = DB_OPTION, as_json: bool = typer.Option(False, "--json")
) -> None:
    """Each expert's progress and their agreement (raw and Cohen's kappa) per rubric item and on the decision."""
    from redagent.judges.rounds import agreement

    with _store(db, create=False) as store:
        result = agreement(store, round_id)
    if as_json:
        print_json(result)
        return
    out.print(
        f"{round_id}: {result['cases']} cases; "
        + ", ".join(f"{name} {done}/{result['cases']}" for name, done in result["progress"].items()),
        highlight=False,
    )
    table = Table(title=f"agreement on first reviews ({result['both_reviewed']} cases reviewed by both)")
    for column in ("item", "n", "agreement", "kappa"):
        table.add_column(column)
    for item, entry in result["items"].items():
        kappa = _fmt(entry["kappa"], ".3f") if entry["kappa_defined"] else f"— ({entry['why_undefined']})"
        table.add_row(item, str(entry["n"]), _fmt(entry["agreement"], ".1%"), kappa)
    out.print(table)
