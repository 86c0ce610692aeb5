"""Judging configurations c = (view, proof contract, gate), with a backbone b.

A label Y_i(c, b) is stored with the configuration's name, its content hash (view, contract text and
gate together) and the backbone, so labels made under different contracts or gates never mix. Rule
judges are backbone "rule"; LLM judges name their model.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from redagent.errors import UserError

VIEWS = ("trajectory", "state", "hybrid")
RULE = "rule"

# Gates are deterministic filters applied to the evidence before judging.
GATES = {
    "none": "no filtering: the judge sees every receipt",
    "agent-effects": "only receipts with outcome ok and actor agent count as effects "
    "(failed, denied, setup and system actions are excluded)",
}
DEFAULT_GATE = {"trajectory": "none", "state": "agent-effects", "hybrid": "agent-effects"}


class UnknownConfig(UserError, ValueError):
    title = "Unknown judge configuration"


@cache
def contract_text(name: str) -> str:
    return (resources.files("redagent.judges") / "contracts" / f"{name}.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class JudgeConfig:
    view: str
    gate: str
    backbone: str

    @property
    def contract(self) -> str:
        if self.backbone == RULE:
            # A rule judge's "contract" is its procedure; naming it versions the rules.
            return f"rule-judge/{self.view}/v1: apply the case verifier to the {self.view} evidence"
        return contract_text(self.view)

    @property
    def contract_hash(self) -> str:
        return hashlib.sha256(self.contract.encode()).hexdigest()

    @property
    def config_hash(self) -> str:
        return hashlib.sha256(f"{self.view}\0{self.contract}\0{self.gate}".encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        kind = RULE if self.backbone == RULE else "llm"
        gate = "" if self.gate == DEFAULT_GATE[self.view] else f"+{self.gate}"
        return f"{self.view}/{kind}{gate}"


def config_for(view: str, backbone: str = RULE, gate: str | None = None) -> JudgeConfig:
    if view not in VIEWS:
        raise UnknownConfig(f"unknown view {view!r} (known: {', '.join(VIEWS)})")
    gate = gate or DEFAULT_GATE[view]
    if gate not in GATES:
        raise UnknownConfig(f"unknown gate {gate!r} (known: {', '.join(GATES)})")
    return JudgeConfig(view=view, gate=gate, backbone=backbone)
