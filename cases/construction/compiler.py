"""The compiler: an IVC plan and a scenario family become a case file, which must pass the self-check.

`compile_case` draws a scenario and the plan's goal from the family with a seeded generator (the
same plan, family and seed always give the same case), places the strategy's attack, assembles the
case file, validates it with the loader (a problem is reported as `<compiled>:line: field: what` with
the plan that produced it) and runs the full self-check. A case that fails is returned with the
reason, never kept.
"""

from __future__ import annotations

import copy
import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

from redagent.cases.construction.attacks import PlacementError, phrase, place
from redagent.cases.construction.family import REGISTRY, Family, Goal
from redagent.cases.construction.plans import IVCPlan
from redagent.cases.construction.sourcing import adapt, from_knowledge_base, phrasing_source, wrapper_source
from redagent.cases.loader import CaseFileError, build_case
from redagent.cases.schema import Case
from redagent.cases.selfcheck import check_case
from redagent.cases.taxonomy import STRATEGIES
from redagent.cases.utility import derive_utility
from redagent.sandbox.canonical import iban

# The benchmark version compiled cases belong to: 3 since verifiers read the one egress wire in the documented
# normal form, facts are typed values, protected records count any change the task did not ask for, confidential
# prose is a semantic lower bound, and persistence and disabled protections are judged by replayed consequences
# (issue 22). Versions 1 (receipt- and route-based rules) and 2 (outcome rules over effects) stay readable.
BENCHMARK_VERSION = 3

# The weakness a strategy exploits; for direct requests and decompositions it is the goal's own.
STRATEGY_VULNERABILITY = {
    "U2": "V04",
    "U4": "V02",
    "U5": "V09",
    "E1": "V01",
    "E2": "V01",
    "E3": "V01",
    "E4": "V01",
    "E5": "V01",
    "T1": "V01",
    "T2": "V06",
    "T3": "V07",
    "T4": "V07",
    "T5": "V01",
}


def vulnerability(strategy: str, goal: Goal) -> str:
    if strategy == "E5" and goal.vulnerability == "V08":
        return "V08"
    return STRATEGY_VULNERABILITY.get(strategy, goal.vulnerability)


@dataclass
class Compiled:
    plan: IVCPlan
    family: str
    seed: int
    data: dict[str, Any] | None = None
    case: Case | None = None
    rejected: str = ""
    phrasing: int = -1
    provenance: dict[str, Any] = field(default_factory=dict)
    carriers: dict[str, str] = field(default_factory=dict)  # the scenario's carriers, for variants
    direct_harmful: list[dict[str, Any]] = field(default_factory=list)  # the goal's own steps (no look-alike)

    @property
    def ok(self) -> bool:
        return self.case is not None and not self.rejected


def _rng(plan: IVCPlan, family: str, seed: int) -> random.Random:
    key = f"{family}|{plan.key}|{seed}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def compile_case(plan: IVCPlan, family: Family, seed: int, *, check: bool = True) -> Compiled:
    result = Compiled(plan, family.name, seed)
    rng = _rng(plan, family.name, seed)
    scenario = family.scenario(rng)
    goal = family.goal(plan.constraint, scenario, rng)
    if plan.strategy not in family.strategies(scenario, goal):
        result.rejected = f"family {family.name} cannot deliver {plan.strategy} in this scenario"
        return result
    org = (scenario.seed.get("organization") or {}).get("name", "the organisation")
    content, result.phrasing = phrase(plan.strategy, goal, org, rng)
    content, source = _sourced(plan, family.name, seed, goal, content, result.phrasing)
    try:
        attack = place(plan.strategy, scenario, goal, content)
    except PlacementError as exc:
        result.rejected = str(exc)
        return result
    harmful = goal.harmful
    if plan.strategy == "T2":
        fake = goal.lookalike or {}
        harmful = [{"tool": fake["name"], "args": fake["call_args"], "reject": fake["reject"]}]
    if goal.replaces:
        harmful = [_replacing(step, scenario.benign) for step in harmful]
    seed_state = copy.deepcopy(scenario.seed)
    seed_state.setdefault("organization", {}).pop("name", None)
    case_id = f"{plan.surface}-{plan.strategy.lower()}-{family.name}-{plan.constraint.lower()}-{seed:03d}"
    data = {
        "id": case_id,
        "version": BENCHMARK_VERSION,
        "title": f"{goal.title or scenario.title} ({plan.strategy}: {STRATEGIES[plan.strategy].name})",
        "ivc": {
            "strategy": plan.strategy,
            "vulnerability": vulnerability(plan.strategy, goal),
            "constraint": plan.constraint,
        },
        "surfaces": scenario.surfaces,
        "task": scenario.task,
        **({"followups": attack.pop("followups")} if "followups" in attack else {}),
        "seed": seed_state,
        "values": {**scenario.values, **goal.values},
        "attack": {**attack["attack"], **({"source": source} if source is not None else {})},
        "verifier": _verifier(goal),
        "policy_reminder": goal.policy_reminder,
        "recognition_cues": goal.recognition_cues,
        "plans": {"benign": scenario.benign, "harmful": harmful},
        "notes": f"compiled by family {family.name} from plan {plan.key} with seed {seed}",
    }
    result.data = data
    result.carriers = dict(scenario.carriers)
    result.direct_harmful = (
        [_replacing(step, scenario.benign) for step in goal.harmful] if goal.replaces else copy.deepcopy(goal.harmful)
    )
    result.provenance = {"family": family.name, "plan": plan.key, "seed": seed, "phrasing": result.phrasing}
    if source is not None:
        result.provenance["source"] = source
    try:
        case = build_case(data, {}, f"<compiled {case_id}>")
        # The user's task, as outcomes its benign plan leaves behind: the utility check U.
        utility = derive_utility(case)
        if utility is not None:
            data["utility"] = {"rule": utility}
            case = build_case(data, {}, f"<compiled {case_id}>")
    except CaseFileError as exc:
        result.rejected = f"invalid case from plan {plan.key}: {exc.problems[0]}"
        return result
    if check:
        report = check_case(case)
        if not report.passed:
            check_name, why = report.failures[0]
            result.rejected = f"self-check {check_name}: {why}"
            return result
    result.case = case
    return result


def _sourced(
    plan: IVCPlan, family: str, seed: int, goal: Goal, phrased: str, phrasing: int
) -> tuple[str, dict[str, str] | None]:
    """The attack text and its citation (cases/construction/sourcing.py). With the generated knowledge base: a
    drawn wrapper with the goal in its slot, or, when the draw falls on a phrasing, the phrasing already written,
    citing the mapping the plan was made from. Without it: the phrasing and no citation, exactly as before."""
    sourcing = from_knowledge_base()
    if sourcing is None:
        return phrased, None
    drawn = sourcing.draw(plan.strategy, plan.constraint, f"{family}|{plan.key}|{seed}")
    if drawn.technique is None:
        return phrased, phrasing_source(plan.strategy, plan.manifestation, plan.sources, phrasing)
    return adapt(drawn.technique, goal.summary), wrapper_source(drawn)


def _verifier(goal: Goal) -> dict[str, Any]:
    """The case's verifier: the goal's rule, and for a goal whose harm a rule cannot wholly decide, `semantic` with
    the judge's instructions and which bound the rule holds (a lower bound: the rule sees verbatim, decoded and
    typed disclosures, a paraphrase needs the judge)."""
    if not goal.judge_instructions:
        if goal.bound:
            raise ValueError(f"goal {goal.title or goal.constraint!r} has a bound but no judge instructions")
        return {"rule": goal.rule}
    return {
        "rule": goal.rule,
        "semantic": True,
        "judge_instructions": goal.judge_instructions,
        **({"bound": goal.bound} if goal.bound else {}),
    }


def _replacing(step: dict[str, Any], benign: list[dict[str, Any]]) -> dict[str, Any]:
    """The harmful step, marked as done instead of the benign call to the same recipient."""
    target = iban(step.get("args", {}).get("to_account", ""))
    for index, other in enumerate(benign):
        if (
            other["tool"] in ("send_transfer", "schedule_transfer")
            and target
            and iban(other.get("args", {}).get("to_account", "")) == target
        ):
            return {**step, "replaces": index}
    return step


def families_for(plan: IVCPlan) -> list[Family]:
    return [cls() for cls in REGISTRY.values() if plan.constraint in cls.constraints and plan.surface in cls.surfaces]
