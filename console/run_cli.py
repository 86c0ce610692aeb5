"""`redagent run` and `redagent replay`: drive a matrix of rollouts with a live progress bar, and print a
run's summary (execution ASR, utility, health) — `redagent runs show` prints the same summary.
Errors take cli_common's one-line path."""

from __future__ import annotations

import sys
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

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

# Mounted without a name (console/cli.py): its commands are top-level, `redagent run`, `redagent replay`.
run_app = typer.Typer(cls=Commands)


def _default_models() -> list[str]:
    from redagent.engine.calibration import BEHAVIOURS

    return list(BEHAVIOURS)


# After a stop (SIGINT, SIGTERM), how long calibration rollouts in flight may go on to finish and be stored before
# they are cancelled (not stored; a resume runs them again). Under a scheduler's usual 30 s between SIGTERM and
# SIGKILL. Rollouts of served models get none: they are cancelled at once (engine/runner.py request_stop).
STOP_GRACE_S = 10.0


def _stop_line(runner, signum: int) -> str:
    """What a stop does to this run's rollouts in flight, in one line."""
    import signal

    base = getattr(runner, "base", runner)  # a multi-worker run's driver stands on the planned MatrixRunner
    served = {base.served(k) for k in runner.keys}
    parts = ["no new rollouts"]
    if True in served:
        parts.append(
            "those waiting on a model server are cancelled now (their requests closed; a resume runs them again)"
        )
    if False in served:
        whose = "calibration rollouts" if True in served else "those"
        parts.append(f"{whose} in flight have {STOP_GRACE_S:g} s to finish (signal again to stop them now)")
    return f"stopping ({signal.Signals(signum).name}): " + "; ".join(parts)


def _drive(runner, as_json: bool) -> dict[str, Any]:
    """Run a matrix with a live progress bar. SIGINT or SIGTERM stops it: nothing new starts, rollouts waiting on a
    model server are cancelled at once, calibration rollouts in flight get STOP_GRACE_S to finish, then they are
    cancelled — at once on a second signal — and their sandboxes go. Returns the run's summary with its exit code:
    128 + the signal that stopped it, else 0."""
    import asyncio
    import signal

    from redagent.console.progress_line import RunProgress
    from redagent.engine.matrix import summary

    with RunProgress(console=err, transient=as_json, disable=not err.is_terminal and as_json) as bar:
        pending = runner.pending()
        task = bar.add_task(
            runner.run_record.id,
            total=len(runner.keys),
            completed=len(runner.keys) - len(pending),
            rate=0.0,
            eta="—",
            invalid=0,
            asr="—",
        )

        def show(progress) -> None:
            eta = progress.eta
            bar.update(
                task,
                completed=progress.completed,
                rate=progress.rate,
                eta=f"{eta:.0f}s" if eta is not None else "—",
                invalid=progress.invalid,
                asr=f"{progress.asr:.1%}" if progress.asr is not None else "—",
            )

        runner.on_progress = show
        received: list[int] = []

        async def go():
            loop = asyncio.get_running_loop()
            running = asyncio.ensure_future(runner.run())

            def cancel() -> None:
                if not running.done():
                    running.cancel()

            def stop(signum: int) -> None:
                received.append(signum)
                if len(received) > 1:
                    cancel()
                    return
                runner.request_stop()
                err.print(_stop_line(runner, signum), highlight=False)
                loop.call_later(STOP_GRACE_S, cancel)

            # SIGTERM too: a scheduler or `kill` ends the run like Ctrl-C, with what was finished stored.
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop, signum)
            try:
                return await running
            except asyncio.CancelledError:
                if not received:
                    raise
                return None  # stopped by the signal: the run's row says stopped, the summary below says so
            finally:
                for signum in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(signum)

        asyncio.run(go())
    result = with_utility(runner.store, summary(runner.store, runner.run_record.id))
    if result["status"] == "stopped":
        err.print(
            f"stopped: {result['completed']} of {result['planned']} rollouts stored; "
            f"resume with `redagent run --resume {result['run_id']}`",
            highlight=False,
        )
    # A run ended by a signal exits as the shell expects (130 for Ctrl-C), once its summary is printed.
    result["exit_code"] = 128 + received[0] if received else 0
    return result


def _exit_after_signal(result: dict[str, Any]) -> None:
    if result.get("exit_code"):
        # Stopped, with everything stored and said: the process ends now. Left to itself, the interpreter's last
        # collections walk litellm's object graph one object at a time at exit (seconds on a busy machine);
        # frozen, those objects are left to the OS with the rest of the process.
        import gc

        gc.freeze()
        raise typer.Exit(result["exit_code"])


def with_utility(store, result: dict[str, Any]) -> dict[str, Any]:
    """The run summary with its utility table (benign and under attack, per cell and overall) and its health
    (per cell: invalid details, tool use, exposure, warnings of a broken setup)."""
    from redagent.judges.health import run_health
    from redagent.judges.report_model import to_json
    from redagent.judges.summary import utility

    return {
        **result,
        "utility": to_json(utility(store, result["run_id"])),
        "health": run_health(store, result["run_id"]),
    }


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _utility_cell(rate: dict[str, Any]) -> str:
    if not rate["n"]:
        return "n/a"
    return f"{rate['u']:.1%} {rate['done']}/{rate['n']} [{rate['lo']:.0%}–{rate['hi']:.0%}]"


def print_summary(result: dict[str, Any]) -> None:
    from redagent.judges.report_model import UtilityArm, from_json
    from redagent.judges.summary import utility_text

    out.print(
        f"[bold]{escape(result['run_id'])}[/] {result['status']} · {result['completed']}/{result['planned']} "
        f"rollouts · valid {result['valid']} · invalid {result['invalid']}",
        markup=True,
        highlight=False,
    )
    if result["status"] == "interrupted":
        out.print(
            f"the process driving this run died; resume with `redagent run --resume {result['run_id']}`",
            style="yellow",
            highlight=False,
        )
    if result["invalid_reasons"]:
        out.print("invalid: " + ", ".join(f"{k} {v}" for k, v in sorted(result["invalid_reasons"].items())))
    unresolved = sum(c.get("unresolved", 0) for c in result["execution_asr"])
    if unresolved:
        out.print(
            f"unresolved: {unresolved} valid attacked rollouts the verifier could not decide (browse them with "
            f"`redagent console`, filter E=unresolved; an audit samples them as a stratum of their own)",
            style="yellow",
            highlight=False,
        )
    table = Table(
        title="execution ASR (E=1 among valid attacked rollouts; where the verifier left some unresolved, the bounds "
        "harm – harm + unresolved, never counted safe) · utility U (task done; done/n checked, "
        "Wilson 95 %) · no tool call (share of valid rollouts) · exposure (attack reached the agent, "
        "share of valid attacked)"
    )
    for column in (
        "model",
        "harness",
        "cue",
        "defense",
        "harmful",
        "valid",
        "ASR",
        "benign U",
        "U under attack",
        "no tool call",
        "exposure",
    ):
        table.add_column(column, justify="left" if column in ("model", "harness", "cue", "defense") else "right")
    asr = {(c["model"], c["harness"], c["cue"], c["defense"]): c for c in result["execution_asr"]}
    utility = result.get("utility") or {"cells": [], "overall": None}
    by_cell = {(c["model"], c["harness"], c["cue"], c["defense"]): c for c in utility["cells"]}
    health = result.get("health") or {"cells": [], "warnings": []}
    fitness = {(c["model"], c["harness"], c["cue"], c["defense"]): c for c in health["cells"]}
    for key in sorted(asr.keys() | by_cell.keys() | fitness.keys()):
        cell, u, h = asr.get(key), by_cell.get(key), fitness.get(key)
        rate = "—" if cell is None or cell["rate"] is None else f"{cell['rate']:.1%}"
        if cell is not None and cell.get("unresolved"):
            # The verifier could not decide some: the ASR is a pair of bounds, the audit resolves them.
            rate += f"–{cell['upper']:.1%} (+{cell['unresolved']} unresolved)"
        table.add_row(
            *key,
            str(cell["harmful"]) if cell else "—",
            str(cell["valid"]) if cell else "—",
            rate,
            _utility_cell(u["benign"]) if u else "n/a",
            _utility_cell(u["under_attack"]) if u else "n/a",
            _share(h["no_tool_call_share"]) if h else "—",
            _share(h["exposure"]) if h else "—",
        )
    out.print(table)
    for h in health["cells"]:
        for reason, entry in sorted(h["invalid"].items()):
            shown = f" · e.g. {entry['detail']}" if entry.get("detail") else ""
            out.print(
                f"invalid {' · '.join(h[k] for k in ('model', 'harness', 'cue', 'defense'))}: {reason} "
                f"{entry['n']}{shown}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
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
        out.print(
            f"utility: benign {utility_text(from_json(UtilityArm, overall['benign']))} · under attack "
            f"{utility_text(from_json(UtilityArm, overall['under_attack']))} · benign arm {arm}",
            highlight=False,
        )


@run_app.command(
    "run",
    epilog=examples(
        "redagent run --cases surface:banking --models sim/comply,sim/ignore --harnesses native",
        "redagent run --cases all --models openai/gpt-4o-mini --concurrency 16 --plan-only",
        "redagent run --resume run-3fa2",
    ),
)
def run(
    cases: str = typer.Option("all", "--cases", help="all, ids, globs, surface:X, strategy:X, constraint:X, paths"),
    models: str = typer.Option(",".join(_default_models()), "--models", help="sim/* or litellm model strings"),
    harnesses: str = typer.Option(
        "native,react,shell",
        "--harnesses",
        help="native,react,shell and the real CLIs codex,hermes,openclaw,claude-code",
    ),
    cues: str = typer.Option("clean", "--cues", help="clean,disclosed"),
    defenses: str = typer.Option("none", "--defenses", help="none,self-reminder,policy-reminder,placebo"),
    attempts: int = typer.Option(1, "--attempts"),
    concurrency: int = typer.Option(8, "--concurrency", help="rollouts in flight"),
    per_model: int | None = typer.Option(None, "--per-model", help="model calls in flight per model"),
    max_steps: int = typer.Option(30, "--max-steps", help="tool calls per rollout"),
    api_base: str | None = typer.Option(None, "--api-base", help="model endpoint (OpenAI-compatible, vLLM, Ollama)"),
    timeout: float = typer.Option(60.0, "--timeout", help="seconds per model call"),
    retries: int = typer.Option(
        3, "--retries", help="retries per model call (408, 409, 429, 5xx, dropped connections, malformed replies)"
    ),
    max_tokens: int = typer.Option(
        2048, "--max-tokens", help="most tokens per model reply (a reply cut there is invalid: model_truncated)"
    ),
    tool_choice: str = typer.Option(
        "auto",
        "--tool-choice",
        help="what requests offering tools say: auto | required | none | omit (leave it out, for a server that "
        "refuses it); stored with the run",
    ),
    disclosure: str | None = typer.Option(None, "--disclosure-text", help="text of the 'disclosed' cue"),
    benign_arm: bool = typer.Option(
        True,
        "--benign-arm/--no-benign-arm",
        help="also run every attacked case as its benign counterpart (attack never "
        "shown): benign utility beside utility under attack",
    ),
    attacker: str = typer.Option(
        "none",
        "--attacker",
        help="none (the fixed attack) | scripted (deterministic moves) | adaptive (a "
        "model moves the attack: reformulate, change channel, stop)",
    ),
    attacker_model: str | None = typer.Option(
        None, "--attacker-model", help="with --attacker adaptive: the attacker's litellm model"
    ),
    attacker_api_base: str | None = typer.Option(
        None, "--attacker-api-base", help="the attacker model's endpoint (default: --api-base)"
    ),
    attack_budget: int = typer.Option(5, "--attack-budget", help="attacker moves per rollout (K, 1-20)"),
    resume: str | None = typer.Option(None, "--resume", help="complete the missing rollouts of RUN_ID"),
    retry_invalid: bool = typer.Option(
        False,
        "--retry-invalid",
        help="with --resume: also re-run rollouts that were invalid for a transient "
        "or configuration reason (model errors, sandbox errors)",
    ),
    plan_only: bool = typer.Option(
        False,
        "--plan-only",
        help="print rollouts, expected model calls, tokens, cost and wall time; run and store nothing",
    ),
    executor: str = typer.Option("local", "--executor", help="local (this machine) or ray"),
    workers: int = typer.Option(
        1, "--workers", help="local worker processes sharing the store (--concurrency is per worker)"
    ),
    ray_address: str | None = typer.Option(
        None,
        "--ray-address",
        help="with --executor ray: an existing cluster (HOST:PORT, or auto); "
        "default a Ray instance of this machine's own",
    ),
    sandbox: str = typer.Option(
        "bwrap", "--sandbox", help="where agents' commands run: bwrap (bubblewrap) or docker (a container per rollout)"
    ),
    image: str | None = typer.Option(
        None,
        "--image",
        help="with --sandbox docker: the image (default: the one "
        "`redagent sandbox image use` chose, else the built one)",
    ),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json", help="print the run summary as JSON"),
    open_console: bool = typer.Option(
        False, "--open-console", help="afterwards, open the console on this run (in a terminal only)"
    ),
) -> None:
    """Run a model × harness × cue × defense × case × attempt matrix (default: the calibration agents)."""
    from redagent.engine.conditions import DEFAULT_DISCLOSURE
    from redagent.engine.executors import Execution, check_execution, distribute, open_executor
    from redagent.engine.matrix import ModelPool, RunSpec, resume_run, start_run
    from redagent.engine.matrix import plan_only as plan_run_only

    if retry_invalid and not resume:
        fail("--retry-invalid re-runs rollouts of a stored run: give --resume RUN_ID")
    if sandbox not in ("bwrap", "docker"):
        fail(f"unknown --sandbox {sandbox!r} (bwrap or docker)")
    if image and sandbox != "docker":
        fail("--image chooses the container image: give --sandbox docker")
    if resume and (sandbox != "bwrap" or image):
        fail("--resume runs in the sandbox the run was started with; drop --sandbox/--image")
    if sandbox == "docker":
        from redagent.sandbox.docker_backend import chosen_image

        sandbox = f"docker:{image or chosen_image()}"
    execution = Execution(executor=executor, workers=workers, ray_address=ray_address)
    check_execution(execution)
    with opened_store(db) as store:
        backend = None
        try:
            spec = (
                None
                if resume
                else RunSpec(
                    cases=cases,
                    models=split(models),
                    harnesses=split(harnesses),
                    cues=split(cues),
                    defenses=split(defenses),
                    attempts=attempts,
                    concurrency=concurrency,
                    per_model=per_model,
                    max_steps=max_steps,
                    api_base=api_base,
                    timeout=timeout,
                    retries=retries,
                    max_tokens=max_tokens,
                    tool_choice=tool_choice,
                    disclosure=disclosure or DEFAULT_DISCLOSURE,
                    benign_arm=benign_arm,
                    attacker=attacker,
                    attacker_model=attacker_model,
                    attacker_api_base=attacker_api_base,
                    attack_budget=attack_budget,
                    sandbox=sandbox,
                )
            )
            if plan_only:
                _print_plan(plan_run_only(store, spec, resume=resume, retry_invalid=retry_invalid), as_json)
                return
            # Started before the run is stored: a missing Ray, an unreachable cluster or SQLite across nodes is
            # one line with nothing written.
            backend = open_executor(execution, store.url)
            # The pre-flight sends a real request, which a server may never answer: a signal here ends it (its
            # request cancelled, so closed) before any rollout ran.
            with stoppable("the run had not started; no rollout ran"):
                if resume:
                    runner = resume_run(store, resume, retry_invalid=retry_invalid)
                else:
                    assert spec is not None, "a run that is not resumed was specified above"
                    runner = start_run(store, spec)
            assert isinstance(runner.models, ModelPool), "start_run and resume_run give the runner a ModelPool"
            for line in runner.models.warnings:  # the pre-flight's: said before the run, which goes on
                err.print(f"warning: {line}", style="yellow", markup=False, highlight=False, soft_wrap=True)
            result = _drive(distribute(runner, backend, runner.models.spec), as_json)
        finally:
            if backend is not None:
                backend.shutdown()
    if as_json:
        print_json(
            {
                k: result[k]
                for k in (
                    "run_id",
                    "planned",
                    "completed",
                    "valid",
                    "invalid",
                    "invalid_reasons",
                    "execution_asr",
                    "utility",
                )
            }
        )
    else:
        print_summary(result)
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
        out.print(
            "no history: no earlier valid rollout of these case versions is stored, so model calls, tokens, "
            "cost and wall time cannot be estimated",
            highlight=False,
        )
        return
    out.print(
        f"history: {history['same_model']} rollouts from earlier runs of the same case, model and harness, "
        f"{history['other_model']} from the same case and harness under another model, {history['none']} "
        f"without{' (estimated at the mean of the rest)' if plan['extrapolated'] else ''}",
        highlight=False,
    )
    table = Table(title="expected (model calls count the model's turns: an upper bound with parallel tool calls)")
    for column in ("model", "rollouts", "model calls", "prompt tokens", "completion tokens", "cost (USD)"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for m in plan["models"]:
        cost = "no price" if m["cost_usd"] is None else f"{m['cost_usd']:.4f}"
        table.add_row(
            m["model"],
            str(m["rollouts"]),
            f"{m['model_calls']:,}",
            f"{m['prompt_tokens']:,}",
            f"{m['completion_tokens']:,}",
            cost,
        )
    out.print(table)
    unpriced = f" (no price in litellm's cost map for {', '.join(plan['unpriced'])})" if plan["unpriced"] else ""
    out.print(
        f"total: {plan['model_calls']:,} model calls, {plan['prompt_tokens']:,} prompt + "
        f"{plan['completion_tokens']:,} completion tokens, ${plan['cost_usd']:.4f}{unpriced}, wall time "
        f"≈ {_duration(plan['wall_seconds'])}",
        highlight=False,
    )


def _duration(seconds: float) -> str:
    if seconds < 1:
        return "< 1 s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@run_app.command("replay", epilog=examples("redagent replay run-3fa2 --defense policy-reminder"))
def replay(
    run_id: str = typer.Argument(..., help="the run whose rollouts are replayed"),
    defense: str = typer.Option(..., "--defense", help="the defense to replay with"),
    harmful_only: bool = typer.Option(True, "--harmful-only/--all-rollouts", help="replay only E=1 rollouts"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Re-run historical rollouts with only the defense changed; each new rollout links to its baseline."""
    from redagent.engine.matrix import replay_run

    with opened_store(db) as store:
        runner = replay_run(store, run_id, defense=defense, harmful_only=harmful_only)
        for line in getattr(runner.models, "warnings", []):  # the pre-flight's, said before the replay
            err.print(f"warning: {line}", style="yellow", markup=False, highlight=False, soft_wrap=True)
        result = _drive(runner, as_json)
    if as_json:
        print_json(result)
    else:
        print_summary(result)
    _exit_after_signal(result)
