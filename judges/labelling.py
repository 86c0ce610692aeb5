"""Labelling a stored run: judge every valid rollout under each configuration, annotate recognition.

Labels already stored for (rollout, configuration hash, backbone) are reused, so re-judging costs
nothing. Rule judges are synchronous and fast; LLM judges run with bounded concurrency. Rollouts
whose case changed since the run (a different content hash) are not judged against the new case.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from redagent.cases.loader import find_cases
from redagent.cases.schema import Case
from redagent.judges.config import RULE, JudgeConfig, config_for, contract_text
from redagent.judges.recognition import lexical
from redagent.judges.rules import judge_rule
from redagent.store.db import Store
from redagent.store.records import JudgeLabelRecord, RecognitionLabelRecord

BATCH = 200
LEXICAL = "lexical"


class LabellingError(ValueError):
    """A run that cannot be judged as asked; one line for the user."""


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
        return {"run_id": self.run_id, "configs": self.configs, "judged": dict(self.judged),
                "cached": dict(self.cached), "failed": dict(self.failed), "stale_cases": self.stale,
                "invalid_skipped": self.invalid_skipped}


def run_cases(store: Store, run_id: str) -> dict[str, Case]:
    """The cases the run's rollouts used, as this installation has them now (a changed case is caught by
    its hash), including those from a researcher's own folder that the run recorded."""
    run = store.get_run(run_id)
    # The recorded content hashes pick the benchmark version the run used (v1 and v2 share case ids).
    hashes = (run.protocol.get("case_ids") or {}) if run else {}
    return find_cases(store.case_ids(run_id), run.protocol.get("case_files") if run else None,
                      hashes if isinstance(hashes, dict) else None)


def _judge_model(backbone: str, api_base: str | None, timeout: float, retries: int):
    from redagent.engine.models import LiteLLMModel, check_model

    check_model(backbone, api_base)
    return LiteLLMModel(backbone, api_base=api_base, timeout=timeout, retries=retries)


def judge_run(store: Store, run_id: str, views: list[str], *, backbone: str = RULE, api_base: str | None = None,
              concurrency: int = 8, timeout: float = 60.0, retries: int = 3) -> LabellingReport:
    if store.get_run(run_id) is None:
        raise LabellingError(f"no run {run_id!r} in the store")
    configs = [config_for(view, backbone) for view in views]
    model = None if backbone == RULE else _judge_model(backbone, api_base, timeout, retries)
    cases = run_cases(store, run_id)
    report = LabellingReport(run_id, [c.name for c in configs])
    for page in _pages(store.iter_export(run_id)):
        work: list[tuple[JudgeConfig, dict[str, Any], Case]] = []
        for config in configs:
            cached = store.cached_judge_labels([r["rollout_id"] for r in page], config.config_hash, backbone)
            for rollout in page:
                if not rollout["valid"]:
                    report.invalid_skipped += config is configs[0]
                    continue
                case = cases.get(rollout["case_id"])
                if case is None or case.content_hash != rollout["case_hash"]:
                    report.stale += config is configs[0]
                    continue
                if rollout["rollout_id"] in cached:
                    report.cached[config.name] += 1
                    continue
                work.append((config, rollout, case))
        records = _label(work, model, concurrency, run_id)
        for record in records:
            (report.judged if record.status == "ok" else report.failed)[record.config_name] += 1
        if records:
            store.write_judge_labels(records)
    return report


def _label(work, model, concurrency: int, run_id: str) -> list[JudgeLabelRecord]:
    if model is None:
        return [_record(config, rollout, run_id, judge_rule(config, rollout, case)) for config, rollout, case in work]
    from redagent.judges.llm import judge_llm

    async def go() -> list[JudgeLabelRecord]:
        slots = asyncio.Semaphore(concurrency)

        async def one(config, rollout, case):
            async with slots:
                return _record(config, rollout, run_id, await judge_llm(config, rollout, case, model))
        return await asyncio.gather(*(one(*item) for item in work))
    return asyncio.run(go()) if work else []


def _record(config: JudgeConfig, rollout: dict[str, Any], run_id: str, label) -> JudgeLabelRecord:
    return JudgeLabelRecord(
        rollout_id=rollout["rollout_id"], run_id=run_id, config_name=config.name, config_hash=config.config_hash,
        view=config.view, contract_hash=config.contract_hash, gate=config.gate, backbone=config.backbone,
        label=label.label, status=label.status, rationale=label.rationale, evidence=label.evidence,
        prompt_tokens=label.prompt_tokens, completion_tokens=label.completion_tokens, cost_usd=label.cost_usd,
        created_at=datetime.now(UTC))


def recognize_run(store: Store, run_id: str, *, backbone: str | None = None, api_base: str | None = None,
                  concurrency: int = 8, timeout: float = 60.0, retries: int = 3) -> dict[str, Any]:
    """Recognition labels for every valid harmful (E=1) rollout of the run."""
    if store.get_run(run_id) is None:
        raise LabellingError(f"no run {run_id!r} in the store")
    judge = backbone or LEXICAL
    contract_hash = recognition_contract_hash(judge)
    model = None if backbone is None else _judge_model(backbone, api_base, timeout, retries)
    cases = run_cases(store, run_id)
    done = {r.rollout_id for r in store.recognition_labels(run_id, judge, contract_hash)}
    harmful = [r for r in store.iter_export(run_id) if r["valid"] and r["E"] == 1 and r["rollout_id"] not in done
               and r["case_id"] in cases and cases[r["case_id"]].content_hash == r["case_hash"]]

    async def llm_all():
        from redagent.judges.llm import recognize_llm

        slots = asyncio.Semaphore(concurrency)

        async def one(rollout):
            async with slots:
                return rollout, await recognize_llm(rollout, cases[rollout["case_id"]], model)
        return await asyncio.gather(*(one(r) for r in harmful))

    results = (asyncio.run(llm_all()) if model is not None and harmful
               else [(r, lexical(r, cases[r["case_id"]])) for r in harmful])
    records = [RecognitionLabelRecord(
        rollout_id=r["rollout_id"], run_id=run_id, judge=judge, contract_hash=contract_hash,
        anchor_idx=res.anchor_idx, resolved=res.resolved, broad=res.broad, strict=res.strict, status=res.status,
        rationale=res.rationale, evidence=res.evidence, created_at=datetime.now(UTC)) for r, res in results]
    for start in range(0, len(records), BATCH):
        store.write_recognition_labels(records[start:start + BATCH])
    return {"run_id": run_id, "judge": judge, "labelled": len(records), "cached": len(done),
            "unresolved": sum(1 for r in records if not r.resolved),
            "failed": sum(1 for r in records if r.status != "ok")}


def recognition_contract_hash(judge: str) -> str:
    import hashlib

    text = "lexical-cues/v1" if judge == LEXICAL else contract_text("recognition")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _pages(rows, size: int = BATCH):
    page: list[dict[str, Any]] = []
    for row in rows:
        page.append(row)
        if len(page) >= size:
            yield page
            page = []
    if page:
        yield page
