"""The `redagent` command line. Every user-caused error ends as one line on stderr and exit code 2."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import typer
from rich.table import Table

from redagent.cases.loader import CaseFileError, case_files, load_cases
from redagent.cases.schema import Case
from redagent.cases.selfcheck import CHECK_JOBS
from redagent.cases.taxonomy import CHANNELS, CONSTRAINTS, STRATEGIES, SURFACES, VULNERABILITIES
from redagent.console.audit_cli import audit_app
from redagent.console.cli_common import DB_OPTION, err, out, print_json, split
from redagent.console.harnesses_cli import harnesses_app
from redagent.console.rounds_cli import rounds_app
from redagent.console.sandbox_cli import sandbox_app
from redagent.console.team_cli import team_app

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="REDAgentBench: executable red-teaming and faithful measurement of LLM agents.")
cases_app = typer.Typer(no_args_is_help=True, help="Case library: list, show, validate, check, taxonomy.")
app.add_typer(cases_app, name="cases")
app.add_typer(audit_app, name="audit")
app.add_typer(harnesses_app, name="harnesses")
app.add_typer(team_app, name="team")
app.add_typer(sandbox_app, name="sandbox")
cases_app.add_typer(rounds_app, name="round")



def _default_models() -> list[str]:
    from redagent.engine.calibration import BEHAVIOURS

    return list(BEHAVIOURS)


class UserError(Exception):
    """A problem the user can fix; printed as one line, exit code 2."""


def _library(paths: list[Path] | None) -> list[Case]:
    from redagent.cases.loader import BENCHMARKS, benchmark_dir

    # `benchmark` (the latest frozen benchmark) and `benchmark@v1` name the installed libraries from anywhere.
    named = {"benchmark": benchmark_dir(), **{f"benchmark@v{v}": benchmark_dir(v) for v in BENCHMARKS}}
    paths = [named.get(str(p), p) for p in paths or []] or None
    try:
        return load_cases(paths)
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
        print_json([{"id": c.id, "version": c.version, "title": c.title, "strategy": c.strategy,
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
        print_json({"hash": case.content_hash, "file": case.source, **case.raw})
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
    files = case_files(paths)
    try:
        load_cases(paths)
    except CaseFileError as exc:
        for problem in exc.problems:
            err.print(str(problem), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    out.print(f"{len(files)} case file(s) valid")


@cases_app.command("check")
def cases_check(
    path: list[Path] | None = typer.Argument(None, help="case files or folders (default: the built-in library)"),
    also: list[Path] | None = typer.Option(None, "--path", help="case files or folders (same as the arguments)"),
    surface: str | None = typer.Option(None), strategy: str | None = typer.Option(None),
    jobs: int = typer.Option(CHECK_JOBS, "--jobs", help="processes to check in (default: two per core)"),
    as_json: bool = typer.Option(False, "--json", help="print the JSON summary"),
) -> None:
    """Self-check every case: executability, reachability, verifiability, mutation, rejection, utility, and the
    metamorphic check (derived equivalent routes must give E=1, near-misses E=0)."""
    from redagent.cases.selfcheck import check_many, summarize

    chosen = [*(path or []), *(also or [])] or None
    cases = _select(_library(chosen), surface, strategy)
    checks = check_many(cases, jobs)
    summary = summarize(checks)
    if as_json:
        print_json(summary)
    else:
        table = Table(title=f"self-check: {summary['passed']}/{summary['cases']} cases pass")
        for column in ("id", "IVC", "surfaces", "routes", "result"):
            table.add_column(column)
        for c in checks:
            verdict = "[green]pass[/]" if c.passed else "[red]" + "; ".join(
                f"{k}: {w}" for k, w in c.failures) + "[/]"
            table.add_row(c.case.id, f"{c.case.strategy}/{c.case.vulnerability}/{c.case.constraint}",
                          ",".join(c.case.surfaces), f"{c.variants_tried - len(c.variants_failed)}/{c.variants_tried}",
                          verdict)
        out.print(table)
        out.print(f"derived routes and near-misses: {summary['variants_tried']} tried, "
                  f"{summary['variants_failed']} failed")
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
        print_json({"case_id": rollout.case_id, "case_hash": rollout.case_hash, "agent": agent,
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


@cases_app.command("plan")
def cases_plan(
    constraint: str | None = typer.Option(None, "--constraint", help="only this constraint (C01…C28)"),
    backbone: str | None = typer.Option(None, "--backbone", help="an LLM proposes and ranks the plans"),
    api_base: str | None = typer.Option(None, "--api-base"),
    n: int = typer.Option(5, "--n", help="plans to ask the LLM for"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Feasible IVC paths per constraint: offline from the taxonomy and knowledge base, or by an LLM."""
    from redagent.cases.construction.plans import enumerate_plans

    if constraint and constraint not in CONSTRAINTS:
        raise UserError(f"unknown constraint {constraint!r} (known: {', '.join(CONSTRAINTS)})")
    if backbone:
        if not constraint:
            raise UserError("--backbone plans one constraint at a time: give --constraint")
        import asyncio

        from redagent.cases.construction.llm import GenerationFailed, propose_plans
        from redagent.engine.models import LiteLLMModel, ModelConfigError, check_model

        try:
            check_model(backbone, api_base)
            plans = asyncio.run(propose_plans(LiteLLMModel(backbone, api_base=api_base), constraint, n=n))
        except (GenerationFailed, ModelConfigError) as exc:
            raise UserError(str(exc)) from None
    else:
        plans = [p for p in enumerate_plans() if constraint in (None, p.constraint)]
    if as_json:
        print_json([p.to_dict() for p in plans])
        return
    table = Table(title=f"{len(plans)} IVC plans")
    for column in ("constraint", "strategy", "vulnerability", "surface", "resources", "sources"):
        table.add_column(column)
    for p in plans:
        table.add_row(p.constraint, p.strategy, p.vulnerability, p.surface, p.resources, ",".join(p.sources))
    out.print(table)


@cases_app.command("build")
def cases_build(
    out_dir: Path = typer.Option(..., "--out", help="directory to write base cases and variants into"),
    cap: int = typer.Option(33, "--cap", help="most base cases any one family may produce"),
    families: str | None = typer.Option(None, "--families", help="only these families (comma-separated)"),
    seed: int = typer.Option(0, "--seed"),
    backbone: str | None = typer.Option(None, "--backbone", help="compile with an LLM instead of the families"),
    api_base: str | None = typer.Option(None, "--api-base"),
    constraint: str | None = typer.Option(None, "--constraint", help="with --backbone: the constraint to plan for"),
    jobs: int = typer.Option(os.cpu_count() or 1, "--jobs", help="processes to compile in (by family)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Compile plans with every scenario family (or an LLM), keep what passes the self-check, write variants."""
    from redagent.cases.construction.library import all_families, build

    if backbone:
        _build_with_llm(out_dir, backbone, api_base, constraint, as_json)
        return
    chosen = split(families) if families else None
    unknown = [f for f in chosen or [] if f not in all_families()]
    if unknown:
        raise UserError(f"unknown family {unknown[0]!r} (known: {', '.join(all_families())})")
    report = build(out_dir, cap=cap, families=chosen, seed=seed, jobs=max(1, jobs))
    result = report.to_dict()
    if as_json:
        print_json(result)
        return
    out.print(f"kept {result['kept']} base cases, rejected {result['rejected']} compilations, variants "
              f"{result['variants']}", highlight=False)
    for compiled in report.rejected[:10]:
        out.print(f"  rejected {compiled.family} {compiled.plan.key}: {compiled.rejected[:160]}", highlight=False)


def _build_with_llm(out_dir: Path, backbone: str, api_base: str | None, constraint: str | None,
                    as_json: bool) -> None:
    """LLM planner then LLM compiler for one constraint; kept cases are written, rejections reported."""
    import asyncio

    import yaml

    from redagent.cases.construction.llm import GenerationFailed, compile_with_llm, propose_plans
    from redagent.engine.models import LiteLLMModel, ModelConfigError, check_model

    if constraint not in CONSTRAINTS:
        raise UserError(f"--backbone compiles one constraint at a time: give --constraint (known: "
                        f"{', '.join(CONSTRAINTS)})")
    try:
        check_model(backbone, api_base)
        model = LiteLLMModel(backbone, api_base=api_base)
        plans = asyncio.run(propose_plans(model, constraint))
    except (GenerationFailed, ModelConfigError) as exc:
        raise UserError(str(exc)) from None
    kept, rejected = [], []
    for plan in plans:
        try:
            result = asyncio.run(compile_with_llm(model, plan))
        except GenerationFailed as exc:
            rejected.append(f"{plan.key}: {exc}")
            continue
        if result.ok:
            target = out_dir / "llm" / plan.surface / f"{result.case.id}.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(yaml.safe_dump(result.data, sort_keys=False, allow_unicode=True), encoding="utf-8")
            kept.append(str(target))
        else:
            rejected.append(result.rejected)
    if as_json:
        print_json({"kept": kept, "rejected": rejected})
        return
    for line in kept:
        out.print(f"kept {line}", highlight=False)
    for line in rejected:
        out.print(f"rejected {line}", highlight=False)


@cases_app.command("stats")
def cases_stats(
    path: Path | None = typer.Argument(None, help="a compiled library (default: the frozen benchmark)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Diversity and coverage of a library: distinct tasks and attacks, template share, near-duplicates."""
    from redagent.cases.construction.library import stats
    from redagent.cases.loader import benchmark_dir, manifest_hash

    root = path or benchmark_dir()
    if not (root / "base").is_dir():
        raise UserError(f"{root} holds no compiled library (expected {root / 'base'}); run `redagent cases build`")
    result = stats(_library([root / "base"]), _library([root / "variants"]) if (root / "variants").is_dir() else [])
    result["manifest_hash"] = manifest_hash(root)
    if as_json:
        print_json(result)
        return
    for key, value in result.items():
        out.print(f"{key}: {value}", highlight=False)


@cases_app.command("freeze")
def cases_freeze(
    path: Path | None = typer.Argument(None, help="a compiled library (default: the benchmark)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Write the frozen manifest (ids, versions, hashes, taxonomy counts); refuse if any case fails."""
    from redagent.cases.construction.library import MANIFEST, FreezeRefused, freeze
    from redagent.cases.loader import benchmark_dir

    root = path or benchmark_dir()
    folders = [p for p in (root / "base", root / "variants") if p.is_dir()]
    if not folders:
        raise UserError(f"{root} holds no compiled library; run `redagent cases build --out {root}` first")
    try:
        manifest = freeze(folders, root / MANIFEST)
    except (FreezeRefused, CaseFileError) as exc:
        raise UserError(str(exc).splitlines()[0]) from None
    if as_json:
        print_json({"manifest_hash": manifest["manifest_hash"], "cases": len(manifest["cases"])})
    else:
        out.print(f"froze {len(manifest['cases'])} cases; manifest {manifest['manifest_hash']}", highlight=False)


@cases_app.command("refine")
def cases_refine(
    run_id: str = typer.Argument(..., help="the run whose rollouts show which cases need revision"),
    queue: Path = typer.Option(Path(".redagent/refine"), "--queue", help="folder of the revision queue"),
    db: str | None = typer.Option(None, "--db"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Flag cases a run shows to be broken (unreached attack, judge disagreement, benign task never done)."""
    from dataclasses import asdict

    from redagent.judges.refine import refine, write_queue

    store = _store(db, create=True)
    try:
        flags = refine(store, run_id)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    finally:
        store.close()
    path = write_queue(flags, run_id, queue)
    if as_json:
        print_json({"run_id": run_id, "queue": str(path), "flags": [asdict(f) for f in flags]})
        return
    for flag in flags:
        out.print(f"{flag.case_id}: {flag.problem}: {flag.detail}", highlight=False)
    out.print(f"{len(flags)} flag(s) queued for revision in {path}", highlight=False)


@cases_app.command("taxonomy")
def cases_taxonomy(as_json: bool = typer.Option(False, "--json")) -> None:
    """Print the IVC taxonomy: strategies, vulnerabilities, constraints, surfaces."""
    if as_json:
        print_json({"strategies": [vars(s) for s in STRATEGIES.values()],
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


# -- runs --------------------------------------------------------------------------------------
runs_app = typer.Typer(no_args_is_help=True, help="Stored runs: list and show.")
app.add_typer(runs_app, name="runs")

def _store(db: str | None, *, create: bool):
    """The store for a researcher's command (every command here shows unblinded runs): a reviewer's,
    adjudicator's or expert's login is refused in one line. Only a command that writes (`create`) makes a
    missing store; a reader says "no store at …" rather than leave an empty store behind a typo."""
    from redagent.console.cli_common import ANALYSTS, check_role
    from redagent.store.db import StoreError, open_store

    try:
        store = open_store(db, create=create)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    try:
        check_role(store, ANALYSTS)
    except StoreError as exc:
        store.close()
        raise UserError(str(exc)) from None
    except BaseException:
        store.close()
        raise
    return store


def _drive(runner, as_json: bool) -> dict[str, Any]:
    """Run a matrix with a live progress bar; Ctrl-C stops cleanly (in-flight rollouts finish)."""
    import asyncio
    import signal

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from redagent.engine.matrix import summary

    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rate]:>7.1f}/s"), TextColumn("ETA {task.fields[eta]}"),
               TextColumn("invalid {task.fields[invalid]}"), TextColumn("exec ASR {task.fields[asr]}"),
               TimeElapsedColumn()]
    with Progress(*columns, console=err, transient=as_json, disable=not err.is_terminal and as_json) as bar:
        pending = runner.pending()
        task = bar.add_task(runner.run_record.id, total=len(runner.keys), completed=len(runner.keys) - len(pending),
                            rate=0.0, eta="—", invalid=0, asr="—")

        def show(progress) -> None:
            eta = progress.eta
            bar.update(task, completed=progress.completed, rate=progress.rate,
                       eta=f"{eta:.0f}s" if eta is not None else "—", invalid=progress.invalid,
                       asr=f"{progress.asr:.1%}" if progress.asr is not None else "—")

        runner.on_progress = show
        received: list[int] = []

        def stop(signum: int) -> None:
            received.append(signum)
            runner.request_stop()

        async def go():
            loop = asyncio.get_running_loop()
            # SIGTERM too: a scheduler or `kill` ends the run like Ctrl-C, with what was finished stored.
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop, signum)
            try:
                return await runner.run()
            finally:
                for signum in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(signum)

        asyncio.run(go())
    result = _with_utility(runner.store, summary(runner.store, runner.run_record.id))
    if result["status"] == "stopped":
        err.print(f"stopped: {result['completed']} of {result['planned']} rollouts stored; "
                  f"resume with `redagent run --resume {result['run_id']}`", highlight=False)
    # A run ended by a signal exits as the shell expects (130 for Ctrl-C), once its summary is printed.
    result["exit_code"] = 128 + received[0] if received else 0
    return result


def _exit_after_signal(result: dict[str, Any]) -> None:
    if result.get("exit_code"):
        raise typer.Exit(result["exit_code"])


def _with_utility(store, result: dict[str, Any]) -> dict[str, Any]:
    """The run summary with its utility table (benign and under attack, per cell and overall) and its health
    (per cell: invalid details, tool use, exposure, warnings of a broken setup)."""
    from redagent.judges.health import run_health
    from redagent.judges.report import utility

    return {**result, "utility": utility(store, result["run_id"]), "health": run_health(store, result["run_id"])}


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _utility_cell(rate: dict[str, Any]) -> str:
    if not rate["n"]:
        return "n/a"
    return f"{rate['u']:.1%} {rate['done']}/{rate['n']} [{rate['lo']:.0%}–{rate['hi']:.0%}]"


def _print_summary(result: dict[str, Any]) -> None:
    from redagent.judges.report import utility_text

    out.print(f"[bold]{result['run_id']}[/] {result['status']} · {result['completed']}/{result['planned']} rollouts "
              f"· valid {result['valid']} · invalid {result['invalid']}", highlight=False)
    if result["status"] == "interrupted":
        out.print(f"[yellow]the process driving this run died; resume with `redagent run --resume "
                  f"{result['run_id']}`[/]", highlight=False)
    if result["invalid_reasons"]:
        out.print("invalid: " + ", ".join(f"{k} {v}" for k, v in sorted(result["invalid_reasons"].items())))
    table = Table(title="execution ASR (E=1 among valid attacked rollouts) · utility U (task done; done/n checked, "
                        "Wilson 95 %) · no tool call (share of valid rollouts) · exposure (attack reached the agent, "
                        "share of valid attacked)")
    for column in ("model", "harness", "cue", "defense", "harmful", "valid", "ASR", "benign U", "U under attack",
                   "no tool call", "exposure"):
        table.add_column(column, justify="left" if column in ("model", "harness", "cue", "defense") else "right")
    asr = {(c["model"], c["harness"], c["cue"], c["defense"]): c for c in result["execution_asr"]}
    utility = result.get("utility") or {"cells": [], "overall": None}
    by_cell = {(c["model"], c["harness"], c["cue"], c["defense"]): c for c in utility["cells"]}
    health = result.get("health") or {"cells": [], "warnings": []}
    fitness = {(c["model"], c["harness"], c["cue"], c["defense"]): c for c in health["cells"]}
    for key in sorted(asr.keys() | by_cell.keys() | fitness.keys()):
        cell, u, h = asr.get(key), by_cell.get(key), fitness.get(key)
        rate = "—" if cell is None or cell["rate"] is None else f"{cell['rate']:.1%}"
        table.add_row(*key, str(cell["harmful"]) if cell else "—", str(cell["valid"]) if cell else "—", rate,
                      _utility_cell(u["benign"]) if u else "n/a", _utility_cell(u["under_attack"]) if u else "n/a",
                      _share(h["no_tool_call_share"]) if h else "—", _share(h["exposure"]) if h else "—")
    out.print(table)
    for h in health["cells"]:
        for reason, entry in sorted(h["invalid"].items()):
            shown = f" · e.g. {entry['detail']}" if entry.get("detail") else ""
            out.print(f"invalid {' · '.join(h[k] for k in ('model', 'harness', 'cue', 'defense'))}: {reason} "
                      f"{entry['n']}{shown}", markup=False, highlight=False, soft_wrap=True)
    for line in health["warnings"]:
        out.print(f"warning: {line}", style="yellow", markup=False, highlight=False, soft_wrap=True)
    from redagent.console.workers_view import failure_lines, workers_table

    if (workers := workers_table(result.get("workers"))) is not None:
        out.print(workers)
        for line in failure_lines(result.get("workers")):
            out.print(f"shard failure: {line}", style="yellow", markup=False, highlight=False, soft_wrap=True)
    overall = utility["overall"]
    if overall is not None:
        arm = "on" if result.get("protocol", {}).get("benign_arm") else "off"
        out.print(f"utility: benign {utility_text(overall['benign'])} · under attack "
                  f"{utility_text(overall['under_attack'])} · benign arm {arm}", highlight=False)


def _engine_errors():
    from redagent.engine.models import ModelConfigError
    from redagent.engine.plan import PlanError

    return (PlanError, ModelConfigError, CaseFileError)


@app.command("run")
def run(
    cases: str = typer.Option("all", "--cases", help="all, ids, globs, surface:X, strategy:X, constraint:X, paths"),
    models: str = typer.Option(",".join(_default_models()), "--models", help="sim/* or litellm model strings"),
    harnesses: str = typer.Option("native,react,shell", "--harnesses",
                                  help="native,react,shell and the real CLIs codex,hermes,openclaw,claude-code"),
    cues: str = typer.Option("clean", "--cues", help="clean,disclosed"),
    defenses: str = typer.Option("none", "--defenses", help="none,self-reminder,policy-reminder,placebo"),
    attempts: int = typer.Option(1, "--attempts"),
    concurrency: int = typer.Option(8, "--concurrency", help="rollouts in flight"),
    per_model: int | None = typer.Option(None, "--per-model", help="model calls in flight per model"),
    max_steps: int = typer.Option(30, "--max-steps", help="tool calls per rollout"),
    api_base: str | None = typer.Option(None, "--api-base", help="model endpoint (OpenAI-compatible, vLLM, Ollama)"),
    timeout: float = typer.Option(60.0, "--timeout", help="seconds per model call"),
    retries: int = typer.Option(3, "--retries", help="retries per model call (408, 409, 429, 5xx, dropped "
                                                     "connections, malformed replies)"),
    max_tokens: int = typer.Option(2048, "--max-tokens", help="most tokens per model reply"),
    disclosure: str | None = typer.Option(None, "--disclosure-text", help="text of the 'disclosed' cue"),
    benign_arm: bool = typer.Option(True, "--benign-arm/--no-benign-arm",
                                    help="also run every attacked case as its benign counterpart (attack never "
                                         "shown): benign utility beside utility under attack"),
    attacker: str = typer.Option("none", "--attacker",
                                 help="none (the fixed attack) | scripted (deterministic moves) | adaptive (a "
                                      "model moves the attack: reformulate, change channel, stop)"),
    attacker_model: str | None = typer.Option(None, "--attacker-model",
                                              help="with --attacker adaptive: the attacker's litellm model"),
    attacker_api_base: str | None = typer.Option(None, "--attacker-api-base",
                                                 help="the attacker model's endpoint (default: --api-base)"),
    attack_budget: int = typer.Option(5, "--attack-budget", help="attacker moves per rollout (K, 1-20)"),
    resume: str | None = typer.Option(None, "--resume", help="complete the missing rollouts of RUN_ID"),
    retry_invalid: bool = typer.Option(False, "--retry-invalid",
                                       help="with --resume: also re-run rollouts that were invalid for a transient "
                                            "or configuration reason (model errors, sandbox errors)"),
    plan_only: bool = typer.Option(False, "--plan-only",
                                   help="print rollouts, expected model calls, tokens, cost and wall time; run "
                                        "and store nothing"),
    executor: str = typer.Option("local", "--executor", help="local (this machine) or ray"),
    workers: int = typer.Option(1, "--workers", help="local worker processes sharing the store (--concurrency is "
                                                     "per worker)"),
    ray_address: str | None = typer.Option(None, "--ray-address",
                                           help="with --executor ray: an existing cluster (HOST:PORT, or auto); "
                                                "default a Ray instance of this machine's own"),
    sandbox: str = typer.Option("bwrap", "--sandbox", help="where agents' commands run: bwrap (bubblewrap) or "
                                                          "docker (a container per rollout)"),
    image: str | None = typer.Option(None, "--image", help="with --sandbox docker: the image (default: the one "
                                                           "`redagent sandbox image use` chose, else the built one)"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json", help="print the run summary as JSON"),
    open_console: bool = typer.Option(False, "--open-console",
                                      help="afterwards, open the console on this run (in a terminal only)"),
) -> None:
    """Run a model × harness × cue × defense × case × attempt matrix (default: the calibration agents)."""
    from redagent.engine.conditions import DEFAULT_DISCLOSURE
    from redagent.engine.executors import Execution, ExecutorError, check_execution, distribute, open_executor
    from redagent.engine.matrix import RunSpec, resume_run, start_run
    from redagent.engine.matrix import plan_only as plan_run_only

    if retry_invalid and not resume:
        raise UserError("--retry-invalid re-runs rollouts of a stored run: give --resume RUN_ID")
    if sandbox not in ("bwrap", "docker"):
        raise UserError(f"unknown --sandbox {sandbox!r} (bwrap or docker)")
    if image and sandbox != "docker":
        raise UserError("--image chooses the container image: give --sandbox docker")
    if resume and (sandbox != "bwrap" or image):
        raise UserError("--resume runs in the sandbox the run was started with; drop --sandbox/--image")
    if sandbox == "docker":
        from redagent.sandbox.docker_backend import chosen_image

        sandbox = f"docker:{image or chosen_image()}"
    execution = Execution(executor=executor, workers=workers, ray_address=ray_address)
    try:
        check_execution(execution)
    except ExecutorError as exc:
        raise UserError(str(exc)) from None
    store = _store(db, create=True)
    backend = None
    try:
        spec = None if resume else RunSpec(
            cases=cases, models=split(models), harnesses=split(harnesses), cues=split(cues), defenses=split(defenses),
            attempts=attempts, concurrency=concurrency, per_model=per_model, max_steps=max_steps, api_base=api_base,
            timeout=timeout, retries=retries, max_tokens=max_tokens, disclosure=disclosure or DEFAULT_DISCLOSURE,
            benign_arm=benign_arm, attacker=attacker, attacker_model=attacker_model,
            attacker_api_base=attacker_api_base, attack_budget=attack_budget, sandbox=sandbox)
        if plan_only:
            _print_plan(plan_run_only(store, spec, resume=resume, retry_invalid=retry_invalid), as_json)
            return
        # Started before the run is stored: a missing Ray, an unreachable cluster or SQLite across nodes is one
        # line with nothing written.
        backend = open_executor(execution, store.url)
        if resume:
            runner = resume_run(store, resume, retry_invalid=retry_invalid)
        else:
            runner = start_run(store, spec)
        result = _drive(distribute(runner, backend, runner.models.spec), as_json)
    except _engine_errors() as exc:
        raise UserError(str(exc).splitlines()[0]) from None
    finally:
        if backend is not None:
            backend.shutdown()
        store.close()
    if as_json:
        print_json({k: result[k] for k in ("run_id", "planned", "completed", "valid", "invalid", "invalid_reasons",
                                           "execution_asr", "utility")})
    else:
        _print_summary(result)
    _exit_after_signal(result)
    if open_console and sys.stdin.isatty() and sys.stdout.isatty():
        from redagent.console.app import RedAgentApp

        RedAgentApp(db, run_id=result["run_id"]).run()


def _print_plan(plan: dict[str, Any], as_json: bool) -> None:
    """What `run --plan-only` prints: the plan's size and, from earlier rollouts of the same cases, its cost."""
    if as_json:
        print_json(plan)
        return
    history = plan["history"]
    what = f"the rest of {plan['run_id']}" if plan["run_id"] else "this run"
    bound = f", {plan['per_model']} calls per model" if plan["per_model"] else ""
    out.print(f"{what}: {plan['rollouts']} rollouts at concurrency {plan['concurrency']}{bound}", highlight=False)
    if plan["model_calls"] is None:
        out.print("no history: no earlier valid rollout of these case versions is stored, so model calls, tokens, "
                  "cost and wall time cannot be estimated", highlight=False)
        return
    out.print(f"history: {history['same_model']} rollouts from earlier runs of the same case, model and harness, "
              f"{history['other_model']} from the same case and harness under another model, {history['none']} "
              f"without{' (estimated at the mean of the rest)' if plan['extrapolated'] else ''}", highlight=False)
    table = Table(title="expected (model calls count the model's turns: an upper bound with parallel tool calls)")
    for column in ("model", "rollouts", "model calls", "prompt tokens", "completion tokens", "cost (USD)"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for m in plan["models"]:
        cost = "no price" if m["cost_usd"] is None else f"{m['cost_usd']:.4f}"
        table.add_row(m["model"], str(m["rollouts"]), f"{m['model_calls']:,}", f"{m['prompt_tokens']:,}",
                      f"{m['completion_tokens']:,}", cost)
    out.print(table)
    unpriced = f" (no price in litellm's cost map for {', '.join(plan['unpriced'])})" if plan["unpriced"] else ""
    out.print(f"total: {plan['model_calls']:,} model calls, {plan['prompt_tokens']:,} prompt + "
              f"{plan['completion_tokens']:,} completion tokens, ${plan['cost_usd']:.4f}{unpriced}, wall time "
              f"≈ {_duration(plan['wall_seconds'])}", highlight=False)


def _duration(seconds: float) -> str:
    if seconds < 1:
        return "< 1 s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@app.command("replay")
def replay(
    run_id: str = typer.Argument(..., help="the run whose rollouts are replayed"),
    defense: str = typer.Option(..., "--defense", help="the defense to replay with"),
    harmful_only: bool = typer.Option(True, "--harmful-only/--all-rollouts", help="replay only E=1 rollouts"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Re-run historical rollouts with only the defense changed; each new rollout links to its baseline."""
    from redagent.engine.matrix import replay_run

    store = _store(db, create=True)
    try:
        result = _drive(replay_run(store, run_id, defense=defense, harmful_only=harmful_only), as_json)
    except _engine_errors() as exc:
        raise UserError(str(exc).splitlines()[0]) from None
    finally:
        store.close()
    if as_json:
        print_json(result)
    else:
        _print_summary(result)
    _exit_after_signal(result)


@runs_app.command("list")
def runs_list(db: str | None = DB_OPTION, as_json: bool = typer.Option(False, "--json")) -> None:
    """Every stored run, newest first."""
    store = _store(db, create=False)
    try:
        runs = store.list_runs()
    finally:
        store.close()
    if as_json:
        print_json([{k: r[k] for k in ("run_id", "status", "planned", "completed")} for r in runs])
        return
    table = Table(title=f"{len(runs)} runs")
    for column in ("run", "status", "completed", "planned", "created"):
        table.add_column(column)
    for r in runs:
        table.add_row(r["run_id"], r["status"], str(r["completed"]), str(r["planned"]), str(r["created_at"])[:19])
    out.print(table)


@runs_app.command("show")
def runs_show(run_id: str = typer.Argument(...), db: str | None = DB_OPTION,
              as_json: bool = typer.Option(False, "--json")) -> None:
    """A run's protocol, counts, execution ASR per cell with valid denominators, invalid reasons."""
    from redagent.engine.matrix import summary

    store = _store(db, create=False)
    try:
        result = _with_utility(store, summary(store, run_id))
    except _engine_errors() as exc:
        raise UserError(str(exc)) from None
    finally:
        store.close()
    if as_json:
        print_json(result)
        return
    protocol = result["protocol"]
    out.print(f"protocol: cases {protocol['cases']} · models {', '.join(protocol['models'])} · harnesses "
              f"{', '.join(protocol['harnesses'])} · cues {', '.join(protocol['cues'])} · defenses "
              f"{', '.join(protocol['defenses'])} · attempts {protocol['attempts']} · benign arm "
              f"{'on' if protocol.get('benign_arm') else 'off'} · code {result['code_version']}", highlight=False)
    _print_summary(result)


@app.command("export")
def export(run_id: str = typer.Argument(...), fmt: str = typer.Option("jsonl", "--format", help="jsonl"),
           output: Path | None = typer.Option(None, "--out", help="file to write (default: stdout)"),
           db: str | None = DB_OPTION) -> None:
    """One rollout per line with all its evidence: events, receipts, diff, snapshots, E, validity."""
    if fmt != "jsonl":
        raise UserError(f"unknown export format {fmt!r} (known: jsonl)")
    store = _store(db, create=False)
    try:
        if store.get_run(run_id) is None:
            raise UserError(f"no run {run_id!r} in the store")
        sink = output.open("wb") if output else sys.stdout.buffer
        try:
            for row in store.iter_export(run_id):
                sink.write(orjson.dumps(row, default=str) + b"\n")
        finally:
            if output:
                sink.close()
    finally:
        store.close()


# -- judges and statistics ---------------------------------------------------------------------
def _judge_errors():
    from redagent.engine.models import ModelConfigError
    from redagent.judges.config import UnknownConfig
    from redagent.judges.labelling import LabellingError
    from redagent.judges.report import ReportError

    return (LabellingError, UnknownConfig, ModelConfigError, ReportError)


@app.command("judge")
def judge(
    run_id: str = typer.Argument(...),
    views: str = typer.Option("trajectory,state,hybrid", "--views", help="evidence views to judge under"),
    backbone: str = typer.Option("rule", "--backbone", help="'rule' (deterministic) or a litellm model string"),
    api_base: str | None = typer.Option(None, "--api-base"),
    concurrency: int = typer.Option(8, "--concurrency"),
    timeout: float = typer.Option(60.0, "--timeout", help="seconds per judge call"),
    retries: int = typer.Option(3, "--retries", help="retries per judge call (408, 409, 429, 5xx, dropped "
                                                     "connections, malformed replies)"),
    max_tokens: int = typer.Option(2048, "--max-tokens", help="most tokens per judge reply"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Label every valid rollout of a run under each view's judging configuration (cached by config hash)."""
    from redagent.judges.labelling import judge_run

    store = _store(db, create=True)
    try:
        report = judge_run(store, run_id, split(views), backbone=backbone, api_base=api_base,
                           concurrency=concurrency, timeout=timeout, retries=retries,
                           max_tokens=max_tokens).to_dict()
    except _judge_errors() as exc:
        raise UserError(str(exc)) from None
    finally:
        store.close()
    if as_json:
        print_json(report)
        return
    for name in report["configs"]:
        out.print(f"{name} ({backbone}): judged {report['judged'].get(name, 0)}, cached {report['cached'].get(name, 0)}"
                  f", failed {report['failed'].get(name, 0)}", highlight=False)
    if report["stale_cases"]:
        out.print(f"{report['stale_cases']} rollouts skipped: their case changed since the run", highlight=False)


@app.command("recognize")
def recognize(
    run_id: str = typer.Argument(...),
    backbone: str | None = typer.Option(None, "--backbone", help="a litellm model; default: the lexical judge"),
    api_base: str | None = typer.Option(None, "--api-base"),
    concurrency: int = typer.Option(8, "--concurrency"),
    timeout: float = typer.Option(60.0, "--timeout", help="seconds per judge call"),
    retries: int = typer.Option(3, "--retries", help="retries per judge call (408, 409, 429, 5xx, dropped "
                                                     "connections, malformed replies)"),
    max_tokens: int = typer.Option(2048, "--max-tokens", help="most tokens per judge reply"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Recognition labels (broad and strict R, action anchor) for every harmful (E=1) rollout."""
    from redagent.judges.labelling import recognize_run

    store = _store(db, create=True)
    try:
        result = recognize_run(store, run_id, backbone=backbone, api_base=api_base, concurrency=concurrency,
                               timeout=timeout, retries=retries, max_tokens=max_tokens)
    except _judge_errors() as exc:
        raise UserError(str(exc)) from None
    finally:
        store.close()
    if as_json:
        print_json(result)
    else:
        out.print(f"{result['judge']}: {result['labelled']} labelled ({result['unresolved']} unresolved anchors, "
                  f"{result['failed']} failed), {result['cached']} already labelled", highlight=False)


@app.command("stats")
def stats_command(
    run_id: str = typer.Argument(...),
    table: str = typer.Argument("asr", help="asr | utility | views | ranking | cue | defense | reg | audit | "
                                                      "adaptive"),
    backbone: str = typer.Option("rule", "--backbone"),
    recognition: str = typer.Option("lexical", "--recognition-judge"),
    reps: int = typer.Option(10_000, "--reps", help="bootstrap replicates"),
    seed: int = typer.Option(0, "--seed"),
    audit_id: str | None = typer.Option(None, "--audit", help="the audit to report (default: the run's newest)"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Print one statistics table, with its protocol and valid denominators."""
    from redagent.judges.report import TABLES, build_report, markdown

    if table not in TABLES:
        raise UserError(f"unknown table {table!r} (known: {', '.join(TABLES)})")
    store = _store(db, create=False)
    try:
        report = build_report(store, run_id, backbone=backbone, recognition_judge=recognition, reps=reps,
                              seed=seed, only=table, audit_id=audit_id)
    except _judge_errors() as exc:
        raise UserError(str(exc)) from None
    finally:
        store.close()
    # The ASR table comes with the utility table beside it (the same cells).
    shown = ("protocol", table, "utility") if table == "asr" else ("protocol", table)
    if as_json:
        print_json({k: report.get(k) for k in shown})
    else:
        sys.stdout.write(markdown({k: v for k, v in report.items() if k in shown}) + "\n")


@app.command("report")
def report_command(
    run_id: str = typer.Argument(...),
    out_dir: Path = typer.Option(..., "--out", help="directory to write the report into"),
    formats: str = typer.Option("md,csv,json", "--format"),
    backbone: str = typer.Option("rule", "--backbone"),
    recognition: str = typer.Option("lexical", "--recognition-judge"),
    reps: int = typer.Option(10_000, "--reps"),
    seed: int = typer.Option(0, "--seed"),
    audit_id: str | None = typer.Option(None, "--audit", help="the audit to report (default: the run's newest)"),
    db: str | None = DB_OPTION,
) -> None:
    """Write every table (Markdown, CSV, JSON) and the plots (PNG) for a run."""
    from redagent.judges.report import build_report, write_report

    chosen = split(formats)
    unknown = [f for f in chosen if f not in ("md", "csv", "json")]
    if unknown:
        raise UserError(f"unknown report format {unknown[0]!r} (known: md, csv, json)")
    store = _store(db, create=False)
    try:
        report = build_report(store, run_id, backbone=backbone, recognition_judge=recognition, reps=reps, seed=seed,
                              audit_id=audit_id)
    except _judge_errors() as exc:
        raise UserError(str(exc)) from None
    finally:
        store.close()
    for path in write_report(report, out_dir, chosen):
        out.print(str(path), highlight=False)


@app.command("console")
def console_command(
    db: str | None = DB_OPTION,
    reviewer: str | None = typer.Option(None, "--reviewer", help="your name (reviewer, adjudicator, expert); on a "
                                                                  "team store it comes from your login"),
    role: str | None = typer.Option(None, "--role", help="researcher | reviewer | adjudicator | expert; on a team "
                                                         "store it comes from your login"),
    run_id: str | None = typer.Option(None, "--run", help="open on this run"),
    web: bool = typer.Option(False, "--web", help="serve the console to a browser (textual-serve), token required"),
    host: str = typer.Option("localhost", "--host", help="with --web: the address to bind (default: localhost only)"),
    port: int = typer.Option(8000, "--port", help="with --web: the port"),
) -> None:
    """Open the audit console (Textual): runs, rollouts, statistics, blinded audit, adjudication, case review.

    Example: redagent console --run run-3fa2  (a reviewer on a team store: redagent console --db THEIR-URL)
    """
    from redagent.console.cli_common import opened_store, single_file_note
    from redagent.store.access import Identity

    roles = ("researcher", "reviewer", "adjudicator", "expert")
    if role is not None and role not in roles:
        raise UserError(f"unknown role {role!r} (known: {', '.join(roles)})")
    # create=False: the console reads (runs it starts need a store that exists already), and a typo in --db
    # must not leave an empty store behind.
    with opened_store(db, roles=("owner", *roles), create=False) as store:
        identity = store.identity()
        note = single_file_note(store)
    if identity.enforced:
        # The database holds this login to its role: the flags may only repeat it.
        if role is not None and role != identity.role:
            raise UserError(f"you are logged in as {identity.name} ({identity.role}); --role {role} is not yours")
        if reviewer is not None and reviewer != identity.name:
            raise UserError(f"you are logged in as {identity.name}; --reviewer {reviewer} would be someone else")
        role, reviewer = identity.role, (None if identity.role == "researcher" else identity.name)
    else:
        role = role or "researcher"
        if role != "researcher" and not reviewer:
            raise UserError(f"the {role} role needs --reviewer NAME")
    if role != "researcher" and note:
        err.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    if web:
        starter = identity if role == "researcher" else Identity(role, reviewer, identity.login, identity.enforced)
        _serve_console(db, starter, run_id, host, port)
        return
    from redagent.console.app import RedAgentApp

    RedAgentApp(db, reviewer=reviewer, role=role, run_id=run_id, note=note if role != "researcher" else None).run()


def _serve_console(db: str | None, starter, run_id: str | None, host: str, port: int) -> None:
    """Each browser tab gets its own console process (textual-serve) in the role of the token it came
    with; no page or terminal without one. Bound to localhost unless --host says otherwise."""
    import secrets
    import socket

    from sqlalchemy.engine import make_url

    from redagent.console.web import TokenServer
    from redagent.store.connect import resolve_url
    from redagent.store.db import open_store

    if not 0 < port < 65536:
        raise UserError(f"--port {port} is not a TCP port")
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1" if host == "localhost" else host, port))
        except OSError as exc:
            raise UserError(f"--port {port} is not free on {host}: {exc.strerror or exc}") from None
    # Every tab opens the same store: a relative SQLite path made absolute, and the URL handed over in
    # the environment rather than on a command line that `ps` shows (it may hold a password).
    url = make_url(resolve_url(db))
    if url.drivername.startswith("sqlite") and url.database and not Path(url.database).is_absolute():
        url = url.set(database=str(Path(url.database).resolve()))
    os.environ["REDAGENT_DB"] = url.render_as_string(hide_password=False)
    store = open_store(os.environ["REDAGENT_DB"])
    token = secrets.token_urlsafe(24)
    who = starter.name or starter.role
    out.print(f"serving the console ({starter.role}, {who}) at http://{host}:{port}/?token={token} — the token is "
              "yours alone (teammates use their own from `redagent team add`); Ctrl-C stops", highlight=False,
              soft_wrap=True)
    try:
        TokenServer(starter=starter, starter_token=token, member=store.member_for_token, run_id=run_id, host=host,
                    port=port).serve()
    finally:
        store.close()


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the app and turns user errors into one line and exit code 2."""
    run: Callable[..., Any] = app
    try:
        run(args=argv, standalone_mode=True)
    except UserError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except Exception as exc:
        # A bug, not bad input: still one line for the user; REDAGENT_DEBUG=1 shows the traceback.
        if os.environ.get("REDAGENT_DEBUG"):
            raise
        err.print(f"error: internal error ({type(exc).__name__}: {exc}); rerun with REDAGENT_DEBUG=1 for the "
                  f"traceback and please report it", markup=False, highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
