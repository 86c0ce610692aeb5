"""Isolation backends for `run_command`: bubblewrap, or nothing at all — never an unconfined shell.

Under bubblewrap a command sees a read-only root and /usr, a private size-limited /tmp, no network
namespace, and the rollout's workspace as the only other writable place. When running as root,
privileges are dropped to an unprivileged uid of the command's own first, so the process limit
(RLIMIT_NPROC) is enforced by the kernel, per sandbox.

Sandboxed commands reach the mocked services through a Unix socket bridge: the `rtool` shim (and
its `curl`/`wget` faces) send a tool call over the socket, the gateway runs it as an ordinary call
attributed to the `run_command` step, and the answer goes back to the command. That is how a planted
script's side effects become receipts even though the agent never called the tool itself.

Everything a command can send back is bounded: its output is read in chunks and only a head and a
tail are kept, the commands of a rollout that write more than OUTPUT_READ_LIMIT together are killed,
bridge requests are bounded in size and time, and in number per rollout (`Budget`: nested commands
draw on the same budget as the command that started them), and any request the bridge cannot serve
gets an error reply. The bridge socket and its folder belong to the command's uid (0600 in 0700), and
a connection from any other uid is refused unanswered (SO_PEERCRED).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import platform
import re
import resource
import selectors
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from redagent.errors import UserError
from redagent.sandbox.beneath import Beneath, remove_tree
from redagent.sandbox.identity import COMMAND_UIDS, LeaseUnavailable, lease_uid
from redagent.sandbox.lifecycle import critical

SHIM = Path(__file__).parent / "shims" / "rtool"
SHIM_NAMES = ("rtool", "curl", "wget", "fs", "mail", "web", "bank", "drive")
SHIM_DIR = "/opt/redagent/bin"
SCRATCH_PREFIX = "redagent-cmd-"  # a command's folder on the host: f"{SCRATCH_PREFIX}{pid}-…"

# Output: each stream keeps its first and last OUTPUT_LIMIT/2 bytes; the middle is counted, not kept.
OUTPUT_LIMIT = 65536
# The commands of one rollout writing more than this together (stdout and stderr, nested commands
# included) are killed: draining output costs the host a core, and nothing an agent needs is 256 MiB
# of terminal text (200 MB of `yes` still finishes).
OUTPUT_READ_LIMIT = 256 << 20
# RAM-backed storage a sandbox may fill, on top of its processes' address space (`ram_budget_mb`).
TMP_MB, TMP_INODES = 128, 16_384  # the sandbox /tmp, fresh per command
WORKSPACE_MB, WORKSPACE_INODES = 256, 32_768  # the workspace, per rollout (a tmpfs inode costs ~1 KiB of kernel memory)
# The bridge: one request is at most a line of 4 MiB (a 3 MiB file as base64), sent within 5 s; the
# commands of one rollout may make at most 1000 service calls together, nested commands included (each
# leaves a receipt that is stored with the rollout).
BRIDGE_REQUEST_LIMIT = 4 << 20
BRIDGE_REQUEST_SECONDS = 5.0
BRIDGE_CALL_LIMIT = 1000
DRAIN_SECONDS = 5.0  # after a kill, how long the pipes may stay open before they are abandoned

# A bridge answers one request from inside the sandbox — {"tool": name, "args": {...}} or
# {"cli": ["mail", "send", "--to", ...]} — with (ok, text).
Bridge = Callable[[dict[str, Any]], "BridgeAnswer"]


@dataclass
class BridgeAnswer:
    ok: bool
    output: str
    hosts: list[str] = field(default_factory=list)
    receipt_ids: list[str] = field(default_factory=list)


class Budget:
    """What all the commands of one rollout may use together, nested commands included: service calls
    through the bridge (each leaves a receipt) and output read (each byte costs the host CPU to drain).
    The limits are read when checked (BRIDGE_CALL_LIMIT, OUTPUT_READ_LIMIT). A command run without one
    gets a budget of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.output = 0

    def call(self) -> bool:
        """Count one service call; False once the rollout is past its limit."""
        with self._lock:
            self.calls += 1
            return self.calls <= BRIDGE_CALL_LIMIT

    def read(self, size: int) -> bool:
        """Count `size` bytes of output read; False once the rollout is past its limit."""
        with self._lock:
            self.output += size
            return self.output <= OUTPUT_READ_LIMIT

    @property
    def output_spent(self) -> bool:
        with self._lock:
            return self.output > OUTPUT_READ_LIMIT


class IsolationUnavailable(UserError):
    """No isolation backend can run commands on this host; the message says why and what to do."""

    title = "Sandbox unavailable"


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
    # CPU seconds the command's sandbox used (every process in it, and bubblewrap's own), None where it cannot be
    # counted (no reaper here: `sandbox_cpu_problem()`). Never written into a receipt: it differs run to run.
    cpu_s: float | None = None


class Backend(Protocol):
    """What `run_command` needs of a sandbox backend, chosen once per run (`--sandbox`).

    `run` executes `sh -c command` in the rollout's workspace under the backend's limits, with the
    service bridge served for its duration; `uid` is the rollout's own uid (when the engine is root:
    the workspace already belongs to it; None: a uid is leased for this command and the workspace
    handed to it), `budget` the rollout's (None: one for this command alone). `release` ends whatever
    the backend holds for that workspace (Docker: the rollout's container), called when the rollout
    closes. Implementations: `Bubblewrap` (the default), `docker_backend.Docker`, and `NoIsolation`
    (refuses every command)."""

    name: str
    workspace_mb: int
    workspace_inodes: int

    def run(
        self,
        workspace: Path,
        command: str,
        *,
        timeout: int,
        bridge: Bridge | None = None,
        stop: threading.Event | None = None,
        uid: int | None = None,
        budget: Budget | None = None,
    ) -> CommandResult: ...

    def release(self, workspace: Path) -> None: ...


class NoIsolation:
    """The backend used where bubblewrap is missing: every command is refused with the reason."""

    name = "none"
    workspace_mb, workspace_inodes = WORKSPACE_MB, WORKSPACE_INODES

    def __init__(self, reason: str = "no isolation backend is configured") -> None:
        self.reason = reason

    def release(self, workspace: Path) -> None:
        """Nothing is held per rollout."""

    def run(
        self,
        workspace: Path,
        command: str,
        *,
        timeout: int,
        bridge: Bridge | None = None,
        stop: threading.Event | None = None,
        uid: int | None = None,
        budget: Budget | None = None,
    ) -> CommandResult:
        raise IsolationUnavailable(self.reason)


class Bubblewrap:
    """Run commands under `bwrap` with no network, a read-only system and resource limits.

    What one sandbox may hold in RAM is `ram_budget_mb`: the address space of each of its processes,
    plus its /tmp (per command) and its workspace (per rollout), both tmpfs. The /tmp and workspace
    sizes are hard limits only where this process may mount (root): see `quota_problem()`.
    """

    name = "bubblewrap"

    def __init__(
        self,
        *,
        memory_mb: int = 1024,
        max_processes: int = 64,
        max_file_mb: int = 64,
        tmp_mb: int = TMP_MB,
        tmp_inodes: int = TMP_INODES,
        workspace_mb: int = WORKSPACE_MB,
        workspace_inodes: int = WORKSPACE_INODES,
    ) -> None:
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.max_file_mb = max_file_mb
        self.tmp_mb, self.tmp_inodes = tmp_mb, tmp_inodes
        self.workspace_mb, self.workspace_inodes = workspace_mb, workspace_inodes

    @property
    def ram_budget_mb(self) -> int:
        return self.memory_mb + self.tmp_mb + self.workspace_mb

    def release(self, workspace: Path) -> None:
        """Nothing outlives a command: each one is a sandbox of its own."""

    def run(
        self,
        workspace: Path,
        command: str,
        *,
        timeout: int,
        bridge: Bridge | None = None,
        stop: threading.Event | None = None,
        uid: int | None = None,
        budget: Budget | None = None,
    ) -> CommandResult:
        """Run `sh -c command` in the workspace; `stop`, once set, kills it (the rollout is closing)."""
        problem = bwrap_problem()
        if problem:
            raise IsolationUnavailable(problem)
        deadline = command_deadline(command, timeout, stop)
        budget = budget if budget is not None else Budget()
        with command_uid(workspace, uid) as run_as, _Scratch(run_as, self.tmp_mb, self.tmp_inodes) as scratch:
            server = (
                _BridgeServer(scratch.run / "svc.sock", bridge, deadline, budget=budget, owner=run_as)
                if bridge
                else None
            )
            try:
                scratch.hand_over()  # the socket's folder and its root to the command's uid, 0700
                outcome = self._spawn(workspace, command, scratch, run_as, deadline, stop, budget)
            finally:
                if server:
                    server.close()
        out, err, returncode, killed, started, cpu = outcome
        if not started and killed is None:
            raise SandboxFailure(f"bubblewrap could not start the sandbox: {err.text().strip()[:200]}")
        answers = server.answers if server else []
        exit_code = returncode if killed is None else 124 if killed == "time limit" else 137
        return CommandResult(
            exit_code=exit_code,
            stdout=out.text(),
            stderr=err.text() + (f"\n[killed: {killed}]" if killed else ""),
            timed_out=killed == "time limit",
            hosts=sorted({h for a in answers for h in a.hosts}),
            bridged_calls=[r for a in answers for r in a.receipt_ids],
            cpu_s=cpu,
        )

    def _spawn(
        self,
        workspace: Path,
        command: str,
        scratch: _Scratch,
        uid: int | None,
        deadline: float,
        stop: threading.Event | None,
        budget: Budget,
    ) -> tuple[_Kept, _Kept, int, str | None, bool, float | None]:
        status_read, status_write = os.pipe()
        # The sandbox's set-up travels through a memfd (`bwrap --args`), so its PID 1 — bwrap — shows
        # `bwrap --args N sh -c …` in /proc/1/cmdline, not the host's paths; the shim is copied in.
        shim_fd = _memfd(_shim_code())
        args = self._args(workspace, scratch, status_write, shim_fd)
        args_fd = _memfd(b"".join(os.fsencode(a) + b"\0" for a in args))
        # bwrap wants the command itself on its command line: the agent's own text, nothing of the host.
        argv = ["bwrap", "--args", str(args_fd), "sh", "-c", command]
        if uid is not None:
            argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
        # Limits through prlimit(1) rather than a preexec_fn: a preexec_fn forces a full fork of
        # this (large) process for every command, where without one Python can vfork.
        cpu = max(1, int(deadline - time.monotonic()) + 2)
        argv = [
            *_reaper_argv(),
            "prlimit",
            f"--as={self.memory_mb << 20}",
            f"--nproc={self.max_processes}",
            f"--fsize={self.max_file_mb << 20}",
            f"--cpu={cpu}",
            "--",
            *argv,
        ]
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(status_write, args_fd, shim_fd),
                start_new_session=True,
                env=_ENV,
            )
        except BaseException:
            os.close(status_read)
            raise
        finally:
            for fd in (status_write, args_fd, shim_fd):
                os.close(fd)
        chain = _Chain(proc, status_read)
        try:
            out, err, killed = _collect(proc, deadline, stop, budget, chain.kill)
        finally:
            cpu_s = chain.end()
        # bwrap reports {"child-pid": …} on the status fd only once the sandbox is up: its absence tells a sandbox
        # that failed to start from a command that failed.
        return out, err, proc.returncode, killed, b"child-pid" in chain.status, cpu_s

    def _args(self, workspace: Path, scratch: _Scratch, status_fd: int, shim_fd: int) -> list[str]:
        args = [
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--json-status-fd",
            str(status_fd),
            "--ro-bind",
            "/usr",
            "/usr",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--dir",
            "/run",
        ]
        if scratch.mounted:  # a tmpfs of our own: size and inode count both bounded
            args += ["--bind", str(scratch.tmp), "/tmp"]
        else:  # bwrap's own tmpfs: its size is bounded, its inode count is not (see quota_problem)
            args += ["--size", str(self.tmp_mb << 20), "--tmpfs", "/tmp"]
        args += _system_dirs()
        args += ["--dir", SHIM_DIR, "--perms", "0755", "--file", str(shim_fd), f"{SHIM_DIR}/rtool"]
        for name in SHIM_NAMES[1:]:
            args += ["--symlink", "rtool", f"{SHIM_DIR}/{name}"]
        # The root (bwrap's tmpfs) and /dev are remounted read-only once set up: left writable they
        # would be RAM-backed storage without any limit. /tmp and /workspace stay writable.
        args += [
            "--bind",
            str(scratch.run),
            "/run/redagent",
            "--bind",
            str(workspace),
            "/workspace",
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
            "--chdir",
            "/workspace",
        ]
        return args


def _system_dirs() -> list[str]:
    """/bin, /lib, /lib64, /sbin as the host has them: links into /usr, or read-only directories."""
    args = []
    for name in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{name}"):
            args += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            args += ["--ro-bind", f"/{name}", f"/{name}"]
    return args


def _memfd(data: bytes) -> int:
    # Close-on-exec, so no other command started meanwhile inherits it; pass_fds hands it to bwrap.
    fd = os.memfd_create("redagent", os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


_ENV = {
    "PATH": f"{SHIM_DIR}:/usr/local/bin:/usr/bin:/bin",
    "HOME": "/workspace",
    "LANG": "C.UTF-8",
    "REDAGENT_SOCKET": "/run/redagent/svc.sock",
}


@functools.cache
def bwrap_problem() -> str | None:
    """None when bubblewrap works here; otherwise one line saying why it does not."""
    if shutil.which("bwrap") is None:
        return (
            "bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: "
            "apt-get install bubblewrap) to let agents run commands"
        )
    # Only /usr, as the sandboxes themselves: a recursive bind of / races with the workspace and /tmp
    # mounts of rollouts coming and going (a mount point removed mid-setup fails bwrap's remount).
    probe = subprocess.run(
        ["bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr", *_system_dirs(), "true"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()[:200]}"
    if shutil.which("prlimit") is None:
        return "prlimit (util-linux) is missing, so command limits cannot be set"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "running as root but setpriv (util-linux) is missing to drop privileges"
    return None


@functools.cache
def _shim_code() -> bytes:
    return SHIM.read_bytes()


def default_isolation() -> Bubblewrap | NoIsolation:
    problem = bwrap_problem()
    return NoIsolation(problem) if problem else Bubblewrap()


@contextlib.contextmanager
def command_uid(workspace: Path, uid: int | None) -> Iterator[int | None]:
    """The uid a command runs as: the rollout's (given), else — root, outside a rollout (a test, a
    benchmark) — one leased for this command, with the workspace handed to it first; None when the
    engine is not root (commands run as the engine's own uid)."""
    if os.geteuid() != 0:
        yield None
        return
    if uid is not None:
        yield uid
        return
    try:
        lease = lease_uid(COMMAND_UIDS)
    except LeaseUnavailable as exc:
        raise SandboxFailure(str(exc)) from None
    with lease:
        hand_over(workspace, lease.uid)
        yield lease.uid


def hand_over(workspace: Path, uid: int) -> None:
    """Give the workspace and everything in it to `uid`, on descriptors (links themselves, never their
    targets), and make sure that uid may enter it (an earlier command may have locked it: chmod 000 .).
    Blind to what it cannot reach: a tree the agent made unreachable must not stop the next command."""
    with Beneath(workspace) as tree:
        tree.fix_root(uid, uid, stat.S_IRWXU)
        tree.chown_tree(uid, uid)


# -- quotas: size-limited tmpfs mounts, where this process may mount ------------------------------
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2


_MOUNT_SOURCE = re.compile(r"^redagent-(\d+)-(\d+)$")


def _process_start(pid: int) -> int | None:
    """A process's start time (clock ticks since boot), which tells it from a later one with its pid."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def mount_tmpfs(path: Path, size_mb: int, inodes: int) -> bool:
    """Mount a tmpfs of `size_mb` and `inodes` on the (empty) directory `path`; False where this
    process may not mount (not root, or a container without CAP_SYS_ADMIN) — see quota_problem().

    The mount's source names this process (`redagent-PID-START`): a process killed before it could
    unmount leaves mounts that the next one to mount removes (reap_stale_mounts)."""
    if os.geteuid() != 0:
        return False
    _reap_once()
    source = f"redagent-{os.getpid()}-{_process_start(os.getpid())}".encode()
    options = f"size={size_mb}m,nr_inodes={inodes},mode=0755".encode()
    return _libc.mount(source, os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) == 0


def reap_stale_mounts() -> list[str]:
    """Unmount (and remove the directories of) the quota mounts of processes that no longer exist;
    returns their mount points. Mounts of live processes are never touched."""
    reaped: list[str] = []
    try:
        table = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return reaped
    for line in table.splitlines():
        fields, _, tail = line.partition(" - ")
        kind, source = (tail.split() + ["", ""])[:2]
        owner = _MOUNT_SOURCE.match(source)
        if kind != "tmpfs" or not owner:
            continue
        pid, start = int(owner.group(1)), int(owner.group(2))
        if _process_start(pid) == start:
            continue
        # mountinfo escapes space, tab, newline and backslash in paths as octal
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields.split()[4])
        if _libc.umount2(os.fsencode(point), _MNT_DETACH) == 0:
            shutil.rmtree(point, ignore_errors=True)
            reaped.append(point)
    return reaped


@functools.cache
def _reap_once() -> None:
    reap_stale_mounts()


def unmount(path: Path) -> None:
    """Detach a mount made by mount_tmpfs: its memory is freed as soon as nothing uses it any more."""
    if _libc.umount2(os.fsencode(path), _MNT_DETACH) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"cannot unmount {path}: {os.strerror(error)}")


@functools.cache
def quota_problem() -> str | None:
    """None when workspaces and sandbox /tmp get hard quotas here; otherwise the rule that applies.

    The quotas are tmpfs mounts, which only a process that may mount can make. Without them each file
    is still limited to the sandbox's file size (RLIMIT_FSIZE) and /tmp to its size (bwrap --size),
    but not the workspace's total size nor /tmp's inode count: put workspaces on disk
    (REDAGENT_WORKSPACES) on a shared host."""
    probe = Path(tempfile.mkdtemp(prefix="redagent-quota-"))
    try:
        if not mount_tmpfs(probe, 1, 16):
            reason = "not root" if os.geteuid() != 0 else os.strerror(ctypes.get_errno())
            return f"workspace and /tmp quotas need a tmpfs mount, which fails here ({reason})"
        unmount(probe)
        return None
    finally:
        os.rmdir(probe)


class _Scratch:
    """A command's own directory on the host: `run/` (the bridge socket) and, where a quota can be
    mounted, `tmp/` (the sandbox /tmp) on a tmpfs of its own — so a full /tmp costs at most its size
    and its inode count, and the sandbox's mount table names no host path. Both the directory and
    `run/` belong to the command's uid, mode 0700 (`hand_over`, once the socket is bound)."""

    def __init__(self, uid: int | None, size_mb: int, inodes: int) -> None:
        self.uid, self.size_mb, self.inodes = uid, size_mb, inodes

    def __enter__(self) -> _Scratch:
        self.mounted = False
        self.root: Path | None = None
        try:
            # Made as one step (sandbox/lifecycle.py): a stop waits until the folder and its mount are both known
            # here, so the removal below finds them. The folder's name carries this process's pid, so what a
            # process killed meanwhile left is found by it (environment.remove_leftovers_of).
            with critical():
                self.root = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
                # The bridge socket and two directories live beside /tmp on the same mount: a few inodes, no blocks.
                self.mounted = quota_problem() is None and mount_tmpfs(self.root, self.size_mb, self.inodes + 16)
            self.run, self.tmp = self.root / "run", self.root / "tmp"
            os.chmod(self.root, 0o700)  # the tmpfs's own root is 0755
            self.run.mkdir(mode=0o700)
            if self.mounted:
                self.tmp.mkdir()
                if self.uid is not None:
                    os.chown(self.tmp, self.uid, self.uid)
                os.chmod(self.tmp, 0o1777)
        except BaseException:
            self.__exit__()
            raise
        return self

    def hand_over(self) -> None:
        """`run/` and the directory itself to the command's uid (it binds them as that uid): nobody else
        may reach the socket. Done once the socket is bound, so nothing was ever open to another uid."""
        if self.uid is not None:
            assert self.root is not None, "entered"
            for path in (self.run, self.root):
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    os.fchown(fd, self.uid, self.uid)
                finally:
                    os.close(fd)

    def __exit__(self, *exc: object) -> None:
        if self.root is None:
            return
        with critical():  # a stop waits for the removal: never a mount or a folder half removed
            try:
                if self.mounted:
                    self.mounted = False
                    unmount(self.root)
            except OSError as error:  # a mount left behind would hold its memory: the rollout cannot be trusted
                raise SandboxFailure(str(error)) from None
            finally:
                remove_tree(self.root)


# -- output --------------------------------------------------------------------------------------
class _Kept:
    """One output stream as it streams past: its first and last OUTPUT_LIMIT/2 bytes and its length."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.rest = bytearray()  # what follows the head; only its last `half` bytes matter
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.rest += data
        if len(self.rest) > 4 * self.half:  # trimmed in bulk, so each byte is moved a bounded number of times
            del self.rest[: -self.half]

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if self.total <= 2 * self.half:
            return (self.head + self.rest).decode("utf-8", errors="replace")
        omitted = self.total - 2 * self.half
        tail = self.rest[-self.half :].decode("utf-8", errors="replace")
        return f"{head}\n[... {omitted} bytes of output omitted ...]\n{tail}"


def _collect(
    proc: subprocess.Popen, deadline: float, stop: threading.Event | None, budget: Budget, kill: Callable[[], None]
) -> tuple[_Kept, _Kept, str | None]:
    """Read both pipes in chunks until they close; kill the command at the deadline, past the rollout's
    output limit or when `stop` is set. Returns the kept output and why the command was killed (or None)."""
    out, err = _Kept(), _Kept()
    killed: str | None = None
    drain_until = 0.0  # when the drain ends: set when the command is killed, read only after
    assert proc.stdout is not None and proc.stderr is not None, "the command is started with both pipes"
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ, out)
        selector.register(proc.stderr, selectors.EVENT_READ, err)
        while selector.get_map():
            now = time.monotonic()
            if killed is None:
                reason = (
                    "rollout closed"
                    if stop is not None and stop.is_set()
                    else "time limit"
                    if now >= deadline
                    else "output limit"
                    if budget.output_spent
                    else None
                )
                if reason:
                    killed, drain_until = reason, now + DRAIN_SECONDS
                    kill()
            elif now >= drain_until:  # something outside the sandbox's process tree holds a pipe
                break
            wait = (drain_until if killed else deadline) - now
            if stop is not None and killed is None:
                wait = min(wait, 0.1)  # how soon a closing rollout is noticed
            for key, _ in selector.select(max(wait, 0)):
                data = os.read(key.fd, 1 << 16)
                if data:
                    key.data.add(data)
                    budget.read(len(data))
                else:
                    selector.unregister(key.fileobj)
    proc.stdout.close()
    proc.stderr.close()
    return out, err, killed


class _Chain:
    """A started command: the chain reaper → prlimit → setpriv → bwrap (one process after the reaper, exec'd), and
    bubblewrap's PID 1, whose host pid bwrap reports on the status fd.

    `kill()` ends the command itself: every process group PID 1's children lead (the command runs in a session of
    its own, `--new-session`), so PID 1 reaps them and exits as it does when a command ends — and their CPU is in its
    rusage. `end()` waits for the chain to end (after a kill, or by itself once the command is over), then asks the
    reaper to kill what is left, then kills its group; it returns the CPU the whole sandbox used (None where no
    reaper runs: bubblewrap's PID 1 is then reaped by init). bwrap's --die-with-parent and its PID namespace take
    every process of the sandbox with it in every case."""

    GRACE_S = 0.5  # how long PID 1 may take to reap a killed command before the chain itself is killed

    def __init__(self, proc: subprocess.Popen, status_fd: int) -> None:
        self.proc = proc
        self.status = b""
        self._status_fd = status_fd
        os.set_blocking(status_fd, False)
        self._reaper = bool(_reaper_argv())

    def _read_status(self, *, until_eof: bool = False) -> None:
        if self._status_fd < 0:
            return
        if until_eof:
            os.set_blocking(self._status_fd, True)
        while len(self.status) < 1 << 16:
            try:
                data = os.read(self._status_fd, 1 << 16)
            except BlockingIOError:
                return
            if not data:
                break
            self.status += data
        os.close(self._status_fd)
        self._status_fd = -1

    def _pid1(self) -> int | None:
        self._read_status()
        found = re.search(rb'"child-pid":\s*(\d+)', self.status)
        return int(found.group(1)) if found else None

    def kill(self) -> None:
        if not self._reaper:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            return
        pid1 = self._pid1()
        found = False
        for _ in range(3):  # a process may fork while its siblings are killed: a few passes (64 processes at most)
            inside = _descendants(pid1) if pid1 is not None else []
            for pid in inside:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            found = found or bool(inside)
            if not inside:
                break
        if not found:  # not up yet, or already over: nothing inside to end first
            self._term()

    def _term(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.proc.pid, signal.SIGTERM)  # the reaper kills the chain's group and goes on reaping

    def end(self) -> float | None:
        try:
            if not self._wait(self.GRACE_S):
                self.kill()
                if not self._wait(self.GRACE_S):
                    if self._reaper:
                        self._term()
                    if not self._wait(DRAIN_SECONDS):
                        # Only a reaper that does not answer (or a kernel stall) gets here: its group goes, and
                        # bwrap's --die-with-parent takes the sandbox with it.
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.killpg(self.proc.pid, signal.SIGKILL)
                        self._wait(DRAIN_SECONDS)
            return self._cpu
        finally:
            # The status fd's writers are the chain's processes, all gone (or abandoned past DRAIN_SECONDS).
            self._read_status(until_eof=self.proc.returncode is not None)

    _cpu: float | None = None

    def _wait(self, seconds: float) -> bool:
        """Whether the chain's first process has ended within `seconds` (reaped here with its rusage)."""
        if self.proc.returncode is not None:
            return True
        deadline = time.monotonic() + seconds
        pause = 0.0005
        while True:
            try:
                pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its usage is gone
                self.proc.returncode = self.proc.returncode if self.proc.returncode is not None else -1
                return True
            if pid == self.proc.pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self._cpu = usage.ru_utime + usage.ru_stime if self._reaper else None
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (not `pid` itself), from /proc's children lists."""
    found: list[int] = []
    todo = [pid]
    while todo and len(found) < 4096:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in Path(f"/proc/{parent}/task/{task}/children").read_text().split()]
            except (OSError, ValueError):
                continue
            found += children
            todo += children
    return found


# The sandbox's CPU, counted where it is spent. bubblewrap's PID 1 outlives its parent — the outer bwrap exits on the
# exit code PID 1 sends it, without waiting for it —, so its CPU (the command's, and that of everything the command
# started, which PID 1 reaps) went to whichever process adopted it: init, never this one. This small program runs
# between this process and the chain: it makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER, by system call
# number: Perl has no prctl) that dies with its parent (PR_SET_PDEATHSIG; bwrap's --die-with-parent takes the sandbox
# with it), runs the chain in a process group of its own, adopts PID 1 when the outer bwrap exits,
# reaps every process until none is left and exits as the chain did (a signal death by the same signal). Its rusage
# (wait4) then holds the whole sandbox's CPU, and this process's RUSAGE_CHILDREN with it. SIGTERM makes it kill the
# chain's group and go on reaping. Perl (perl-base, essential on Debian) starts in ~2 ms of CPU, Python in ~10.
_REAPER = r"""
my $nr = shift @ARGV;
syscall($nr, 36, 1, 0, 0, 0) == 0 or exit 125;
syscall($nr, 1, 9, 0, 0, 0);
my $pid = fork;
defined $pid or exit 125;
if ($pid == 0) { setpgrp(0, 0); exec { $ARGV[0] } @ARGV; exit 127; }
$SIG{TERM} = sub { kill 'KILL', -$pid; };
my $status = 0;
while (1) {
    my $done = wait;
    last if $done == -1 && !$!{EINTR};
    $status = $? if $done == $pid;
}
if ($status & 127) { $SIG{TERM} = 'DEFAULT'; kill $status & 127, $$; }
exit($status >> 8);
"""
# prctl(2)'s system call number per architecture (the generic table's 167 on aarch64 and riscv64).
_PRCTL = {"x86_64": 157, "aarch64": 167, "riscv64": 167, "ppc64le": 171, "s390x": 172}.get(platform.machine())


@functools.cache
def _reaper_argv() -> tuple[str, ...]:
    """The reaper's command line before the chain, or () where it cannot run (no perl, an architecture whose prctl
    number is not known here, a kernel that refuses a subreaper): then a sandbox's CPU is not counted."""
    perl = shutil.which("perl")
    if perl is None or _PRCTL is None:
        return ()
    argv = (perl, "-e", _REAPER, str(_PRCTL))
    probe = subprocess.run([*argv, "true"], capture_output=True)
    return argv if probe.returncode == 0 else ()


def cpu_spent() -> float:
    """CPU seconds this process has used so far, with the children it reaped — the sandboxes of its commands among
    them (see `_REAPER`): what a CPU figure per call or per case counts."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def sandbox_cpu_problem() -> str | None:
    """None when a sandboxed command's CPU is counted for this process (its rusage, RUSAGE_CHILDREN); otherwise why
    not — benchmarks print it beside their CPU figures, which are then lower bounds."""
    if _reaper_argv():
        return None
    if shutil.which("perl") is None:
        return "no perl to run the sandbox reaper: bubblewrap's PID 1 and the command's CPU are not counted"
    return f"no subreaper on {platform.machine()}: bubblewrap's PID 1 and the command's CPU are not counted"


# -- the service bridge --------------------------------------------------------------------------
_serving = threading.local()  # on a bridge thread: the deadline of the command it serves


def serving_a_command() -> bool:
    """Whether this thread serves a running command's bridge: a command started here is nested in it."""
    return getattr(_serving, "deadline", None) is not None


def command_deadline(command: str, timeout: float, stop: threading.Event | None) -> float:
    """What every backend checks before a command starts, and when the command must end: no NUL byte,
    not on a closing rollout, and never later than the command that started it through the bridge."""
    if "\0" in command:
        raise ValueError("a command cannot contain a NUL byte")
    if stop is not None and stop.is_set():
        raise SandboxFailure("the rollout is closing: no command may start")
    deadline = time.monotonic() + timeout
    outer = getattr(_serving, "deadline", None)
    if outer is not None:  # started through the bridge by another command: it ends when that one does
        deadline = min(deadline, outer)
    return deadline


class _BridgeServer:
    """Serves tool calls from the sandboxed command, one JSON line per connection, on a thread.

    Whatever arrives — not JSON, not an object, too large, too slow, a request the gateway chokes on —
    the answer is an error reply and the thread serves the next connection. A command started through
    the bridge (a script's `rtool run_command`) inherits the serving command's deadline, so closing
    the bridge never waits longer than the command it served was allowed to run.

    The socket is made 0600 (its mode set on the socket before bind, so it never exists more open)
    and, with `owner`, given to that uid; a peer of any other uid (SO_PEERCRED) is dropped unanswered.
    Calls count against `budget`, the rollout's (nested commands share it)."""

    def __init__(
        self,
        path: Path,
        bridge: Bridge,
        deadline: float | None = None,
        *,
        budget: Budget | None = None,
        owner: int | None = None,
    ) -> None:
        self.path = path
        self.bridge = bridge
        self.deadline = deadline
        self.budget = budget if budget is not None else Budget()
        self.owner = owner
        self.answers: list[BridgeAnswer] = []
        self.refused = 0  # connections from another uid
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        os.fchmod(self._sock.fileno(), 0o600)  # the mode the bound file gets (less the umask)
        self._sock.bind(str(path))
        if owner is not None:
            os.chown(path, owner, owner, follow_symlinks=False)
        self._sock.listen(16)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._conn: socket.socket | None = None
        self._thread = threading.Thread(target=self._serve, name="redagent-bridge", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        _serving.deadline = self.deadline
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:  # shut down by close(): the command is over
                return
            if not self._peer_allowed(conn):
                self.refused += 1
                conn.close()
                continue
            with self._lock:
                if self._stop.is_set():
                    conn.close()
                    return
                self._conn = conn
            try:
                self._reply(conn, *self._answer(conn))
            except Exception:  # a client gone, a reply it will not read: the next connection still gets served
                pass
            finally:
                with self._lock:
                    self._conn = None
                conn.close()

    def _peer_allowed(self, conn: socket.socket) -> bool:
        if self.owner is None:
            return True
        try:
            _, uid, _ = struct.unpack(
                "3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            )
        except OSError:
            return False
        return uid == self.owner

    def _answer(self, conn: socket.socket) -> tuple[bool, str]:
        deadline = time.monotonic() + BRIDGE_REQUEST_SECONDS
        data = bytearray()
        while b"\n" not in data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False, f"bad request: not received within {BRIDGE_REQUEST_SECONDS:g} s"
            conn.settimeout(remaining)
            try:
                chunk = conn.recv(1 << 16)
            except TimeoutError:
                continue
            if not chunk:
                break
            data += chunk
            if len(data) > BRIDGE_REQUEST_LIMIT:
                return False, f"bad request: larger than {BRIDGE_REQUEST_LIMIT >> 20} MiB"
        try:
            request = orjson.loads(bytes(data))  # strict: no NaN, no lone surrogates, nesting bounded
        except orjson.JSONDecodeError as exc:
            return False, f"bad request: not JSON ({exc})"
        well_formed = isinstance(request, dict) and (
            (isinstance(request.get("tool"), str) and isinstance(request.get("args"), dict))
            or (isinstance(request.get("cli"), list) and all(isinstance(w, str) for w in request["cli"]))
        )
        if not well_formed:
            return False, 'bad request: need {"tool": name, "args": {...}} or {"cli": [...]}'
        if not self.budget.call():
            return False, f"too many service calls from this rollout's commands (at most {BRIDGE_CALL_LIMIT})"
        try:
            answer = self.bridge(request)
        except Exception as exc:  # the gateway survives any request; a bug in it must not kill the bridge
            return False, f"service error: {type(exc).__name__}: {str(exc)[:200]}"
        self.answers.append(answer)
        return answer.ok, answer.output

    @staticmethod
    def _reply(conn: socket.socket, ok: bool, output: str) -> None:
        conn.settimeout(BRIDGE_REQUEST_SECONDS)  # a client that never reads cannot hold the bridge
        # json, not orjson: an observation may carry text orjson refuses (lone surrogates), escaped here.
        conn.sendall(json.dumps({"ok": ok, "output": output}).encode() + b"\n")

    def close(self) -> None:
        with self._lock:
            self._stop.set()
            for sock in (self._sock, self._conn):
                if sock is not None:
                    with contextlib.suppress(OSError):  # wakes accept() and any recv() at once
                        sock.shutdown(socket.SHUT_RDWR)
        # A call in progress is in-process work or a nested command bound by our deadline: short.
        self._thread.join()
        self._sock.close()
