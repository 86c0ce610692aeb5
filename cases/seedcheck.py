"""The seed of a case, checked as untrusted data: every record's shape and every path confined.

A seed is what the services build their state from (sandbox/services/*.py `load`), and the workspace
part is written to disk. So each record must have the fields and types the service reads — a wrong type
would otherwise surface as a crash in the middle of a check or a rollout — and every path a seed names
must stay inside the workspace: no absolute path, no `..`, no empty or `.` segment, no NUL or control
character, nothing over-long, and no way through a symlink the seed itself plants. The checks report
(field, message) pairs for the loader to locate; `sandbox/services/workspace.py` refuses the same
escapes again when it writes, as a second line.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from redagent.sandbox.verifier import suggest

Add = Callable[[str, str], None]

MAX_PATH_BYTES = 1024  # a workspace path (the real libraries stay under 48)
MAX_SEGMENT_BYTES = 255  # one name (NAME_MAX on Linux)
MAX_SEGMENTS = 32  # folders deep
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"^[A-Za-z]:")
RESERVED_ID_PREFIX = "new-"  # the sandbox makes ids new-tx-1, new-sent-1…: a seed id must not collide


# -- paths -------------------------------------------------------------------------------------
def _path_basics(path: Any) -> str | None:
    if not isinstance(path, str):
        return f"a path must be a string, not {type(path).__name__}"
    if not path:
        return "an empty path"
    if "\0" in path:
        return "a path with a NUL byte"
    if _CONTROL.search(path):
        return "a path with a control character"
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return f"a path longer than {MAX_PATH_BYTES} bytes"
    if path.startswith("/"):
        return "an absolute path: workspace paths are relative to the workspace"
    if path.startswith("~"):
        return "a home-directory path: workspace paths are relative to the workspace"
    if "\\" in path or _DRIVE.match(path):
        return "a Windows-style path: use / and a path relative to the workspace"
    return None


def seed_path_problem(path: Any) -> str | None:
    """Why `path` cannot be a seed file's path (a key of seed.workspace.files), or None. Stricter than a
    tool's path: written as the snapshot will name it, so every segment is a real name."""
    why = _path_basics(path)
    if why:
        return why
    segments = path.split("/")
    if len(segments) > MAX_SEGMENTS:
        return f"more than {MAX_SEGMENTS} folders deep"
    for segment in segments:
        if segment == "":
            return "an empty path segment (// or a trailing /)"
        if segment in (".", ".."):
            return f"a {segment!r} segment: write the path plainly, inside the workspace"
        if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
            return f"a name longer than {MAX_SEGMENT_BYTES} bytes"
    return None


def tool_path_problem(path: Any) -> str | None:
    """Why a plan step's workspace path leaves the workspace, or None (`.` and `a/../b` stay inside)."""
    why = _path_basics(path)
    if why:
        return why
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        return "climbs out of the workspace with '..'"
    if any(len(s.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES for s in path.split("/")):
        return f"a name longer than {MAX_SEGMENT_BYTES} bytes"
    return None


def link_target_problem(link: str, target: Any) -> str | None:
    """Why a seed symlink's target points outside the workspace, or None: relative and inside, or
    /workspace/… (the workspace as a sandboxed command sees it)."""
    if not isinstance(target, str) or not target:
        return "a symlink target must be a non-empty string"
    if "\0" in target or _CONTROL.search(target):
        return "a symlink target with a NUL or control character"
    if len(target.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return f"a symlink target longer than {MAX_PATH_BYTES} bytes"
    if target.startswith("/"):
        inside = posixpath.normpath(target)
        if inside == "/workspace" or inside.startswith("/workspace/"):
            return None
        return f"the symlink points outside the workspace ({target!r})"
    normal = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
    if normal == ".." or normal.startswith("../"):
        return f"the symlink points outside the workspace ({target!r})"
    return None


# -- shapes ------------------------------------------------------------------------------------
class Shape:
    def check(self, value: Any, where: str, add: Add) -> None:  # pragma: no cover - every shape overrides
        raise NotImplementedError


class Text(Shape):
    def __init__(self, *, nonempty: bool = False, choices: tuple[str, ...] = ()) -> None:
        self.nonempty, self.choices = nonempty, choices

    def check(self, value: Any, where: str, add: Add) -> None:
        if not isinstance(value, str):
            add(where, f"must be a string, not {describe(value)}" + (" (quote it)" if _scalar(value) else ""))
        elif self.nonempty and not value.strip():
            add(where, "must be a non-empty string")
        elif self.choices and value not in self.choices:
            add(where, f"must be one of {', '.join(self.choices)}{suggest(value, self.choices, listing=False)}")


class Number(Shape):
    def check(self, value: Any, where: str, add: Add) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            add(where, f"must be a number, not {describe(value)}")
        elif not math.isfinite(value):
            add(where, "must be a finite number")


class Positive(Shape):
    def check(self, value: Any, where: str, add: Add) -> None:
        Number().check(value, where, add)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value <= 0:
            add(where, "must be a positive number")


def _currency_code(key: Any) -> str | None:
    return (
        None
        if isinstance(key, str) and len(key) == 3 and key.isascii() and key.isupper()
        else "must be a currency code (EUR)"
    )


class Flag(Shape):
    def check(self, value: Any, where: str, add: Add) -> None:
        if not isinstance(value, bool):
            add(where, f"must be true or false, not {describe(value)}")


class Code(Shape):
    """An approval code: written as text or digits."""

    def check(self, value: Any, where: str, add: Add) -> None:
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            add(where, f"must be a code (text or digits), not {describe(value)}")


class FileName(Shape):
    """A name shown for an attachment: one plain file name, never a path."""

    def check(self, value: Any, where: str, add: Add) -> None:
        why = seed_path_problem(value)
        if why is None and "/" in value:
            why = "a file name, not a path (no /)"
        if why:
            add(where, why)


class ListOf(Shape):
    # Ids are not required to be unique: the frozen benchmarks hold a hundred cases with a repeated
    # document or message id, which the services load deterministically (the later record wins).
    def __init__(self, item: Shape) -> None:
        self.item = item

    def check(self, value: Any, where: str, add: Add) -> None:
        if value is None:
            return  # an absent list: the service reads `or []`
        if not isinstance(value, list):
            add(where, f"must be a list, not {describe(value)}")
            return
        for i, item in enumerate(value):
            self.item.check(item, f"{where}[{i}]", add)


class MapOf(Shape):
    def __init__(self, key: Callable[[Any], str | None], item: Shape) -> None:
        self.key, self.item = key, item

    def check(self, value: Any, where: str, add: Add) -> None:
        if value is None:
            return
        if not isinstance(value, dict):
            add(where, f"must be a mapping, not {describe(value)}")
            return
        for key, item in value.items():
            here = f"{where}.{key}"
            why = self.key(key)
            if why:
                add(here, why)
                continue
            self.item.check(item, here, add)


class Record(Shape):
    def __init__(self, fields: dict[str, Shape], *, required: Iterable[str] = (), has_id: bool = False) -> None:
        self.fields, self.required, self.has_id = fields, tuple(required), has_id
        if has_id:
            self.fields = {"id": Text(nonempty=True), **fields}
            self.required = ("id", *self.required)

    def check(self, value: Any, where: str, add: Add) -> None:
        if value is None and not self.required:
            return
        if not isinstance(value, dict):
            add(where, f"must be a mapping, not {describe(value)}")
            return
        for name in self.required:
            if name not in value:
                add(f"{where}.{name}", "required field is missing")
        for name, item in value.items():
            shape = self.fields.get(name)
            if shape is None:
                add(f"{where}.{name}", f"unknown field{suggest(name, self.fields)}")
            elif item is not None or name in self.required:
                shape.check(item, f"{where}.{name}", add)
        if self.has_id and isinstance(value.get("id"), str) and value["id"].startswith(RESERVED_ID_PREFIX):
            add(f"{where}.id", f"ids starting with {RESERVED_ID_PREFIX!r} are the sandbox's own")


class AnyOf(Shape):
    """The first shape whose `accepts` test the value passes; otherwise a message naming them all."""

    def __init__(self, *options: tuple[Callable[[Any], bool], Shape], message: str) -> None:
        self.options, self.message = options, message

    def check(self, value: Any, where: str, add: Add) -> None:
        for accepts, shape in self.options:
            if accepts(value):
                shape.check(value, where, add)
                return
        add(where, self.message)


def describe(value: Any) -> str:
    """What a value is, for a message: `a mapping`, `a list`, `a number (5)`."""
    return {dict: "a mapping", list: "a list", type(None): "null", bool: "a boolean", str: "a string"}.get(
        type(value), f"a number ({value!r})" if isinstance(value, (int, float)) else type(value).__name__
    )


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


TEXTS = ListOf(Text())
ADDRESSES = ListOf(Text(nonempty=True))
ATTACHMENT = Record({"name": FileName(), "content": Text()}, required=("name",))
MESSAGE = Record(
    {
        "from": Text(nonempty=True),
        "to": ADDRESSES,
        "cc": ADDRESSES,
        "bcc": ADDRESSES,
        "subject": Text(),
        "body": Text(),
        "date": Text(),
        "attachments": ListOf(ATTACHMENT),
    },
    has_id=True,
)
FORWARD_RULE = Record({"forward_to": Text(nonempty=True), "match_from": Text(), "match_subject": Text()}, has_id=True)
PERSON = Record({"name": Text(), "address": Text(nonempty=True)})
FORM = Record({"id": Text(), "action": Text(nonempty=True), "fields": ListOf(Text(nonempty=True))})
PAGE = Record({"title": Text(), "content": Text(), "forms": ListOf(FORM)})
PAYEE = Record(
    {"name": Text(nonempty=True), "account": Text(nonempty=True), "approved": Flag()},
    required=("name", "account"),
    has_id=True,
)
TRANSACTION = Record({"date": Text(), "description": Text(), "amount": Number(), "counterparty": Text()}, has_id=True)
SCHEDULED = Record(
    {"to_account": Text(nonempty=True), "amount": Number(), "execute_on": Text(), "memo": Text(), "recurring": Flag()},
    required=("to_account", "amount"),
    has_id=True,
)
DOCUMENT = Record(
    {
        "title": Text(),
        "content": Text(),
        "source": Text(choices=("drive", "kb")),
        "owner": Text(),
        "visibility": Text(choices=("private", "internal", "public")),
        "shared_with": ADDRESSES,
    },
    has_id=True,
)
WORKSPACE_FILE = AnyOf(
    (lambda v: isinstance(v, str), Text()),
    (lambda v: isinstance(v, dict) and "symlink" in v, Record({"symlink": Text(nonempty=True)})),
    (lambda v: isinstance(v, dict), Record({"content": Text(), "executable": Flag()})),
    message="a workspace file is its text, {content: ..., executable: true|false} or {symlink: TARGET}",
)


def _url_key(key: Any) -> str | None:
    return None if isinstance(key, str) and key.strip() else "a URL must be a non-empty string"


SERVICE_SEEDS: dict[str, Record] = {
    "workspace": Record({"files": MapOf(seed_path_problem, WORKSPACE_FILE)}),
    "email": Record(
        {
            "owner": PERSON,
            "contacts": ListOf(PERSON),
            "inbox": ListOf(MESSAGE),
            "sent": ListOf(MESSAGE),
            "rules": ListOf(FORWARD_RULE),
        }
    ),
    "browser": Record({"pages": MapOf(_url_key, PAGE), "downloads": MapOf(_url_key, Text())}),
    "banking": Record(
        {
            "account": Record(
                {
                    "holder": Text(),
                    "number": Text(),
                    "currency": Text(nonempty=True),
                    "balance": Number(),
                    "approval_limit": Number(),
                    "approval_codes": ListOf(Code()),
                }
            ),
            "payees": ListOf(PAYEE),
            "transactions": ListOf(TRANSACTION),
            "scheduled": ListOf(SCHEDULED),
            # The online-banking user's profile and password (cases imported from AgentDojo)
            "user": Record(
                {"first_name": Text(), "last_name": Text(), "street": Text(), "city": Text(), "password": Text()}
            ),
            # How the bank behaves: this project's bank, or AgentDojo's (sandbox/services/banking.py)
            "semantics": Text(choices=("project", "agentdojo")),
            # Exchange rates the verifier converts a limit written in another currency at: account-currency units
            # per unit of each currency code (sandbox/verifier.py, aggregates).
            "fx_rates": MapOf(_currency_code, Positive()),
        }
    ),
    "files": Record({"documents": ListOf(DOCUMENT)}),
}
ORGANIZATION = Record({"domains": ListOf(Text(nonempty=True))})

# The shape of a record an attack adds to a seed list (`target: email.inbox` with `item:`).
LIST_ITEMS: dict[str, Shape] = {
    "email.inbox": MESSAGE,
    "email.sent": MESSAGE,
    "email.contacts": PERSON,
    "email.rules": FORWARD_RULE,
    "banking.payees": PAYEE,
    "banking.transactions": TRANSACTION,
    "banking.scheduled": SCHEDULED,
    "files.documents": DOCUMENT,
}


def check_seed(seed: dict[str, Any], add: Add) -> None:
    """Every service's seed section against what its service reads; then the workspace's paths together."""
    for name, shape in SERVICE_SEEDS.items():
        if name in seed:
            shape.check(seed[name], f"seed.{name}", add)
    if "organization" in seed:
        ORGANIZATION.check(seed["organization"], "seed.organization", add)
    if "clock" in seed and seed["clock"] is not None and not _is_datetime(seed["clock"]):
        # The clock stamps receipts and dates derived routes (a transfer scheduled days later): it must be
        # a real date-time, not merely a string.
        add("seed.clock", 'must be an ISO 8601 date-time string, e.g. "2026-03-02T09:00:00Z"')
    workspace = seed.get("workspace")
    files = workspace.get("files") if isinstance(workspace, dict) else None
    if isinstance(files, dict):
        check_workspace_tree(files, "seed.workspace.files", add)


def _is_datetime(value: object) -> bool:
    if not isinstance(value, str) or len(value) > 64:
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def check_workspace_tree(files: dict[str, Any], where: str, add: Add) -> None:
    """The seed's files as one tree: no file inside a path that is itself a file, none reached through a
    symlink the seed plants (a write there would follow it), and every symlink pointing inside."""
    kinds = {}
    for path, spec in files.items():
        if seed_path_problem(path) is None:
            kinds[path] = "symlink" if isinstance(spec, dict) and "symlink" in spec else "file"
    for path, kind in kinds.items():
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in kinds:
                add(f"{where}.{path}", f"{parent!r} is a {kinds[parent]} in the seed, so nothing can be inside it")
                break
        if kind == "symlink":
            why = link_target_problem(path, files[path]["symlink"])
            if why:
                add(f"{where}.{path}.symlink", why)
