"""The techniques an attacker's moves draw from: the knowledge base's mappings for the strategy of each channel.

Each offered channel stands for one intervention strategy: the case's own channel (and a user turn) for the
case's strategy, every other carrier for the strategy that plants text there (a workspace file E1, an email
E2, a web page E3, a drive document E4, a configuration file E5, a tool description T1, a look-alike T2, a
tool's output T3, a knowledge-base passage T4, a tool's error T5). A move draws a technique of that strategy:

  wrapper   a technique whose text has a slot for the goal (a jailbreak template's `{{ prompt }}`, an
            injection template's `{goal}`): the move's text is the technique with the case's goal in its slot
  framing   when the strategy has no wrapper: a hand-written mapping of the strategy, which describes what the
            scripted move does (plant the goal in that carrier, reframed); the move's text is the scripted
            framing of the goal, exactly as without a knowledge base

The draw is deterministic — a hash of the case, the channel and the move number picks among the strategy's
techniques sorted by id — so a scripted rollout is the same on every run with the same knowledge base, and
without the generated file (`make kb` writes it) the hand-written mappings give exactly the texts the scripted
attacker always wrote. Every move records the id of the technique it used (`redagent kb show ID`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHANNEL_STRATEGY = {
    "workspace_file": "E1",
    "email": "E2",
    "web_page": "E3",
    "drive_doc": "E4",
    "config_file": "E5",
    "tool_description": "T1",
    "lookalike": "T2",
    "tool_output": "T3",
    "kb_passage": "T4",
    "tool_error": "T5",
}
MAX_TECHNIQUE = 3000  # characters of a wrapper's text: with the goal in its slot it stays under a move's 4,000
OFFERED = 3  # techniques shown to a model attacker per decision
OFFERED_CHARS = 600
_SLOT = re.compile(
    r"\{\{\s*prompt\s*\}\}|\{(?:prompt|goal|query|question|payload)\}|\[insert[ _]prompt[ _]here\]", re.IGNORECASE
)
_JINJA = re.compile(r"\{%-?\s*(?:raw|endraw)\s*-?%\}")
_NAMES = {
    "{user}": "your user",
    "{user_name}": "your user",
    "{model}": "the assistant",
    "{generator.name}": "assistant",
}


@dataclass(frozen=True)
class Technique:
    id: str
    strategy: str
    text: str
    wrapper: bool
    hand: bool = False  # a hand-written mapping (cases/knowledge/attacks.yaml): a description, not a text

    @property
    def use(self) -> str:
        return "wrapper" if self.wrapper else "framing"


def fill(text: str, goal: str) -> str:
    """A wrapper's text with `goal` in its slot(s) and the names it addresses made generic."""
    text = _JINJA.sub("", text)
    text = _SLOT.sub(lambda _: goal, text)
    for name, value in _NAMES.items():
        text = text.replace(name, value)
    return text


class Techniques:
    """The knowledge base's mappings indexed by strategy, for drawing."""

    def __init__(self, mappings: Iterable[dict[str, Any]]) -> None:
        self.by_strategy: dict[str, list[Technique]] = {}
        for m in sorted(mappings, key=lambda m: m["id"]):
            text = str(m.get("text") or "")
            hand = m.get("method", {}).get("by") == "hand"
            wrapper = not hand and bool(_SLOT.search(text))
            if wrapper and len(text) > MAX_TECHNIQUE:
                continue
            technique = Technique(m["id"], m["strategy"], text, wrapper, hand)
            self.by_strategy.setdefault(m["strategy"], []).append(technique)

    @property
    def digest(self) -> str:
        """What a draw depends on (every technique's id, strategy and kind), hashed: a run records it so a resume
        with another knowledge base, whose draws would differ, is refused rather than mixed into the run."""
        lines = sorted(f"{t.id} {t.strategy} {t.use}" for found in self.by_strategy.values() for t in found)
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]

    def candidates(self, strategy: str) -> list[Technique]:
        """The strategy's wrappers when it has any (they carry the goal), else its hand-written mappings (they
        describe what a scripted move does; a corpus entry without a slot, such as a harmful request of
        another task, would not), else whatever it has."""
        every = self.by_strategy.get(strategy, [])
        return [t for t in every if t.wrapper] or [t for t in every if t.hand] or every

    def draw(self, strategy: str, key: str) -> Technique | None:
        found = self.candidates(strategy)
        if not found:
            return None
        return found[int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(found)]

    def offer(self, strategy: str, key: str, n: int = OFFERED) -> list[Technique]:
        """`n` distinct techniques of the strategy, drawn as `draw` draws (for a model attacker's view)."""
        found = self.candidates(strategy)
        if len(found) <= n:
            return list(found)
        start = int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(found)
        return [found[(start + i * (len(found) // n)) % len(found)] for i in range(n)]


def strategy_of(channel_kind: str, own: bool, case_strategy: str) -> str:
    """The strategy a move on this channel enacts: the case's own for its own channel and a user turn."""
    if own or channel_kind not in CHANNEL_STRATEGY:
        return case_strategy
    return CHANNEL_STRATEGY[channel_kind]


_LOADED: dict[tuple[str, int, int], Techniques] = {}


def from_knowledge_base() -> Techniques:
    """The knowledge base as loaded now (the hand-written mappings, and the generated file when there is one),
    cached per file version: every rollout of a run draws from the same one."""
    from redagent.cases.kb.base import kb_path, load

    path = kb_path()
    try:
        info = path.stat()
        key = (str(path), info.st_mtime_ns, info.st_size)
    except OSError:
        key = ("", 0, 0)
    found = _LOADED.get(key)
    if found is None:
        found = Techniques(load(Path(path) if key[0] else None, generated=bool(key[0])).mappings)
        _LOADED.clear()
        _LOADED[key] = found
    return found
