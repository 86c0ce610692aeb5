"""One rollout's sandbox: the five services built fresh from a case seed, their receipts, the gateway.

`Environment.build(seed, surfaces, interventions)` gives a sandbox whose workspace is a new
temporary directory; `snapshot()` is the canonical state of every service; `close()` removes the
workspace. Nothing of the case beyond its seed and interventions enters the sandbox, so the agent
cannot see verifiers, plans or other rollouts.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import tempfile
import threading
import weakref
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

from redagent.errors import UserError
from redagent.sandbox.gateway import ToolGateway
from redagent.sandbox.isolation import Backend, Bridge, IsolationUnavailable, default_isolation
from redagent.sandbox.lifecycle import critical
from redagent.sandbox.receipts import ReceiptLog
from redagent.sandbox.services.banking import Banking
from redagent.sandbox.services.base import Service
from redagent.sandbox.services.browser import Browser
from redagent.sandbox.services.email import Email
from redagent.sandbox.services.files import Files
from redagent.sandbox.services.workspace import Workspace, remove_tree

SERVICES: dict[str, type[Service]] = {
    "workspace": Workspace,
    "email": Email,
    "browser": Browser,
    "banking": Banking,
    "files": Files,
}
DEFAULT_CLOCK = "2026-03-02T09:00:00Z"

_isolation: Backend | None = None
SANDBOXES = ("bwrap", "docker")


def shared_isolation() -> Backend:
    """The process's isolation backend: the one `use_isolation` chose for the run, else the host's
    bubblewrap (or a refusing backend), probed once per process."""
    global _isolation
    if _isolation is None:
        _isolation = default_isolation()
    return _isolation


def make_isolation(sandbox: str = "bwrap", image: str | None = None, run_id: str = "") -> Backend:
    """The backend named by `--sandbox`: bwrap as the host allows it, or docker, checked here (the
    daemon answers, the image is present) so a run never falls back silently to another backend."""
    if sandbox == "bwrap":
        return default_isolation()
    if sandbox == "docker":
        from redagent.sandbox.docker_backend import Docker

        backend = Docker(image, run_id=run_id)
        backend.check()
        return backend
    raise IsolationUnavailable(f"unknown sandbox {sandbox!r} (choose one of {', '.join(SANDBOXES)})")


def use_isolation(backend: Backend | None) -> None:
    """Make `backend` the process's backend for every Environment built without one (None: the default)."""
    global _isolation
    old, _isolation = _isolation, backend
    close = getattr(old, "close", None)
    if old is not backend and close is not None:
        close()


@functools.cache
def workspace_root() -> str | None:
    """Where rollout workspaces live: $REDAGENT_WORKSPACES, else a memory-backed /dev/shm when there is
    one (creating and removing thousands of small trees is several times faster there), else $TMPDIR."""
    chosen = os.environ.get("REDAGENT_WORKSPACES")
    if chosen:
        return chosen
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return str(shm)
    return None


# Every environment this process made and has not closed: what a stop left open is closed at exit (`close_made_here`),
# never what a parent process made before a fork (each entry names its maker). Its workspace's name carries the
# maker's pid too, so what a process that died left behind can be found and removed (`remove_leftovers_of`).
# An entry holds its environment weakly (with its folder): one dropped without close() is still collected — its
# workspace's finalizer drops the quota mount then, not at exit — and its folder is removed at exit. A number, not
# id(), names the entry: a dropped environment's id can be a later one's.
_made: dict[int, tuple[int, weakref.ref[Environment], Path]] = {}
_made_lock = threading.Lock()
_made_numbers = itertools.count()
WORKSPACE_PREFIX = "redagent-ws-"


def _workspace_prefix(pid: int) -> str:
    return f"{WORKSPACE_PREFIX}{pid}-"


class Environment:
    def __init__(
        self,
        seed: dict[str, Any],
        surfaces: list[str],
        interventions: list[dict[str, Any]] | None = None,
        *,
        isolation: Backend | None = None,
        workspace_dir: Path | None = None,
    ) -> None:
        self._owns_dir = workspace_dir is None
        self.services: dict[str, Any] = {}
        if workspace_dir is None:
            try:
                with critical():  # made and registered as one step: a stop never falls between the two
                    self.workspace_dir = Path(
                        tempfile.mkdtemp(prefix=_workspace_prefix(os.getpid()), dir=workspace_root())
                    )
                    with _made_lock:
                        self._made_as = next(_made_numbers)
                        _made[self._made_as] = (os.getpid(), weakref.ref(self), self.workspace_dir)
            except BaseException:
                if hasattr(self, "workspace_dir"):
                    self.close()
                raise
        else:
            self.workspace_dir = Path(workspace_dir)
        self.isolation = isolation if isolation is not None else shared_isolation()
        self.org_domains = {d.lower() for d in (seed.get("organization") or {}).get("domains", [])}
        self.clock = str(seed.get("clock", DEFAULT_CLOCK))
        self.receipts = ReceiptLog()
        self.bridge: Bridge | None = None  # set by the gateway while a command runs
        self._ids: dict[str, int] = defaultdict(int)
        try:  # whatever fails while building, the workspace (and its quota mount) must not outlive it
            for name, cls in SERVICES.items():
                self.services[name] = cls(seed.get(name) or {}, self)
            self.gateway = ToolGateway(self, surfaces, interventions)
            for number, action in enumerate(seed.get("setup_actions") or [], start=1):
                outcome = self.gateway.call(
                    action["tool"], action.get("args", {}), step=None, actor="setup", bridged=True
                )
                if not outcome.ok:
                    raise SetupError(f"seed.setup_actions[{number - 1}]: {outcome.error}")
        except BaseException:
            self.close()
            raise

    # Services call these.
    def new_id(self, prefix: str) -> str:
        self._ids[prefix] += 1
        return f"new-{prefix}-{self._ids[prefix]}"

    def now(self) -> str:
        return self.clock

    def snapshot(self) -> dict[str, Any]:
        return {name: service.snapshot() for name, service in self.services.items()}

    def interrupt(self) -> None:
        """Kill a command still running and start no other, without waiting (close() does the rest)."""
        workspace = self.services.get("workspace")
        if workspace is not None:
            workspace.interrupt()

    def close(self) -> None:
        with critical():  # a stop waits for the removal: never a tree half removed, a mount left behind
            workspace = self.services.get("workspace")
            if workspace is not None:
                workspace.close()  # stops a command still running and drops the quota mount first
            if self._owns_dir:
                remove_tree(self.workspace_dir)
                with _made_lock:
                    _made.pop(getattr(self, "_made_as", -1), None)

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def close_made_here() -> int:
    """Close every environment this process made and did not close (a stop that cut its owner short); returns how
    many. Those a parent process made before a fork are its own, and left alone."""
    me = os.getpid()
    with _made_lock:
        mine = [(number, ref(), folder) for number, (pid, ref, folder) in _made.items() if pid == me]
    for number, env, folder in mine:
        with contextlib.suppress(Exception):
            if env is not None:
                env.close()
            else:  # collected without close(): its mount went with it, its folder is left
                with critical():
                    remove_tree(folder)
                with _made_lock:
                    _made.pop(number, None)
    return len(mine)


atexit.register(close_made_here)


def remove_leftovers_of(pid: int) -> list[str]:
    """Remove what process `pid` — ended, never a live one — made and left: its quota mounts, its workspaces (and
    their staging folders), its commands' folders. Returns the paths removed."""
    from redagent.sandbox.isolation import SCRATCH_PREFIX, reap_stale_mounts

    if _alive(pid):
        return []
    reap_stale_mounts()  # a dead process's mounts first: a mount point is another filesystem, left alone below
    removed = []
    roots = {Path(workspace_root() or tempfile.gettempdir()), Path(tempfile.gettempdir())}
    prefixes = (_workspace_prefix(pid), f".redagent-move-{_workspace_prefix(pid)}", f"{SCRATCH_PREFIX}{pid}-")
    for root in roots:
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            if name.startswith(prefixes):
                remove_tree(root / name)
                removed.append(str(root / name))
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (ended, not yet reaped) still answers signal 0: it has ended all the same.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class SetupError(UserError):
    """A seed's setup action failed: the case cannot be instantiated."""

    title = "Case setup error"


def canonical(snapshot: dict[str, Any]) -> bytes:
    """Canonical JSON of a snapshot: sorted keys, so equal states give equal bytes."""
    return orjson.dumps(snapshot, option=orjson.OPT_SORT_KEYS)
