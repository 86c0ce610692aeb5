"""`redagent runs …`: the stored runs — list them, show one's protocol and summary, verify its evidence against its
hash chain. Read-only: a missing store is "no store at …", never created. Errors take cli_common's one-line path."""

from __future__ import annotations

import typer
from rich.table import Table

from redagent.console.cli_common import DB_OPTION, Commands, err, examples, fail, opened_store, out, print_json
from redagent.console.run_cli import print_summary, with_utility

runs_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="Stored runs: list, show, verify.",
    epilog=examples("redagent runs list", "redagent runs show run-3fa2 --json", "redagent runs verify run-3fa2"),
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


@runs_app.command(
    "verify",
    epilog=examples("redagent runs verify run-3fa2", "redagent runs verify run-3fa2 --head 5c1f… --json"),
)
def runs_verify(
    run_id: str = typer.Argument(...),
    head: str | None = typer.Option(
        None, "--head", help="a head from an export or Inspect log of this run: it must be in the run's chain"
    ),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Recompute the run's evidence chain from what the store holds now — every rollout with its events, receipts,
    snapshots and diff, every label, every recorded correction — and say whether it is as written: exit 0 when it
    is, 1 naming the first record that differs. With --head, also where an export's head sits in the chain (the run
    may have grown since); a head nowhere in it means the chain was rewritten since that export."""
    if head is not None and (len(head) != 64 or any(c not in "0123456789abcdef" for c in head.lower())):
        fail(f"--head {head[:80]!r}: a head is 64 hexadecimal digits (an export's `chain.head`)")
    with opened_store(db, create=False) as store:
        check = store.verify_evidence(run_id, head.lower() if head else None)
    exported = None
    if head is not None:
        exported = (
            f"the export's head is record {check.export_seq} of {check.records}"
            if check.export_seq is not None
            else "the export's head is nowhere in this run's chain: the chain was rewritten since that export"
        )
    if as_json:
        print_json({**check.to_dict(), "export": exported})
    elif check.intact and (head is None or check.export_seq is not None):
        out.print(
            f"run {run_id}: evidence as written — {check.records} records, head {check.head}"
            + (f"; {exported}" if exported else ""),
            highlight=False,
            soft_wrap=True,
        )
    else:
        first = check.first.line() if check.first is not None else exported
        more = f" (and {len(check.differences) - 1} more: --json lists them)" if len(check.differences) > 1 else ""
        err.print(
            f"run {run_id}: the evidence differs from its chain at {first}{more}", highlight=False, soft_wrap=True
        )
    if not check.intact or (head is not None and check.export_seq is None):
        raise typer.Exit(1)
