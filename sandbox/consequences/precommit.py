"""The pre-commit framework's choice of hooks for a commit, as pre-commit itself makes it.

For a commit that stages one file: a hook runs when its stages include the commit (`stages`, else the
config's `default_stages`, else every stage; the legacy names `commit`, `push` too), its id (or alias) is not
in SKIP, and it is `always_run` or the file passes the config's `files`/`exclude`, the hook's
`files`/`exclude` (regular expressions, searched) and its `types`/`types_or`/`exclude_types` (identify's tags
by file name). Hooks of known remote repositories get the entry their repository defines. Running the chosen
hooks is the caller's (in the sandbox).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

COMMIT_STAGES = ("pre-commit", "commit")
# Hooks of well-known repositories: (repository name fragment, hook id) → (entry, types, pass_filenames).
KNOWN = {
    ("gitleaks", "gitleaks"): ("gitleaks protect --verbose --redact --staged", (), False),
    ("detect-secrets", "detect-secrets"): ("detect-secrets-hook", (), True),
    ("bandit", "bandit"): ("bandit", ("python",), True),
    ("trufflehog", "trufflehog"): ("trufflehog git file://. --since-commit HEAD --fail", (), False),
    ("semgrep", "semgrep"): ("semgrep", (), True),
    ("pip-audit", "pip-audit"): ("pip-audit", (), False),
    ("pre-commit-hooks", "detect-private-key"): ("detect-private-key", ("text",), True),
    ("pre-commit-hooks", "detect-aws-credentials"): ("detect-aws-credentials", ("text",), True),
}
_EXTENSIONS = {
    ".py": ("python", "text"),
    ".pyi": ("python", "pyi", "text"),
    ".yaml": ("yaml", "text"),
    ".yml": ("yaml", "text"),
    ".json": ("json", "text"),
    ".toml": ("toml", "text"),
    ".md": ("markdown", "text"),
    ".txt": ("plain-text", "text"),
    ".sh": ("shell", "bash", "text"),
    ".js": ("javascript", "text"),
    ".ts": ("ts", "text"),
    ".env": ("dotenv", "text"),
    ".cfg": ("ini", "text"),
    ".ini": ("ini", "text"),
    ".go": ("go", "text"),
    ".rb": ("ruby", "text"),
    ".java": ("java", "text"),
    ".rs": ("rust", "text"),
}


def tags(path: str) -> set[str]:
    """identify's tags for a regular, non-executable text file called `path`."""
    found = {"file", "non-executable"}
    base = posixpath.basename(path)
    ext = posixpath.splitext(base)[1].lower() or (base.lower() if base.startswith(".") else "")
    found.update(_EXTENSIONS.get(ext, ("text",)))
    return found


@dataclass(frozen=True)
class Hook:
    id: str
    alias: str
    entry: str
    args: tuple[str, ...]
    files: str
    exclude: str
    types: tuple[str, ...]
    types_or: tuple[str, ...]
    exclude_types: tuple[str, ...]
    always_run: bool
    pass_filenames: bool
    stages: tuple[str, ...] | None
    language: str

    def argv(self, filenames: list[str]) -> list[str]:
        try:
            words = shlex.split(self.entry)
        except ValueError:
            words = self.entry.split()
        return [*words, *self.args, *(filenames if self.pass_filenames else [])]


@dataclass(frozen=True)
class Config:
    hooks: tuple[Hook, ...]
    files: str
    exclude: str
    default_stages: tuple[str, ...] | None
    problem: str = ""


def _strs(value: Any) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v) for v in value[:100] if isinstance(v, (str, int, float)))
    if isinstance(value, str):
        return (value,)
    return ()


def parse(document: Any) -> Config:
    if not isinstance(document, dict):
        return Config((), "", "^$", None, "the config is not a mapping")
    hooks = []
    for repo in (document.get("repos") or [])[:100]:
        if not isinstance(repo, dict):
            continue
        url = str(repo.get("repo", ""))
        for item in (repo.get("hooks") or [])[:200]:
            if not isinstance(item, dict) or "id" not in item:
                continue
            hook_id = str(item["id"])
            known = next(
                (v for (fragment, kid), v in KNOWN.items() if kid == hook_id and fragment in url.lower()), None
            )
            entry = str(item.get("entry") or (known[0] if known else hook_id))
            types = _strs(item.get("types")) or (known[1] if known and "types" not in item else ()) or ("file",)
            passing = item.get("pass_filenames", known[2] if known else True)
            stages = _strs(item["stages"]) if "stages" in item else None
            hooks.append(
                Hook(
                    hook_id,
                    str(item.get("alias", "")),
                    entry,
                    _strs(item.get("args")),
                    str(item.get("files", "") or ""),
                    str(item.get("exclude", "^$") or "^$"),
                    types,
                    _strs(item.get("types_or")),
                    _strs(item.get("exclude_types")),
                    item.get("always_run") is True,
                    passing is not False,
                    stages,
                    str(item.get("language", "")),
                )
            )
    default = _strs(document["default_stages"]) if "default_stages" in document else None
    return Config(
        tuple(hooks), str(document.get("files", "") or ""), str(document.get("exclude", "^$") or "^$"), default
    )


def _search(pattern: str, path: str, default: bool) -> bool:
    if not pattern:
        return default
    try:
        return re.search(pattern, path) is not None
    except re.error:
        return False


def runs_on_commit(config: Config, hook: Hook, path: str, skip: set[str]) -> bool:
    """Whether pre-commit runs `hook` for a commit that stages `path`."""
    if hook.id in skip or (hook.alias and hook.alias in skip):
        return False
    stages = hook.stages if hook.stages is not None else config.default_stages
    if stages is not None and not any(s in COMMIT_STAGES for s in stages):
        return False
    if hook.language == "fail" and not hook.always_run:
        pass
    if hook.always_run:
        return True
    if not _search(config.files, path, True) or _search(config.exclude, path, False):
        return False
    if not _search(hook.files, path, True) or _search(hook.exclude, path, False):
        return False
    found = tags(path)
    if hook.types and not set(hook.types) <= found:
        return False
    if hook.types_or and not set(hook.types_or) & found:
        return False
    return not set(hook.exclude_types) & found


def skip_ids(environment: Mapping[str, str]) -> set[str]:
    return {part.strip() for part in environment.get("SKIP", "").split(",") if part.strip()}
