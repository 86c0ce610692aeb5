"""Planning a matrix run: which cases, which conditions, a stable id for every rollout, and what it will cost.

A rollout's id is a hash of the run id, the case (id and content hash) and its cell (model,
harness, cue, defense, attempt). Storing by that id makes writes idempotent: a resumed or repeated
run can never store the same rollout twice.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from redagent.cases.loader import (
    BENCHMARKS,
    benchmark_dir,
    benchmark_version,
    compiled_cases,
    load_cases,
    manifest_hash,
)
from redagent.cases.schema import BENIGN_SUFFIX, Case
from redagent.engine.calibration import BEHAVIOURS, is_calibration
from redagent.engine.conditions import CUES, DEFENSES
from redagent.engine.types import HARNESSES, RolloutKey
from redagent.errors import UserError
from redagent.store.records import RolloutCost
from redagent.store.records import rollout_id as stored_rollout_id

SELECTOR_FIELDS = ("surface", "strategy", "vulnerability", "constraint", "channel")


class PlanError(UserError, ValueError):
    """A matrix that cannot be run as asked; the message is one line for the user."""

    title = "Run plan error"


def rollout_id(run_id: str, key: RolloutKey, case_hash: str) -> str:
    return stored_rollout_id(run_id, key.case_id, case_hash, key.model, key.harness, key.cue, key.defense, key.attempt)


def case_set_hash(cases: Iterable[Case]) -> str:
    digest = hashlib.sha256()
    for case in sorted(cases, key=lambda c: c.id):
        digest.update(f"{case.id}\0{case.content_hash}\n".encode())
    return digest.hexdigest()


def select_cases(selector: str, library: list[Case] | None = None) -> list[Case]:
    """`all` (the starter library), or comma-separated terms: an id, an id glob (`banking-*`),
    `surface:email`, `strategy:T3`, `vulnerability:V01`, `constraint:C16`, `channel:tool`, a case
    file/folder path, or `benchmark` / `benchmark-variants` (the frozen compiled library)."""
    terms = [t.strip() for t in selector.split(",") if t.strip()] or ["all"]
    # `benchmark` / `benchmark-variants` name the latest frozen compiled library's base cases / its
    # variants; `benchmark@v1` / `benchmark-variants@v1` an earlier version's.
    named = {"benchmark": benchmark_dir() / "base", "benchmark-variants": benchmark_dir() / "variants"}
    for version in BENCHMARKS:
        named[f"benchmark@v{version}"] = benchmark_dir(version) / "base"
        named[f"benchmark-variants@v{version}"] = benchmark_dir(version) / "variants"
    terms = [str(named[t]) if t in named else t for t in terms]
    paths = [t for t in terms if ("/" in t or t.endswith((".yaml", ".yml", ".json"))) and ":" not in t]
    cases = list(library) if library is not None else load_cases()
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise PlanError(f"case path not found: {missing[0]}")
    chosen: dict[str, Case] = {}
    for term in terms:
        if term in paths:
            matched = load_cases([term])  # a path means the cases in it, even where an id shadows a library case
        elif term == "all":
            matched = cases
        elif ":" in term:
            field, _, value = term.partition(":")
            if field not in SELECTOR_FIELDS:
                raise PlanError(f"unknown case selector {field!r} (use {', '.join(SELECTOR_FIELDS)}, an id or a glob)")
            matched = [c for c in cases if _field(c, field) == value or (field == "surface" and value in c.surfaces)]
        else:
            matched = [c for c in cases if fnmatch.fnmatchcase(c.id, term)]
        if not matched:
            raise PlanError(f"case selector {term!r} matches no case")
        for case in matched:
            kept = chosen.setdefault(case.id, case)
            if kept.content_hash != case.content_hash:
                # A run holds one case per id; keeping either file silently would run a case the user did not
                # mean (v2 and v3 re-froze the library under the same ids).
                raise PlanError(
                    f"case id {case.id!r} is selected twice with different contents "
                    f"({kept.source or 'the library'} and {case.source or 'the library'}): "
                    "a run holds one case per id"
                )
    return sorted(chosen.values(), key=lambda c: c.id)


def _field(case: Case, field: str) -> str:
    return {
        "strategy": case.strategy,
        "vulnerability": case.vulnerability,
        "constraint": case.constraint,
        "channel": case.channel,
    }.get(field, "")


def check_conditions(
    models: list[str], harnesses: list[str], cues: list[str], defenses: list[str], attempts: int
) -> None:
    for name, values, known in (
        ("harness", harnesses, HARNESSES),
        ("cue", cues, CUES),
        ("defense", defenses, DEFENSES),
    ):
        if not values:
            raise PlanError(f"no {name} given")
        for value in values:
            if value not in known:
                raise PlanError(f"unknown {name} {value!r} (known: {', '.join(known)})")
    if not models:
        raise PlanError("no model given")
    for model in models:
        if is_calibration(model) and model not in BEHAVIOURS:
            raise PlanError(f"unknown calibration agent {model!r} (known: {', '.join(BEHAVIOURS)})")
    if attempts < 1:
        raise PlanError("--attempts must be at least 1")


def with_benign_arm(cases: list[Case]) -> list[Case]:
    """The cases plus the benign counterpart of every attacked one (`<id>-benign`, the attack never shown),
    sorted by id: the arm that measures benign utility beside utility under attack.

    An attacked case whose base already has a benign case in the selection (a compiled benchmark's
    benign variant file, or a derived one) gets none of its own: a selection of base cases with their
    variants is not doubled, and a multi-channel variant shares its base's benign task. A base of the
    compiled benchmark gets the benign variant file the benchmark ships for it.
    """
    chosen = {c.id: c for c in cases}
    covered = {c.variant_of or c.id for c in cases if not c.attacked}
    needed: dict[str, Case] = {}  # root id → the attacked case its counterpart is derived from
    for case in sorted(cases, key=lambda c: (c.variant != "", c.id)):  # a base before its variants
        root = case.variant_of or case.id
        if case.attacked and root not in covered:
            needed.setdefault(root, case)
    # Where the compiled benchmark ships the benign variant of a base, that file is the counterpart: it is
    # what the id resolves to when the run is resumed or judged.
    shipped = {
        c.variant_of: c for c in compiled_cases(f"{root}{BENIGN_SUFFIX}" for root in needed).values() if not c.attacked
    }
    for root, case in needed.items():
        benign = shipped.get(root) or case.benign_counterpart()
        chosen.setdefault(benign.id, benign)
    return sorted(chosen.values(), key=lambda c: c.id)


def matrix(
    cases: list[Case], models: list[str], harnesses: list[str], cues: list[str], defenses: list[str], attempts: int
) -> list[RolloutKey]:
    return [
        RolloutKey(case.id, model, harness, cue, defense, attempt)
        for case in cases
        for model in models
        for harness in harnesses
        for cue in cues
        for defense in defenses
        for attempt in range(1, attempts + 1)
    ]


def manifest_hash_for(cases: list[Case]) -> str | None:
    """The frozen manifest's hash when the run uses cases of a compiled benchmark (the newest version
    among them), else None."""
    versions = {v for c in cases if c.source and (v := benchmark_version(c.source)) is not None}
    if not versions:
        return None
    return manifest_hash(benchmark_dir(max(versions)))


def estimate(
    keys: list[RolloutKey],
    cases: dict[str, Case],
    history: list[RolloutCost],
    *,
    concurrency: int,
    per_model: int | None,
    price: Callable[[str, float, float], float | None],
) -> dict[str, Any]:
    """What a run of `keys` should cost, from what valid rollouts of the same case versions cost before.

    Each planned rollout takes the mean of earlier rollouts of its case version, model and harness;
    without those, of its case version and harness under any other model (the loop a case makes a
    harness run is much the same) — real models for a real one, since calibration agents report no
    tokens; without either it has no history. Rollouts without history are estimated
    at the mean of those with it (`extrapolated`), and with no history at all nothing is estimated.
    Model calls are counted as the model's turns (tool calls and answers), so parallel tool calls make
    the figure an upper bound. Cost is litellm's cost map over the expected tokens; the wall time is
    the rollouts' duration spread over `concurrency` slots, or over `per_model` for the busiest model
    when that bounds it more.
    """
    exact: dict[tuple[str, str, str], RolloutCost] = {}
    # Calibration agents report no tokens: they stand in for one another, never for a real model.
    pooled: dict[tuple[str, str, bool], list[RolloutCost]] = {}
    for past in history:
        exact[(past.case_hash, past.model, past.harness)] = past
        pooled.setdefault((past.case_hash, past.harness, is_calibration(past.model)), []).append(past)
    fields = ("turns", "prompt_tokens", "completion_tokens", "duration_ms")
    per_key: list[tuple[RolloutKey, dict[str, float] | None]] = []
    matched: Counter[str] = Counter()
    for key in keys:
        case_hash = cases[key.case_id].content_hash
        row = exact.get((case_hash, key.model, key.harness))
        if row is not None:
            matched["same_model"] += 1
            per_key.append((key, {f: getattr(row, f) for f in fields}))
            continue
        rows = pooled.get((case_hash, key.harness, is_calibration(key.model)))
        if rows:
            matched["other_model"] += 1
            total = sum(r.rollouts for r in rows)
            per_key.append((key, {f: sum(getattr(r, f) * r.rollouts for r in rows) / total for f in fields}))
            continue
        matched["none"] += 1
        per_key.append((key, None))
    known = [stats for _, stats in per_key if stats is not None]
    result: dict[str, Any] = {
        "rollouts": len(keys),
        "history": {k: matched[k] for k in ("same_model", "other_model", "none")},
        "extrapolated": bool(known) and len(known) < len(keys),
        "concurrency": concurrency,
        "per_model": per_model,
        "models": [],
    }
    if not known:
        result.update(
            model_calls=None, prompt_tokens=None, completion_tokens=None, cost_usd=None, unpriced=[], wall_seconds=None
        )
        return result
    mean = {f: sum(s[f] for s in known) / len(known) for f in fields}
    by_model: dict[str, dict[str, float]] = {}
    for key, stats in per_key:
        totals = by_model.setdefault(key.model, {"rollouts": 0, **{f: 0.0 for f in fields}})
        totals["rollouts"] += 1
        for f in fields:
            totals[f] += (stats or mean)[f]
    unpriced = []
    cost = 0.0
    for model, totals in sorted(by_model.items()):
        spent = 0.0 if is_calibration(model) else price(model, totals["prompt_tokens"], totals["completion_tokens"])
        if spent is None:
            unpriced.append(model)
        else:
            cost += spent
        result["models"].append(
            {
                "model": model,
                "rollouts": int(totals["rollouts"]),
                "model_calls": round(totals["turns"]),
                "prompt_tokens": round(totals["prompt_tokens"]),
                "completion_tokens": round(totals["completion_tokens"]),
                "cost_usd": spent,
            }
        )
    busy = sum(t["duration_ms"] for t in by_model.values()) / 1000 / max(1, min(concurrency, len(keys)))
    if per_model:
        busy = max([busy, *(t["duration_ms"] / 1000 / min(per_model, t["rollouts"]) for t in by_model.values())])
    result.update(
        model_calls=round(sum(t["turns"] for t in by_model.values())),
        prompt_tokens=round(sum(t["prompt_tokens"] for t in by_model.values())),
        completion_tokens=round(sum(t["completion_tokens"] for t in by_model.values())),
        cost_usd=cost,
        unpriced=unpriced,
        wall_seconds=busy,
    )
    return result
