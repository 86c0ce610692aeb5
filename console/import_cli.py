"""`redagent import inspect LOG...`: Inspect AI eval logs that `redagent export --format inspect` wrote, brought into
the store as a run (judges/inspect_import.py). Errors take cli_common's one-line path."""

from __future__ import annotations

from pathlib import Path

import typer

from redagent.console.cli_common import DB_OPTION, Commands, examples, opened_store, out, print_json

import_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="Bring runs made elsewhere into the store.",
    epilog=examples("redagent import inspect logs/run-3fa2"),
)


@import_app.command(
    "inspect",
    epilog=examples(
        "redagent import inspect logs/run-3fa2",
        "redagent import inspect logs/run-3fa2/*.eval --db other.db",
    ),
)
def import_inspect(
    logs: list[Path] = typer.Argument(..., help="Inspect logs (.eval or .json), or folders of them; one run"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """An exported run's Inspect logs into the store as that run: rollouts with their events, receipts, snapshots,
    diff, E and U, and its judge and recognition labels (needs the inspect extra: pip install -e '.\\[inspect]')."""
    from redagent.judges.inspect_import import import_logs

    with opened_store(db) as store:
        result = import_logs(store, logs)
    if as_json:
        print_json(result.to_dict())
        return
    out.print(
        f"run {result.run_id}: {result.rollouts} rollouts, {result.judge_labels} judge labels and "
        f"{result.recognition_labels} recognition labels from {result.logs} Inspect logs",
        highlight=False,
        soft_wrap=True,
    )
