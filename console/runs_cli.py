"""`redagent runs …`: the stored runs — list them, and show one's protocol and summary. Read-only: a missing
store is "no store at …", never created. Errors take cli_common's one-line path."""

from __future__ import annotations

import typer
from rich.table import Table

from redagent.console.cli_common import DB_OPTION, Commands, examples, opened_store, out, print_json
from redagent.console.run_cli import print_summary, with_utility

runs_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="Stored runs: list and show.",
    epilog=examples("redagent runs list", "redagent runs show run-3fa2 --json"),
)


@runs_app.command("list", epilog=examples("redagent runs list --db .redagent/redagent.db --json"))
def runs_list(db: str | None = DB_OPTION, as_json: bool = typer.Option(False, "--json")) -> None:
    """Every stored run, newest first."""
    with opened_store(db, create=False) as store:
        runs = store.list_runs()
    if as_json:
        print_json(
            [{"run_id": r.run_id, "status": r.status, "planned": r.planned, "completed": r.completed} for r in runs]
        )
        return
    table = Table(title=f"{len(runs)} runs")
    for column in ("run", "status", "completed", "planned", "created"):
        table.add_column(column)
    for r in runs:
        table.add_row(r.run_id, r.status, str(r.completed), str(r.planned), str(r.created_at)[:19])
    out.print(table)


@runs_app.command("show", epilog=examples("redagent runs show run-3fa2"))
def runs_show(
    run_id: str = typer.Argument(...), db: str | None = DB_OPTION, as_json: bool = typer.Option(False, "--json")
) -> None:
    """A run's protocol, counts, execution ASR per cell with valid denominators, invalid reasons."""
    from redagent.engine.matrix import summary

    with opened_store(db, create=False) as store:
        result = with_utility(store, summary(store, run_id))
    if as_json:
        print_json(result)
        return
    protocol = result["protocol"]
    out.print(
        f"protocol: cases {protocol['cases']} · models {', '.join(protocol['models'])} · harnesses "
        f"{', '.join(protocol['harnesses'])} · cues {', '.join(protocol['cues'])} · defenses "
        f"{', '.join(protocol['defenses'])} · attempts {protocol['attempts']}"
        + (f" · max tokens {protocol['max_tokens']}" if protocol.get("max_tokens") else "")
        + f" · tool choice {protocol.get('tool_choice') or 'not sent'} · benign arm "
        f"{'on' if protocol.get('benign_arm') else 'off'} · code {result['code_version']}"
        + "".join(
            f" · benchmark v{v} (manifest {(h or 'not frozen')[:12]})"
            for v, h in (protocol.get("benchmarks") or {}).items()
        ),
        highlight=False,
    )
    print_summary(result)
