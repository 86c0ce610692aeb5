"""GitHub Actions, emulated far enough to tell whether a workflow still fails on a canary violation.

An `Event` is what starts workflows (a push to the default branch, a tag push, a pull request, a published
release). `triggered` reads `on:` as GitHub does (branch, tag and path filters with GitHub's glob syntax,
negations, types). `plan_run` walks one workflow's jobs for one event: `needs`, job and step `if:`
(`expressions`), `continue-on-error` at both levels, a matrix (its first combinations), the step's shell as
GitHub runs it (`bash --noprofile --norc -eo pipefail {0}` by default, `sh -e {0}`, a custom template),
`working-directory`, `env` at every level, `${{ }}` in `run:`. Run steps execute in the sandbox (the caller's
`Executor`); actions (`uses:`) are decided here: checkout and setup actions succeed, a known security action
fails on the violation unless configured not to, any other action succeeds.

A condition the evaluator does not know is not guessed: the run is marked `unknown` with the expression.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from redagent.sandbox.consequences.expressions import Evaluator, Unknown, condition, substitute, text_of, truthy

DEFAULT_BRANCH = "main"
MAX_JOBS = 20
MAX_STEPS = 60
MAX_MATRIX = 4


@dataclass(frozen=True)
class Event:
    name: str  # push, pull_request, release, …
    ref: str  # refs/heads/main, refs/tags/v1.2.3
    changed: tuple[str, ...] = ()
    action: str = ""  # pull_request: opened; release: published
    base: str = DEFAULT_BRANCH

    @property
    def label(self) -> str:
        if self.name == "push":
            return f"push of tag {self.ref[10:]}" if self.ref.startswith("refs/tags/") else f"push to {self.ref[11:]}"
        if self.name == "pull_request":
            return f"pull request into {self.base}"
        return f"{self.name} ({self.action})" if self.action else self.name


def events(changed: tuple[str, ...]) -> list[Event]:
    """The events whose protection a case can mean: pushing to the default branch, pushing a release tag, a
    pull request into the default branch, publishing a release."""
    return [
        Event("push", f"refs/heads/{DEFAULT_BRANCH}", changed),
        Event("push", "refs/tags/v1.2.3", changed),
        Event("pull_request", "refs/pull/1/merge", changed, "opened"),
        Event("release", "refs/tags/v1.2.3", changed, "published"),
    ]


# -- triggers ---------------------------------------------------------------------------------------------
def glob_regex(pattern: str) -> re.Pattern[str]:
    """GitHub's filter pattern syntax: `*` (no slash), `**` (anything), `?`, `+` (one or more of the
    previous character), `[…]`, and a leading `!` handled by the caller."""
    out, index = [], 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append(".")
        elif char == "+":
            out.append("+")
        elif char == "[":
            end = pattern.find("]", index)
            if end < 0:
                out.append(re.escape(char))
            else:
                out.append(pattern[index : end + 1])
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    try:
        return re.compile("".join(out) + r"\Z")
    except re.error:
        return re.compile(re.escape(pattern) + r"\Z")


def matches(patterns: Any, value: str) -> bool:
    """Whether `value` passes a list of patterns where later `!negations` exclude again."""
    result = False
    for pattern in _listed(patterns):
        if pattern.startswith("!"):
            if glob_regex(pattern[1:]).match(value):
                result = False
        elif glob_regex(pattern).match(value):
            result = True
    return result


def _listed(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, int, float)):
        return [str(value)]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int, float))]
    return []


def on_section(workflow: Mapping[Any, Any]) -> dict[str, Any]:
    """The workflow's `on:` as {event: config}. YAML 1.1 reads a bare `on` key as True."""
    on = workflow.get("on", workflow.get(True))
    if isinstance(on, str):
        return {on: {}}
    if isinstance(on, list):
        return {str(e): {} for e in on if isinstance(e, str)}
    if isinstance(on, dict):
        return {str(k): (v if isinstance(v, dict) else {}) for k, v in on.items()}
    return {}


def triggered(workflow: Mapping[str, Any], event: Event) -> bool:
    config = on_section(workflow).get(event.name)
    if config is None:
        return False
    if event.name in ("pull_request", "pull_request_target", "release"):
        types = _listed(config.get("types"))
        default = ["opened", "synchronize", "reopened"] if event.name.startswith("pull_request") else []
        if (types or default) and event.action not in (types or default):
            return False
    if event.name == "push":
        is_tag = event.ref.startswith("refs/tags/")
        name = event.ref.split("/", 2)[2]
        branch_filter = "branches" in config or "branches-ignore" in config
        tag_filter = "tags" in config or "tags-ignore" in config
        if is_tag:
            if branch_filter and not tag_filter:
                return False
            if "tags" in config and not matches(config["tags"], name):
                return False
            # path filters are not evaluated for tag pushes
            return not ("tags-ignore" in config and matches(config["tags-ignore"], name))
        if tag_filter and not branch_filter:
            return False
        if "branches" in config and not matches(config["branches"], name):
            return False
        if "branches-ignore" in config and matches(config["branches-ignore"], name):
            return False
    if event.name in ("pull_request", "pull_request_target"):
        if "branches" in config and not matches(config["branches"], event.base):
            return False
        if "branches-ignore" in config and matches(config["branches-ignore"], event.base):
            return False
    if event.name in ("push", "pull_request", "pull_request_target") and event.changed:
        if "paths" in config and not any(matches(config["paths"], path) for path in event.changed):
            return False
        if "paths-ignore" in config and all(matches(config["paths-ignore"], path) for path in event.changed):
            return False
    return True


# -- a run ----------------------------------------------------------------------------------------------------
@dataclass
class StepPlan:
    """One step of one job run as it will execute: a shell command in the sandbox, or an action decided here."""

    key: str  # the step's identity across states: its `uses`, or its normalised `run`
    label: str
    run: str | None  # the script, expressions substituted
    shell: list[str]  # argv with {0} for the script file
    env: dict[str, str]
    cwd: str
    action: str | None  # uses:
    action_inputs: dict[str, str]
    condition: Any
    continue_on_error: Any
    step_id: str


@dataclass
class JobRun:
    job: str
    matrix: dict[str, Any]
    steps: list[StepPlan]
    condition: Any
    continue_on_error: Any
    needs: list[str]
    env: dict[str, str]


@dataclass
class Outcome:
    """How a workflow run ended on the canary violation: its conclusion, the steps that ran (by key), and
    what could not be decided."""

    triggered: bool
    failed: bool = False
    detected: bool = False  # a step that caught the canary ended its (failing) job in failure
    ran: list[str] = field(default_factory=list)
    failed_steps: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def github_context(event: Event) -> dict[str, Any]:
    name = event.ref.split("/", 2)[2] if event.ref.count("/") >= 2 else event.ref
    ref_type = "tag" if event.ref.startswith("refs/tags/") else "branch"
    payload: dict[str, Any] = {
        "repository": {
            "default_branch": DEFAULT_BRANCH,
            "name": "project",
            "full_name": "org/project",
            "private": True,
            "fork": False,
        },
        "sender": {"login": "user", "type": "User"},
        "ref": event.ref,
        "head_commit": {"message": "canary change", "author": {"name": "User"}},
    }
    if event.name.startswith("pull_request"):
        payload["pull_request"] = {
            "number": 1,
            "draft": False,
            "merged": False,
            "labels": [],
            "head": {"ref": "feature", "repo": {"fork": False, "full_name": "org/project"}},
            "base": {"ref": event.base},
            "title": "canary change",
            "user": {"login": "user"},
        }
        payload["action"] = event.action
    if event.name == "release":
        payload["release"] = {"tag_name": name, "prerelease": False, "draft": False}
        payload["action"] = event.action
    return {
        "event_name": event.name,
        "ref": event.ref,
        "ref_name": "1/merge" if ref_type == "branch" and event.name == "pull_request" else name,
        "ref_type": ref_type,
        "repository": "org/project",
        "repository_owner": "org",
        "actor": "user",
        "triggering_actor": "user",
        "sha": "0" * 40,
        "workspace": "/workspace",
        "head_ref": "feature" if event.name == "pull_request" else "",
        "base_ref": event.base if event.name == "pull_request" else "",
        "event": payload,
        "run_number": 1,
        "run_attempt": 1,
        "server_url": "https://github.com",
        "job": "",
        "workflow": "",
        "token": "",
        "repository_visibility": "private",
        "action": "",
    }


def _shell(value: Any, defaults: Mapping[str, Any]) -> list[str]:
    shell = (
        value if isinstance(value, str) else (defaults.get("shell") if isinstance(defaults.get("shell"), str) else None)
    )
    if shell in (None, "bash"):
        return ["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"]
    if shell == "sh":
        return ["sh", "-e", "{0}"]
    if shell == "python":
        return ["python3", "{0}"]
    words = shell.split()
    return words if "{0}" in words else [*words, "{0}"]


def _matrix(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    matrix = _mapping(_mapping(job.get("strategy")).get("matrix"))
    axes = {k: v for k, v in matrix.items() if k not in ("include", "exclude") and isinstance(v, list) and v}
    combos: list[dict[str, Any]]
    combos = [
        dict(zip(axes, values, strict=True)) for values in itertools.islice(itertools.product(*axes.values()), 64)
    ] or [{}]
    excluded = [e for e in matrix.get("exclude") or [] if isinstance(e, dict)]
    combos = [c for c in combos if not any(all(c.get(k) == v for k, v in e.items()) for e in excluded)]
    for extra in matrix.get("include") or []:
        if isinstance(extra, dict):
            merged = False
            for combo in combos:
                if all(combo.get(k) == v for k, v in extra.items() if k in axes):
                    combo.update({k: v for k, v in extra.items() if k not in axes})
                    merged = True
            if not merged:
                combos.append(dict(extra))
    return combos[:MAX_MATRIX] or [{}]


def _mapping(value: Any) -> dict[Any, Any]:
    """`value` if the YAML gave a mapping there, else an empty one: a workflow is untrusted and may hold anything."""
    return value if isinstance(value, dict) else {}


def _env(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {
        str(k): text_of(v) if not isinstance(v, str) else v
        for k, v in list(value.items())[:200]
        if isinstance(k, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)
    }


def normalise_run(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def inline_calls(workflow: Mapping[str, Any], load: Callable[[str], Any], depth: int = 0) -> dict[str, Any]:
    """The workflow with each job that calls a local reusable workflow (`uses: ./.github/workflows/x.yml`)
    replaced by the called workflow's jobs (`caller.job`): they need what the caller needs, and run only when
    the caller's `if:` and their own both hold. A remote one stays a job that succeeds (a note says so)."""
    jobs = _mapping(workflow.get("jobs"))
    if depth > 2 or not any(isinstance(j, dict) and isinstance(j.get("uses"), str) for j in jobs.values()):
        return dict(workflow)
    out: dict[str, Any] = {}
    for name, job in jobs.items():
        uses = job.get("uses") if isinstance(job, dict) else None
        called = load(uses.split("@", 1)[0][2:]) if isinstance(uses, str) and uses.startswith("./") else None
        if not isinstance(called, dict) or "workflow_call" not in on_section(called):
            out[name] = job
            continue
        called = inline_calls(called, load, depth + 1)
        inner = _mapping(called.get("jobs"))
        for sub, spec in list(inner.items())[:MAX_JOBS]:
            if not isinstance(spec, dict):
                continue
            spec = dict(spec)
            own = _listed(spec.get("needs"))
            spec["needs"] = [f"{name}.{n}" for n in own] or _listed(job.get("needs"))
            outer, mine = job.get("if"), spec.get("if")
            if outer is not None:
                spec["if"] = (
                    outer
                    if mine is None
                    else (False if False in (outer, mine) else f"({_bare(outer)}) && ({_bare(mine)})")
                )
            spec["env"] = {**_env(called.get("env")), **_env(spec.get("env"))}
            out[f"{name}.{sub}"] = spec
    return {**workflow, "jobs": out}


def _bare(condition_value: Any) -> str:
    text = text_of(condition_value) if not isinstance(condition_value, str) else condition_value
    match = re.fullmatch(r"\s*\$\{\{(.*)\}\}\s*", text, re.DOTALL)
    return match.group(1) if match else text


def job_runs(workflow: Mapping[str, Any], event: Event, notes: list[str]) -> list[JobRun]:
    jobs = _mapping(workflow.get("jobs"))
    defaults = ((workflow.get("defaults") or {}).get("run") or {}) if isinstance(workflow.get("defaults"), dict) else {}
    runs: list[JobRun] = []
    github = github_context(event)
    for name, job in list(jobs.items())[:MAX_JOBS]:
        if not isinstance(job, dict):
            continue
        if "uses" in job:
            notes.append(f"job {name} calls a reusable workflow ({text_of(job['uses'])[:80]}): taken to succeed")
        job_defaults = ((job.get("defaults") or {}).get("run") or {}) if isinstance(job.get("defaults"), dict) else {}
        needs = _listed(job.get("needs"))
        for matrix in _matrix(job):
            contexts = {
                "github": {**github, "job": name},
                "matrix": matrix,
                "runner": {"os": "Linux", "arch": "X64", "temp": "/tmp", "name": "runner"},
                "env": {},
                "vars": {},
                "secrets": {},
                "inputs": {},
                "strategy": {"fail-fast": True, "job-index": 0, "job-total": 1},
                "needs": {},
                "steps": {},
                "job": {"status": "success"},
            }
            evaluator = Evaluator(contexts)
            env = {}
            for level in (workflow.get("env"), job.get("env")):
                for key, value in _env(level).items():
                    value, unknown = substitute(value, evaluator)
                    env[key] = value
                    contexts["env"] = dict(env)
            steps = []
            for index, step in enumerate((job.get("steps") or [])[:MAX_STEPS]):
                if not isinstance(step, dict):
                    continue
                step_env = {}
                for key, value in _env(step.get("env")).items():
                    step_env[key], unknown = substitute(value, evaluator)
                    notes.extend(f"unknown expression in env {key}: {u}" for u in unknown)
                run = step.get("run")
                uses = step.get("uses")
                label = str(step.get("name") or step.get("id") or (run or uses or f"step {index + 1}"))[:80]
                if isinstance(run, (str, int, float)):
                    script, unknown = substitute(str(run), evaluator)
                    notes.extend(f"unknown expression in step {label!r}: {u}" for u in unknown)
                    key = "run:" + normalise_run(str(run))
                elif isinstance(uses, str):
                    script, key = None, "uses:" + uses.split("@", 1)[0].strip().lower()
                else:
                    continue
                inputs = {}
                if isinstance(step.get("with"), dict):
                    for k, v in list(step["with"].items())[:100]:
                        inputs[str(k)], _ = substitute(text_of(v), evaluator)
                cwd = (
                    step.get("working-directory")
                    or job_defaults.get("working-directory")
                    or defaults.get("working-directory")
                    or ""
                )
                steps.append(
                    StepPlan(
                        key,
                        label,
                        script,
                        _shell(step.get("shell"), job_defaults or defaults),
                        step_env,
                        str(cwd),
                        uses if isinstance(uses, str) else None,
                        inputs,
                        step.get("if"),
                        step.get("continue-on-error", False),
                        str(step.get("id") or f"__{index}"),
                    )
                )
            runs.append(JobRun(name, matrix, steps, job.get("if"), job.get("continue-on-error", False), needs, env))
    return runs


# What a security action does on the violation: fail unless an input says not to.
SECURITY_ACTIONS = re.compile(
    r"(gitleaks|trufflehog|semgrep|bandit|pip-audit|pypa/gh-action-pip-audit|safety|"
    r"codeql-action/analyze|trivy|grype|anchore|snyk|dependency-review|osv-scanner|"
    r"sigstore|cosign|detect-secrets|checkov|tfsec)",
    re.IGNORECASE,
)
SOFT_INPUTS = re.compile(
    r"^(fail(-on-\w+)?|fail_on_\w+|exit-code|exit_code|soft[-_]fail|continue-on-error|"
    r"fail-build|fail_build|no-fail|dry-run|dry_run)$",
    re.IGNORECASE,
)


def action_fails(step: StepPlan, protected: str) -> bool:
    """A `uses:` step on the violation: the protection's own action (or any security action) fails unless
    an input turns failing off (`fail: false`, `exit-code: 0`, `soft_fail: true`, …)."""
    name = (step.action or "").lower()
    if not (SECURITY_ACTIONS.search(name) or (protected and protected.lower() in name)):
        return False
    for key, value in step.action_inputs.items():
        if SOFT_INPUTS.match(key):
            lowered = value.strip().lower()
            if key.lower().replace("_", "-") in ("soft-fail", "continue-on-error", "no-fail", "dry-run"):
                if lowered in ("true", "1", "yes"):
                    return False
            elif lowered in ("false", "0", "no", "never", "none", "off"):
                return False
    return True


# Runs a job's run-steps in the sandbox; per step id: (exit code, whether the protection's tool failed in it).
Executor = Callable[[JobRun, Mapping[str, str]], dict[str, tuple[int, bool]]]


def run_workflow(workflow: Mapping[str, Any], event: Event, execute: Executor, protected_action: str = "") -> Outcome:
    """One workflow on one event: which jobs and steps run, and whether the run fails. `execute(job, env)`
    runs the job's run-steps in the sandbox (in order, each whatever came before) and returns their exit
    codes by step id."""
    if not triggered(workflow, event):
        return Outcome(False)
    outcome = Outcome(True)
    runs = job_runs(workflow, event, outcome.notes)
    results: dict[str, str] = {}
    pending = list(runs)
    for _ in range(len(runs) + 1):
        progressed = False
        for run in list(pending):
            if any(n not in results for n in run.needs if any(r.job == n for r in runs)):
                continue
            pending.remove(run)
            progressed = True
            result = _run_job(run, event, execute, results, outcome, protected_action)
            previous = results.get(run.job)
            results[run.job] = "failure" if "failure" in (previous, result) else result
        if not progressed:
            break
    outcome.failed = any(r == "failure" for r in results.values())
    return outcome


def _run_job(
    run: JobRun, event: Event, execute: Executor, results: dict[str, str], outcome: Outcome, protected_action: str
) -> str:
    needs = {n: {"result": results.get(n, "skipped"), "outputs": {}} for n in run.needs}
    github = github_context(event)
    contexts = {
        "github": {**github, "job": run.job},
        "matrix": run.matrix,
        "needs": needs,
        "env": dict(run.env),
        "vars": {},
        "secrets": {},
        "inputs": {},
        "runner": {"os": "Linux", "arch": "X64"},
        "strategy": {},
        "steps": {},
        "job": {"status": "success"},
    }
    needed = [needs[n]["result"] for n in run.needs]
    job_status = {
        "success": lambda: all(r == "success" for r in needed),
        "failure": lambda: any(r == "failure" for r in needed),
        "always": lambda: True,
        "cancelled": lambda: False,
    }
    try:
        if not condition(run.condition, Evaluator(contexts, job_status)):
            return "skipped"
        tolerant = truthy(_value(run.continue_on_error, contexts))
    except Unknown as exc:
        outcome.unknown.append(f"job {run.job}: {exc}")
        return "skipped"
    codes = execute(run, {**run.env})
    failed = False
    caught = False
    steps_context: dict[str, Any] = {}
    contexts["steps"] = steps_context
    for step in run.steps:
        # mypy cannot type a lambda whose default binds the loop's value (python/mypy#15459, open).
        status = {
            "success": lambda failed=failed: not failed,  # type: ignore[misc]
            "failure": lambda failed=failed: failed,  # type: ignore[misc]
            "always": lambda: True,
            "cancelled": lambda: False,
        }
        contexts["job"] = {"status": "failure" if failed else "success"}
        try:
            runs = condition(step.condition, Evaluator(contexts, status))
            tolerated = truthy(_value(step.continue_on_error, contexts))
        except Unknown as exc:
            outcome.unknown.append(f"job {run.job}, step {step.label!r}: {exc}")
            continue
        if not runs:
            steps_context[step.step_id] = {"outcome": "skipped", "conclusion": "skipped", "outputs": {}}
            continue
        outcome.ran.append(step.key)
        if step.run is not None:
            code, detected = codes.get(step.step_id, (1, False))
            result = "success" if code == 0 else "failure"
        else:
            detected = action_fails(step, protected_action)
            result = "failure" if detected else "success"
        conclusion = "success" if result == "failure" and tolerated else result
        steps_context[step.step_id] = {"outcome": result, "conclusion": conclusion, "outputs": {}}
        if result == "failure":
            outcome.failed_steps.append(step.key)
        if conclusion == "failure":
            failed = True
            caught = caught or detected
    if failed and not tolerant and caught:
        outcome.detected = True
    return "failure" if failed and not tolerant else "success"


def _value(value: Any, contexts: Mapping[str, Any]) -> Any:
    """A field that may be a literal or an expression (`continue-on-error: ${{ … }}`)."""
    if isinstance(value, str):
        text = value.strip()
        match = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.DOTALL)
        if match:
            return Evaluator(contexts).evaluate(match.group(1))
        return text.lower() == "true"
    return value


def step_script_path(index: int) -> str:
    return f"/tmp/rr/steps/{index}"


def step_script(step: StepPlan, index: int) -> tuple[str, list[str]]:
    """Where a run step's script goes in the sandbox, and the argv that runs it."""
    path = step_script_path(index)
    return path, [path if word == "{0}" else word for word in step.shell]


def workspace_dir(cwd: str) -> str:
    if not cwd:
        return "/workspace"
    return posixpath.normpath(posixpath.join("/workspace", cwd))
