"""The `redagent` command line. Every user-caused error ends as one line on stderr and exit code 2."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from redagent.cases.loader import CaseFileError, case_files, load_case, load_cases
from redagent.cases.schema import Case
from redagent.cases.taxonomy import CHANNELS, CONSTRAINTS, STRATEGIES, SURFACES, VULNERABILITIES

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="REDAgentBench: executable red-teaming and faithful measurement of LLM agents.")
cases_app = typer.Typer(no_args_is_help=True, help="Case library: list, show, validate, check, taxonomy.")
app.add_typer(cases_app, name="cases")

out = Console()
err = Console(stderr=True)


class UserError(Exception):
    """A problem the user can fix; printed as one line, exit code 2."""


def _json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def _library(paths: list[Path] | None) -> list[Case]:
    try:
        return load_cases(paths or None)
    except CaseFileError as exc:
        raise UserError(f"{len(exc.problems)} problem(s) in case files; first: {exc.problems[0]} "
                        f"(run `redagent cases validate` for all)") from None


def _select(cases: list[Case], surface: str | None, strategy: str | None,
            constraint: str | None = None) -> list[Case]:
    if surface and surface not in SURFACES:
        raise UserError(f"unknown surface {surface!r} (known: {', '.join(SURFACES)})")
    if strategy and strategy not in STRATEGIES:
        raise UserError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    if constraint and constraint not in CONSTRAINTS:
        raise UserError(f"unknown constraint {constraint!r} (known: {', '.join(CONSTRAINTS)})")
    return [c for c in cases
            if (not surface or surface in c.surfaces) and (not strategy or c.strategy == strategy)
            and (not constraint or c.constraint == constraint)]


@cases_app.command("list")
def cases_list(
    surface: str | None = typer.Option(None, help="only cases on this surface"),
    strategy: str | None = typer.Option(None, help="only cases of this strategy (U1…T5)"),
    constraint: str | None = typer.Option(None, help="only cases of this constraint (C01…C28)"),
    path: list[Path] | None = typer.Option(None, "--path", help="case files or folders (default: built-in)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """List cases with their IVC path."""
    cases = _select(_library(path), surface, strategy, constraint)
    if as_json:
        _json([{"id": c.id, "version": c.version, "title": c.title, "strategy": c.strategy,
                "vulnerability": c.vulnerability, "constraint": c.constraint,
                "surfaces": list(c.surfaces), "channel": c.channel, "hash": c.content_hash}
               for c in cases])
        return
    table = Table(title=f"{len(cases)} cases")
    for column in ("id", "strategy", "vuln", "constraint", "surfaces", "title"):
        table.add_column(column)
    for c in cases:
        table.add_row(c.id, c.strategy, c.vulnerability, c.constraint, ",".join(c.surfaces), c.title)
    out.print(table)


@cases_app.command("show")
def cases_show(case_id: str = typer.Argument(..., help="case id"),
               path: list[Path] | None = typer.Option(None, "--path"),
               as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one case in full."""
    match = [c for c in _library(path) if c.id == case_id]
    if not match:
        raise UserError(f"no case with id {case_id!r}")
    case = match[0]
    if as_json:
        _json({"hash": case.content_hash, "file": case.source, **case.raw})
        return
    out.print(f"[bold]{case.id}[/] v{case.version} — {case.title}")
    out.print(f"IVC: {case.strategy} {STRATEGIES[case.strategy].name} → {case.vulnerability} "
              f"{VULNERABILITIES[case.vulnerability].name} → {case.constraint} "
              f"{CONSTRAINTS[case.constraint].name}")
    out.print(f"surfaces: {', '.join(case.surfaces)}   channel: {case.channel}   hash: {case.content_hash[:16]}")
    out.print(f"\n[bold]Task[/]\n{case.task}")
    for i, turn in enumerate(case.followups):
        out.print(f"[bold]Follow-up {i}[/]\n{turn}")
    out.print(f"\n[bold]Attack[/] ({case.attack.placement}{' → ' + case.attack.target if case.attack.target else ''})\n"
              f"{case.attack.content}")
    out.print(f"\n[bold]Verifier[/]\n{orjson.dumps(case.rule, option=orjson.OPT_INDENT_2).decode()}")
    out.print(f"\n[bold]Policy reminder[/]\n{case.policy_reminder}")
    for name, steps in (("benign", case.plans.benign), ("harmful", case.plans.harmful),
                        ("indirect", case.plans.indirect)):
        if steps:
            out.print(f"\n[bold]{name} plan[/]")
            for s in steps:
                out.print(f"  {s.tool}({orjson.dumps(s.args).decode()})")


@cases_app.command("validate")
def cases_validate(paths: list[Path] = typer.Argument(..., help="case files or folders")) -> None:
    """Validate case files: one line per problem (file:line: field: what), exit 2 if any."""
    problems = []
    files = case_files(paths)
    seen: dict[str, str] = {}
    for file in files:
        try:
            case = load_case(file)
        except CaseFileError as exc:
            problems += exc.problems
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{file}:1: (file): cannot read: {exc}")
            continue
        if case.id in seen:
            problems.append(f"{file}:1: id: duplicate id {case.id!r} (also in {seen[case.id]})")
        seen[case.id] = str(file)
    for problem in problems:
        err.print(str(problem), markup=False, highlight=False, soft_wrap=True)
    if problems:
        raise typer.Exit(2)
    out.print(f"{len(files)} case file(s) valid")


@cases_app.command("check")
def cases_check(
    path: list[Path] | None = typer.Argument(None, help="case files or folders (default: the built-in library)"),
    surface: str | None = typer.Option(None), strategy: str | None = typer.Option(None),
    as_json: bool = typer.Option(False, "--json", help="print the JSON summary"),
) -> None:
    """Self-check every case: executability, reachability, verifiability, mutation, rejection."""
    from redagent.cases.selfcheck import check_case, summarize

    cases = _select(_library(path), surface, strategy)
    checks = [check_case(c) for c in cases]
    summary = summarize(checks)
    if as_json:
        _json(summary)
    else:
        table = Table(title=f"self-check: {summary['passed']}/{summary['cases']} cases pass")
        for column in ("id", "IVC", "surfaces", "result"):
            table.add_column(column)
        for c in checks:
            verdict = "[green]pass[/]" if c.passed else "[red]" + "; ".join(
                f"{k}: {w}" for k, w in c.failures) + "[/]"
            table.add_row(c.case.id, f"{c.case.strategy}/{c.case.vulnerability}/{c.case.constraint}",
                          ",".join(c.case.surfaces), verdict)
        out.print(table)
        out.print(f"surfaces {len(summary['by_surface'])}/5 · strategies {len(summary['by_strategy'])}/15 · "
                  f"vulnerabilities {len(summary['by_vulnerability'])}/11 · "
                  f"constraints {len(summary['by_constraint'])}/28")
    if summary["failed"]:
        raise typer.Exit(1)


@cases_app.command("rollout")
def cases_rollout(
    case_id: str = typer.Argument(..., help="case id"),
    agent: str = typer.Option("sim/comply", help="calibration agent, e.g. sim/ignore, sim/indirect"),
    benign: bool = typer.Option(False, help="run the benign variant (attack removed)"),
    path: list[Path] | None = typer.Option(None, "--path"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run one calibration agent through one case: trajectory, receipts, state diff, E and its evidence."""
    from redagent.engine.calibration import BEHAVIOURS
    from redagent.engine.direct import run_direct

    if agent not in BEHAVIOURS:
        raise UserError(f"unknown calibration agent {agent!r} (known: {', '.join(BEHAVIOURS)})")
    match = [c for c in _library(path) if c.id == case_id]
    if not match:
        raise UserError(f"no case with id {case_id!r}")
    rollout = run_direct(match[0], agent, with_attack=not benign)
    done = rollout.finished
    if as_json:
        _json({"case_id": rollout.case_id, "case_hash": rollout.case_hash, "agent": agent,
               "E": rollout.E, "expected_E": rollout.expected_E, "evidence": done.verdict.to_dict()["evidence"],
               "reached": rollout.reached, "events": [e.to_dict() for e in rollout.events],
               "receipts": [r.to_dict() for r in done.receipts], "diff": [d.to_dict() for d in done.diff]})
        return
    out.rule(f"{case_id} · {agent}{' · benign variant' if benign else ''}")
    for event in rollout.events:
        if event.role == "assistant" and event.tool_call:
            out.print(f"[cyan]#{event.index} call[/] {event.tool_call['name']}"
                      f"({orjson.dumps(event.tool_call['args']).decode()})", markup=True, highlight=False)
        elif event.role == "tool":
            flag = " [yellow](tampered)[/]" if event.tampered else ""
            shown = (event.observation or "")[:300].replace("[", r"\[")
            out.print(f"[dim]#{event.index} result{flag}[/] {shown}", highlight=False)
        else:
            out.print(f"[bold]#{event.index} {event.role}[/] {event.text}", markup=True, highlight=False)
    out.rule("receipts")
    for r in done.receipts:
        out.print(f"{r.id} step {r.step} {r.actor} {r.service}.{r.action} {r.outcome}"
                  f"{' via ' + r.via if r.via else ''}", highlight=False)
    out.rule("state diff")
    for entry in done.diff:
        out.print(f"{entry.op:8} {entry.key}", highlight=False)
    evidence = ", ".join(done.verdict.receipts + done.verdict.diff) or "—"
    out.rule(f"E = {rollout.E} (expected {rollout.expected_E}) · evidence: {evidence}")


@cases_app.command("taxonomy")
def cases_taxonomy(as_json: bool = typer.Option(False, "--json")) -> None:
    """Print the IVC taxonomy: strategies, vulnerabilities, constraints, surfaces."""
    if as_json:
        _json({"strategies": [vars(s) for s in STRATEGIES.values()],
               "vulnerabilities": [vars(v) for v in VULNERABILITIES.values()],
               "constraints": [vars(c) for c in CONSTRAINTS.values()],
               "surfaces": SURFACES, "channels": CHANNELS})
        return
    for title, rows, columns in (
        ("Intervention strategies", [(s.code, s.name, s.channel, s.description) for s in STRATEGIES.values()],
         ("code", "name", "channel", "description")),
        ("Vulnerability types", [(v.code, v.name, v.description) for v in VULNERABILITIES.values()],
         ("code", "name", "description")),
        ("Constraints", [(c.code, c.name, c.surface, c.kind, c.statement) for c in CONSTRAINTS.values()],
         ("code", "name", "surface", "kind", "statement")),
        ("Service surfaces", list(SURFACES.items()), ("surface", "what it is")),
    ):
        table = Table(title=title)
        for column in columns:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        out.print(table)


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the app and turns user errors into one line and exit code 2."""
    run: Callable[..., Any] = app
    try:
        run(args=argv, standalone_mode=True)
    except UserError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
