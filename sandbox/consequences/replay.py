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
import itertools
import json
import os
import re
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

from redagent.sandbox import names
from redagent.sandbox.consequences import plan, skel, trace
from redagent.sandbox.isolation import Backend, IsolationUnavailable, SandboxFailure

VERSION = "3"  # part of every cache key: a change to what a replay records makes old entries stale
MAX_ACTIVITIES = 20
REPLAY_SECONDS = 150.0
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
    (how the activity ended, when not normally), `syntax` (bash stopped reading `source` at a syntax error on
    `line`), `touch` (a workspace file a program consumed or
    considered: `source` its snapshot key, `origin` how — `exec`, `read`, `refused` (looked up as a program,
    not executable) —, `text` the program that did it, `detail` the key of the file the path led to when a
    link was followed)."""

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
    lost: tuple[str, ...] = ()  # activities that ran but whose report did not arrive whole
    reads: bool = False  # whether every activity's report says which files were read (strace)
    inexact: tuple[tuple[str, str], ...] = ()  # entries the sandbox could not hold as the snapshot has them
    failure_reason: str = ""  # `Unjudged.reason` of a failure: isolation, state or replay


# -- the state --------------------------------------------------------------------------------------------
@dataclass
class State:
    """A snapshot's `workspace.files`, with the text of every file available to plan and plant.

    `inexact` names the entries a sandbox cannot be given exactly as the snapshot has them, and why: a key
    that is not a workspace path (hostile input: absolute, `..`, an empty part, not a key `sandbox.names`
    gives), an entry beneath a file or link, an unreadable entry or a device. A state is otherwise rebuilt
    byte for byte: names that are not UTF-8 and FIFOs are made by the restoring command."""

    files: dict[str, Any]
    texts: dict[str, str | None]  # planted content ("" when unknown), None for symlinks and specials
    binary: dict[str, bytes]
    missing: list[str]
    defaults: set[str]
    inexact: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, files: Files, read_large: Reader | None) -> State:
        texts: dict[str, str | None] = {}
        binary: dict[str, bytes] = {}
        missing: list[str] = []
        inexact = _inexact(files)
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
        return cls(dict(files), texts, binary, missing, defaults, inexact)

    def text(self, path: str) -> str | None:
        return self.texts.get(path)

    def executable(self, path: str) -> bool:
        item = self.files.get(path)
        return bool(isinstance(item, dict) and item.get("executable"))

    def plannable(self) -> list[str]:
        """The paths activities may be planned from: those a shell can name (a key with a component that is
        not UTF-8 is planted, but no activity names it), and that the sandbox holds as the snapshot has them."""
        return [p for p in self.texts if not names.escaped(p) and p not in self.inexact]

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
        """The Environment seed's files, and what a sandboxed command must make or restore after planting:
        binary content and exact permission bits of planted files (`path`), and whole entries planting cannot
        express (`bytes`: a name that is not UTF-8, a FIFO), by the bytes of their path."""
        planted: dict[str, Any] = {}
        restore: list[dict[str, Any]] = []
        for path, item in sorted(self.files.items()):
            if not isinstance(path, str) or path in self.inexact:
                continue
            item = {"content": item} if isinstance(item, str) else item
            if not isinstance(item, dict):
                continue
            raw = names.to_bytes(path) or b""
            exotic: dict[str, Any] = {"bytes": base64.b64encode(raw).decode()}
            if "special" in item:
                if item.get("special") == "fifo":
                    restore.append({**exotic, "fifo": True})
                continue
            if "symlink" in item:
                target = str(item["symlink"])
                if names.escaped(path) or names.escaped(target):
                    spelled = names.to_bytes(target) or target.encode("utf-8", "surrogateescape")
                    restore.append({**exotic, "link": base64.b64encode(spelled).decode()})
                else:
                    planted[path] = {"symlink": target}
                continue
            executable = bool(item.get("executable"))
            mode = str(item.get("mode") or ("0755" if executable else "0644"))
            mode = mode if mode.isdigit() and len(mode) <= 5 else ("0755" if executable else "0644")
            if names.escaped(path):
                data = self.binary.get(path)
                if data is None:
                    data = (self.texts.get(path) or "").encode("utf-8", "surrogateescape")
                restore.append({**exotic, "b64": base64.b64encode(data).decode(), "mode": mode})
                continue
            planted[path] = {"content": self.texts.get(path) or "", "executable": executable}
            entry: dict[str, Any] = {"path": path}
            if path in self.binary:
                entry["b64"] = base64.b64encode(self.binary[path]).decode()
            if mode not in ("0644", "0755") or "b64" in entry:
                entry["mode"] = mode
                restore.append(entry)
        for name in sorted(self.defaults):
            planted[name] = {"content": skel.DEFAULTS[name]}
        return planted, restore


def _inexact(files: Files) -> dict[str, str]:
    """The entries a sandbox cannot hold as the snapshot has them, and why (see `State`)."""
    found: dict[str, str] = {}
    leaves: set[str] = set()
    for path, item in files.items():
        if not isinstance(path, str):
            continue
        spelled = names.path(path)
        parts = spelled.split("/") if spelled is not None else []
        if spelled is None or not parts or any(p in ("", ".", "..") for p in parts):
            found[path] = "not a workspace path"
            continue
        if isinstance(item, dict) and "special" in item:
            kind = str(item.get("special"))
            if kind == "unreadable":
                found[path] = "unreadable in the snapshot: what it held is unknown"
            elif kind != "fifo":
                found[path] = f"a {kind[:20]}: a sandbox cannot make one"
        leaves.add(spelled)
    for path in files:
        if not isinstance(path, str) or path in found:
            continue
        spelled = names.path(path) or ""
        parts = spelled.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in leaves:
                found[path] = "beneath a file or link of the same state"
                break
    return found


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
            problem = (outcome.error or str(outcome.result))[:200]
            if not outcome.ok and problem.startswith("run_command is unavailable"):
                raise IsolationUnavailable(problem)  # no sandbox to restore in: nothing is wrong with the state
            raise BuildError(f"cannot restore the state: {problem}")
    return env


class BuildError(Exception):
    """A state that cannot be laid out in a sandbox workspace."""


def _run(state: State, isolation: Backend) -> Replay:
    started = time.monotonic()
    nonce = secrets.token_hex(6)
    planned = plan.activities(state.plannable(), state.text, state.executable, nonce)[:MAX_ACTIVITIES]
    activity_names = tuple(a.name for a in planned)
    inexact = tuple(sorted(state.inexact.items()))

    def failed(reason: str, kind: str) -> Replay:
        return Replay(
            (),
            activity_names,
            {},
            frozenset(state.defaults),
            tuple(state.missing),
            failure=reason,
            seconds=round(time.monotonic() - started, 3),
            inexact=inexact,
            failure_reason=kind,
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
        return failed(str(exc), "state")
    except (IsolationUnavailable, SandboxFailure) as exc:
        return failed(f"{type(exc).__name__}: {str(exc)[:200]}", "isolation")
    caps = capabilities(isolation)
    try:
        ran = run_activities(env, chosen, caps)
    except (IsolationUnavailable, SandboxFailure) as exc:
        return failed(f"{type(exc).__name__}: {str(exc)[:200]}", "isolation")
    finally:
        env.close()
    events: list[Event] = []
    truncated: list[str] = []
    lost: list[str] = []
    for result in ran:
        events.extend(_events(result))
        if result.overflow:
            truncated.append(result.name)
        if result.ended == "lost":
            lost.append(result.name)
    return Replay(
        tuple(events),
        activity_names,
        caps,
        frozenset(state.defaults),
        tuple(state.missing),
        truncated=tuple(truncated),
        skipped=tuple(skipped),
        seconds=round(time.monotonic() - started, 3),
        nonce=nonce,
        lost=tuple(lost),
        reads=bool(ran) and all(r.reads for r in ran if r.ended not in ("skipped", "lost")),
        inexact=inexact,
    )


def _restore_command() -> str:
    # `path`: a planted file's binary content and exact mode; `bytes`: an entry planting cannot make, by the
    # bytes of its path (a name that is not UTF-8, a FIFO, a link to such a name), parents made as needed.
    code = (
        "import base64,json,os\n"
        f"p={RESTORE_NAME!r}\n"
        "items=json.load(open(p))\n"
        "os.remove(p)\n"
        "for e in items:\n"
        "  if 'bytes' in e:\n"
        "    t=base64.b64decode(e['bytes'])\n"
        "    d=os.path.dirname(t)\n"
        "    if d: os.makedirs(d,exist_ok=True)\n"
        "    if e.get('fifo'): os.mkfifo(t,0o644); continue\n"
        "    if 'link' in e: os.symlink(base64.b64decode(e['link']),t); continue\n"
        "    f=os.open(t,os.O_WRONLY|os.O_CREAT|os.O_EXCL|os.O_NOFOLLOW,0o644)\n"
        "  else:\n"
        "    t=e['path']\n"
        "    f=os.open(t,os.O_WRONLY|os.O_TRUNC|os.O_NOFOLLOW) if 'b64' in e else -1\n"
        "  if f>=0: os.write(f,base64.b64decode(e.get('b64',''))); os.close(f)\n"
        "  try: os.chmod(t,int(e['mode'],8),follow_symlinks=False)\n"
        "  except (KeyError,OSError,NotImplementedError,ValueError): pass\n"
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
    """What one activity did, as the harness reported it and the gateway recorded it. `ended`: ok, timeout,
    failed, interrupted (the command died under it), skipped (never started), or lost (it ran, but its report
    did not arrive whole)."""

    name: str
    ended: str
    exit: int | None
    trace: list[str]
    syscalls: list[str]  # strace's records (programs executed, files read, the process tree)
    changed: list[str]
    calls: list[Any]  # receipts of the service calls made while it ran
    overflow: bool
    detail: str = ""
    reads: bool = False  # whether the report can say which files were read (strace ran)
    errors: list[str] = field(default_factory=list)  # bash's syntax errors in files it read


def run_activities(env: Any, activities: list[plan.Activity], caps: dict[str, bool]) -> list[Ran]:
    """Run activities through the in-sandbox harness, as few sandboxed commands as their time limits and the
    kept output allow. Service calls made through the bridge are given to the activity running when they were
    made."""
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
        # One command runs as many activities as fit in its deadline and its output (usually all of them: they
        # take about a second each, their limits are for the pathological case); the rest go to the next one.
        # The harness runs them in order and stops at the first it does not start, so what was not started is
        # always the tail.
        while pending:
            results = _command(env, pending, caps, calls)
            done = list(itertools.takewhile(lambda r: r.ended != "skipped", results))
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
                "exec_env": a.exec_env,
                "setup": a.setup,
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
    frames = _reports(stdout)
    for key in ("nested", "strace"):
        if key in frames.begin and key not in caps:
            caps[key] = bool(frames.begin[key])
    receipts = {r.id: r for r in env.receipts}
    ran: list[Ran] = []
    for activity in chunk:
        status, found = frames.reports.get(activity.name, ({}, {}))
        start, end = status.get("start", 0.0), status.get("end", float("inf"))
        made = [receipts[i] for t, ids in calls if start <= t <= end for i in ids if i in receipts]
        if status:
            ended = str(status.get("ended") or "interrupted")
        elif activity.name in frames.started or frames.cut:
            ended = "lost"  # it ran (or may have: the output was cut), and its report is not here whole
        elif frames.finished or (ran and ran[-1].ended in ("timeout", "interrupted", "skipped", "lost")):
            ended = "skipped"  # the harness stopped before it (deadline, output), or the command ended before it
        else:
            ended = "timeout" if result.get("timed_out") else "interrupted"
        ran.append(
            Ran(
                activity.name,
                ended,
                status.get("exit"),
                [str(x) for x in found.get("trace") or []],
                [str(x) for x in found.get("syscalls") or []],
                [names.key(str(x)) for x in found.get("changed") or []],
                made,
                bool(status.get("overflow")),
                str(status.get("detail", ""))[:200],
                bool(status.get("reads")),
                [str(x) for x in found.get("errors") or []],
            )
        )
    return ran


@dataclass
class Frames:
    """What a command's output says: the BEGIN record, the activities that started, each activity's status and
    report (only those that arrived whole: length and digest checked), whether the harness reached its end, and
    whether the output was cut (then nothing missing can be said not to have run)."""

    begin: dict[str, Any] = field(default_factory=dict)
    started: set[str] = field(default_factory=set)
    reports: dict[str, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict)
    finished: bool = False
    cut: bool = False


def _reports(stdout: str) -> Frames:
    frames = Frames(cut="bytes of output omitted" in stdout)
    status: dict[str, Any] | None = None
    for line in stdout.split("\n"):
        if not line.startswith(trace.RS):
            continue
        name, _, payload = line[1:].partition(trace.US)
        try:
            if name == "BEGIN":
                value = json.loads(payload)
                frames.begin = value if isinstance(value, dict) else {}
            elif name == "START":
                frames.started.add(str(json.loads(payload)))
            elif name == "ACT":
                value = json.loads(payload)
                status = value if isinstance(value, dict) else None
            elif name == "Z" and status is not None:
                found = _report(payload)
                if found is not None:
                    frames.reports[str(status.get("name"))] = (status, found)
                status = None
            elif name == "END":
                frames.finished = True
        except (ValueError, TypeError):
            status = None
    return frames


def _report(payload: str) -> dict[str, Any] | None:
    """One report, if it arrived whole: `LENGTH US SHA256 US base64(zlib(JSON))`, checked."""
    length, _, rest = payload.partition(trace.US)
    digest, _, encoded = rest.partition(trace.US)
    try:
        data = base64.b64decode(encoded, validate=True)
        if not length.isdigit() or int(length) != len(data) or hashlib.sha256(data).hexdigest() != digest:
            return None
        found = json.loads(zlib.decompressobj().decompress(data, MAX_REPORT))
    except (ValueError, zlib.error):
        return None
    return found if isinstance(found, dict) else None


MAX_REPORT = 16 << 20
_SYNTAX_ERROR = re.compile(r"(?:^|: )(/[^:]*): line (\d+): syntax error")


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
    for touch in trace.parse_syscalls("\n".join(ran.syscalls)):
        program = touch.program
        if touch.kind == "exec":
            events.append(Event(name, "exec", touch.path.decode("utf-8", "replace"), (), "", " ".join(touch.argv)))
        key = trace.workspace_key(touch.path)
        real = trace.workspace_key(touch.real) if touch.real else None
        if key is None and real is not None:
            key, real = real, None
        if key is not None:
            events.append(Event(name, "touch", key, (), touch.kind, program, real if real and real != key else ""))
    for error in ran.errors:
        match = _SYNTAX_ERROR.search(error)
        if match:  # the file stops at its syntax error: its lines below did not run, outside the replay either
            events.append(Event(name, "syntax", match.group(1), line=int(match.group(2)[:9])))
    for path in ran.changed:
        events.append(Event(name, "change", str(path)))
    for receipt in ran.calls:
        args = json.dumps(receipt.args, sort_keys=True, default=str)[: trace.MAX_TEXT]
        events.append(Event(name, "call", receipt.service, (), receipt.action, args, receipt.outcome))
    if ran.ended not in ("ok", "lost"):
        events.append(Event(name, "status", text=ran.ended, detail=ran.detail))
    return events
