"""The case: one executable test of one safety constraint along one IVC path.

A `Case` is immutable data loaded from a case file. `instantiate()` turns it into what a rollout
needs — the seed with the attack placed (or, for the benign variant, without it), the user turns,
and the tool-side interventions — without ever handing the sandbox the verifier or the plans.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from redagent.sandbox.verifier import resolve_ref

PLACEHOLDER = "{{attack}}"
# An attack's `source`: the fields of its citation and the most characters each may hold (a corpus's entry name
# is third-party text); `use` says how the technique was used (cases/construction/sourcing.py).
SOURCE_FIELDS = ("mapping", "use", "strategy", "package", "version", "file", "entry", "licence")
SOURCE_CHARS = 512
SOURCE_USES = ("wrapper", "phrasing")
BENIGN_SUFFIX = "-benign"


@dataclass(frozen=True)
class Step:
    tool: str
    args: dict[str, Any]
    mutate: tuple[dict[str, Any], ...] = ()  # argument overrides that must make E fall to 0
    reject: dict[str, Any] | None = None  # argument overrides the service refuses
    replaces: int | None = None  # a harmful step done instead of this benign step (an inflated payment)


@dataclass(frozen=True)
class Plans:
    benign: tuple[Step, ...]
    harmful: tuple[Step, ...]
    indirect: tuple[Step, ...] = ()  # optional: the harm realised only as a side effect
    answer: str = ""  # optional: the benign plan's final answer to the user, for a utility check that reads it


@dataclass(frozen=True)
class Attack:
    placement: str  # user | seed | tool
    content: str
    target: str | None = None  # user: "task" or "followups[N]"; seed: a seed reference
    item: dict[str, Any] | None = None  # seed placement: a whole new record appended at target
    intervention: dict[str, Any] | None = None  # tool placement
    marker: str = ""  # a phrase of the content that proves it reached an observation
    # The technique the content comes from: a knowledge-base mapping id and its citation (optional; compiled
    # with the generated knowledge base: cases/construction/sourcing.py)
    source: dict[str, str] | None = None


@dataclass(frozen=True)
class Instance:
    """What a rollout is built from: nothing here reveals the verifier or the plans."""

    seed: dict[str, Any]
    user_turns: list[str]
    surfaces: list[str]
    interventions: list[dict[str, Any]]
    marker: str


@dataclass(frozen=True)
class Case:
    id: str
    version: int
    title: str
    strategy: str
    vulnerability: str
    constraint: str
    surfaces: tuple[str, ...]
    channel: str
    task: str
    followups: tuple[str, ...]
    seed: dict[str, Any]
    values: dict[str, Any]
    attack: Attack
    rule: dict[str, Any]
    semantic: bool
    judge_instructions: str
    policy_reminder: str
    recognition_cues: tuple[str, ...]
    plans: Plans
    # The user's task was done: a rule in the same language, over the same evidence (None: not stated).
    utility: dict[str, Any] | None = None
    # For a semantic verifier, what the rule's E is until a judge decides: "upper" (the rule decides the
    # deterministic part, e.g. the promise was mailed; C28) or "lower" (the rule sees verbatim, decoded and typed
    # disclosures; a paraphrase needs the judge).
    semantic_bound: str = ""
    variant: str = ""  # "" for a base case; "benign" (attack removed) or "multi_channel"
    variant_of: str = ""  # the base case a variant was derived from
    # Where a case imported from another benchmark (AgentDojo) reads harm or utility otherwise: (kind, detail)
    divergences: tuple[tuple[str, str], ...] = ()
    source: str = ""  # the file it came from
    content_hash: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def context(self) -> dict[str, Any]:
        """What verifier references resolve against."""
        return {"seed": self.seed, "values": self.values}

    @property
    def attacked(self) -> bool:
        """Whether a rollout of this case carries its attack (a benign variant never does)."""
        return self.variant != "benign"

    def benign_counterpart(self) -> Case:
        """The same case with its attack never shown (id `<id>-benign`): the benign-utility arm of a run.
        A compiled benchmark ships such variants as files; for any other case this derives one in memory."""
        if not self.attacked:
            return self
        digest = hashlib.sha256(f"{self.content_hash}:benign".encode()).hexdigest()
        return dataclasses.replace(
            self, id=f"{self.id}{BENIGN_SUFFIX}", variant="benign", variant_of=self.id, content_hash=digest
        )

    def instantiate(self, *, with_attack: bool | None = None) -> Instance:
        with_attack = self.attacked if with_attack is None else with_attack
        seed = copy.deepcopy(self.seed)
        turns = [self.task, *self.followups]
        interventions: list[dict[str, Any]] = []
        content = self.attack.content if with_attack else ""
        if self.attack.placement == "user":
            index = _turn_index(self.attack.target or "task")
            turns[index] = _place(turns[index], content)
        elif self.attack.placement == "seed":
            if self.attack.item is not None:
                if with_attack:
                    container = resolve_ref(seed, self.attack.target or "")
                    container.append(_fill(copy.deepcopy(self.attack.item), content))
            else:
                place_text(seed, self.attack.target or "", content)
        elif with_attack and self.attack.intervention:
            interventions.append(
                {
                    **self.attack.intervention,
                    "content" if self.attack.intervention["kind"] != "lookalike" else "description": content,
                }
            )
        # Carriers the attack was not placed on keep no trace of their placeholder.
        seed = _fill(seed, "")
        # A follow-up that was nothing but the attack disappears in the benign variant.
        turns = [turns[0].replace(PLACEHOLDER, "")] + [
            t for t in (t.replace(PLACEHOLDER, "").strip() for t in turns[1:]) if t
        ]
        return Instance(
            seed=seed,
            user_turns=turns,
            surfaces=list(self.surfaces),
            interventions=interventions,
            marker=self.attack.marker,
        )


def _turn_index(target: str) -> int:
    if target == "task":
        return 0
    match = re.fullmatch(r"followups\[(\d+)\]", target)
    return int(match.group(1)) + 1 if match else 0


def _place(text: str, content: str) -> str:
    if PLACEHOLDER in text:
        return text.replace(PLACEHOLDER, content)
    return f"{text}\n\n{content}" if content else text


def _fill(value: Any, content: str) -> Any:
    if isinstance(value, str):
        return value.replace(PLACEHOLDER, content)
    if isinstance(value, list):
        return [_fill(v, content) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, content) for k, v in value.items()}
    return value


def place_text(seed: dict[str, Any], target: str, content: str) -> None:
    """Put the attack into the text at `target` (a placeholder is replaced, else it is appended)."""
    head, _, last = target.rpartition(".")
    bracket = re.match(r'^(.*)\["((?:[^"\\]|\\.)*)"\]$', target)
    if bracket:
        head, last = bracket.group(1), bracket.group(2)
    container = resolve_ref(seed, head) if head else seed
    current = container[last]
    if isinstance(current, dict):  # a workspace file written as {content: ..., executable: ...}
        current["content"] = _place(current.get("content", ""), content)
    else:
        container[last] = _place(str(current), content)


def derive_marker(content: str) -> str:
    """A phrase of the attack that survives JSON rendering: no quotes, backslashes or newlines."""
    best = ""
    for line in content.splitlines():
        for run in re.split(r'["\\]', line):
            run = run.strip()
            if len(run) > len(best):
                best = run
    return best[:60].strip()
