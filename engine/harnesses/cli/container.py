"""Running a CLI in a Docker container of its own (`--sandbox docker`), with the limits it has under bubblewrap.

One container per rollout, made from the run's sandbox image beside the rollout's command container
(sandbox/docker_backend.py `Docker.start_container`: no network, a read-only root, no capabilities, the
run's labels), and one `exec` per user turn. Apart from the command container, because under bubblewrap
the CLI and the commands it has run are two sandboxes: the CLI's loopback (where its relay serves the
model endpoint) must not be reachable from an agent's command, and a command's memory or processes
must not be able to kill the CLI. The container sees only its mounts: the CLI's installation (and Node,
or the virtualenv's base Python) read-only at the same paths as on the host, the relay programs
read-only at /opt/redagent, the private home, working directory and socket directory, a passwd naming
the CLI's uid, and a tmpfs /tmp. The engine's model endpoint and MCP bridge are reachable only through
the two Unix sockets in that socket directory; the relay (`inside/entry.py`, run by the image's
python3) serves the endpoint on the container's own 127.0.0.1:8765, as under bubblewrap.

The limits are the bubblewrap ones: the wall clock, and the resident memory of the CLI's process tree
sampled from the host (with a cgroup memory limit above it as a backstop, see MEMORY_FACTOR). Any kill ends the rollout,
so a kill stops the whole container at once (one API call, which needs no process inside).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from redagent.engine.harnesses.cli.isolation import (
    HOME,
    OUTPUT_LIMIT,
    POLL_SECONDS,
    PORT,
    RELAY,
    SOCKETS,
    WORKDIR,
    Finished,
    Launch,
    Limits,
    turn_end,
)
from redagent.engine.types import HarnessError
from redagent.sandbox.docker_stream import STDERR, STDOUT, FrameDecoder

TMP_MB = 256  # the container's /tmp (a tmpfs, so charged to its memory limit as well)
# The container's memory limit is a backstop, twice the sampled limit plus /tmp, so that the sampler (as
# under bubblewrap) is what normally kills; a CLI the kernel kills first shows as an `oom` event of its
# container, looked for when a turn fails, within OOM_GRACE seconds of its end (the event and the exit
# reach the daemon by different paths).
MEMORY_FACTOR, OOM_GRACE = 2, 0.5
PIDS = 1024  # processes and threads of the CLI's tree: a bound on a fork bomb that no CLI comes near
NO_PYTHON = 90  # the exec's exit code when the image has no /usr/bin/python3 for the relay
BUILD_HINT = "redagent sandbox image build"
# Top-level directories of any image that every uid may pass through; a read-only path under any other
# (the cache under /root, whose mode in a Debian image is 0700) is reached through a skeleton of its own.
SYSTEM_DIRS = frozenset(
    {"usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "var", "opt", "srv", "mnt", "media", "tmp", "run"}
)
# The exec per turn: the relay and the CLI as the CLI's uid; when the relay ends, whatever the CLI left
# running is killed (`kill -9 -1`, a builtin, as that uid: every process of the CLI and nothing else), as
# bubblewrap's PID namespace ends with its last process.
WRAPPER = (
    f'[ -x /usr/bin/python3 ] || exit {NO_PYTHON}; /usr/bin/python3 "$@"; code=$?; kill -9 -1 2>/dev/null; exit $code'
)


def docker_backend(ctx_isolation: Any) -> Any | None:
    """The run's Docker backend when the rollout's commands run under Docker (`--sandbox docker`), else None."""
    return ctx_isolation if getattr(ctx_isolation, "name", None) == "docker" else None


def mounts(root: Path, read_only: list[Path]) -> dict[str, dict[str, str]]:
    """The container's binds (host path → {bind, mode}) for the rollout directory `root` (`isolation.prepare`)."""
    binds = {str(p): {"bind": str(p), "mode": "ro"} for p in read_only}
    binds.update(
        {
            str(root / "etc" / "passwd"): {"bind": "/etc/passwd", "mode": "ro"},
            str(root / "etc" / "group"): {"bind": "/etc/group", "mode": "ro"},
            str(root / "relay"): {"bind": RELAY, "mode": "ro"},
            str(root / "home"): {"bind": HOME, "mode": "rw"},
            str(root / "workdir"): {"bind": WORKDIR, "mode": "rw"},
            str(root / "sockets"): {"bind": SOCKETS, "mode": "rw"},
        }
    )
    # A mount point under a directory the CLI's uid cannot pass through (the image's /root) would be out
    # of its reach: such a top-level directory is replaced by a read-only skeleton holding only the
    # directories that lead to the mount points under it.
    skeleton = root / "skeleton"
    tops: set[str] = set()
    for spec in list(binds.values()):
        parts = Path(spec["bind"]).parts[1:]
        if len(parts) < 2 or parts[0] in SYSTEM_DIRS:
            continue
        tops.add(parts[0])
        target = skeleton.joinpath(*parts)
        target.mkdir(parents=True, exist_ok=True)
    for current, dirs, _ in os.walk(skeleton):
        os.chmod(current, 0o755)
        for name in dirs:
            os.chmod(os.path.join(current, name), 0o755)
    for top in tops:
        binds[str(skeleton / top)] = {"bind": f"/{top}", "mode": "ro"}
    return binds


class CLIContainer:
    """One rollout's CLI container: made once (`start`), an exec per turn, removed by `close` whatever happened."""

    def __init__(
        self, backend: Any, root: Path, read_only: list[Path], limits: Limits, uid: int | None, name: str
    ) -> None:
        self.backend, self.root, self.read_only, self.limits, self.name = backend, root, read_only, limits, name
        self.uid = uid if uid is not None else os.geteuid()
        self.id: str | None = None
        self.visible = False  # whether the container's processes show in this host's /proc (memory sampling)
        self.started_seconds = 0.0
        self._closed = False
        self._lock = threading.Lock()

    async def start(self) -> None:
        began = time.perf_counter()
        await asyncio.to_thread(self._create)
        self.started_seconds = time.perf_counter() - began

    def _create(self) -> None:
        made = self.backend.start_container(
            command=["sleep", "infinity"],
            binds=mounts(self.root, self.read_only),
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={TMP_MB}m,mode=1777"},
            memory_mb=MEMORY_FACTOR * self.limits.memory_mb + TMP_MB,
            pids=PIDS,
            working_dir="/",
        )
        with self._lock:
            self.id = made
            closed = self._closed
        if closed:  # the rollout ended (was cancelled) while the container was being made
            self.backend.remove_container(made)
            return
        with contextlib.suppress(Exception):  # a daemon in another PID namespace: the cgroup limit still holds
            pid = self.backend.daemon().inspect_container(made)["State"]["Pid"]
            self.visible = made.encode() in Path(f"/proc/{pid}/cgroup").read_bytes()

    async def close(self) -> None:
        with self._lock:
            self._closed = True
            made, self.id = self.id, None
        if made is not None:
            # Shielded: a cancelled rollout still waits for its container to go.
            await asyncio.shield(asyncio.to_thread(self.backend.remove_container, made))

    def kill(self) -> None:
        with self._lock:
            made = self.id
        if made is not None:
            self.backend.kill_container(made)

    def oom_killed(self, since: float) -> bool:
        """Whether the kernel killed a process of the container for its memory limit since `since` (epoch s)."""
        api = self.backend.daemon()
        for until in (time.time(), time.time() + OOM_GRACE):
            with contextlib.suppress(Exception):
                if any(
                    True
                    for _ in api.events(
                        since=int(since) - 1, until=until, decode=True, filters={"container": self.id, "event": "oom"}
                    )
                ):
                    return True
        return False


class ContainerProcess:
    """One CLI invocation as an exec in the rollout's CLI container: the same interface as `isolation.Process`."""

    def __init__(self, box: CLIContainer, launch: Launch, limits: Limits, name: str) -> None:
        self.box, self.launch, self.limits, self.name = box, launch, limits, name
        self.killed_for: str | None = None
        self.peak_rss = 0
        self.cpu_ticks = 0
        self._kill: asyncio.Future | None = None

    async def run(self) -> Finished:
        started, since = time.perf_counter(), time.time()
        exec_id, raw = await asyncio.to_thread(self._exec)
        watch = asyncio.ensure_future(self._watch())
        try:
            stdout, stderr = await asyncio.wait_for(_frames(raw), self.limits.wall_seconds)
        except TimeoutError:
            self.kill("timeout")
            stdout, stderr = b"", b""
        finally:
            watch.cancel()
            with contextlib.suppress(OSError):
                raw.close()
            if self._kill is not None:
                await self._kill
        code = -9 if self.killed_for else await asyncio.to_thread(self._exit_code, exec_id)
        if code != 0 and not self.killed_for and await asyncio.to_thread(self.box.oom_killed, since):
            self.killed_for = "memory"
        finished = turn_end(self, code, stdout, stderr, started, "its container was killed")
        if code == NO_PYTHON:
            raise HarnessError(
                "sandbox_error",
                f"image {self.box.backend.image} has no /usr/bin/python3, which runs "
                f"the CLI's relay inside the container; build one with `{BUILD_HINT}`",
            )
        return finished

    def _exec(self) -> tuple[str, Any]:
        api = self.box.backend.daemon()
        argv = [
            "sh",
            "-c",
            WRAPPER,
            "sh",
            f"{RELAY}/entry.py",
            str(PORT),
            f"{SOCKETS}/model.sock",
            "--",
            *self.launch.argv,
        ]
        try:
            exec_id = api.exec_create(
                self.box.id,
                argv,
                stdout=True,
                stderr=True,
                stdin=False,
                tty=False,
                user=f"{self.box.uid}:{self.box.uid}",
                workdir=WORKDIR,
                environment=self.launch.env,
            )["Id"]
            stream = api.exec_start(exec_id, socket=True)
        except Exception as exc:
            detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            hint = f"; build the image with `{BUILD_HINT}`" if "executable file not found" in detail else ""
            raise HarnessError(
                "sandbox_error", f"docker could not start {self.name} in image {self.box.backend.image}: {detail}{hint}"
            ) from None
        raw = getattr(stream, "_sock", stream)
        raw.setblocking(False)
        return exec_id, raw

    def _exit_code(self, exec_id: str) -> int:
        # The stream closes when the relay's stdout and stderr do; its status follows within moments.
        api = self.box.backend.daemon()
        deadline = time.monotonic() + 5
        info = api.exec_inspect(exec_id)
        while info.get("Running") and time.monotonic() < deadline:
            info = api.exec_inspect(exec_id)
        code = info.get("ExitCode")
        if info.get("Running") or code is None:
            raise HarnessError("sandbox_error", f"docker reports no exit status for {self.name}")
        if code in (126, 127) and not info.get("Pid"):
            raise HarnessError(
                "sandbox_error",
                f"image {self.box.backend.image} cannot run sh for {self.name}; build one with `{BUILD_HINT}`",
            )
        return int(code)

    def kill(self, why: str) -> None:
        if self._kill is not None:
            return
        self.killed_for = self.killed_for or why
        self._kill = asyncio.get_running_loop().run_in_executor(None, self.box.kill)

    async def _watch(self) -> None:
        """Sample the resident memory of the CLI's processes (seen from the host); kill them above the limit."""
        if not self.box.visible or self.box.id is None:
            return
        page = os.sysconf("SC_PAGE_SIZE")
        limit = self.limits.memory_mb << 20
        while True:
            rss, ticks = _container_usage(self.box.id, self.box.uid)
            self.peak_rss = max(self.peak_rss, rss * page)
            self.cpu_ticks = max(self.cpu_ticks, ticks)
            if rss * page > limit:
                self.kill("memory")
                return
            await asyncio.sleep(POLL_SECONDS)


def _container_usage(container: str, uid: int) -> tuple[int, int]:
    """(resident pages, CPU ticks) summed over the live processes of `uid` in the container: the CLI's
    tree and nothing else (the container's own process runs as nobody). The exec's own pid is not
    reported by every daemon, so they are found by owner and cgroup."""
    rss = ticks = 0
    mark = container.encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/cgroup", "rb") as f:
                if mark not in f.read():
                    continue
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
        rss += int(fields[21])
    return rss, ticks


async def _frames(raw: Any) -> tuple[bytes, bytes]:
    """The exec's multiplexed stream (8-byte header: stream, 0, 0, 0, big-endian length) until it closes:
    stdout and stderr apart, each kept up to OUTPUT_LIMIT bytes (the rest is read and dropped)."""
    loop = asyncio.get_running_loop()
    kept = {STDOUT: bytearray(), STDERR: bytearray()}
    frames = FrameDecoder()
    while True:
        try:
            data = await loop.sock_recv(raw, 1 << 16)
        except OSError:  # the daemon dropped the stream (the container was killed): what arrived is kept
            break
        if not data:
            break
        for kind, piece in frames.feed(data):
            if kind in kept and len(kept[kind]) < OUTPUT_LIMIT:
                kept[kind] += piece[: OUTPUT_LIMIT - len(kept[kind])]
    return bytes(kept[STDOUT]), bytes(kept[STDERR])
