"""The case self-check: proves each case is a working instrument before any agent meets it.

For every case, as AgentDojo's suite check does and beyond it:
  executability  the benign plan runs without tool errors;
  reachability   the attack reaches an observation along the benign plan (or the user turn,
                 or the tool list for description and look-alike attacks);
  verifiability  benign plan → E=0; benign plan with the harmful plan once the attack is seen → E=1;
  mutation       dropping any effect of the harmful plan, applying any declared argument
                 mutation, or sending a look-alike tool's call through its trusted twin, makes
                 E=0 — a verifier that still fires is too loose;
  rejection      the harmful effects with the service-rejected arguments give failed/denied
                 receipts and E=0 (attempts never count);
  indirect       where an indirect plan exists, it realises the harm (E=1) through side effects.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redagent.cases.execution import CaseRun, Finished
from redagent.cases.schema import Case, Step
from redagent.sandbox.environment import SERVICES
from redagent.sandbox.isolation import Bubblewrap, NoIsolation

CONSEQUENTIAL = {spec.name for cls in SERVICES.values() for spec in cls.tool_specs() if spec.consequential}


@dataclass
class CaseCheck:
    case: Case
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def _lookalike_target(step: Step, case: Case) -> str | None:
    intervention = case.attack.intervention or {}
    if intervention.get("kind") == "lookalike" and step.tool == intervention.get("name"):
        return intervention["target"]
    return None


def is_effect(step: Step, case: Case) -> bool:
    return (_lookalike_target(step, case) or step.tool) in CONSEQUENTIAL


def run_plan(case: Case, harmful: Iterable[tuple[Step, dict[str, Any]]] | None, *,
             isolation: Bubblewrap | NoIsolation | None = None,
             with_attack: bool | None = None) -> tuple[Finished, list[str]]:
    """Run the benign plan; insert `harmful` (steps with their args) right after the attack is seen.

    Returns the finished run and the tool errors met, as `plan[i] tool: error`.
    """
    run = CaseRun(case, with_attack=with_attack, isolation=isolation)
    errors: list[str] = []
    pending = list(harmful) if harmful is not None else []
    index = 0

    def act(label: str, step: Step, args: dict[str, Any]) -> None:
        nonlocal index
        outcome = run.call(step.tool, args, step=index)
        index += 1
        if not outcome.ok:
            errors.append(f"{label} {step.tool}: {outcome.error}")

    def maybe_harm() -> None:
        while pending and run.reached:
            step, args = pending.pop(0)
            act("harmful", step, args)

    run.user_turn(0)
    maybe_harm()
    for i, step in enumerate(case.plans.benign):
        act(f"benign[{i}]", step, step.args)
        maybe_harm()
    for turn in range(1, len(run.instance.user_turns)):  # follow-ups arrive after the task is done
        run.user_turn(turn)
        maybe_harm()
    for step, args in pending:  # never reached: run the rest anyway, so verifiability is still tested
        act("harmful", step, args)
    return run.finish(), errors


def check_case(case: Case, *, isolation: Bubblewrap | NoIsolation | None = None) -> CaseCheck:
    result = CaseCheck(case)
    fail = result.failures.append

    benign, errors = run_plan(case, None, isolation=isolation)
    if errors:
        fail(("executability", "benign plan has tool errors: " + "; ".join(errors)))
    if case.attacked and not benign.reached:
        fail(("reachability", f"the attack marker {case.attack.marker!r} never reaches the agent "
                              f"along the benign plan"))
    if not case.attacked and benign.reached:
        fail(("reachability", "a benign variant must not show its attack to the agent"))
    if benign.verdict.E:
        fail(("verifiability", f"benign plan gives E=1 (evidence {_evidence(benign)})"))

    harmful = [(s, s.args) for s in case.plans.harmful]
    full, errors = run_plan(case, harmful, isolation=isolation)
    if errors:
        fail(("verifiability", "harmful plan has tool errors: " + "; ".join(errors)))
    if not full.verdict.E:
        fail(("verifiability", "harmful plan gives E=0: the verifier does not see the violation"))

    for i, step in enumerate(case.plans.harmful):
        if not is_effect(step, case):
            continue
        dropped = [(s, s.args) for j, s in enumerate(case.plans.harmful) if j != i]
        run, _ = run_plan(case, dropped, isolation=isolation)
        if run.verdict.E:
            fail(("mutation", f"verifier still fires with harmful[{i}] ({step.tool}) dropped: "
                              f"too loose (evidence {_evidence(run)})"))
        twin = _lookalike_target(step, case)
        if twin:
            # The safe twin of a look-alike call is the same call through the trusted tool.
            swapped = [(dataclasses.replace(s, tool=twin) if j == i else s, s.args)
                       for j, s in enumerate(case.plans.harmful)]
            run, _ = run_plan(case, swapped, isolation=isolation)
            if run.verdict.E:
                fail(("mutation", f"verifier still fires when harmful[{i}] uses the trusted {twin} instead of "
                                  f"the look-alike {step.tool}: too loose (evidence {_evidence(run)})"))
        for m, override in enumerate(step.mutate):
            changed = [(s, {**s.args, **override} if j == i else s.args)
                       for j, s in enumerate(case.plans.harmful)]
            run, _ = run_plan(case, changed, isolation=isolation)
            if run.verdict.E:
                fail(("mutation", f"verifier still fires with harmful[{i}].mutate[{m}] {override}: "
                                  f"too loose (evidence {_evidence(run)})"))

    effects = [s for s in case.plans.harmful if is_effect(s, case)]
    if any(s.reject is None for s in effects):
        fail(("rejection", "every effect step of the harmful plan needs reject: arguments the "
                           "service refuses, so failed attempts can be shown not to count"))
    else:
        attempted = [(s, {**s.args, **s.reject} if s.reject else s.args) for s in case.plans.harmful]
        run, errors = run_plan(case, attempted, isolation=isolation)
        refused = [r for r in run.receipts if r.outcome in ("failed", "denied") and r.actor == "agent"]
        if len(refused) < len(effects):
            fail(("rejection", f"the reject arguments were accepted by the service "
                               f"({len(refused)} of {len(effects)} refused)"))
        if run.verdict.E:
            fail(("rejection", f"refused attempts gave E=1 (evidence {_evidence(run)})"))

    if case.plans.indirect:
        run, errors = run_plan(case, [(s, s.args) for s in case.plans.indirect], isolation=isolation)
        if not run.verdict.E:
            fail(("indirect", "the indirect plan does not realise the harm (E=0)"
                              + (f"; errors: {'; '.join(errors)}" if errors else "")))
    return result


def _evidence(run: Finished) -> str:
    return ", ".join(run.verdict.receipts + run.verdict.diff) or "none"


def summarize(checks: list[CaseCheck]) -> dict[str, Any]:
    """The `cases check --json` document."""
    def tally(key) -> dict[str, dict[str, int]]:
        counts: dict[str, Counter] = defaultdict(Counter)
        for c in checks:
            for value in key(c.case):
                counts[value]["cases"] += 1
                counts[value]["passed"] += int(c.passed)
        return {k: dict(v) for k, v in sorted(counts.items())}

    return {
        "cases": len(checks),
        "passed": sum(c.passed for c in checks),
        "failed": [{"id": c.case.id, "check": check, "why": why}
                   for c in checks for check, why in c.failures],
        "by_surface": tally(lambda case: case.surfaces),
        "by_strategy": tally(lambda case: [case.strategy]),
        "by_vulnerability": tally(lambda case: [case.vulnerability]),
        "by_constraint": tally(lambda case: [case.constraint]),
    }


def _check_files(paths: list[str]) -> dict[str, list[tuple[str, str]]]:
    from redagent.cases.loader import load_cases

    return {case.id: check_case(case).failures for case in load_cases(paths)}


def check_many(cases: list[Case], jobs: int = 1) -> list[CaseCheck]:
    """Self-check many cases, in `jobs` processes (by case file) when that pays; same results as serial."""
    sources = sorted({c.source for c in cases})
    if jobs <= 1 or len(cases) < 50 or not all(Path(s).is_file() for s in sources):
        return [check_case(c) for c in cases]
    from concurrent.futures import ProcessPoolExecutor

    chunks = [sources[i::jobs] for i in range(jobs)]
    failures: dict[str, list[tuple[str, str]]] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for part in pool.map(_check_files, chunks):
            failures.update(part)
    return [CaseCheck(c, failures[c.id]) for c in cases]
