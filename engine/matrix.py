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
from redagent.cases.kb.techniques import from_knowledge_base
from redagent.cases.loader import BENCHMARKS, benchmark_dir, benchmarks_used, find_cases, library_dir
from redagent.cases.schema import Case
from redagent.engine.attacker.session import DEFAULT_BUDGET, AttackerPool, AttackSetting, attacker_problem
from redagent.engine.calibration import BEHAVIOURS, is_calibration
from redagent.engine.conditions import DEFAULT_DISCLOSURE, DEFENSES
from redagent.engine.plan import (
    PlanError,
    RolloutKey,
    case_set_hash,
    check_conditions,
    estimate,
    manifest_hash_for,
    matrix,
    select_cases,
    with_benign_arm,
)
from redagent.engine.runner import MatrixRunner, Progress
from redagent.engine.sim import SimModel
from redagent.engine.types import IN_HOUSE
from redagent.llm.client import (
    DEFAULT_TOOL_CHOICE,
    MODEL_AUTH,
    MODEL_NOT_FOUND,
    TOOL_CHOICES,
    TRANSIENT_REASONS,
    LiteLLMModel,
    Model,
    check_model,
    preflight,
    price,
)
from redagent.store.db import Store, shown_status
from redagent.store.interfaces import RunMonitor
from redagent.store.records import RunRecord

# What `--resume --retry-invalid` runs again: failures of the infrastructure, not of the agent — a model
# call that failed for a transient reason, a sandbox that did not start, and credentials or a model
# name that were wrong then (the pre-flight has just proven they work now), plus the reasons older
# runs stored for all of these. An agent's own failures (malformed tool calls, a request the model
# refused as too long) are never retried: redrawing them until they succeed would bias the result.
RETRYABLE_INVALID = frozenset(
    TRANSIENT_REASONS | {MODEL_AUTH, MODEL_NOT_FOUND, "sandbox_error", "model_error", "rate_limited", "timeout"}
)
# The same failures of an adaptive run's attacker model (engine/attacker/policy.py names them attacker_…);
# a reply the attacker got wrong twice is its own failure, like a malformed tool call, and stays.
RETRYABLE_INVALID |= {f"attacker_{reason}" for reason in TRANSIENT_REASONS | {MODEL_AUTH, MODEL_NOT_FOUND}} | {
    "attacker_timeout",
    "attacker_setup",
}


@dataclass
class RunSpec:
    cases: str = "all"
    models: list[str] = field(default_factory=lambda: list(BEHAVIOURS))
    harnesses: list[str] = field(default_factory=lambda: list(IN_HOUSE))  # real CLIs are opt-in
    cues: list[str] = field(default_factory=lambda: ["clean"])
    defenses: list[str] = field(default_factory=lambda: ["none"])
    attempts: int = 1
    concurrency: int = 8
    per_model: int | None = None  # model calls in flight per model (None: no bound beyond concurrency)
    max_steps: int = 30
    api_base: str | None = None
    timeout: float = 60.0
    retries: int = 3
    max_tokens: int = 2048  # per model reply
    # What requests that offer tools say about calling them (llm/client.py TOOL_CHOICES). Stored with the
    # protocol so a resume sends what the run sent; a protocol from before the option resumes with "omit"
    # (`_spec`), which is what it sent.
    tool_choice: str = DEFAULT_TOOL_CHOICE
    # The pre-flight's tool probe per real model: True when it answered a tool offer with a tool call.
    # Rollouts count an attack placed only in tool descriptions as exposure when it is True (or when the
    # rollout itself got a tool call back): RolloutContext.attack_delivered.
    tool_probe: dict[str, bool] = field(default_factory=dict)
    disclosure: str = DEFAULT_DISCLOSURE
    # Also run every attacked case as its benign counterpart (benign utility beside utility under attack).
    # Off here so a protocol stored before the option existed resumes as it was planned; `redagent run`
    # turns it on by default.
    benign_arm: bool = False
    # The adaptive attacker (engine/attacker/): none (the fixed attack only), scripted or adaptive (a litellm
    # model at attacker_api_base, default api_base), with at most attack_budget moves per rollout.
    attacker: str = "none"
    attacker_model: str | None = None
    attacker_api_base: str | None = None
    attack_budget: int = DEFAULT_BUDGET
    # Where run_command runs (sandbox/isolation.py Backend): "bwrap", or "docker:IMAGE" with the image
    # resolved when the run is planned, so a resume uses the same image. Older protocols: bwrap.
    sandbox: str = "bwrap"


def attack_setting(spec: RunSpec) -> AttackSetting:
    return AttackSetting(
        spec.attacker, spec.attack_budget, spec.attacker_model, spec.attacker_api_base or spec.api_base
    )


def attacker_pool(spec: RunSpec) -> AttackerPool | None:
    """The run's attacker sessions (None for a run without one); a shard of a multi-worker run builds its own."""
    setting = attack_setting(spec)
    if not setting.active:
        return None
    return AttackerPool(setting, timeout=spec.timeout, retries=spec.retries, max_tokens=spec.max_tokens)


def code_version() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=2,
            cwd=Path(__file__).parent,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{__version__}+{commit}" if commit else __version__


def new_run_id() -> str:
    return f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


class ModelPool:
    """Builds the model for each rollout: a fresh calibration agent, or the shared litellm model."""

    def __init__(self, spec: RunSpec, warnings: list[str] | None = None) -> None:
        self.spec = spec
        self.warnings = warnings or []  # the pre-flight's, for the command line to print before the run
        self._real: dict[str, LiteLLMModel] = {}

    def __call__(self, name: str, case: Case) -> Model:
        if is_calibration(name):
            return SimModel(name, case)
        if name not in self._real:
            self._real[name] = LiteLLMModel(
                name,
                api_base=self.spec.api_base,
                timeout=self.spec.timeout,
                retries=self.spec.retries,
                max_tokens=self.spec.max_tokens,
                tool_choice=self.spec.tool_choice,
                tools_confirmed=bool(self.spec.tool_probe.get(name)),
                max_connections=self.spec.per_model,
            )
        return self._real[name]


def _check(spec: RunSpec) -> None:
    check_conditions(spec.models, spec.harnesses, spec.cues, spec.defenses, spec.attempts)
    from redagent.engine.harnesses.cli.catalog import missing

    if problem := missing(spec.harnesses):  # one line naming the install command
        raise PlanError(problem)
    if spec.concurrency < 1:
        raise PlanError("--concurrency must be at least 1")
    if spec.max_tokens < 1:
        raise PlanError("--max-tokens must be at least 1")
    if problem := attacker_problem(attack_setting(spec), spec.harnesses):
        raise PlanError(problem)
    if problem := sandbox_problem(spec.sandbox):  # before anything is stored; never a silent fall-back
        raise PlanError(problem)


def sandbox_problem(sandbox: str) -> str | None:
    kind, _, image = sandbox.partition(":")
    if kind == "bwrap":
        return None
    if kind != "docker" or not image:
        return f"unknown sandbox {sandbox!r} (bwrap, or docker with an image)"
    from redagent.sandbox.docker_backend import docker_problem

    return docker_problem(image)


def use_sandbox(spec: RunSpec, run_id: str) -> None:
    """Make the run's sandbox backend the one every rollout of this process uses (chosen once per run)."""
    from redagent.sandbox.environment import make_isolation, use_isolation
    from redagent.sandbox.isolation import IsolationUnavailable

    kind, _, image = spec.sandbox.partition(":")
    if kind == "bwrap":  # the host's default backend, probed once per process as it always was
        use_isolation(None)
        return
    try:
        use_isolation(make_isolation(kind, image or None, run_id))
    except IsolationUnavailable as exc:
        raise PlanError(str(exc)) from None


def _preflight(spec: RunSpec) -> list[str]:
    """Real requests per model before anything is stored: a missing key, a model name the endpoint does not
    serve (also on a server that answers any name), a wrong endpoint path or a server that refuses tools is one
    line (ModelConfigError), not a run full of invalid rollouts. Then the tool probe (skipped for a run of
    react alone, which sends no tools): its finding goes into `spec.tool_probe`, and a model that answered
    without a tool call gives a warning, returned for the caller to print. Calibration agents need none."""
    if spec.tool_choice not in TOOL_CHOICES:
        raise PlanError(f"unknown --tool-choice {spec.tool_choice!r} (known: {', '.join(TOOL_CHOICES)})")
    tools = any(h != "react" for h in spec.harnesses)
    warnings: list[str] = []
    for name in dict.fromkeys(spec.models):
        if not is_calibration(name):
            found = preflight(
                name, spec.api_base, timeout=spec.timeout, tool_choice=spec.tool_choice, probe_tools=tools
            )
            if found.tool_calls is not None:
                spec.tool_probe[name] = found.tool_calls
            warnings += found.warnings
    setting = attack_setting(spec)
    if setting.kind == "adaptive" and setting.model:  # the attacker model is checked like a target model
        preflight(setting.model, setting.api_base, timeout=spec.timeout, probe_tools=False)
    return warnings


def plan_run(spec: RunSpec) -> tuple[list[Case], list[RolloutKey]]:
    """The cases and rollout keys a run of `spec` would have; checks the conditions, stores and calls nothing."""
    _check(spec)
    cases = select_cases(spec.cases)
    if spec.benign_arm:
        cases = with_benign_arm(cases)
    return cases, matrix(cases, spec.models, spec.harnesses, spec.cues, spec.defenses, spec.attempts)


def start_run(store: Store, spec: RunSpec, *, on_progress=None) -> MatrixRunner:
    cases, keys = plan_run(spec)
    warnings = _preflight(spec)
    run = RunRecord(
        id=new_run_id(),
        status="planned",
        protocol=protocol_of(spec, cases),
        case_set_hash=case_set_hash(cases),
        code_version=code_version(),
        planned=len(keys),
        created_at=datetime.now(UTC),
        manifest_hash=manifest_hash_for(cases),
    )
    store.create_run(run)
    return _runner(store, run, spec, cases, keys, on_progress=on_progress, warnings=warnings)


def plan_only(
    store: Store, spec: RunSpec | None = None, *, resume: str | None = None, retry_invalid: bool = False
) -> dict[str, Any]:
    """`redagent run --plan-only`: what the run (or the rest of run `resume`) would do and cost, estimated
    from earlier rollouts of the same case versions (engine/plan.py `estimate`). Stores nothing and sends
    no model request (the endpoint is only checked to be reachable)."""
    if resume is not None:
        runner = resume_run(store, resume, retry_invalid=retry_invalid, check_endpoint=False)
        spec, cases, keys = _spec(runner.run_record.protocol), runner.cases, runner.pending()
    elif spec is None:
        raise ValueError("plan_only needs a RunSpec or the id of a run to resume")
    else:
        chosen, keys = plan_run(spec)
        cases = {c.id: c for c in chosen}
    for name in dict.fromkeys(spec.models):
        if not is_calibration(name):
            check_model(name, spec.api_base)
    history = store.rollout_history({c.content_hash for c in cases.values()})
    return {
        "run_id": resume,
        **estimate(keys, cases, history, concurrency=spec.concurrency, per_model=spec.per_model, price=price),
    }


def resume_run(
    store: Store, run_id: str, *, retry_invalid: bool = False, check_endpoint: bool = True, on_progress=None
) -> MatrixRunner:
    """Complete the run's missing rollouts; with `retry_invalid`, also re-run those stored invalid for a
    reason in RETRYABLE_INVALID (each new rollout replaces the stored one under the same id).
    `check_endpoint=False` skips the pre-flight (for a plan that sends nothing)."""
    run = _existing(store, run_id)
    if shown_status(run.status, run.host, run.pid, run.heartbeat_at) == "running":
        raise PlanError(f"run {run_id} is still running (pid {run.pid} on {run.host}); stop it before resuming")
    spec = _spec(run.protocol)
    cases = _cases_of(run)
    if case_set_hash(cases) != run.case_set_hash:
        raise PlanError(
            f"the cases of {run_id} changed since it started (case set hash differs); start a new run instead"
        )
    recorded = run.protocol.get("attack_techniques")
    if recorded and (now := _techniques_identity())["digest"] != recorded.get("digest"):
        raise PlanError(
            f"the attack knowledge base changed since {run_id} started ({recorded.get('count')} techniques, digest "
            f"{recorded.get('digest')}; now {now['count']}, {now['digest']}): its attacker would draw other "
            "techniques; restore that knowledge base (REDAGENT_KB) or start a new run"
        )
    warnings = _preflight(spec) if check_endpoint else []
    retry = RETRYABLE_INVALID if retry_invalid else frozenset()
    if run.parent_run_id:
        return _replay_runner(store, run, spec, retry_invalid=retry, on_progress=on_progress, warnings=warnings)
    keys = matrix(cases, spec.models, spec.harnesses, spec.cues, spec.defenses, spec.attempts)
    return _runner(store, run, spec, cases, keys, retry_invalid=retry, on_progress=on_progress, warnings=warnings)


def replay_run(
    store: Store, parent_id: str, *, defense: str, harmful_only: bool = True, on_progress=None
) -> MatrixRunner:
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
    warnings = _preflight(spec)
    protocol = protocol_of(spec, cases)
    protocol["replay"] = {
        "of": parent_id,
        "harmful_only": harmful_only,
        "defense": defense,
        "baselines": sorted(r.id for r in chosen),
    }
    run = RunRecord(
        id=new_run_id(),
        status="planned",
        protocol=protocol,
        case_set_hash=case_set_hash(cases),
        code_version=code_version(),
        planned=len(chosen),
        created_at=datetime.now(UTC),
        parent_run_id=parent_id,
    )
    store.create_run(run)
    return _replay_runner(store, run, spec, on_progress=on_progress, warnings=warnings)


def _replay_runner(
    store: Store,
    run: RunRecord,
    spec: RunSpec,
    *,
    retry_invalid: frozenset[str] = frozenset(),
    on_progress=None,
    warnings: list[str] | None = None,
) -> MatrixRunner:
    replay = run.protocol["replay"]
    wanted = set(replay["baselines"])
    parents = [r for r in store.rollouts(replay["of"]) if r.id in wanted]
    cases = _cases_of(run)
    baselines = replay_keys(parents, replay["defense"], _existing(store, replay["of"]).protocol)
    return _runner(
        store,
        run,
        spec,
        cases,
        list(baselines),
        baselines=baselines,
        retry_invalid=retry_invalid,
        on_progress=on_progress,
        warnings=warnings,
    )


def replay_keys(parents: list[Any], defense: str, parent_protocol: dict[str, Any]) -> dict[RolloutKey, str]:
    """The replay's rollout key for each baseline rollout (by id), all run under `defense`.

    Baselines of a parent run with several defenses differ only in their defense, and a run holds one
    rollout per (case, model, harness, cue, defense, attempt) — so keyed by the replay's defense alone,
    all but one of them would be lost. Each defense of the parent therefore gets its own block of
    attempt numbers: a baseline of the parent's i-th defense (in protocol order) is replayed as attempt
    i × attempts + its attempt. The first defense keeps its attempt numbers, so a replay of a run with one
    defense has the keys (and rollout ids) it always had; the baseline's own defense stays readable through
    baseline_rollout_id, which is how the report labels each pair.
    """
    order = list(parent_protocol.get("defenses") or [])
    order += sorted({p.defense for p in parents} - set(order))
    attempts = max([int(parent_protocol.get("attempts") or 1), *(p.attempt for p in parents)])
    return {
        RolloutKey(p.case_id, p.model, p.harness, p.cue, defense, order.index(p.defense) * attempts + p.attempt): p.id
        for p in parents
    }


def _runner(
    store: Store,
    run: RunRecord,
    spec: RunSpec,
    cases: list[Case],
    keys: list[RolloutKey],
    *,
    baselines: dict[RolloutKey, str] | None = None,
    retry_invalid: frozenset[str] = frozenset(),
    on_progress=None,
    warnings: list[str] | None = None,
) -> MatrixRunner:
    use_sandbox(spec, run.id)
    return MatrixRunner(
        store,
        run,
        {c.id: c for c in cases},
        keys,
        ModelPool(spec, warnings),
        concurrency=spec.concurrency,
        max_steps=spec.max_steps,
        baselines=baselines,
        disclosure=spec.disclosure,
        retry_invalid=retry_invalid,
        on_progress=on_progress,
        attackers=attacker_pool(spec),
    )


def _existing(store: RunMonitor, run_id: str) -> RunRecord:
    run = store.get_run(run_id)
    if run is None:
        raise PlanError(f"no run {run_id!r} in {store}")
    return run


def protocol_of(spec: RunSpec, cases: list[Case]) -> dict[str, Any]:
    """A run's protocol as stored with it (also the Inspect task's, engine/inspect_task.py)."""
    from redagent.engine.harnesses.cli.catalog import builds

    return {
        **asdict(spec),
        "harness_builds": builds(spec.harnesses),
        "cue_text": {"clean": "", "disclosed": spec.disclosure},
        "case_ids": {c.id: c.content_hash for c in cases},
        "case_files": _own_case_files(cases),
        "benchmarks": benchmarks_used(cases),
        **({"attack_techniques": _techniques_identity()} if spec.attacker != "none" else {}),
    }


def _techniques_identity() -> dict[str, Any]:
    """The knowledge base an attacker's moves draw from (cases/kb/techniques.py), as the run started."""
    techniques = from_knowledge_base()
    return {"digest": techniques.digest, "count": sum(len(v) for v in techniques.by_strategy.values())}


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
    # A run stored before --tool-choice existed sent no tool_choice: its resume sends none either.
    return RunSpec(**{"tool_choice": "omit", **{k: v for k, v in protocol.items() if k in known}})


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


def summary(store: RunMonitor, run_id: str) -> dict[str, Any]:
    """The run summary printed by `redagent run --json` and `redagent runs show --json`."""
    run = _existing(store, run_id)
    counts = store.counts(run_id)
    status = shown_status(run.status, run.host, run.pid, run.heartbeat_at)
    return {
        "run_id": run_id,
        "status": status,
        "planned": run.planned,
        "completed": counts.completed,
        "valid": counts.valid,
        "invalid": counts.invalid,
        "invalid_reasons": dict(counts.invalid_reasons),
        "execution_asr": [asdict(cell) for cell in store.execution_asr(run_id)],
        "protocol": {
            **{
                k: run.protocol.get(k)
                for k in (
                    "cases",
                    "models",
                    "harnesses",
                    "cues",
                    "defenses",
                    "attempts",
                    "max_steps",
                    "max_tokens",
                    "tool_choice",
                    "tool_probe",
                    "harness_builds",
                    "benchmarks",
                )
            },
            "benign_arm": bool(run.protocol.get("benign_arm", False)),
            "attacker": {
                k: run.protocol.get(k) for k in ("attacker", "attacker_model", "attack_budget", "attack_techniques")
            },
        },
        "parent_run_id": run.parent_run_id,
        "case_set_hash": run.case_set_hash,
        "code_version": run.code_version,
        # Per worker of a multi-worker or Ray run (empty for one process): shards, rollouts, failures.
        "workers": store.run_workers(run_id),
    }


__all__ = [
    "RETRYABLE_INVALID",
    "ModelPool",
    "Progress",
    "RunSpec",
    "plan_only",
    "plan_run",
    "replay_run",
    "resume_run",
    "start_run",
    "summary",
]
