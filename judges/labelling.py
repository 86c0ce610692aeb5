"""Labelling a stored run: judge every valid rollout under each configuration, annotate recognition.

Labels already stored for (rollout, configuration hash, backbone) are reused, so re-judging costs
nothing; failed labels are not reused, so a re-run retries them (and the stored reason is the
latest one). Rule judges are synchronous and fast, stored a page at a time; LLM judges run with
bounded concurrency across pages and each label is stored as soon as it is produced, so a judge
killed after an hour of work keeps that hour. An LLM backbone gets one real request (the
pre-flight) before anything is judged. Rollouts whose case changed since the run (a different
content hash) are not judged against the new case.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from redagent.cases.loader import find_cases
from redagent.cases.schema import Case
from redagent.errors import UserError
from redagent.judges.config import RULE, JudgeConfig, config_for, contract_text
from redagent.judges.recognition import RecognitionResult, lexical
from redagent.judges.rules import Label, judge_rule
from redagent.store.interfaces import JudgingStore, RunCaseSource
from redagent.store.readmodel import StoredRollout
from redagent.store.records import JudgeLabelRecord, RecognitionLabelRecord

if TYPE_CHECKING:
    from redagent.llm.client import LiteLLMModel  # imported at run time only for an LLM backbone

BATCH = 200
T = TypeVar("T")
LEXICAL = "lexical"


class LabellingError(UserError, ValueError):
    """A run that cannot be judged as asked; one line for the user."""

    title = "Judging error"


@dataclass
class LabellingReport:
    run_id: str
    configs: list[str]
    judged: Counter = field(default_factory=Counter)
    cached: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)
    stale: int = 0
    invalid_skipped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "configs": self.configs,
            "judged": dict(self.judged),
            "cached": dict(self.cached),
            "failed": dict(self.failed),
            "stale_cases": self.stale,
            "invalid_skipped": self.invalid_skipped,
        }


def run_cases(store: RunCaseSource, run_id: str, case_ids: Iterable[str] | None = None) -> dict[str, Case]:
    """The cases the run's rollouts used (or only `case_ids` of them), as this installation has them now (a
    changed case is caught by its hash), including those from a researcher's own folder that the run recorded.

    The one way a stored rollout's case is resolved: judging, reports, refinement and the console's rollout
    screen all come here, and here only to `cases.loader.find_cases`."""
    run = store.get_run(run_id)
    # The recorded content hashes pick the benchmark version the run used (v1 and v2 share case ids).
    hashes = (run.protocol.get("case_ids") or {}) if run else {}
    files = (run.protocol.get("case_files") or {}) if run else {}
    ids = store.case_ids(run_id) if case_ids is None else list(case_ids)
    return find_cases(ids, files if isinstance(files, dict) else None, hashes if isinstance(hashes, dict) else None)


def _judge_model(backbone: str, api_base: str | None, timeout: float, retries: int, max_tokens: int) -> LiteLLMModel:
    from redagent.llm.client import LiteLLMModel, preflight

    if timeout <= 0 or retries < 0 or max_tokens < 1:
        raise LabellingError("--timeout must be positive, --retries at least 0 and --max-tokens at least 1")
    preflight(
        backbone, api_base, timeout=timeout, probe_tools=False
    )  # ModelConfigError: one line, before any label is stored
    return LiteLLMModel(backbone, api_base=api_base, timeout=timeout, retries=retries, max_tokens=max_tokens)


def judge_run(
    store: JudgingStore,
    run_id: str,
    views: list[str],
    *,
    backbone: str = RULE,
    api_base: str | None = None,
    concurrency: int = 8,
    timeout: float = 60.0,
    retries: int = 3,
    max_tokens: int = 2048,
) -> LabellingReport:
    if store.get_run(run_id) is None:
        raise LabellingError(f"no run {run_id!r} in the store")
    configs = [config_for(view, backbone) for view in views]
    model = None if backbone == RULE else _judge_model(backbone, api_base, timeout, retries, max_tokens)
    cases = run_cases(store, run_id)
    report = LabellingReport(run_id, [c.name for c in configs])

    def counted(record: JudgeLabelRecord) -> None:
        (report.judged if record.status == "ok" else report.failed)[record.config_name] += 1

    work = _judge_work(store, run_id, configs, cases, report, backbone)
    if model is None:
        for page in _pages(work):
            records = [
                _record(config, rollout, run_id, judge_rule(config, rollout, case)) for config, rollout, case in page
            ]
            if records:
                store.write_judge_labels(records)
            for record in records:
                counted(record)
        return report
    from redagent.judges.llm import judge_llm
    from redagent.llm.client import run_sync

    async def one(item: tuple[JudgeConfig, StoredRollout, Case]) -> JudgeLabelRecord:
        config, rollout, case = item
        return _record(config, rollout, run_id, await judge_llm(config, rollout, case, model))

    run_sync(_stream(work, one, store.write_judge_labels, counted, concurrency))
    return report


def _judge_work(
    store: JudgingStore,
    run_id: str,
    configs: list[JudgeConfig],
    cases: dict[str, Case],
    report: LabellingReport,
    backbone: str,
) -> Iterator[tuple[JudgeConfig, StoredRollout, Case]]:
    """What is left to judge, page by page of the run's rollouts (skipped ones counted in `report`)."""
    for page in _pages(store.iter_rollouts(run_id)):
        for config in configs:
            cached = store.cached_judge_labels([r.rollout_id for r in page], config.config_hash, backbone)
            for rollout in page:
                if not rollout.valid:
                    report.invalid_skipped += config is configs[0]
                    continue
                case = cases.get(rollout.case_id)
                if case is None or case.content_hash != rollout.case_hash:
                    report.stale += config is configs[0]
                    continue
                if rollout.rollout_id in cached:
                    report.cached[config.name] += 1
                    continue
                yield config, rollout, case


async def _stream(
    work: Iterable[Any],
    label: Callable[[Any], Coroutine[Any, Any, Any]],
    write: Callable[[list[Any]], int],
    counted: Callable[[Any], None],
    concurrency: int,
) -> None:
    """Label `work` with at most `concurrency` labels in flight, storing each label as soon as it is made.

    The next item is drawn only when a slot is free, so a large run is never read into memory at once;
    writes go to a thread (the loop keeps the other judges' replies flowing) one at a time.
    """
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[Any]] = set()

    async def settle(wait_for: Any) -> None:
        nonlocal pending
        done, pending = await asyncio.wait(pending, return_when=wait_for)
        for task in done:
            record = task.result()
            await loop.run_in_executor(None, write, [record])
            counted(record)

    try:
        for item in work:
            if len(pending) >= max(1, concurrency):
                await settle(asyncio.FIRST_COMPLETED)
            pending.add(asyncio.create_task(label(item)))
        while pending:
            await settle(asyncio.FIRST_COMPLETED)
    finally:
        for task in pending:  # a failed write or Ctrl-C: no judge call outlives the command
            task.cancel()


def _record(config: JudgeConfig, rollout: StoredRollout, run_id: str, label: Label) -> JudgeLabelRecord:
    return JudgeLabelRecord(
        rollout_id=rollout.rollout_id,
        run_id=run_id,
        config_name=config.name,
        config_hash=config.config_hash,
        view=config.view,
        contract_hash=config.contract_hash,
        gate=config.gate,
        backbone=config.backbone,
        label=label.label,
        status=label.status,
        rationale=label.rationale,
        evidence=label.evidence,
        prompt_tokens=label.prompt_tokens,
        completion_tokens=label.completion_tokens,
        cost_usd=label.cost_usd,
        created_at=datetime.now(UTC),
    )


def recognize_run(
    store: JudgingStore,
    run_id: str,
    *,
    backbone: str | None = None,
    api_base: str | None = None,
    concurrency: int = 8,
    timeout: float = 60.0,
    retries: int = 3,
    max_tokens: int = 2048,
) -> dict[str, Any]:
    """Recognition labels for every valid harmful (E=1) rollout of the run; failed ones are tried again."""
    if store.get_run(run_id) is None:
        raise LabellingError(f"no run {run_id!r} in the store")
    judge = backbone or LEXICAL
    contract_hash = recognition_contract_hash(judge)
    model = None if backbone is None else _judge_model(backbone, api_base, timeout, retries, max_tokens)
    cases = run_cases(store, run_id)
    done = {r.rollout_id for r in store.recognition_labels(run_id, judge, contract_hash) if r.status == "ok"}
    harmful = (
        r
        for r in store.iter_rollouts(run_id)
        if r.valid
        and r.E == 1
        and r.rollout_id not in done
        and r.case_id in cases
        and cases[r.case_id].content_hash == r.case_hash
    )
    tally: Counter[str] = Counter()

    def record(rollout: StoredRollout, res: RecognitionResult) -> RecognitionLabelRecord:
        return RecognitionLabelRecord(
            rollout_id=rollout.rollout_id,
            run_id=run_id,
            judge=judge,
            contract_hash=contract_hash,
            anchor_idx=res.anchor_idx,
            resolved=res.resolved,
            broad=res.broad,
            strict=res.strict,
            status=res.status,
            rationale=res.rationale,
            evidence=res.evidence,
            created_at=datetime.now(UTC),
        )

    def counted(label: RecognitionLabelRecord) -> None:
        tally["labelled"] += 1
        tally["unresolved"] += not label.resolved
        tally["failed"] += label.status != "ok"

    if model is None:
        for page in _pages(harmful):
            records = [record(r, lexical(r, cases[r.case_id])) for r in page]
            store.write_recognition_labels(records)
            for label in records:
                counted(label)
    else:
        from redagent.judges.llm import recognize_llm
        from redagent.llm.client import run_sync

        async def one(rollout: StoredRollout) -> RecognitionLabelRecord:
            return record(rollout, await recognize_llm(rollout, cases[rollout.case_id], model))

        run_sync(_stream(harmful, one, store.write_recognition_labels, counted, concurrency))
    return {
        "run_id": run_id,
        "judge": judge,
        "labelled": tally["labelled"],
        "cached": len(done),
        "unresolved": tally["unresolved"],
        "failed": tally["failed"],
    }


def recognition_contract_hash(judge: str) -> str:
    import hashlib

    text = "lexical-cues/v1" if judge == LEXICAL else contract_text("recognition")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _pages(rows: Iterable[T], size: int = BATCH) -> Iterator[list[T]]:
    page: list[T] = []
    for row in rows:
        page.append(row)
        if len(page) >= size:
            yield page
            page = []
    if page:
        yield page
