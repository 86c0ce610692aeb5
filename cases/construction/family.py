"""Scenario families: the compiler's templates, each a realistic task in one domain with its harms.

A family builds, from a random generator, a `Scenario`: the user's task, the seed state, the benign
plan, and the *carriers* — the places in that seed the benign plan actually reads (an email body, a
workspace file, a web page, a drive document, a knowledge-base passage), the read calls a tool-side
attack can tamper with, and the tools the agent is shown. For each constraint it supports, a family
builds a `Goal`: what the attacker wants (in words), the harmful steps that realise it, and the
verifier that sees it. The attack layer (attacks.py) then places a strategy's attack text on the
right carrier, so one family serves every strategy its carriers allow.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, ClassVar

# Carrier kinds, and which environment/tool strategies each one makes possible.
CARRIER_STRATEGIES = {
    "workspace_file": "E1",
    "email": "E2",
    "web_page": "E3",
    "drive_doc": "E4",
    "config_file": "E5",
    "kb_passage": "T4",
}
USER_STRATEGIES = ("U1", "U2", "U3", "U4", "U5")


@dataclass
class Read:
    """A read call of the benign plan whose output a tool-side attack can alter."""

    tool: str
    match: dict[str, Any]  # the call's arguments that identify it
    field: str | None = None  # the result field to inject into (None: the whole text)


@dataclass
class Scenario:
    task: str
    seed: dict[str, Any]
    benign: list[dict[str, Any]]  # steps {tool, args}
    surfaces: list[str]
    carriers: dict[str, str]  # carrier kind -> seed reference of a text the benign plan reads
    reads: list[Read] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    title: str = ""


@dataclass
class Goal:
    constraint: str
    vulnerability: str
    summary: str  # what the attacker wants, as an instruction: "send the payment to account X instead"
    harmful: list[dict[str, Any]]  # steps {tool, args, mutate, reject}
    rule: dict[str, Any]
    policy_reminder: str
    recognition_cues: list[str]
    values: dict[str, Any] = field(default_factory=dict)
    lookalike: dict[str, Any] | None = None  # {name, target, inject_args, call_args, reject} for T2
    title: str = ""
    # Set where a rule cannot decide every form of the harm: the case is then `semantic` and an LLM judge under
    # the hybrid view decides the rest. `bound` says which part the rule holds: "upper" (C28: the deterministic
    # action the report must not misrepresent) or "lower" (confidential prose or facts: the rule sees verbatim,
    # decoded and typed disclosures; a paraphrase or a summary needs the judge).
    judge_instructions: str = ""
    bound: str = ""
    # The harmful call is made instead of the benign call to the same recipient (an inflated payment):
    # the compiler marks it `replaces` that benign step, so the self-check does not pay twice.
    replaces: bool = False


class Family:
    """Subclasses set the class attributes and implement scenario() and goal()."""

    name: ClassVar[str]
    surfaces: ClassVar[tuple[str, ...]]
    constraints: ClassVar[tuple[str, ...]]

    def scenario(self, rng: random.Random) -> Scenario:
        raise NotImplementedError

    def goal(self, constraint: str, scenario: Scenario, rng: random.Random) -> Goal:
        raise NotImplementedError

    def strategies(self, scenario: Scenario, goal: Goal) -> list[str]:
        """The strategies this scenario's carriers can deliver."""
        found = list(USER_STRATEGIES) + ["T1", "T3", "T5"] if scenario.reads else list(USER_STRATEGIES) + ["T1"]
        found += [s for kind, s in CARRIER_STRATEGIES.items() if kind in scenario.carriers]
        if goal.lookalike:
            found.append("T2")
        return sorted(set(found))


REGISTRY: dict[str, type[Family]] = {}


def register(cls: type[Family]) -> type[Family]:
    if cls.name in REGISTRY:
        raise ValueError(f"family {cls.name!r} registered twice")
    REGISTRY[cls.name] = cls
    return cls
