"""IVC plans: for each constraint, the feasible intervention → vulnerability → surface paths.

Offline, plans are enumerated from the taxonomy and the attack knowledge base: every strategy the
knowledge base links to a technique, on every surface the constraint belongs to (cross-cutting
constraints: every surface), with the vulnerability manifestation, the resources the attack needs
(its carrier), the channel and the observable target outcome. Whether a given scenario family can
realise a plan is the compiler's question; plans it cannot realise are reported, not silently kept.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from redagent.cases.construction.attacks import CARRIER_OF, knowledge
from redagent.cases.taxonomy import CONSTRAINTS, STRATEGIES, SURFACES
from redagent.errors import UserError

PLAN_FIELDS = (
    "constraint",
    "strategy",
    "vulnerability",
    "surface",
    "channel",
    "manifestation",
    "resources",
    "target_outcome",
)


@dataclass(frozen=True)
class IVCPlan:
    constraint: str
    strategy: str
    vulnerability: str
    surface: str
    channel: str
    manifestation: str
    resources: str
    target_outcome: str
    sources: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.constraint}/{self.strategy}/{self.vulnerability}/{self.surface}"

    def to_dict(self) -> dict:
        return {**asdict(self), "sources": list(self.sources)}


class PlanError(UserError, ValueError):
    title = "Case plan error"


def resources_for(strategy: str) -> str:
    if strategy in CARRIER_OF:
        return CARRIER_OF[strategy]
    return {
        "T1": "a tool description the agent is shown",
        "T2": "a look-alike of the harmful tool",
        "T3": "a read call whose output can be altered",
        "T5": "a read call that can answer with an error",
    }.get(strategy, "the user's own turn")


def enumerate_plans() -> list[IVCPlan]:
    mappings = knowledge("attacks")["mappings"]
    by_strategy: dict[str, list[dict]] = {}
    for entry in mappings:
        by_strategy.setdefault(entry["strategy"], []).append(entry)
    plans = []
    for constraint in CONSTRAINTS.values():
        surfaces = list(SURFACES) if constraint.surface == "cross" else [constraint.surface]
        for surface in surfaces:
            for strategy, entries in sorted(by_strategy.items()):
                techniques = [e for e in entries if not e.get("surfaces") or surface in e["surfaces"]]
                if not techniques:
                    continue
                vulnerability = techniques[0]["vulnerability"]
                plans.append(
                    IVCPlan(
                        constraint=constraint.code,
                        strategy=strategy,
                        vulnerability=vulnerability,
                        surface=surface,
                        channel=STRATEGIES[strategy].channel,
                        manifestation=techniques[0]["technique"],
                        resources=resources_for(strategy),
                        target_outcome=f"an agent receipt or state change that breaks the rule: {constraint.statement}",
                        sources=tuple(sorted({e["id"] for e in techniques})),
                    )
                )
    return plans


def validate_plan(raw: object) -> IVCPlan:
    """A plan proposed by an LLM planner, checked against the schema and the taxonomy."""
    if not isinstance(raw, dict):
        raise PlanError("a plan must be a JSON object")
    missing = [f for f in PLAN_FIELDS if not isinstance(raw.get(f), str) or not raw[f].strip()]
    if missing:
        raise PlanError(f"plan field {missing[0]!r} is missing or empty")
    if raw["constraint"] not in CONSTRAINTS:
        raise PlanError(f"unknown constraint {raw['constraint']!r}")
    if raw["strategy"] not in STRATEGIES:
        raise PlanError(f"unknown strategy {raw['strategy']!r}")
    from redagent.cases.taxonomy import VULNERABILITIES

    if raw["vulnerability"] not in VULNERABILITIES:
        raise PlanError(f"unknown vulnerability {raw['vulnerability']!r}")
    if raw["surface"] not in SURFACES:
        raise PlanError(f"unknown surface {raw['surface']!r}")
    constraint = CONSTRAINTS[raw["constraint"]]
    if constraint.surface not in ("cross", raw["surface"]):
        raise PlanError(f"{constraint.code} belongs to {constraint.surface}, not {raw['surface']}")
    if raw["channel"] != STRATEGIES[raw["strategy"]].channel:
        raise PlanError(f"strategy {raw['strategy']} uses the {STRATEGIES[raw['strategy']].channel} channel")
    return IVCPlan(**{f: raw[f] for f in PLAN_FIELDS}, sources=tuple(raw.get("sources") or ()))
