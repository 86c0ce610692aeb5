"""Starting, resuming and replaying matrix runs, and summarising them — the engine's front door.

A run's protocol (models, harnesses, cues, defenses, attempts, the disclosure text, model endpoint
settings, the case ids and their hashes) is stored with it, so `--resume` rebuilds exactly the same
plan and `replay` can re-run historical rollouts with one condition changed.
"""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from redagent import __version__
from redagent.cases.loader import BENCHMARKS, benchmark_dir, find_cases, library_dir
from redagent.cases.schema import Case
from redagent.engine.calibration import BEHAVIOURS, is_calibration
from redagent.engine.conditions import DEFAULT_DISCLOSURE, DEFENSES
from redagent.engine.harnesses.base import IN_HOUSE
from redagent.engine.models import LiteLLMModel, Model, check_model
from redagent.engine.plan import (
    PlanError,
    RolloutKey,
    case_set_hash,
    check_conditions,
    manifest_hash_for,
    matrix,
    select_cases,
    with_benign_arm,
)
from redagent.engine.runner import MatrixRunner, Progress
from redagent.engine.sim import SimModel
from redagent.store.db import Store
from redagent.store.records import RunRecord


@dataclass
class RunSpec:
    cases: str = "all"
    models: list[str] = field(default_factory=lambda: list(BEHAVIOURS))
    harnesses: list[str] = field(default_factory=lambda: list(IN_HOUSE))  # real CLIs are opt-in
    cues: list[str] = field(default_factory=lambda: ["clean"])
    defenses: list[str] = field(default_factory=lambda: ["none"])
    attempts: int = 1
    concurrency: int = 8
    per_model: int | None = None
    max_steps: int = 30
    api_base: str | None = None
    timeout: float = 60.0
    retries: int = 3
    disclosure: str = DEFAULT_DISCLOSURE
    # Also run every attacked case as its benign counterpart (benign utility beside utility under attack).
    # Off here so a protocol stored before the option existed resumes as it was planned; `redagent run`
    # turns it on by default.
    benign_arm: bool = False


def code_version() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                timeout=2, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{__version__}+{commit}" if commit else __version__


def new_run_id() -> str:
    return f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


class ModelPool:
    """Builds the model for each rollout: a fresh calibration agent, or the shared litellm model."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self._real: dict[str, LiteLLMModel] = {}

    def __call__(self, name: str, case: Case) -> Model:
        if is_calibration(name):
            return SimModel(name, case)
        if name not in self._real:
            self._real[name] = LiteLLMModel(name, api_base=self.spec.api_base, timeout=self.spec.timeout,
                                            retries=self.spec.retries)
        return self._real[name]


def _check(spec: RunSpec) -> None:
    check_conditions(spec.models, spec.harnesses, spec.cues, spec.defenses, spec.attempts)
    from redagent.engine.harnesses.cli.catalog import missing

    if problem := missing(spec.harnesses):  # one line naming the install command
        raise PlanError(problem)
    if spec.concurrency < 1:
        raise PlanError("--concurrency must be at least 1")
    for name in spec.models:
        if not is_calibration(name):
            check_model(name, spec.api_base)  # raises ModelConfigError before anything is written


def start_run(store: Store, spec: RunSpec, *, on_progress=None) -> MatrixRunner:
    _check(spec)
    cases = select_cases(spec.cases)
    if spec.benign_arm:
        cases = with_benign_arm(cases)
    keys = matrix(cases, spec.models, spec.harnesses, spec.cues, spec.defenses, spec.attempts)
    run = RunRecord(id=new_run_id(), status="planned", protocol=_protocol(spec, cases),
                    case_set_hash=case_set_hash(cases), code_version=code_version(), planned=len(keys),
                    created_at=datetime.now(UTC), manifest_hash=manifest_hash_for(cases))
    store.create_run(run)
    return _runner(store, run, spec, cases, keys, on_progress=on_progress)


def resume_run(store: Store, run_id: str, *, on_progress=None) -> MatrixRunner:
    run = _existing(store, run_id)
    spec = _spec(run.protocol)
    cases = _cases_of(run)
    if case_set_hash(cases) != run.case_set_hash:
        raise PlanError(f"the cases of {run_id} changed since it started (case set hash differs); "
                        f"start a new run instead")
    if run.parent_run_id:
        return _replay_runner(store, run, spec, on_progress=on_progress)
    keys = matrix(cases, spec.models, spec.harnesses, spec.cues, spec.defenses, spec.attempts)
    return _runner(store, run, spec, cases, keys, on_progress=on_progress)


def replay_run(store: Store, parent_id: str, *, defense: str, harmful_only: bool = True,
               on_progress=None) -> MatrixRunner:
    """Re-run a run's rollouts (by default its harmful ones) with only the defense changed."""
    if defense not in DEFENSES:
        raise PlanError(f"unknown defense {defense!r} (known: {', '.join(DEFENSES)})")
    parent = _existing(store, parent_id)
    spec = _spec(parent.protocol)
    spec.defenses = [defense]
    spec.benign_arm = False  # a replay re-runs the chosen rollouts (benign ones too, if chosen); it adds no arm
    chosen = [r for r in store.rollouts(parent_id, harmful_only=harmful_only)]
    if not chosen:
        raise PlanError(f"run {parent_id} has no {'harmful ' if harmful_only else ''}rollouts to replay")
    cases = _cases_of(parent, only={r.case_id for r in chosen})
    protocol = _protocol(spec, cases)
    protocol["replay"] = {"of": parent_id, "harmful_only": harmful_only, "defense": defense,
                          "baselines": sorted(r.id for r in chosen)}
    run = RunRecord(id=new_run_id(), status="planned", protocol=protocol, case_set_hash=case_set_hash(cases),
                    code_version=code_version(), planned=len(chosen), created_at=datetime.now(UTC),
                    parent_run_id=parent_id)
    store.create_run(run)
    return _replay_runner(store, run, spec, on_progress=on_progress)


def _replay_runner(store: Store, run: RunRecord, spec: RunSpec, *, on_progress=None) -> MatrixRunner:
    replay = run.protocol["replay"]
    wanted = set(replay["baselines"])
    parents = [r for r in store.rollouts(replay["of"]) if r.id in wanted]
    cases = _cases_of(run)
    baselines = {RolloutKey(r.case_id, r.model, r.harness, r.cue, replay["defense"], r.attempt): r.id
                 for r in parents}
    return _runner(store, run, spec, cases, list(baselines), baselines=baselines, on_progress=on_progress)


def _runner(store: Store, run: RunRecord, spec: RunSpec, cases: list[Case], keys: list[RolloutKey], *,
            baselines: dict[RolloutKey, str] | None = None, on_progress=None) -> MatrixRunner:
    return MatrixRunner(store, run, {c.id: c for c in cases}, keys, ModelPool(spec), concurrency=spec.concurrency,
                        per_model=spec.per_model, max_steps=spec.max_steps, baselines=baselines,
                        disclosure=spec.disclosure, on_progress=on_progress)


def _existing(store: Store, run_id: str) -> RunRecord:
    run = store.get_run(run_id)
    if run is None:
        raise PlanError(f"no run {run_id!r} in {store}")
    return run


def _protocol(spec: RunSpec, cases: list[Case]) -> dict[str, Any]:
    from redagent.engine.harnesses.cli.catalog import builds

    return {**asdict(spec), "harness_builds": builds(spec.harnesses),
            "cue_text": {"clean": "", "disclosed": spec.disclosure},
            "case_ids": {c.id: c.content_hash for c in cases}, "case_files": _own_case_files(cases)}


def _own_case_files(cases: list[Case]) -> dict[str, str]:
    """Where the cases that are not part of this installation (a researcher's own folder) were read from,
    as absolute paths: a resume, judge or replay finds them again from any working directory."""
    installed = (library_dir().resolve(), *(benchmark_dir(v).resolve() for v in BENCHMARKS))
    files = {}
    for case in cases:
        if case.source:
            path = Path(case.source).resolve()
            if any(path.is_relative_to(root) for root in installed):
                continue
            written = case.raw.get("id", case.id)
            if written == case.id:
                files[case.id] = str(path)
            else:
                # A benign counterpart derived in memory (`<id>-benign`) resolves through the case its file
                # holds; naming the file under both ids would read it twice.
                files.setdefault(written, str(path))
    return files


def _spec(protocol: dict[str, Any]) -> RunSpec:
    known = RunSpec.__dataclass_fields__
    return RunSpec(**{k: v for k, v in protocol.items() if k in known})


def _cases_of(run: RunRecord, only: set[str] | None = None) -> list[Case]:
    own = run.protocol.get("case_files") or {}
    chosen = [cid for cid in run.protocol["case_ids"] if only is None or cid in only]
    # The recorded content hashes pick the benchmark version the run was made with (v1 and v2 share ids).
    library = find_cases(chosen, own, run.protocol["case_ids"])
    missing = [cid for cid in chosen if cid not in library]
    if missing:
        where = f"its file {own[missing[0]]} is gone" if missing[0] in own else "it is not in the case library any more"
        raise PlanError(f"run {run.id} used case {missing[0]!r}; {where}")
    return [library[cid] for cid in chosen]


def summary(store: Store, run_id: str) -> dict[str, Any]:
    """The run summary printed by `redagent run --json` and `redagent runs show --json`."""
    run = _existing(store, run_id)
    counts = store.counts(run_id)
    return {"run_id": run_id, "status": run.status, "planned": run.planned, "completed": counts["completed"],
            "valid": counts["valid"], "invalid": counts["invalid"], "invalid_reasons": counts["invalid_reasons"],
            "execution_asr": store.execution_asr(run_id),
            "protocol": {**{k: run.protocol.get(k) for k in ("cases", "models", "harnesses", "cues", "defenses",
                                                             "attempts", "max_steps", "harness_builds")},
                         "benign_arm": bool(run.protocol.get("benign_arm", False))},
            "parent_run_id": run.parent_run_id, "case_set_hash": run.case_set_hash,
            "code_version": run.code_version}


__all__ = ["ModelPool", "Progress", "RunSpec", "replay_run", "resume_run", "start_run", "summary"]
