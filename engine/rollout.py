"""One rollout end to end: sandbox from the case, the harness drives the model, then E from the evidence.

Whatever happens, the sandbox is finished (snapshot, diff, verdict) and removed. A rollout the
model, the harness or the sandbox could not complete is recorded as invalid with its reason — its E
is not set, so it can never be counted as safe, and neither is its utility U (the case's check of
whether the user's task was done), so it is never counted as a task failed either.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import Executor
from datetime import UTC, datetime
from typing import Any

from redagent.cases.execution import CaseRun
from redagent.cases.schema import Case
from redagent.engine.calibration import expected_E, is_calibration
from redagent.engine.conditions import DEFAULT_DISCLOSURE, cue_prefix, defense_text
from redagent.engine.harnesses import get_harness
from redagent.engine.plan import rollout_id
from redagent.engine.types import HarnessError, RolloutContext, RolloutKey, off_loop
from redagent.llm.client import Model, ModelFailure
from redagent.sandbox.environment import SetupError
from redagent.sandbox.isolation import SandboxFailure
from redagent.store.records import RolloutRecord

ModelFactory = Callable[[str, Case], Model]
# A rollout's adaptive attacker (engine/attacker/session.py AttackerPool), None for a benign case.
AttackerFactory = Callable[[Case], Any]


async def execute_rollout(
    run_id: str,
    case: Case,
    key: RolloutKey,
    models: ModelFactory,
    *,
    disclosure: str = DEFAULT_DISCLOSURE,
    max_steps: int = 30,
    executor: Executor | None = None,
    baseline_rollout_id: str | None = None,
    attackers: AttackerFactory | None = None,
    opened: set[CaseRun] | None = None,
) -> RolloutRecord:
    """One rollout. Everything that blocks — the sandbox's set-up, every tool call, the finish (snapshot, diff,
    verdict, consequence replays, re-runs) and the removal — runs on `executor`'s threads (`off_loop`): the event
    loop only schedules, so one rollout's replay never stalls the others in flight. `opened` (the runner's) holds
    the sandbox while it is open, so that whatever a stop leaves open is closed by the runner."""
    started = datetime.now(UTC)
    clock = time.perf_counter()
    try:
        run = await _set_up(case, executor)
    except SetupError as exc:
        return _invalid_before_start(run_id, case, key, started, clock, "sandbox_error", str(exc), baseline_rollout_id)
    except (OSError, SandboxFailure) as exc:  # no workspace could be made, or its baseline not be read
        return _invalid_before_start(
            run_id, case, key, started, clock, "sandbox_error", f"{type(exc).__name__}: {exc}", baseline_rollout_id
        )
    if opened is not None:
        opened.add(run)
    try:
        return await _drive(
            run_id,
            case,
            key,
            models,
            run,
            disclosure,
            max_steps,
            executor,
            baseline_rollout_id,
            attackers,
            started,
            clock,
        )
    finally:
        if opened is not None:
            opened.discard(run)


async def _set_up(case: Case, executor: Executor | None) -> CaseRun:
    """The case's sandbox and its baseline, built on the pool. A cancellation meanwhile waits for the build and
    removes what it made."""
    future = asyncio.get_running_loop().run_in_executor(executor, CaseRun, case)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])
        if not future.cancelled() and future.exception() is None:
            await off_loop(executor, future.result().close)
        raise


async def _drive(
    run_id: str,
    case: Case,
    key: RolloutKey,
    models: ModelFactory,
    run: CaseRun,
    disclosure: str,
    max_steps: int,
    executor: Executor | None,
    baseline_rollout_id: str | None,
    attackers: AttackerFactory | None,
    started: datetime,
    clock: float,
) -> RolloutRecord:
    valid, reason, detail = True, None, None
    # From here on every way out closes the sandbox: killed commands, unmounted quota, removed workspace.
    try:
        ctx = RolloutContext(
            case=case,
            run=run,
            model=models(key.model, case),
            cue_text=cue_prefix(key.cue, disclosure),
            defense_text=defense_text(key.defense, case),
            max_steps=max_steps,
            executor=executor,
            attack=attackers(case) if attackers is not None else None,
        )  # engine/attacker/
    except BaseException:
        await off_loop(executor, run.close)
        raise
    try:
        await get_harness(key.harness).run(ctx)
    except ModelFailure as exc:
        valid, reason, detail = False, exc.reason, exc.detail
    except HarnessError as exc:
        valid, reason, detail = False, exc.reason, exc.detail
    except (OSError, SandboxFailure) as exc:
        valid, reason, detail = False, "sandbox_error", f"{type(exc).__name__}: {exc}"
    except asyncio.CancelledError:
        if _stopping():
            # The run is stopping (or a caller's timeout fired): clean up and let the cancellation
            # through. Not stored, so a resume runs it again (a stored rollout is never re-run).
            run.interrupt()
            await off_loop(executor, run.close)
            raise
        # Cancelled from inside (a future the harness awaited was cancelled): this rollout failed.
        valid, reason, detail = False, "cancelled", "the harness was cancelled while the run went on"
    except Exception as exc:  # a harness bug must cost one rollout, not the run; the reason says so
        valid, reason, detail = False, "harness_error", f"{type(exc).__name__}: {exc}"
    except BaseException:  # interrupted: nothing to judge, nothing left behind
        run.interrupt()
        await off_loop(executor, run.close)
        raise
    try:
        # Removes the sandbox whether or not the final snapshot succeeds. A stop meanwhile waits for it: finish()
        # closes the sandbox itself, and nothing may close it under a finish in flight.
        finished = await off_loop(executor, lambda: run.finish(answer=ctx.final_text))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # e.g. a workspace the final snapshot could not read: this rollout, not the run
        finished = None
        problem = f"final snapshot failed: {type(exc).__name__}: {exc}"
        valid, reason, detail = False, reason or "sandbox_error", f"{detail}; {problem}" if detail else problem
    if finished is None:
        await off_loop(executor, run.close)
        return _unjudged(run_id, case, key, run, ctx, started, clock, reason, detail, baseline_rollout_id)
    verdict = finished.verdict.to_dict()
    return RolloutRecord(
        id=rollout_id(run_id, key, case.content_hash),
        run_id=run_id,
        case_id=case.id,
        case_version=case.version,
        case_hash=case.content_hash,
        strategy=case.strategy,
        vulnerability=case.vulnerability,
        constraint=case.constraint,
        surfaces=list(case.surfaces),
        channel=case.channel,
        model=key.model,
        harness=key.harness,
        cue=key.cue,
        defense=key.defense,
        attempt=key.attempt,
        valid=valid,
        invalid_reason=reason,
        invalid_detail=detail,
        E=verdict["E"] if valid else None,
        evidence=verdict["evidence"],
        expected_E=expected_E(key.model, case, key.defense, ctx.attack.setting if ctx.attack else None)
        if valid and is_calibration(key.model)
        else None,
        # Exposure as the model server received it, not as the harness sent it (RolloutContext.attack_delivered).
        reached=ctx.attack_delivered(),
        final_text=ctx.final_text,
        started_at=started,
        finished_at=datetime.now(UTC),
        duration_ms=(time.perf_counter() - clock) * 1000,
        prompt_tokens=ctx.prompt_tokens,
        completion_tokens=ctx.completion_tokens,
        cost_usd=ctx.cost_usd,
        baseline_rollout_id=baseline_rollout_id,
        events=[_event(e) for e in ctx.events],
        receipts=[r.to_dict() for r in finished.receipts],
        baseline=finished.baseline,
        final=finished.final,
        diff=[d.to_dict() for d in finished.diff],
        U=finished.U if valid else None,
        benign=not case.attacked,
    )


def _stopping() -> bool:
    """Whether the task running this rollout has been asked to cancel (not merely seen a CancelledError)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _unjudged(
    run_id: str,
    case: Case,
    key: RolloutKey,
    run: CaseRun,
    ctx: RolloutContext,
    started: datetime,
    clock: float,
    reason: str | None,
    detail: str | None,
    baseline_rollout_id: str | None,
) -> RolloutRecord:
    """An invalid rollout whose final state could not be taken: what it did is kept (trajectory,
    receipts, baseline), its final state and diff are empty, and it is judged neither E nor U."""
    record = _invalid_before_start(
        run_id, case, key, started, clock, reason or "sandbox_error", detail or "", baseline_rollout_id
    )
    record.reached = ctx.attack_delivered()
    record.final_text = ctx.final_text
    record.prompt_tokens, record.completion_tokens, record.cost_usd = (
        ctx.prompt_tokens,
        ctx.completion_tokens,
        ctx.cost_usd,
    )
    record.events = [_event(e) for e in ctx.events]
    record.receipts = [r.to_dict() for r in run.env.receipts]
    record.baseline = run.baseline
    return record


def _event(event) -> dict:
    data = event.to_dict()
    data["idx"] = data.pop("index")
    return data


def _invalid_before_start(
    run_id: str,
    case: Case,
    key: RolloutKey,
    started: datetime,
    clock: float,
    reason: str,
    detail: str,
    baseline_rollout_id: str | None,
) -> RolloutRecord:
    return RolloutRecord(
        id=rollout_id(run_id, key, case.content_hash),
        run_id=run_id,
        case_id=case.id,
        case_version=case.version,
        case_hash=case.content_hash,
        strategy=case.strategy,
        vulnerability=case.vulnerability,
        constraint=case.constraint,
        surfaces=list(case.surfaces),
        channel=case.channel,
        model=key.model,
        harness=key.harness,
        cue=key.cue,
        defense=key.defense,
        attempt=key.attempt,
        valid=False,
        invalid_reason=reason,
        invalid_detail=detail,
        E=None,
        evidence={},
        expected_E=None,
        reached=False,
        final_text="",
        started_at=started,
        finished_at=datetime.now(UTC),
        duration_ms=(time.perf_counter() - clock) * 1000,
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        baseline_rollout_id=baseline_rollout_id,
        U=None,
        benign=not case.attacked,
    )
