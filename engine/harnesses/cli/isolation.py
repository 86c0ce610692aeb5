"""Running a CLI in its own bubblewrap sandbox with a wall-clock and a memory limit.

The sandbox has no network (its own loopback only), a read-only system (/usr and friends), the CLI's
installation and the relay programs read-only, and writable only: its private home, its working
directory, a private /tmp and the directory holding the two sockets (model endpoint, MCP bridge).
As root, bubblewrap sets up the mounts and everything inside runs as a uid of the rollout's own,
leased for the rollout across the host (`sandbox.identity`). What the CLI leaves in those directories
is read back by the host only beneath a held descriptor (`sandbox.beneath`): a CLI turned adversarial
may plant links there.
The process group is killed on the wall-clock limit, when the CLI's processes together use more
resident memory than allowed, or when the engine asks (the endpoint saw a fatal failure). Output is kept up to a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redagent.engine.types import HarnessError
from redagent.sandbox.beneath import Beneath, chmod_entry
from redagent.sandbox.identity import CLI_UIDS, LeaseUnavailable, lease_uid
from redagent.sandbox.tools import ToolError

INSIDE = Path(__file__).parent / "inside"
HOME, WORKDIR, SOCKETS, RELAY = "/home/agent", "/workdir", "/run/redagent", "/opt/redagent"
RELAY_PROGRAMS = ("entry.py", "mcp_stdio.py")
PORT = 8765  # the endpoint on the sandbox's own loopback
OUTPUT_LIMIT = 4 << 20
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 600.0
    memory_mb: int = 4096


@dataclass
class Launch:
    """One CLI invocation: its argv and environment inside the sandbox, and what it may see."""

    argv: list[str]
    env: dict[str, str]
    home: Path
    workdir: Path
    sockets: Path
    read_only: list[Path] = field(default_factory=list)  # bound at the same path inside


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float
    cpu_seconds: float


def python_inside() -> tuple[str, list[Path]]:
    """A Python for the relay programs, and what must be bound for it to run."""
    if os.path.exists("/usr/bin/python3"):
        return "/usr/bin/python3", []
    real = Path(os.path.realpath(sys.executable))
    return str(real), [Path(sys.base_prefix)]


def bwrap_argv(launch: Launch, uid: int | None) -> list[str]:
    python, extra = python_inside()
    # As root no user namespace (it would map only uid 0, and setpriv could not drop to the rollout's uid).
    unshare = (
        ["--unshare-all"]
        if uid is None
        else ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    )
    argv = [
        "bwrap",
        *unshare,
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/usr",
        "/usr",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "1777",
        "--tmpfs",
        "/tmp",
    ]
    for name in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{name}"):
            argv += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            argv += ["--ro-bind", f"/{name}", f"/{name}"]
    argv += ["--perms", "0755", "--dir", "/etc"]
    for name in ("ssl", "ca-certificates", "alternatives", "localtime", "nsswitch.conf", "hosts"):
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    root = launch.sockets.parent
    binds = [("--ro-bind", str(p), str(p)) for p in [*extra, *launch.read_only]]
    binds += [
        ("--ro-bind", str(root / "etc" / "passwd"), "/etc/passwd"),
        ("--ro-bind", str(root / "etc" / "group"), "/etc/group"),
        ("--ro-bind", str(root / "relay"), RELAY),
        ("--bind", str(launch.home), HOME),
        ("--bind", str(launch.workdir), WORKDIR),
        ("--bind", str(launch.sockets), SOCKETS),
    ]
    made: set[str] = set()
    for kind, source, target in binds:
        # bwrap would create missing parents mode 0700 (as root), which the CLI's uid cannot pass through.
        for parent in reversed(Path(target).parents[:-1]):
            if str(parent) not in made and str(parent) not in ("/usr", "/etc", "/tmp"):
                made.add(str(parent))
                argv += ["--perms", "0755", "--dir", str(parent)]
        argv += [kind, source, target]
    argv += ["--chdir", WORKDIR, "--clearenv"]
    for key, value in launch.env.items():
        argv += ["--setenv", key, value]
    if uid is not None:  # bwrap sets up the mounts as root; everything inside runs as the rollout's uid
        argv += [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--no-new-privs",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ]
    argv += [python, f"{RELAY}/entry.py", str(PORT), f"{SOCKETS}/model.sock", "--", *launch.argv]
    return argv


@contextlib.contextmanager
def cli_uid() -> Iterator[int | None]:
    """The CLI's own uid for the rollout, leased on this host until the block ends (None: not root)."""
    if os.geteuid() != 0:
        yield None
        return
    try:
        lease = lease_uid(CLI_UIDS)
    except LeaseUnavailable as exc:
        raise HarnessError("sandbox_error", str(exc)) from None
    with lease:
        yield lease.uid


def prepare(root: Path, uid: int | None) -> tuple[Path, Path, Path]:
    """The private home, working directory and socket directory under `root`, owned by the CLI's uid."""
    home, workdir, sockets, etc, relay = (
        root / "home",
        root / "workdir",
        root / "sockets",
        root / "etc",
        root / "relay",
    )
    for path in (home, workdir, sockets, etc, relay):
        path.mkdir(parents=True)
    for name in RELAY_PROGRAMS:  # copied: the installed package need not be readable by the CLI's uid
        (relay / name).write_bytes((INSIDE / name).read_bytes())
    owner = uid if uid is not None else os.geteuid()
    (etc / "passwd").write_text(f"agent:x:{owner}:{owner}:agent:{HOME}:/bin/sh\n")
    (etc / "group").write_text(f"agent:x:{owner}:\n")
    os.chmod(root, 0o700)  # bubblewrap mounts as root; inside, only the bound directories are reached
    if uid is not None:
        for path in (home, workdir, sockets):
            os.chown(path, uid, uid)
    return home, workdir, sockets


def hand_over(root: Path, uid: int | None) -> None:
    """Give the CLI's uid everything written into its home before it starts (config files), and its
    sockets (the CLI's uid, and nobody else, may connect) — on descriptors, never following a link."""
    if uid is None:
        return
    with Beneath(root / "home", alias=None, label="CLI home") as home:
        home.chown_tree(uid, uid)
    with Beneath(root / "sockets", alias=None, label="CLI socket folder") as sockets:
        for found in sockets.entries(max_depth=0):
            if found.kind == "socket":
                os.chown(found.name, uid, uid, dir_fd=found.dir_fd, follow_symlinks=False)
                chmod_entry(found.dir_fd, found.name, 0o600)


def check_bwrap() -> None:
    if shutil.which("bwrap") is None:
        raise HarnessError("sandbox_error", "bubblewrap (bwrap) is not installed; the CLI harnesses need it")


class Process:
    """A running sandboxed CLI: wait for it under the limits, or kill it."""

    def __init__(self, launch: Launch, limits: Limits, uid: int | None, name: str) -> None:
        self.launch = launch
        self.limits = limits
        self.uid = uid
        self.name = name
        self.proc: asyncio.subprocess.Process | None = None
        self.killed_for: str | None = None
        self.peak_rss = 0
        self.cpu_ticks = 0

    async def run(self) -> Finished:
        check_bwrap()
        started = time.perf_counter()
        self.proc = await asyncio.create_subprocess_exec(
            *bwrap_argv(self.launch, self.uid),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
        watch = asyncio.ensure_future(self._watch())
        reads = asyncio.gather(_bounded(self.proc.stdout), _bounded(self.proc.stderr))
        try:
            stdout, stderr = await asyncio.wait_for(reads, self.limits.wall_seconds)
            await self.proc.wait()
        except TimeoutError:
            self.kill("timeout")
            stdout, stderr = b"", b""
            await self.proc.wait()
        finally:
            watch.cancel()
        return turn_end(
            self,
            self.proc.returncode if self.proc.returncode is not None else -9,
            stdout,
            stderr,
            started,
            "its process group was killed",
        )

    def kill(self, why: str) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.killed_for = self.killed_for or why
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    async def _watch(self) -> None:
        """Sample the resident memory of the CLI's process tree; kill it above the limit."""
        page = os.sysconf("SC_PAGE_SIZE")
        limit = self.limits.memory_mb << 20
        while self.proc is not None and self.proc.returncode is None:
            rss, ticks = _tree_usage(self.proc.pid)
            self.peak_rss = max(self.peak_rss, rss * page)
            self.cpu_ticks = max(self.cpu_ticks, ticks)
            if rss * page > limit:
                self.kill("memory")
                return
            await asyncio.sleep(POLL_SECONDS)


def turn_end(process: Any, code: int, stdout: bytes, stderr: bytes, started: float, killed: str) -> Finished:
    """How one CLI turn ended, for both process kinds (this module's `Process`, container.py's): CPU from the
    sampler or the relay's own count in `usage.json`, whichever is larger, and a kill for the wall clock or
    memory as its typed failure (`killed` says what was killed)."""
    cpu = process.cpu_ticks / os.sysconf("SC_CLK_TCK")
    # The socket folder belongs to the CLI's uid: usage.json is read beneath it, a regular file or nothing.
    with (
        contextlib.suppress(OSError, ToolError),
        Beneath(process.launch.sockets, alias=None, label="CLI socket folder") as sockets,
    ):
        with contextlib.suppress(OSError, ValueError, TypeError, ToolError):
            cpu = max(cpu, float(json.loads(sockets.read("usage.json", 4096)[0])["cpu_seconds"]))
        sockets.remove("usage.json", recursive=False)
    finished = Finished(
        code,
        stdout.decode(errors="replace"),
        stderr.decode(errors="replace"),
        time.perf_counter() - started,
        process.peak_rss / (1 << 20),
        cpu,
    )
    if process.killed_for == "timeout":
        raise HarnessError(
            "harness_timeout", f"{process.name} ran longer than {process.limits.wall_seconds:g} s; {killed}"
        )
    if process.killed_for == "memory":
        raise HarnessError(
            "harness_crash", f"{process.name} used more than {process.limits.memory_mb} MB of memory; {killed}"
        )
    return finished


async def _bounded(stream: asyncio.StreamReader | None) -> bytes:
    """Everything the stream says, up to OUTPUT_LIMIT bytes (the rest is read and dropped)."""
    if stream is None:
        return b""
    kept = bytearray()
    while chunk := await stream.read(1 << 16):
        if len(kept) < OUTPUT_LIMIT:
            kept += chunk[: OUTPUT_LIMIT - len(kept)]
    return bytes(kept)


def _tree_usage(root: int) -> tuple[int, int]:
    """(resident pages, CPU ticks) summed over `root` and its live descendants."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        stats[pid] = [x.decode() for x in fields]
        children.setdefault(int(fields[1]), []).append(pid)
    rss = ticks = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        stat = stats.get(pid)
        if stat:
            ticks += int(stat[11]) + int(stat[12])
            rss += int(stat[21])
        todo.extend(children.get(pid, ()))
    return rss, ticks
