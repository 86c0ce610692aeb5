"""A workspace state replayed: built in a fresh sandbox, every planned activity run there traced, and what
ran collected as `Replay` records — cached by the state's content hash.

The state is built through an ordinary `Environment` (so its workspace gets the rollout's quota, its
commands the run's isolation backend, its service calls a gateway of their own): text files and symlinks
are planted from the snapshot, then one sandboxed command restores what planting cannot express (binary
content, exact permission bits). Files the state lacks among Debian's default dot-files get the defaults
(`skel`). Each activity is then one `run_command` of the in-sandbox harness (`inside.py`), in order, in the
same workspace — a user's machine is one machine: what a login changed, the next commit sees. What an
activity did through the services comes back as receipts of the throwaway environment, what it changed in
the workspace as the run_command receipt's `changed`, what it ran as the trace.

Bounds: at most MAX_ACTIVITIES activities, each under its own time limit (the sandbox kills it), and
REPLAY_SECONDS for one state in all; what does not fit is recorded as not run. The attacker's content only
ever executes inside the sandbox.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import secrets
import shlex
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redagent.sandbox.consequences import plan, skel, trace
from redagent.sandbox.isolation import Backend, IsolationUnavailable, SandboxFailure

VERSION = "2"  # part of every cache key: a change to what a replay records makes old entries stale
MAX_ACTIVITIES = 16
REPLAY_SECONDS = 120.0
LARGE_TEXT_LIMIT = 8 << 20  # a large file's text read through the reader, at most
LARGE_TOTAL_LIMIT = 32 << 20
CACHE_SIZE = 64
RESTORE_NAME = ".redagent-replay-restore.json"
SHIMMED = ("curl", "wget")

Files = Mapping[str, Any]
Reader = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Event:
    """One thing an activity did. `kind`: `line` (a traced shell line), `exec` (a program executed),
    `python` (a Python start-up line: PYC/PYL/PYX), `build` (a command a build would run), `call` (a
    service call through the bridge), `change` (a workspace path the activity changed), `status`
    (how the activity ended, when not normally)."""

    activity: str
    kind: str
    source: str = ""
    frames: tuple[str, ...] = ()
    origin: str = ""
    text: str = ""
    detail: str = ""
    line: int = 0  # a traced line: where it starts in `source`
    callers: tuple[int, ...] = ()  # and the line of each frame that called the one before
    interactive: bool = False  # and whether the user's interactive shell ran it
    function: str = ""  # and the function that ran it


@dataclass(frozen=True)
class Replay:
    events: tuple[Event, ...]
    activities: tuple[str, ...]
    capabilities: Mapping[str, bool]
    defaults: frozenset[str]  # dot-files the replay took from the defaults (the state lacked them)
    missing: tuple[str, ...]  # files whose content the replay could not have (too large, no reader)
    failure: str = ""  # why the replay could not run at all
    truncated: tuple[str, ...] = ()  # activities whose trace was cut (output limit) or overflowed
    skipped: tuple[str, ...] = ()  # activities not run (time or count budget)
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())
    nonce: str = ""  # the typed commands' markers carry it (`plan.MARK`)


# -- the state --------------------------------------------------------------------------------------------
@dataclass
class State:
    """A snapshot's `workspace.files`, with the text of every file available to plan and plant."""

    files: dict[str, Any]
    texts: dict[str, str | None]  # planted content ("" when unknown), None for symlinks and specials
    binary: dict[str, bytes]
    missing: list[str]
    defaults: set[str]

    @classmethod
    def of(cls, files: Files, read_large: Reader | None) -> State:
        texts: dict[str, str | None] = {}
        binary: dict[str, bytes] = {}
        missing: list[str] = []
        budget = LARGE_TOTAL_LIMIT
        for path, item in sorted(files.items()):
            if not isinstance(path, str):
                continue
            if isinstance(item, str):
                item = {"content": item}
            if not isinstance(item, dict) or "special" in item or "symlink" in item:
                texts[path] = None
                continue
            content = item.get("content")
            if isinstance(content, str) and content.startswith("base64:"):
                try:
                    binary[path] = base64.b64decode(content[7:], validate=True)
                    texts[path] = None
                    continue
                except ValueError:
                    pass
            if not isinstance(content, str):
                content = read_large(path) if read_large is not None and budget > 0 else None
                if isinstance(content, str):
                    content = content[:LARGE_TEXT_LIMIT]
                    budget -= len(content)
                else:
                    missing.append(path)
                    content = ""
            texts[path] = content
        defaults = {name for name in skel.DEFAULTS if name not in files}
        for name in defaults:
            texts[name] = skel.DEFAULTS[name]
        return cls(dict(files), texts, binary, missing, defaults)

    def text(self, path: str) -> str | None:
        return self.texts.get(path)

    def executable(self, path: str) -> bool:
        item = self.files.get(path)
        return bool(isinstance(item, dict) and item.get("executable"))

    def digest(self) -> str:
        cached = getattr(self, "_digest", None)
        if cached is not None:
            return cached
        body = json.dumps(
            {
                "files": {p: _fingerprint(i) for p, i in sorted(self.files.items()) if isinstance(p, str)},
                "large": {
                    p: hashlib.sha256(t.encode()).hexdigest()
                    for p, t in sorted(self.texts.items())
                    if t is not None and not _has_content(self.files.get(p))
                },
                "version": VERSION,
            },
            sort_keys=True,
            default=str,
        )
        self._digest: str | None = hashlib.sha256(body.encode()).hexdigest()
        return self._digest

    def seed(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The Environment seed's files, and what a sandboxed command must restore after planting."""
        planted: dict[str, Any] = {}
        restore: list[dict[str, Any]] = []
        for path, item in sorted(self.files.items()):
            if not isinstance(path, str):
                continue
            item = {"content": item} if isinstance(item, str) else item
            if not isinstance(item, dict) or "special" in item:
                continue
            if "symlink" in item:
                planted[path] = {"symlink": str(item["symlink"])}
                continue
            executable = bool(item.get("executable"))
            planted[path] = {"content": self.texts.get(path) or "", "executable": executable}
            mode = str(item.get("mode") or ("0755" if executable else "0644"))
            entry: dict[str, Any] = {"path": path}
            if path in self.binary:
                entry["b64"] = base64.b64encode(self.binary[path]).decode()
            if mode not in ("0644", "0755") or "b64" in entry:
                entry["mode"] = mode if mode.isdigit() else ("0755" if executable else "0644")
                restore.append(entry)
        for name in sorted(self.defaults):
            planted[name] = {"content": skel.DEFAULTS[name]}
        return planted, restore


def _has_content(item: Any) -> bool:
    return isinstance(item, str) or (isinstance(item, dict) and isinstance(item.get("content"), str))


def _fingerprint(item: Any) -> Any:
    if isinstance(item, dict):
        return {k: item[k] for k in ("sha256", "mode", "symlink", "special", "content", "executable") if k in item}
    return item


# -- running ------------------------------------------------------------------------------------------------
_cache: OrderedDict[str, Replay] = OrderedDict()
_cache_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}


def replay(
    files: Files, *, isolation: Backend, read_large: Reader | None = None, baseline: Replay | None = None
) -> Replay:
    """The replay of one workspace state (a snapshot's `workspace.files`), from the cache when the same
    state (content, modes, the large files' text) was replayed before under the same backend."""
    state = State.of(files, read_large)
    key = f"{getattr(isolation, 'name', type(isolation).__name__)}:{state.digest()}"
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
        lock = _key_locks.setdefault(key, threading.Lock())
    with lock:  # two threads asking for one state replay it once
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                return hit
        result = _run(state, isolation)
        with _cache_lock:
            _cache[key] = result
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
            _key_locks.pop(key, None)
    return result


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


_capabilities: dict[str, dict[str, bool]] = {}


def capabilities(isolation: Backend) -> dict[str, bool]:
    """What the harness found the backend's sandboxes allow (nested namespaces, strace), probed once per
    process and backend; the dict fills in on the first command."""
    return _capabilities.setdefault(getattr(isolation, "name", type(isolation).__name__), {})


def open_state(state: State, isolation: Backend) -> Any:
    """An Environment whose workspace holds `state` (planted, then restored in the sandbox). Raises
    `BuildError` when the state cannot be built; the caller closes the environment."""
    from redagent.sandbox.environment import SERVICES, Environment

    seed_files, restore = state.seed()
    if restore:
        seed_files[RESTORE_NAME] = {"content": json.dumps(restore)}
    try:
        env = Environment({"workspace": {"files": seed_files}}, list(SERVICES), isolation=isolation)
    except (IsolationUnavailable, SandboxFailure):
        raise
    except Exception as exc:  # a state the workspace refuses to plant (names, links): nothing can be replayed
        raise BuildError(f"cannot build the state: {type(exc).__name__}: {str(exc)[:200]}") from None
    if restore:
        try:
            outcome = env.gateway.call(
                "run_command", {"command": _restore_command(), "timeout": 30}, step=None, actor="setup", bridged=True
            )
        except BaseException:
            env.close()
            raise
        if not outcome.ok or (outcome.result or {}).get("exit_code") != 0:
            env.close()
            raise BuildError(f"cannot restore the state: {(outcome.error or str(outcome.result))[:200]}")
    return env


class BuildError(Exception):
    """A state that cannot be laid out in a sandbox workspace."""


def _run(state: State, isolation: Backend) -> Replay:
    started = time.monotonic()
    nonce = secrets.token_hex(6)
    planned = plan.activities(state.texts.keys(), state.text, state.executable, nonce)[:MAX_ACTIVITIES]
    names = tuple(a.name for a in planned)

    def failed(reason: str) -> Replay:
        return Replay(
            (),
            names,
            {},
            frozenset(state.defaults),
            tuple(state.missing),
            failure=reason,
            seconds=round(time.monotonic() - started, 3),
        )

    budget = 0.0
    chosen, skipped = [], []
    for activity in planned:  # what fits in the replay's time budget, in order
        if budget + activity.seconds > REPLAY_SECONDS:
            skipped.append(activity.name)
            continue
        budget += activity.seconds
        chosen.append(activity)
    try:
        env = open_state(state, isolation)
    except BuildError as exc:
        return failed(str(exc))
    except (IsolationUnavailable, SandboxFailure) as exc:
        return failed(f"{type(exc).__name__}: {str(exc)[:200]}")
    caps = capabilities(isolation)
    try:
        ran = run_activities(env, chosen, caps)
    except (IsolationUnavailable, SandboxFailure) as exc:
        return failed(f"{type(exc).__name__}: {str(exc)[:200]}")
    finally:
        env.close()
    events: list[Event] = []
    truncated: list[str] = []
    for result in ran:
        events.extend(_events(result))
        if result.overflow:
            truncated.append(result.name)
    return Replay(
        tuple(events),
        names,
        caps,
        frozenset(state.defaults),
        tuple(state.missing),
        truncated=tuple(truncated),
        skipped=tuple(skipped),
        seconds=round(time.monotonic() - started, 3),
        nonce=nonce,
    )


def _restore_command() -> str:
    code = (
        "import base64,json,os\n"
        f"p={RESTORE_NAME!r}\n"
        "items=json.load(open(p))\n"
        "os.remove(p)\n"
        "for e in items:\n"
        "  t=e['path']\n"
        "  if 'b64' in e:\n"
        "    f=os.open(t,os.O_WRONLY|os.O_TRUNC|os.O_NOFOLLOW)\n"
        "    os.write(f,base64.b64decode(e['b64'])); os.close(f)\n"
        "  try: os.chmod(t,int(e['mode'],8),follow_symlinks=False)\n"
        "  except (OSError,NotImplementedError,ValueError): pass\n"
    )
    return f"python3 -I -S -c {shlex.quote(code)}"


@functools.cache
def _inside_code() -> str:
    return (Path(__file__).parent / "inside.py").read_text()


@functools.cache
def _alternatives() -> dict[str, str]:
    """The host's Debian alternatives (awk → mawk, vi → vim.basic): the sandbox's /usr is the host's, and
    its links into /etc/alternatives would dangle under the replay's own /etc."""
    found: dict[str, str] = {}
    try:
        for entry in os.scandir("/etc/alternatives"):
            target = os.path.realpath(entry.path)
            if target.startswith("/usr/") and len(found) < 2000:
                found[entry.name] = target
    except OSError:
        pass
    return found


# One sandboxed command runs activities whose time limits add up to at most this (run_command's cap is 60).
COMMAND_SECONDS = 55


@dataclass
class Ran:
    """What one activity did, as the harness reported it and the gateway recorded it."""

    name: str
    ended: str
    exit: int | None
    trace: list[str]
    execs: list[str]
    changed: list[str]
    calls: list[Any]  # receipts of the service calls made while it ran
    overflow: bool
    detail: str = ""


def run_activities(env: Any, activities: list[plan.Activity], caps: dict[str, bool]) -> list[Ran]:
    """Run activities through the in-sandbox harness, as few sandboxed commands as their time limits allow.
    Service calls made through the bridge are given to the activity running when they were made."""
    calls: list[tuple[float, list[str]]] = []
    gateway = env.gateway
    original = gateway._bridged

    def bridged(request: dict[str, Any], step: int | None) -> Any:
        answer = original(request, step)
        calls.append((time.monotonic(), list(answer.receipt_ids)))
        return answer

    gateway._bridged = bridged  # this throwaway environment's gateway only
    ran: list[Ran] = []
    pending = list(activities)
    try:
        # One command runs as many activities as fit in its deadline (usually all of them: they take about a
        # second each, their limits are for the pathological case); the rest go to the next command.
        while pending:
            done = [r for r in _command(env, pending, caps, calls) if r.ended != "skipped"]
            ran += done
            if not done:
                ran += [Ran(a.name, "skipped", None, [], [], [], [], False) for a in pending]
                break
            pending = pending[len(done) :]
    finally:
        del gateway._bridged
    return ran


def _command(
    env: Any, chunk: list[plan.Activity], caps: dict[str, bool], calls: list[tuple[float, list[str]]]
) -> list[Ran]:
    spec = {
        "trace_fd": trace.TRACE_FD,
        "deadline": COMMAND_SECONDS,
        "etc": skel.etc_templates(),
        "alternatives": _alternatives(),
        "shimmed": list(SHIMMED),
        "caps": dict(caps),  # what the first command's probes found: the rest skip them
        "activities": [
            {
                "name": a.name,
                "timeout": max(1, a.seconds - 1),
                "argv": ["bash", "/tmp/rr/activity.sh"],
                "exec_trace": a.exec_trace,
                "dedupe": a.trace,
                "etc": skel.etc_templates(a.path_first) if a.path_first else None,
                "files": {"/tmp/rr/activity.sh": {"text": a.script}, **{p: {"text": t} for p, t in a.files.items()}},
                "env": {
                    **plan.ENV,
                    **(plan.TRACE_ENV if a.trace else {"REDAGENT_TRACE_FD": str(trace.TRACE_FD)}),
                    **a.env,
                },
            }
            for a in chunk
        ],
    }
    encoded = base64.b64encode(json.dumps(spec).encode()).decode()
    command = f"exec python3 -I -S -c {shlex.quote(_inside_code())} {encoded}"
    seconds = COMMAND_SECONDS + 5
    outcome = env.gateway.call(
        "run_command", {"command": command, "timeout": seconds}, step=None, actor="setup", bridged=True
    )
    if not outcome.ok:
        raise SandboxFailure(outcome.error or "run_command failed")
    result = outcome.result or {}
    stdout = result.get("stdout", "")
    begin, reports = _reports(stdout)
    for key in ("nested", "strace"):
        if key in begin and key not in caps:
            caps[key] = bool(begin[key])
    receipts = {r.id: r for r in env.receipts}
    ran: list[Ran] = []
    finished = "\n\x1eEND\x1f" in stdout or stdout.startswith("\x1eEND\x1f")
    for activity in chunk:
        status, found = reports.get(activity.name, ({}, {}))
        start, end = status.get("start", 0.0), status.get("end", float("inf"))
        made = [receipts[i] for t, ids in calls if start <= t <= end for i in ids if i in receipts]
        if status:
            ended = status.get("ended") or "interrupted"
        elif finished or (ran and ran[-1].ended in ("timeout", "interrupted", "skipped")):
            ended = "skipped"  # the harness stopped at its deadline, or the command ended before it
        else:
            ended = "timeout" if result.get("timed_out") else "interrupted"
        ran.append(
            Ran(
                activity.name,
                str(ended),
                status.get("exit"),
                list(found.get("trace") or []),
                list(found.get("exec") or []),
                list(found.get("changed") or []),
                made,
                bool(status.get("overflow")),
                str(status.get("detail", ""))[:200],
            )
        )
    return ran


def _reports(stdout: str) -> tuple[dict[str, Any], dict[str, tuple[dict[str, Any], dict[str, Any]]]]:
    """The harness's BEGIN record and, per activity, its status and what it found."""
    begin: dict[str, Any] = {}
    reports: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    status: dict[str, Any] | None = None
    for line in stdout.split("\n"):
        name, _, payload = line.lstrip(trace.RS).partition(trace.US)
        if not line.startswith(trace.RS):
            continue
        try:
            if name == "BEGIN":
                begin = json.loads(payload)
            elif name == "ACT":
                status = json.loads(payload)
            elif name == "Z" and isinstance(status, dict):
                data = zlib.decompressobj().decompress(base64.b64decode(payload), MAX_REPORT)
                found = json.loads(data)
                if isinstance(found, dict):
                    reports[str(status.get("name"))] = (status, found)
                status = None
        except (ValueError, zlib.error):
            status = None
    return (begin if isinstance(begin, dict) else {}), reports


MAX_REPORT = 16 << 20


def _events(ran: Ran) -> list[Event]:
    name = ran.name
    out = trace.parse_stdout("\n".join(ran.trace))
    events = [
        Event(
            name,
            "line",
            line.source,
            line.frames,
            line.origin,
            line.text,
            line.cwd,
            line.line,
            line.callers,
            line.interactive,
            line.function,
        )
        for line in out.lines
    ]
    for tagged in out.tagged:
        kind = "build" if tagged.kind == "MK" else "python" if tagged.kind.startswith("PY") else tagged.kind.lower()
        source = tagged.fields[0] if tagged.fields else ""
        events.append(Event(name, kind, source, (), tagged.kind, tagged.fields[1] if len(tagged.fields) > 1 else ""))
    for item in trace.parse_strace("\n".join(ran.execs)):
        events.append(Event(name, "exec", item.program, (), "", " ".join(item.argv)))
    for path in ran.changed:
        events.append(Event(name, "change", str(path)))
    for receipt in ran.calls:
        args = json.dumps(receipt.args, sort_keys=True, default=str)[: trace.MAX_TEXT]
        events.append(Event(name, "call", receipt.service, (), receipt.action, args, receipt.outcome))
    if ran.ended != "ok":
        events.append(Event(name, "status", text=ran.ended, detail=ran.detail))
    return events
