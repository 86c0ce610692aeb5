"""`redagent cases …`: the case library — list, show, validate and self-check cases, run one through a
calibration agent, plan, build, freeze and refine libraries, print the taxonomy. Construction rounds for
expert review are its `round` group (console/rounds_cli.py). Errors take cli_common's one-line path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from redagent.cases.loader import CaseFileError, load_cases
from redagent.cases.schema import Case
from redagent.cases.selfcheck import CHECK_JOBS
from redagent.cases.taxonomy import CHANNELS, CONSTRAINTS, STRATEGIES, SURFACES, VULNERABILITIES
from redagent.console.agentdojo_cli import agentdojo_diff
from redagent.console.agentdojo_cli import import_app as agentdojo_import_app
from redagent.console.cli_common import (
    DB_OPTION,
    Commands,
    err,
    examples,
    fail,
    opened_store,
    out,
    print_json,
    split,
    stoppable,
)
from redagent.console.rounds_cli import rounds_app

cases_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="Case library: list, show, validate, check, taxonomy.",
    epilog=examples("redagent cases list --surface banking", "redagent cases check --jobs 4"),
)
cases_app.add_typer(rounds_app, name="round")
cases_app.add_typer(agentdojo_import_app, name="import")  # cases import agentdojo (console/agentdojo_cli.py)
cases_app.command("agentdojo-diff", epilog=examples("redagent cases agentdojo-diff build/agentdojo"))(agentdojo_diff)


def _library(paths: list[Path] | None, cache: Any = None) -> list[Case]:
    from redagent.cases.loader import BENCHMARKS, benchmark_dir

    # `benchmark` (the latest frozen benchmark) and `benchmark@v1` name the installed libraries from anywhere.
    named = {"benchmark": benchmark_dir(), **{f"benchmark@v{v}": benchmark_dir(v) for v in BENCHMARKS}}
    paths = [named.get(str(p), p) for p in paths or []] or None
    return load_cases(paths, cache=cache)


def _select(cases: list[Case], surface: str | None, strategy: str | None, constraint: str | None = None) -> list[Case]:
    if surface and surface not in SURFACES:
        fail(f"unknown surface {surface!r} (known: {', '.join(SURFACES)})")
    if strategy and strategy not in STRATEGIES:
        fail(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    if constraint and constraint not in CONSTRAINTS:
        fail(f"unknown constraint {constraint!r} (known: {', '.join(CONSTRAINTS)})")
    return [
        c
        for c in cases
        if (not surface or surface in c.surfaces)
        and (not strategy or c.strategy == strategy)
        and (not constraint or c.constraint == constraint)
    ]


@cases_app.command(
    "list",
    epilog=examples(
        "redagent cases list --surface banking --strategy U1", "redagent cases list --path my-cases/ --json"
    ),
)
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
        print_json(
            [
                {
                    "id": c.id,
                    "version": c.version,
                    "title": c.title,
                    "strategy": c.strategy,
                    "vulnerability": c.vulnerability,
                    "constraint": c.constraint,
                    "surfaces": list(c.surfaces),
                    "channel": c.channel,
                    "hash": c.content_hash,
                }
                for c in cases
            ]
        )
        return
    table = Table(title=f"{len(cases)} cases")
    for column in ("id", "strategy", "vuln", "constraint", "surfaces", "title"):
        table.add_column(column)
    for c in cases:
        table.add_row(c.id, c.strategy, c.vulnerability, c.constraint, ",".join(c.surfaces), c.title)
    out.print(table)


@cases_app.command("show", epilog=examples("redagent cases show banking-e2-invoice-bank-details-change"))
def cases_show(
    case_id: str = typer.Argument(..., help="case id"),
    path: list[Path] | None = typer.Option(None, "--path"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show one case in full."""
    match = [c for c in _library(path) if c.id == case_id]
    if not match:
        fail(f"no case with id {case_id!r}")
    case = match[0]
    if as_json:
        print_json({"hash": case.content_hash, "file": case.source, **case.raw})
        return
    out.print(f"[bold]{escape(case.id)}[/] v{case.version} — {escape(case.title)}", markup=True)
    out.print(
        f"IVC: {case.strategy} {STRATEGIES[case.strategy].name} → {case.vulnerability} "
        f"{VULNERABILITIES[case.vulnerability].name} → {case.constraint} "
        f"{CONSTRAINTS[case.constraint].name}"
    )
    out.print(f"surfaces: {', '.join(case.surfaces)}   channel: {case.channel}   hash: {case.content_hash[:16]}")
    out.print("\nTask", style="bold")
    out.print(case.task)
    for i, turn in enumerate(case.followups):
        out.print(f"Follow-up {i}", style="bold")
        out.print(turn)
    out.print("\nAttack", style="bold", end=" ")
    out.print(f"({case.attack.placement}{' → ' + case.attack.target if case.attack.target else ''})")
    out.print(case.attack.content)
    out.print("\nVerifier", style="bold")
    out.print(orjson.dumps(case.rule, option=orjson.OPT_INDENT_2).decode())
    out.print("\nPolicy reminder", style="bold")
    out.print(case.policy_reminder)
    for name, steps in (
        ("benign", case.plans.benign),
        ("harmful", case.plans.harmful),
        ("indirect", case.plans.indirect),
    ):
        if steps:
            out.print(f"\n{name} plan", style="bold")
            for s in steps:
                out.print(f"  {s.tool}({orjson.dumps(s.args).decode()})")


@cases_app.command("validate", epilog=examples("redagent cases validate my-cases/"))
def cases_validate(paths: list[Path] = typer.Argument(..., help="case files or folders")) -> None:
    """Validate case files: one line per problem (file:line: field: what), exit 2 if any."""
    try:
        cases = load_cases(paths)  # one case a file, or a problem (a duplicate id too)
    except CaseFileError as exc:
        for problem in exc.problems:
            err.print(str(problem), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    out.print(f"{len(cases)} case file(s) valid")


@cases_app.command(
    "check", epilog=examples("redagent cases check", "redagent cases check my-cases/ --surface banking --json")
)
def cases_check(
    path: list[Path] | None = typer.Argument(None, help="case files or folders (default: the built-in library)"),
    also: list[Path] | None = typer.Option(None, "--path", help="case files or folders (same as the arguments)"),
    surface: str | None = typer.Option(None),
    strategy: str | None = typer.Option(None),
    jobs: int = typer.Option(CHECK_JOBS, "--jobs", help="processes to check in (default: two per core)"),
    as_json: bool = typer.Option(False, "--json", help="print the JSON summary"),
    no_cache: bool = typer.Option(
        False,
        "--no-cache",
        help="check everything again, and keep nothing (default: what an earlier check proved "
        "under the same code is not run again; $REDAGENT_CHECK_CACHE moves the cache, `off` turns it off)",
    ),
) -> None:
    """Self-check every case: executability, reachability, verifiability, mutation, rejection, utility, and the
    metamorphic check (derived equivalent routes must not give "no harm" — harm, or unresolved where the verifier
    cannot know —, near-misses must give "no harm"). --json gives every plan's verdict: harm, no harm or
    unresolved (per_case[].plans). Results are kept per case content, code version and route seed, so an
    unchanged library re-checks in seconds and a change re-checks what it can affect."""
    from redagent.cases.checkcache import open_cache
    from redagent.cases.checkpool import CheckStats, check_many
    from redagent.cases.selfcheck import summarize

    if jobs < 1:
        fail(f"--jobs must be at least 1, not {jobs}")
    cache = None if no_cache else open_cache()
    chosen = [*(path or []), *(also or [])] or None
    cases = _select(_library(chosen, cache), surface, strategy)
    stats = CheckStats()
    with stoppable("the check was interrupted; its sandboxes are removed and nothing is kept"):
        checks = check_many(cases, jobs, cache=cache, stats=stats)
    if cache is not None:
        cache.trim()
        err.print(
            f"{stats.cases} case(s): {stats.cases_cached} from the cache; {stats.units_run} plan(s) run, "
            f"{stats.units_cached} found in the cache ({cache.folder})",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    summary = summarize(checks)
    if as_json:
        print_json(summary)
    else:
        table = Table(title=f"self-check: {summary['passed']}/{summary['cases']} cases pass")
        for column in ("id", "IVC", "surfaces", "routes", "result"):
            table.add_column(column)
        for c, row in zip(checks, summary["per_case"], strict=True):
            verdict = (
                Text("pass", style="green")
                if c.passed
                else Text("; ".join(f"{k}: {w}" for k, w in c.failures), style="red")
            )
            table.add_row(
                c.case.id,
                f"{c.case.strategy}/{c.case.vulnerability}/{c.case.constraint}",
                ",".join(c.case.surfaces),
                _route_score(row["routes"]),
                verdict,
            )
        out.print(table)
        routes = summary["routes"]
        out.print(
            f"generated routes the verifiers got right, of those tried: {_route_score(routes)}; "
            f"{routes['harmful']['skipped'] + routes['near-miss']['skipped']} skipped (refused by the sandbox)"
        )
        out.print(
            "verdicts on the generated routes (harm / no harm / unresolved): "
            + "; ".join(
                f"{kind} {routes[kind]['harm']} / {routes[kind]['no harm']} / {routes[kind]['unresolved']}"
                for kind in ("harmful", "near-miss")
            )
        )
        weakest = _weakest(routes["by_dimension"])
        if weakest:
            out.print(f"weakest dimensions: {weakest}")
        out.print(
            f"surfaces {len(summary['by_surface'])}/5 · strategies {len(summary['by_strategy'])}/15 · "
            f"vulnerabilities {len(summary['by_vulnerability'])}/11 · "
            f"constraints {len(summary['by_constraint'])}/28"
        )
    if summary["failed"]:
        raise typer.Exit(1)


def _route_score(routes: dict) -> str:
    """'H 5/6 N 4/5': harmful routes and near-misses the verifier got right, of those tried."""
    return " ".join(
        f"{label} {routes[kind]['survived']}/{routes[kind]['tried']}"
        for label, kind in (("H", "harmful"), ("N", "near-miss"))
    )


def _weakest(by_dimension: dict, count: int = 4) -> str:
    """The dimensions with the lowest share of routes survived, worst first (with how many were tried)."""
    scored = []
    for dim, kinds in by_dimension.items():
        tried = sum(k["tried"] for k in kinds.values())
        if tried:
            scored.append((sum(k["survived"] for k in kinds.values()) / tried, dim, tried))
    return ", ".join(f"{dim} {share:.0%} of {tried}" for share, dim, tried in sorted(scored)[:count] if share < 1)


@cases_app.command(
    "rollout", epilog=examples("redagent cases rollout banking-e2-invoice-bank-details-change --agent sim/ignore")
)
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
        fail(f"unknown calibration agent {agent!r} (known: {', '.join(BEHAVIOURS)})")
    match = [c for c in _library(path) if c.id == case_id]
    if not match:
        fail(f"no case with id {case_id!r}")
    rollout = run_direct(match[0], agent, with_attack=not benign)
    done = rollout.finished
    if as_json:
        print_json(
            {
                "case_id": rollout.case_id,
                "case_hash": rollout.case_hash,
                "agent": agent,
                "E": rollout.E,
                "outcome": done.verdict.outcome,
                "expected_E": rollout.expected_E,
                "evidence": done.verdict.to_dict()["evidence"],
                "reached": rollout.reached,
                "events": [e.to_dict() for e in rollout.events],
                "receipts": [r.to_dict() for r in done.receipts],
                "diff": [d.to_dict() for d in done.diff],
            }
        )
        return
    out.rule(f"{case_id} · {agent}{' · benign variant' if benign else ''}")
    for event in rollout.events:
        if event.role == "assistant" and event.tool_call:
            out.print(
                f"[cyan]#{event.index} call[/] {escape(event.tool_call['name'])}"
                f"({escape(orjson.dumps(event.tool_call['args']).decode())})",
                markup=True,
                highlight=False,
            )
        elif event.role == "tool":
            flag = " [yellow](tampered)[/]" if event.tampered else ""
            out.print(
                f"[dim]#{event.index} result{flag}[/] {escape((event.observation or '')[:300])}",
                markup=True,
                highlight=False,
            )
        else:
            out.print(
                f"[bold]#{event.index} {escape(event.role)}[/] {escape(event.text or '')}", markup=True, highlight=False
            )
    out.rule("receipts")
    for r in done.receipts:
        out.print(
            f"{r.id} step {r.step} {r.actor} {r.service}.{r.action} {r.outcome}{' via ' + r.via if r.via else ''}",
            highlight=False,
        )
    out.rule("state diff")
    for entry in done.diff:
        out.print(f"{entry.op:8} {entry.key}", highlight=False)
    evidence = ", ".join(done.verdict.receipts + done.verdict.diff) or "—"
    for reason in done.verdict.unresolved:
        out.print(f"unresolved ({reason.reason}): {reason.detail}", highlight=False)
    out.rule(f"{done.verdict.outcome} (E = {rollout.E}, expected {rollout.expected_E}) · evidence: {evidence}")


@cases_app.command("plan", epilog=examples("redagent cases plan --constraint C05"))
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
        fail(f"unknown constraint {constraint!r} (known: {', '.join(CONSTRAINTS)})")
    if backbone:
        if not constraint:
            fail("--backbone plans one constraint at a time: give --constraint")
        import asyncio

        from redagent.cases.construction.llm import propose_plans
        from redagent.llm.client import LiteLLMModel, check_model

        check_model(backbone, api_base)
        plans = asyncio.run(propose_plans(LiteLLMModel(backbone, api_base=api_base), constraint, n=n))
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


@cases_app.command("build", epilog=examples("redagent cases build --out build/library --cap 10"))
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
        fail(f"unknown family {unknown[0]!r} (known: {', '.join(all_families())})")
    report = build(out_dir, cap=cap, families=chosen, seed=seed, jobs=max(1, jobs))
    result = report.to_dict()
    if as_json:
        print_json(result)
        return
    out.print(
        f"kept {result['kept']} base cases, rejected {result['rejected']} compilations, variants {result['variants']}",
        highlight=False,
    )
    for compiled in report.rejected[:10]:
        out.print(f"  rejected {compiled.family} {compiled.plan.key}: {compiled.rejected[:160]}", highlight=False)


def _build_with_llm(out_dir: Path, backbone: str, api_base: str | None, constraint: str | None, as_json: bool) -> None:
    """LLM planner then LLM compiler for one constraint (cases/construction/llm.py); the outcome printed."""
    import asyncio

    from redagent.cases.construction.llm import build_with_llm
    from redagent.llm.client import LiteLLMModel, check_model

    if constraint not in CONSTRAINTS:
        fail(f"--backbone compiles one constraint at a time: give --constraint (known: {', '.join(CONSTRAINTS)})")
    check_model(backbone, api_base)
    model = LiteLLMModel(backbone, api_base=api_base)
    built = asyncio.run(build_with_llm(model, constraint, out_dir))
    kept, rejected = built.kept, built.rejected
    if as_json:
        print_json({"kept": kept, "rejected": rejected})
        return
    for line in kept:
        out.print(f"kept {line}", highlight=False)
    for line in rejected:
        out.print(f"rejected {line}", highlight=False)


@cases_app.command("stats", epilog=examples("redagent cases stats build/library"))
def cases_stats(
    path: Path | None = typer.Argument(None, help="a compiled library (default: the frozen benchmark)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Diversity and coverage of a library: distinct tasks and attacks, template share, near-duplicates."""
    from redagent.cases.construction.library import stats
    from redagent.cases.loader import benchmark_dir, manifest_hash

    root = path or benchmark_dir()
    if not (root / "base").is_dir():
        fail(f"{root} holds no compiled library (expected {root / 'base'}); run `redagent cases build`")
    result = stats(_library([root / "base"]), _library([root / "variants"]) if (root / "variants").is_dir() else [])
    result["manifest_hash"] = manifest_hash(root)
    if as_json:
        print_json(result)
        return
    for key, value in result.items():
        out.print(f"{key}: {value}", highlight=False)


@cases_app.command("freeze", epilog=examples("redagent cases freeze build/library"))
def cases_freeze(
    path: Path | None = typer.Argument(None, help="a compiled library (default: the benchmark)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Write the frozen manifest (ids, versions, hashes, taxonomy counts); refuse if any case fails."""
    from redagent.cases.construction.library import MANIFEST, freeze
    from redagent.cases.loader import benchmark_dir

    root = path or benchmark_dir()
    folders = [p for p in (root / "base", root / "variants") if p.is_dir()]
    if not folders:
        fail(f"{root} holds no compiled library; run `redagent cases build --out {root}` first")
    manifest = freeze(folders, root / MANIFEST)
    if as_json:
        print_json({"manifest_hash": manifest["manifest_hash"], "cases": len(manifest["cases"])})
    else:
        out.print(f"froze {len(manifest['cases'])} cases; manifest {manifest['manifest_hash']}", highlight=False)


@cases_app.command("refine", epilog=examples("redagent cases refine run-3fa2 --queue .redagent/refine"))
def cases_refine(
    run_id: str = typer.Argument(..., help="the run whose rollouts show which cases need revision"),
    queue: Path = typer.Option(Path(".redagent/refine"), "--queue", help="folder of the revision queue"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Flag cases a run shows to be broken (unreached attack, judge disagreement, benign task never done)."""
    from dataclasses import asdict

    from redagent.judges.refine import refine, write_queue

    # It only reads the store (the queue is a folder of files): a missing store is "no store at …".
    with opened_store(db, create=False) as store:
        flags = refine(store, run_id)
    path = write_queue(flags, run_id, queue)
    if as_json:
        print_json({"run_id": run_id, "queue": str(path), "flags": [asdict(f) for f in flags]})
        return
    for flag in flags:
        out.print(f"{flag.case_id}: {flag.problem}: {flag.detail}", highlight=False)
    out.print(f"{len(flags)} flag(s) queued for revision in {path}", highlight=False)


@cases_app.command("taxonomy", epilog=examples("redagent cases taxonomy --json"))
def cases_taxonomy(as_json: bool = typer.Option(False, "--json")) -> None:
    """Print the IVC taxonomy: strategies, vulnerabilities, constraints, surfaces."""
    if as_json:
        print_json(
            {
                "strategies": [vars(s) for s in STRATEGIES.values()],
                "vulnerabilities": [vars(v) for v in VULNERABILITIES.values()],
                "constraints": [vars(c) for c in CONSTRAINTS.values()],
                "surfaces": SURFACES,
                "channels": CHANNELS,
            }
        )
        return
    for title, rows, columns in (
        (
            "Intervention strategies",
            [(s.code, s.name, s.channel, s.description) for s in STRATEGIES.values()],
            ("code", "name", "channel", "description"),
        ),
        (
            "Vulnerability types",
            [(v.code, v.name, v.description) for v in VULNERABILITIES.values()],
            ("code", "name", "description"),
        ),
        (
            "Constraints",
            [(c.code, c.name, c.surface, c.kind, c.statement) for c in CONSTRAINTS.values()],
            ("code", "name", "surface", "kind", "statement"),
        ),
        ("Service surfaces", list(SURFACES.items()), ("surface", "what it is")),
    ):
        table = Table(title=title)
        for column in columns:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        out.print(table)
