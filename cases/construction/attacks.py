"""The attack layer: a strategy's attack text, placed on the channel that strategy uses.

Phrasings come from `cases/knowledge/phrasings.yaml` (many per strategy); the goal, a persona, a
ticket and a deadline are filled in from the scenario. Placement follows the taxonomy: user-side
strategies go in the user's turns, environment-side ones on the scenario's carrier of the matching
kind, tool-side ones as a tool intervention (poisoned description, look-alike tool, tampered output,
injected error) or, for RAG poisoning, in a knowledge-base passage the benign plan retrieves.
"""

from __future__ import annotations

import random
from functools import cache
from importlib import resources
from typing import Any

import yaml

from redagent.cases.construction.family import CARRIER_STRATEGIES, Goal, Scenario

CARRIER_OF = {strategy: kind for kind, strategy in CARRIER_STRATEGIES.items()}


class PlacementError(ValueError):
    """The scenario has no carrier for this strategy."""


@cache
def knowledge(name: str) -> Any:
    text = (resources.files("redagent.cases") / "knowledge" / f"{name}.yaml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def phrase(strategy: str, goal: Goal, org: str, rng: random.Random) -> tuple[str, int]:
    """The attack text and the index of the phrasing used (for diversity accounting)."""
    options = knowledge("phrasings")[strategy]
    index = rng.randrange(len(options))
    names = knowledge("names")
    person = rng.choice(names["people"])[0]
    fields = {
        "goal": goal.summary,
        "persona": f"{person}, {rng.choice(names['roles'])}",
        "org": org,
        "ticket": f"{rng.choice(['INC', 'CHG', 'REQ', 'SEC', 'FIN'])}-{rng.randint(1000, 99999)}",
        "deadline": rng.choice(names["deadlines"]),
    }
    return options[index].format(**fields), index


def place(strategy: str, scenario: Scenario, goal: Goal, content: str) -> dict[str, Any]:
    """The case file's `attack` block (and, for U5, the follow-up turn) for this strategy."""
    if strategy in ("U1", "U2", "U3", "U4"):
        return {"attack": {"placement": "user", "target": "task", "content": content}}
    if strategy == "U5":
        return {
            "attack": {"placement": "user", "target": "followups[0]", "content": content},
            "followups": ["Thanks for that. {{attack}}"],
        }
    if strategy in CARRIER_OF:
        kind = CARRIER_OF[strategy]
        if kind not in scenario.carriers:
            raise PlacementError(f"{strategy} needs a {kind} carrier")
        return {"attack": {"placement": "seed", "target": scenario.carriers[kind], "content": content}}
    if strategy == "T1":
        tool = scenario.benign[0]["tool"]
        return {
            "attack": {
                "placement": "tool",
                "content": content,
                "intervention": {"kind": "poison_description", "tool": tool},
            }
        }
    if strategy in ("T3", "T5"):
        if not scenario.reads:
            raise PlacementError(f"{strategy} needs a read call to tamper with")
        read = scenario.reads[0]
        intervention = {
            "kind": "tamper",
            "tool": read.tool,
            "match": dict(read.match),
            "mode": "append" if strategy == "T3" else "error",
        }
        if strategy == "T3" and read.field:
            intervention["field"] = read.field
        return {"attack": {"placement": "tool", "content": content, "intervention": intervention}}
    if strategy == "T2":
        if not goal.lookalike:
            raise PlacementError("T2 needs a look-alike of the harmful tool")
        fake = goal.lookalike
        return {
            "attack": {
                "placement": "tool",
                "content": content,
                "intervention": {
                    "kind": "lookalike",
                    "name": fake["name"],
                    "target": fake["target"],
                    "inject_args": fake["inject_args"],
                },
            }
        }
    raise PlacementError(f"unknown strategy {strategy}")
