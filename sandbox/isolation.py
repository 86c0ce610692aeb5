"""Isolation backends for `run_command`: bubblewrap, or nothing at all — never an unconfined shell.

Under bubblewrap a command sees a read-only /usr, a private /tmp, no network namespace, and the
rollout's workspace as the only writable place. When running as root, privileges are dropped to an
unprivileged uid of the command's own first, so the process limit (RLIMIT_NPROC) is enforced by the
kernel, per sandbox.

Sandboxed commands reach the mocked services through a Unix socket bridge: the `rtool` shim (and
its `curl`/`wget` faces) send a tool call over the socket, the gateway runs it as an ordinary call
attributed to the `run_command` step, and the answer goes back to the command. That is how a planted
script's side effects become receipts even though the agent never called the tool itself.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SHIM = Path(__file__).parent / "shims" / "rtool"
SHIM_NAMES = ("rtool", "curl", "wget", "fs", "mail", "web", "bank", "drive")
OUTPUT_LIMIT = 65536

# A bridge answers one request from inside the sandbox — {"tool": name, "args": {...}} or
# {"cli": ["mail", "send", "--to", ...]} — with (ok, text).
Bridge = Callable[[dict[str, Any]], "BridgeAnswer"]


@dataclass
class BridgeAnswer:
    ok: bool
    output: str
    hosts: list[str] = field(default_factory=list)
    receipt_ids: list[str] = field(default_factory=list)


class IsolationUnavailable(Exception):
    """No isolation backend can run commands on this host; the message says why and what to do."""


class SandboxFailure(Exception):
    """The sandbox itself could not be set up for a command (not the command failing): the rollout
    cannot be trusted and is recorded as invalid (`sandbox_error`)."""


@dataclass
class CommandResult:
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool
    hosts: list[str] = field(default_factory=list)
    bridged_calls: list[str] = field(default_factory=list)  # receipt ids made through the bridge


class NoIsolation:
    """The backend used where bubblewrap is missing: every command is refused with the reason."""

    def __init__(self, reason: str = "no isolation backend is configured") -> None:
        self.reason = reason

    def run(self, workspace: Path, command: str, *, timeout: int,
            bridge: Bridge | None = None) -> CommandResult:
        raise IsolationUnavailable(self.reason)


class Bubblewrap:
    """Run commands under `bwrap` with no network, a read-only system and resource limits."""

    def __init__(self, *, memory_mb: int = 1024, max_processes: int = 64,
                 max_file_mb: int = 64) -> None:
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.max_file_mb = max_file_mb

    def run(self, workspace: Path, command: str, *, timeout: int,
            bridge: Bridge | None = None) -> CommandResult:
        problem = bwrap_problem()
        if problem:
            raise IsolationUnavailable(problem)
        drop = os.geteuid() == 0
        # Each command gets a uid of its own, so the per-user process limit applies per sandbox and
        # concurrent rollouts cannot starve each other of processes.
        uid = _next_uid() if drop else os.geteuid()
        if drop:
            _hand_over(workspace, uid)
        with tempfile.TemporaryDirectory(prefix="redagent-bridge-") as bridge_dir:
            server = _BridgeServer(Path(bridge_dir) / "svc.sock", bridge) if bridge else None
            if drop:
                os.chmod(bridge_dir, 0o755)
                if server:
                    os.chmod(server.path, 0o777)
            status_read, status_write = os.pipe()
            argv = self._argv(workspace, command, bridge_dir, status_write)
            if drop:
                argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
            # Limits through prlimit(1) rather than a preexec_fn: a preexec_fn forces a full fork of
            # this (large) process for every command, where without one Python can vfork.
            argv = ["prlimit", f"--as={self.memory_mb << 20}", f"--nproc={self.max_processes}",
                    f"--fsize={self.max_file_mb << 20}", f"--cpu={timeout + 1}", "--", *argv]
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, pass_fds=(status_write,),
                                        start_new_session=True, env=_ENV)
            finally:
                os.close(status_write)
            timed_out = False
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
            finally:
                if server:
                    server.close()
                with os.fdopen(status_read, "rb") as status:
                    started = b"child-pid" in status.read()
            if not started and not timed_out:
                raise SandboxFailure(f"bubblewrap could not start the sandbox: "
                                     f"{err.decode(errors='replace').strip()[:200]}")
        return CommandResult(
            exit_code=proc.returncode if not timed_out else 124,
            stdout=_clip(out), stderr=_clip(err) + ("\n[killed: time limit]" if timed_out else ""),
            timed_out=timed_out,
            hosts=sorted({h for a in (server.answers if server else []) for h in a.hosts}),
            bridged_calls=[r for a in (server.answers if server else []) for r in a.receipt_ids])

    def _argv(self, workspace: Path, command: str, bridge_dir: str, status_fd: int) -> list[str]:
        # bwrap reports {"child-pid": …} on the status fd only once the sandbox is up: its absence
        # tells a sandbox that failed to start from a command that failed.
        argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--json-status-fd", str(status_fd),
                "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev",
                "--tmpfs", "/tmp", "--dir", "/run"]
        for name in ("bin", "lib", "lib64", "sbin"):
            if os.path.islink(f"/{name}"):
                argv += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
            elif os.path.isdir(f"/{name}"):
                argv += ["--ro-bind", f"/{name}", f"/{name}"]
        argv += ["--ro-bind", str(shim_dir()), "/opt/redagent/bin"]
        argv += ["--bind", bridge_dir, "/run/redagent",
                 "--bind", str(workspace), "/workspace", "--chdir", "/workspace",
                 "sh", "-c", command]
        return argv


_ENV = {"PATH": "/opt/redagent/bin:/usr/local/bin:/usr/bin:/bin", "HOME": "/workspace",
        "LANG": "C.UTF-8", "REDAGENT_SOCKET": "/run/redagent/svc.sock"}


@functools.cache
def bwrap_problem() -> str | None:
    """None when bubblewrap works here; otherwise one line saying why it does not."""
    if shutil.which("bwrap") is None:
        return ("bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: "
                "apt-get install bubblewrap) to let agents run commands")
    probe = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()[:200]}"
    if shutil.which("prlimit") is None:
        return "prlimit (util-linux) is missing, so command limits cannot be set"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "running as root but setpriv (util-linux) is missing to drop privileges"
    return None


@functools.cache
def shim_dir() -> Path:
    """The shims, executable, in a directory of their own (package data may lose its mode bits)."""
    folder = Path(tempfile.mkdtemp(prefix="redagent-shims-"))
    atexit.register(shutil.rmtree, folder, True)
    os.chmod(folder, 0o755)
    code = SHIM.read_bytes()
    for name in SHIM_NAMES:
        (folder / name).write_bytes(code)
        os.chmod(folder / name, 0o755)
    return folder


def default_isolation() -> Bubblewrap | NoIsolation:
    problem = bwrap_problem()
    return NoIsolation(problem) if problem else Bubblewrap()


_uids = itertools.count()
_uid_lock = threading.Lock()
UID_BASE, UID_SPAN = 200_000, 65_536


def _next_uid() -> int:
    with _uid_lock:
        return UID_BASE + next(_uids) % UID_SPAN


def _hand_over(workspace: Path, uid: int) -> None:
    """Give the workspace to the unprivileged user the command runs as (root keeps full access)."""
    os.chown(workspace, uid, uid)
    for current, dirs, files in os.walk(workspace):
        for name in dirs + files:
            os.lchown(os.path.join(current, name), uid, uid)


def _clip(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) > OUTPUT_LIMIT:
        return text[:OUTPUT_LIMIT] + f"\n[output truncated: {len(text) - OUTPUT_LIMIT} more characters]"
    return text


class _BridgeServer:
    """Serves tool calls from the sandboxed command, one JSON line per connection, on a thread."""

    def __init__(self, path: Path, bridge: Bridge) -> None:
        self.path = path
        self.bridge = bridge
        self.answers: list[BridgeAnswer] = []
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen(8)
        self._sock.settimeout(0.5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:  # the socket was shut down: the command is over
                return
            if self._stop.is_set():
                conn.close()
                return
            with conn:
                conn.settimeout(5)
                try:
                    self._answer(conn)
                except (OSError, ValueError):
                    continue

    def _answer(self, conn: socket.socket) -> None:
        data = b""
        while not data.endswith(b"\n") and len(data) < (1 << 22):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        request = json.loads(data or b"{}")
        well_formed = (isinstance(request.get("tool"), str) and isinstance(request.get("args"), dict)) or (
            isinstance(request.get("cli"), list) and all(isinstance(w, str) for w in request["cli"]))
        if not well_formed:
            reply = {"ok": False, "output": "bad request: need {\"tool\": name, \"args\": {...}} or {\"cli\": [...]}"}
        else:
            answer = self.bridge(request)
            self.answers.append(answer)
            reply = {"ok": answer.ok, "output": answer.output}
        conn.sendall(json.dumps(reply).encode() + b"\n")

    def close(self) -> None:
        self._stop.set()
        try:  # a connection of our own wakes the thread blocked in accept() at once
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as waker:
                waker.connect(str(self.path))
        except OSError:
            pass
        self._thread.join(timeout=1)
        self._sock.close()
