"""`redagent cases import agentdojo` (AgentDojo's suite as case files, cases/agentdojo.py) and `redagent cases
agentdojo-diff` (the same plans through AgentDojo and the imported cases, cases/agentdojo_diff.py). Both need the
agentdojo extra (make agentdojo). Errors take cli_common's one-line path."""

from __future__ import annotations

from pathlib import Path

import typer

from redagent.console.cli_common import Commands, examples, out, print_json

import_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="Write cases from another benchmark's installed package.",
    epilog=examples("redagent cases import agentdojo --suite banking --out build/agentdojo"),
)


@import_app.command(
    "agentdojo", epilog=examples("redagent cases import agentdojo --suite banking --out build/agentdojo")
)
def import_agentdojo(
    suite: str = typer.Option("banking", "--suite", help="the AgentDojo suite (banking)"),
    out_dir: Path = typer.Option(..., "--out", help="folder the case files are written to"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Every user task × injection task pair of the installed AgentDojo suite as a case file; the pairs not
    converted are listed with the reason (needs the agentdojo extra: pip install -e '.\\[agentdojo]')."""
    from redagent.cases.agentdojo import BENCHMARK_VERSION, PINNED, convert, write

    _, pairs = convert(suite)
    written = write(pairs, out_dir)
    skipped = [p for p in pairs if p.case is None]
    if as_json:
        print_json(
            {
                "agentdojo": PINNED,
                "benchmark": BENCHMARK_VERSION,
                "suite": suite,
                "pairs": len(pairs),
                "converted": len(written),
                "out": str(out_dir),
                "not_converted": [
                    {"user_task": p.user_task, "injection_task": p.injection_task, "reason": p.reason} for p in skipped
                ],
            }
        )
        return
    out.print(
        f"AgentDojo {PINNED} ({BENCHMARK_VERSION}) {suite}: {len(written)} of {len(pairs)} pairs converted, "
        f"written to {out_dir}",
        highlight=False,
        soft_wrap=True,
    )
    for p in skipped:
        out.print(f"  not converted: {p.user_task} × {p.injection_task}: {p.reason}", highlight=False, soft_wrap=True)


def agentdojo_diff(
    folder: Path = typer.Argument(..., help="a folder `cases import agentdojo` wrote"),
    sample: int | None = typer.Option(None, "--sample", help="compare a seeded sample of this many cases"),
    as_json: bool = typer.Option(False, "--json", help="the full report, every divergence listed"),
) -> None:
    """AgentDojo's ground-truth, injection and probe plans through both systems: AgentDojo's security() and
    utility() on its own environment against E and U of the imported case; agreement by plan kind, and each
    divergence with what its case records (needs the agentdojo extra)."""
    from redagent.cases.agentdojo import load_suite
    from redagent.cases.agentdojo_diff import compare, imported_cases

    cases = imported_cases(folder)
    if not cases:
        from redagent.console.cli_common import fail

        fail(f"{folder}: no imported AgentDojo cases (agentdojo-banking-*.yaml) in it")
    report = compare(load_suite(), cases, sample=sample)
    data = report.to_dict()
    if as_json:
        print_json(data)
        return
    out.print(f"{data['cases']} cases, {data['plans']} plans through both systems", highlight=False)
    for kind, checks in data["by_kind"].items():
        cells = "  ".join(
            f"{check} " + " ".join(f"{k} {n}" for k, n in sorted(counts.items())) for check, counts in checks.items()
        )
        out.print(f"  {kind:<22} {cells}", highlight=False, soft_wrap=True)
    totals = "  ".join(
        f"{check} " + " ".join(f"{k} {n}" for k, n in sorted(c.items())) for check, c in data["totals"].items()
    )
    out.print(f"  {'total':<22} {totals}", highlight=False, soft_wrap=True)
    if data["divergences_by_kind"]:
        out.print("divergences by kind:", highlight=False)
        for kind, n in sorted(data["divergences_by_kind"].items()):
            out.print(f"  {kind}: {n}", highlight=False)
