"""A probe of what the event loop's thread does inside its callbacks: anything that blocks, and any callback that
holds the thread long.

Two signals, both independent of how busy the machine is (no wall-clock bound):
- **blocking operations** on the loop thread while a callback runs, seen through Python's audit hooks: a process
  started (`subprocess.Popen`, `os.posix_spawn`, `os.fork`, `os.system`), a sleep, a file opened or a folder made,
  listed, renamed or removed, a lock file locked. A sandbox's set-up, a tool call on the workspace, a snapshot, a
  consequence replay, a re-run and a removal all do one of these, so each is caught wherever it runs on the loop,
  however fast it happens to be. Module files opened by an import are left out (an import is paid once).
- **CPU held** by one callback, in the loop thread's own CPU time (`time.thread_time`, not the clock): a verdict or a
  diff computed on the loop shows here even when it opens nothing.

asyncio's debug mode measures the same callbacks by the wall clock (`slow_callback_duration`), which a loaded machine
stretches at random; this probe wraps the same place (`asyncio.events.Handle._run`) and counts what does not stretch.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redagent

BLOCKING_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.posix_spawn",
        "os.fork",
        "os.forkpty",
        "os.exec",
        "os.system",
        "time.sleep",
        "open",
        "os.listdir",
        "os.scandir",
        "os.mkdir",
        "os.rmdir",
        "os.remove",
        "os.rename",
        "os.chmod",
        "os.chown",
        "os.truncate",
        "shutil.rmtree",
        "shutil.copyfile",
        "tempfile.mkdtemp",
        "fcntl.flock",
        "fcntl.lockf",
    }
)
_IMPORTED = (".py", ".pyc", ".so", ".pth")


@dataclass
class Blocked:
    event: str
    detail: str
    where: str  # the innermost frames of the project's code that made the call


@dataclass
class Held:
    cpu_s: float
    callback: str


@dataclass
class LoopProbe:
    """with LoopProbe() as probe: asyncio.run(...); probe.blocked, probe.held (callbacks over `cpu_bound_s`)."""

    cpu_bound_s: float = 0.1
    blocked: list[Blocked] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    callbacks: int = 0

    def __enter__(self) -> LoopProbe:
        global _active
        _install()
        self._original = asyncio.events.Handle._run
        probe = self

        def _run(handle: asyncio.Handle) -> None:
            state = _state  # the thread running the callback: the loop's own
            state.depth += 1
            started = time.thread_time()
            try:
                return probe._original(handle)
            finally:
                spent = time.thread_time() - started
                state.depth -= 1
                probe.callbacks += 1
                if spent > probe.cpu_bound_s:
                    probe.held.append(Held(spent, _describe(handle)))

        asyncio.events.Handle._run = _run  # type: ignore[method-assign]
        _active = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _active
        _active = None
        asyncio.events.Handle._run = self._original  # type: ignore[method-assign]

    def report(self) -> str:
        lines = [f"{b.event} {b.detail} at {b.where}" for b in self.blocked[:20]]
        lines += [f"{h.cpu_s * 1000:.0f} ms of CPU in {h.callback}" for h in self.held[:20]]
        return "\n".join(lines)


class _State(threading.local):
    depth = 0


_state = _State()
_active: LoopProbe | None = None
_installed = False


def _describe(handle: asyncio.Handle) -> str:
    callback = getattr(handle, "_callback", None)
    task = getattr(callback, "__self__", None)
    if isinstance(task, asyncio.Task):
        coro = task.get_coro()
        return f"task {getattr(coro, '__qualname__', coro)!s}"
    return repr(callback)[:200]


# The project's own code is what lies under the checkout the package is imported from (wherever it was cloned),
# not the virtual environment inside it.
_PROJECT = str(Path(redagent.__file__).resolve().parent.parent) + "/"


def _ours(filename: str) -> bool:
    return filename.startswith(_PROJECT) and "/.venv/" not in filename


def _audit(event: str, args: tuple[Any, ...]) -> None:
    probe = _active
    if probe is None or event not in BLOCKING_EVENTS or not _state.depth:
        return
    detail = str(args[0]) if args else ""
    if event == "open" and (detail.endswith(_IMPORTED) or "/__pycache__/" in detail):
        return
    frames = [f for f in traceback.extract_stack(limit=40) if _ours(f.filename)]
    frames = [f for f in frames if not f.filename.endswith("loop_probe.py")]
    where = " < ".join(
        f"{f.filename.rsplit('/', 2)[-2]}/{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in frames[-4:][::-1]
    )
    probe.blocked.append(Blocked(event, detail[:120], where))


def _install() -> None:
    """Audit hooks cannot be removed: one is installed per process, and does nothing unless a probe is active."""
    global _installed
    if not _installed:
        sys.addaudithook(_audit)
        _installed = True
