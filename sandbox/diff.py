"""Baseline → final state differences, addressed by paths: `banking.payees.p-1`, `workspace.files["a/b.md"]`.

Snapshots are nested dicts keyed by stable ids, so a diff is a structural walk: records that appear
are `added`, records that vanish are `removed`, and leaves that differ are `changed` with before and
after. Volatile fields (timestamps) are left out, so two rollouts that did the same thing give the
same diff. Lists are compared as values: a recipient list that changed is one `changed` entry.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

VOLATILE = frozenset({"date", "created_at", "updated_at", "sent_at", "timestamp", "mtime"})
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_TOKEN = re.compile(r'\.?([A-Za-z_*][A-Za-z0-9_*-]*)|\["((?:[^"\\]|\\.)*)"\]')

Path = tuple[str, ...]


@dataclass(frozen=True)
class DiffEntry:
    path: Path
    op: str  # added | removed | changed
    before: Any = None
    after: Any = None

    @property
    def key(self) -> str:
        return format_path(self.path)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.key, "op": self.op, "before": self.before, "after": self.after}


def format_path(path: Path) -> str:
    out = ""
    for segment in path:
        if _PLAIN.match(segment):
            out += f".{segment}" if out else segment
        else:
            out += '["' + segment.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return out


class PathSyntaxError(ValueError):
    pass


def parse_path(text: str) -> Path:
    """`a.b["c.d"].*` → ("a", "b", "c.d", "*"). Raises PathSyntaxError on anything else."""
    segments, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or (pos == 0 and text.startswith(".")):
            raise PathSyntaxError(f"bad path {text!r} at position {pos}")
        plain, quoted = match.groups()
        segments.append(plain if plain is not None else re.sub(r"\\(.)", r"\1", quoted))
        pos = match.end()
    if not segments:
        raise PathSyntaxError("empty path")
    return tuple(segments)


def path_matches(pattern: Path, path: Path) -> bool:
    """Glob match per segment; `**` matches any number of segments (including none)."""
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(path_matches(rest, path[i:]) for i in range(len(path) + 1))
    return bool(path) and fnmatch.fnmatchcase(path[0], head) and path_matches(rest, path[1:])


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    return value


def diff(baseline: dict[str, Any], final: dict[str, Any]) -> list[DiffEntry]:
    entries: list[DiffEntry] = []
    _walk((), _strip(baseline), _strip(final), entries)
    return entries


def _walk(path: Path, before: Any, after: Any, out: list[DiffEntry]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys()):
            here = path + (str(key),)
            if key not in after:
                out.append(DiffEntry(here, "removed", before=before[key]))
            elif key not in before:
                out.append(DiffEntry(here, "added", after=after[key]))
            else:
                _walk(here, before[key], after[key], out)
    elif before != after:
        out.append(DiffEntry(path, "changed", before=before, after=after))
