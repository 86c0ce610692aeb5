"""Which technique a compiled case's attack uses, drawn from the attack knowledge base, and its citation.

With the generated knowledge base (`make kb`; cases/kb/), a plan's attack is drawn per strategy and constraint
from a pool of

  wrappers   corpus techniques with a slot for the goal (a jailbreak template's `{{ prompt }}`, an injection
             template's `{goal}`): the attack text is the technique with the case's goal in its slot. For a
             user-side strategy only the strategy's own wrappers are in the pool (a persona template is U2, not a
             direct request); for an environment- or tool-side strategy the carrier makes the strategy — text in
             an email body is E2 whatever it says — so every wrapper is, the strategy's own and the others'
  phrasings  the strategy's hand-written phrasings (cases/knowledge/phrasings.yaml), as without the base

each wrapper narrowed to those whose mapping applies to the plan's constraint (or to any) when some do. The
draw is a hash of the case's family, plan and seed over the pool sorted by id: the same knowledge base and seed
always give the same case. The case cites what it used in `attack.source`: the mapping id (`redagent kb show`)
and the corpus entry (package, version, file, entry, licence) — for a phrasing, the plan's hand-written mapping
and the phrasing's place in phrasings.yaml.

Without the generated file there is nothing to draw: `draw` answers None and the compiler writes exactly the
case it always wrote (no `source`), so the committed benchmarks rebuild byte for byte.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from redagent.cases.construction.attacks import knowledge
from redagent.cases.kb.techniques import Technique, Techniques, fill
from redagent.cases.schema import SOURCE_CHARS, SOURCE_FIELDS
from redagent.cases.taxonomy import STRATEGIES

PHRASINGS_FILE = "cases/knowledge/phrasings.yaml"
# Carriers that show the agent only the start of their text: a longer wrapper's goal would never reach it. A
# knowledge-base passage (T4) is shown as its first 600 characters (sandbox/services/files.py), the attack planted
# after its opening words and the goal filled in: wrappers of at most 400 characters fit.
MAX_WRAPPER_CHARS = {"T4": 400}


@dataclass(frozen=True)
class Drawn:
    """A drawn wrapper (`technique` set) or one of the strategy's phrasings (`technique` None)."""

    technique: Technique | None
    mapping: dict[str, Any] | None = None  # the wrapper's stored mapping, for its citation


class Sourcing:
    """The generated knowledge base's wrappers, pooled per (strategy, constraint) for drawing."""

    def __init__(self, mappings: list[dict[str, Any]]) -> None:
        techniques = Techniques(mappings)
        self.mappings = {m["id"]: m for m in mappings}
        # Wrappers only; a slot-less corpus entry (another task's harmful request, a payload with its own goal)
        # cannot carry this case's goal.
        self.wrappers: dict[str, list[Technique]] = {
            strategy: [t for t in found if t.wrapper and "{{attack}}" not in t.text]
            for strategy, found in techniques.by_strategy.items()
        }
        self._pools: dict[tuple[str, str], list[Technique]] = {}

    def pool(self, strategy: str, constraint: str) -> list[Technique]:
        key = (strategy, constraint)
        if key not in self._pools:
            if STRATEGIES[strategy].channel == "user":
                found = list(self.wrappers.get(strategy, []))
            else:
                found = sorted((t for ts in self.wrappers.values() for t in ts), key=lambda t: t.id)
            limit = MAX_WRAPPER_CHARS.get(strategy)
            found = [t for t in found if limit is None or len(t.text) <= limit]
            fitting = [t for t in found if self._applies(t, constraint)]
            self._pools[key] = fitting or found
        return self._pools[key]

    def _applies(self, technique: Technique, constraint: str) -> bool:
        constraints = self.mappings[technique.id].get("constraints") or []
        return not constraints or "*" in constraints or constraint in constraints

    def draw(self, strategy: str, constraint: str, key: str) -> Drawn:
        wrappers = self.pool(strategy, constraint)
        phrasings = len(knowledge("phrasings")[strategy])
        index = int(hashlib.sha256(key.encode()).hexdigest(), 16) % (len(wrappers) + phrasings)
        if index < len(wrappers):
            technique = wrappers[index]
            return Drawn(technique, self.mappings[technique.id])
        return Drawn(None)


_LOADED: dict[tuple[str, int, int], Sourcing] = {}


def from_knowledge_base() -> Sourcing | None:
    """The generated knowledge base as a `Sourcing`, cached per file version; None when there is no such file."""
    from redagent.cases.kb.base import kb_path, load

    path = kb_path()
    try:
        info = path.stat()
    except OSError:
        return None
    key = (str(path), info.st_mtime_ns, info.st_size)
    found = _LOADED.get(key)
    if found is None:
        found = Sourcing(load(path).mappings)
        _LOADED.clear()
        _LOADED[key] = found
    return found


def adapt(technique: Technique, goal: str) -> str:
    """The wrapper with the goal in its slot, the goal read as the sentence it now starts."""
    return fill(technique.text, goal[:1].upper() + goal[1:]).strip()


def wrapper_source(drawn: Drawn) -> dict[str, str]:
    assert drawn.technique is not None and drawn.mapping is not None
    cited = drawn.mapping.get("source") or {}
    return _bounded(
        {
            "mapping": drawn.technique.id,
            "use": "wrapper",
            "strategy": drawn.technique.strategy,
            "package": cited.get("package", ""),
            "version": cited.get("version", ""),
            "file": cited.get("file", ""),
            "entry": cited.get("entry", ""),
            "licence": cited.get("licence", ""),
        }
    )


def phrasing_source(strategy: str, manifestation: str, sources: tuple[str, ...], phrasing: int) -> dict[str, str]:
    """A phrasing's citation: the hand-written mapping the plan was made from (its manifestation), and the
    phrasing itself."""
    mappings = knowledge("attacks")["mappings"]
    made_from = (m["id"] for m in mappings if m["strategy"] == strategy and m["technique"] == manifestation)
    mapping = next(made_from, sources[0] if sources else "")
    return {
        "mapping": mapping,
        "use": "phrasing",
        "strategy": strategy,
        "package": "redagent",
        "version": "",
        "file": PHRASINGS_FILE,
        "entry": f"{strategy}[{phrasing}]",
        "licence": "Apache-2.0",
    }


def _bounded(source: dict[str, Any]) -> dict[str, str]:
    """Every field as text within the loader's bound: a corpus's entry name is third-party text."""
    return {k: str(source.get(k) or "")[:SOURCE_CHARS] for k in SOURCE_FIELDS}
