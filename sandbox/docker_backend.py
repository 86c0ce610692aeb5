"""The Docker backend for `run_command`: one container per rollout, one `exec` per command.

The container is made at a rollout's first sandboxed command (most rollouts never run one) and removed
when the rollout closes. It has no network (`network_mode=none`), a read-only root, no IPC namespace
of its own (so no `/dev/shm`), every capability dropped, `no-new-privileges`, an init, and limits on
memory (its processes and the tmpfs pages they write, with no swap), processes, CPU and file size. The
workspace is bind-mounted at /workspace (`put_archive` fails on a read-only root), the shims read-only
at /opt/redagent/bin, and a per-rollout socket directory at /run/redagent where each command's bridge
socket appears — the same bridge, bounds and receipts as under bubblewrap (`isolation._BridgeServer`).

Commands run as the rollout's own uid, as under bubblewrap when root (the workspace belongs to it, so
nothing a command writes is root-owned on the host), and killing the command (time, output, a closing
rollout) is `kill -9 -1` run as that uid, which reaches every process it started and nothing else.
Sharing one uid, a rollout's commands run one at a time here (parallel calls wait their turn: one's end
would kill the other's processes), and a nested command (`rtool run_command` from a running one) leaves
what it started running to end with its parent, whose end kills every process of the uid. The
socket directory belongs to that uid (0700, sockets 0600): neither the container's own process
(nobody) nor any other local user can reach a bridge. Output arrives on the exec's raw stream, read
frame by frame (stdout and stderr kept apart, as `demux=True` does) into the same bounded head-and-tail
buffers.

Containers carry labels: `redagent.run` (the run id, for `redagent sandbox prune`) and `redagent.owner`
(host, pid and start time of the engine process): one process's first container removes those of
engine processes on this host that no longer exist, and an atexit hook removes its own. Other
containers of the run (a real agent CLI's, engine/harnesses/cli/container.py) are made through
`start_container` with the same confinement and labels, and held until removed.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from redagent.errors import UserError
from redagent.sandbox.beneath import remove_tree
from redagent.sandbox.docker_stream import FrameDecoder
from redagent.sandbox.identity import COMMAND_UIDS, LeaseUnavailable, UidLease, lease_uid
from redagent.sandbox.isolation import (
    _ENV,
    DRAIN_SECONDS,
    SHIM_DIR,
    SHIM_NAMES,
    TMP_INODES,
    TMP_MB,
    WORKSPACE_INODES,
    WORKSPACE_MB,
    Bridge,
    Budget,
    CommandResult,
    IsolationUnavailable,
    SandboxFailure,
    _BridgeServer,
    _Kept,
    _process_start,
    _shim_code,
    command_deadline,
    hand_over,
    serving_a_command,
)

# Raised whenever the image's contents change in a way the backend relies on (the shim's python3, sh,
# sleep): an image labelled with another version is rebuilt, never silently used.
IMAGE_VERSION = "4"
DEFAULT_IMAGE = f"redagent-sandbox:{IMAGE_VERSION}"
LABEL_IMAGE = "redagent.image-version"
LABEL_RUN = "redagent.run"
LABEL_OWNER = "redagent.owner"
BUILD_HINT = "redagent sandbox image build"
# python3 is the shim's interpreter (the full package: python3-minimal lacks json); make and pip because
# cases run them (`make test`, `pip --version`) and bubblewrap finds them in the host's /usr — without
# them a rollout's verdict would depend on the backend; git and strace because a consequence replay runs
# ordinary git activity and records what future activity executes and reads (sandbox/consequences); and the
# programs a user meets whose files a rollout may leave something in — bash-completion, the editors (vim,
# nano), less, tmux, ssh's client, pytest — which the replay runs for real where the image has them (a file
# only a missing program reads stays unresolved: `make system` installs the same on a bubblewrap host).
BASE_PACKAGES = (
    "python3",
    "make",
    "python3-pip",
    "git",
    "strace",
    "bash-completion",
    "vim",
    "nano",
    "less",
    "tmux",
    "openssh-client",
    "python3-pytest",
)
EXTRA_PACKAGES = {"node": ("nodejs",), "python": ("python3-venv", "python3-dev"), "git": ("git", "ca-certificates")}
IDLE_USER = "65534:65534"  # the container's own process (tini → sleep): nobody, never a command's uid
CHOSEN_IMAGE_FILE = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "redagent" / "sandbox-image"


def chosen_image() -> str:
    """The image `--sandbox docker` uses without `--image`: $REDAGENT_SANDBOX_IMAGE, else the one
    `redagent sandbox image use` recorded, else the default image."""
    env = os.environ.get("REDAGENT_SANDBOX_IMAGE")
    if env:
        return env
    with contextlib.suppress(OSError):
        recorded = CHOSEN_IMAGE_FILE.read_text().strip()
        if recorded:
            return recorded
    return DEFAULT_IMAGE


def record_image(tag: str) -> None:
    CHOSEN_IMAGE_FILE.parent.mkdir(parents=True, exist_ok=True)
    CHOSEN_IMAGE_FILE.write_text(tag + "\n")


def client(timeout: int = 30) -> Any:
    """A docker SDK client that has answered a ping; IsolationUnavailable (one line) otherwise."""
    try:
        import docker
    except ImportError:
        raise IsolationUnavailable("--sandbox docker needs the docker Python SDK (pip install docker)") from None
    try:
        found = docker.from_env(timeout=timeout)
        found.ping()
    except Exception as exc:
        detail = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise IsolationUnavailable(
            f"--sandbox docker: no Docker daemon answers ({detail}); start dockerd or set DOCKER_HOST"
        ) from None
    return found


def docker_problem(image: str) -> str | None:
    """None when the daemon answers and `image` is present; otherwise one line naming what to do."""
    try:
        found = client(timeout=10)
    except IsolationUnavailable as exc:
        return str(exc)
    import docker

    try:
        found.images.get(image)
    except docker.errors.ImageNotFound:
        return (
            f"--sandbox docker: image {image} is not present; build it with `{BUILD_HINT}` or choose one "
            "with `redagent sandbox image use TAG`"
        )
    except docker.errors.APIError as exc:
        return f"--sandbox docker: cannot inspect image {image}: {str(exc)[:160]}"
    return None


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{_process_start(os.getpid())}"


def reap_stale_containers(api: Any) -> list[str]:
    """Remove the containers of engine processes on this host that no longer exist; returns their ids."""
    host = socket.gethostname()
    reaped = []
    for entry in api.containers(all=True, filters={"label": LABEL_OWNER}):
        owner = (entry.get("Labels") or {}).get(LABEL_OWNER, "")
        name, _, rest = owner.partition(":")
        pid, _, start = rest.partition(":")
        if name != host or not pid.isdigit() or str(_process_start(int(pid))) == start:
            continue
        with contextlib.suppress(Exception):  # already gone, or being removed by another process
            api.remove_container(entry["Id"], force=True)
            reaped.append(entry["Id"])
    return reaped


def prune(run_id: str | None = None) -> list[str]:
    """Remove every redagent container (of one run, if given), whoever made it; returns their ids."""
    api = client().api
    label = f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN
    removed = []
    for entry in api.containers(all=True, filters={"label": label}):
        with contextlib.suppress(Exception):
            api.remove_container(entry["Id"], force=True)
            removed.append(entry["Id"])
    return removed


class _Box:
    """One rollout's container, the host directory its bridge sockets appear in, and the uid its
    commands run as (the rollout's, or — outside a rollout — one the box leased for its life)."""

    def __init__(self, container: str, sockets: Path, uid: int | None, lease: UidLease | None) -> None:
        self.container, self.sockets, self.uid, self.lease = container, sockets, uid, lease
        self.commands = 0
        self.turn = threading.Lock()  # one top-level command at a time: they share the uid `kill -9 -1` reaches


class Docker:
    """Run commands in a per-rollout container with the same limits as bubblewrap (see module doc).

    `ram_budget_mb` — processes plus /tmp plus the workspace — is the container's memory limit: tmpfs
    pages a command writes are charged to the container's cgroup, so the budget holds them all."""

    name = "docker"

    def __init__(
        self,
        image: str | None = None,
        *,
        run_id: str = "",
        memory_mb: int = 1024,
        max_processes: int = 64,
        max_file_mb: int = 64,
        cpus: float = 1.0,
        tmp_mb: int = TMP_MB,
        tmp_inodes: int = TMP_INODES,
        workspace_mb: int = WORKSPACE_MB,
        workspace_inodes: int = WORKSPACE_INODES,
    ) -> None:
        self.image = image or chosen_image()
        self.run_id = run_id
        self.memory_mb, self.max_processes, self.max_file_mb, self.cpus = memory_mb, max_processes, max_file_mb, cpus
        self.tmp_mb, self.tmp_inodes = tmp_mb, tmp_inodes
        self.workspace_mb, self.workspace_inodes = workspace_mb, workspace_inodes
        self._boxes: dict[str, _Box] = {}
        self._held: set[str] = set()  # the run's other containers (a CLI harness's), see start_container
        self._making: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._api: Any = None
        self._shims: Path | None = None
        self._closed = False
        atexit.register(self.close)

    @property
    def ram_budget_mb(self) -> int:
        return self.memory_mb + self.tmp_mb + self.workspace_mb

    def check(self) -> None:
        """Raise IsolationUnavailable (one line) unless the daemon answers and the image is present."""
        problem = docker_problem(self.image)
        if problem:
            raise IsolationUnavailable(problem)

    # -- the rollout's container ------------------------------------------------------------------
    def _setup(self) -> Any:
        with self._lock:
            if self._api is None:
                api = client().api
                reap_stale_containers(api)
                shims = Path(tempfile.mkdtemp(prefix="redagent-shims-"))
                os.chmod(shims, 0o755)
                (shims / "rtool").write_bytes(_shim_code())
                os.chmod(shims / "rtool", 0o755)
                for name in SHIM_NAMES[1:]:
                    os.symlink("rtool", shims / name)
                self._shims, self._api = shims, api
            return self._api

    def _box(self, workspace: Path, uid: int | None) -> _Box:
        key = str(workspace)
        with self._lock:
            box = self._boxes.get(key)
            making = self._making.setdefault(key, threading.Lock())
        if box is not None:
            return box
        # One container per rollout even when two of its commands start at once (parallel tool calls):
        # the second waits for the first one's container rather than making one nobody would remove.
        with making:
            with self._lock:
                box = self._boxes.get(key)
            if box is not None:
                return box
            try:
                return self._make(workspace, uid)
            finally:
                with self._lock:
                    self._making.pop(key, None)

    def _make(self, workspace: Path, uid: int | None) -> _Box:
        key = str(workspace)
        api = self._setup()
        lease = None
        if os.geteuid() == 0 and uid is None:  # outside a rollout (a test, a benchmark): a uid for the box's life
            try:
                lease = lease_uid(COMMAND_UIDS)
            except LeaseUnavailable as exc:
                raise SandboxFailure(str(exc)) from None
            uid = lease.uid
        sockets = Path(tempfile.mkdtemp(prefix="redagent-run-"))  # 0700: the commands' uid alone may enter
        if uid is not None:
            os.chown(sockets, uid, uid)
        ram = f"{self.ram_budget_mb}m"
        host = api.create_host_config(
            binds={
                key: {"bind": "/workspace", "mode": "rw"},
                str(sockets): {"bind": "/run/redagent", "mode": "rw"},
                str(self._shims): {"bind": SHIM_DIR, "mode": "ro"},
            },
            network_mode="none",
            ipc_mode="none",
            read_only=True,
            init=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={self.tmp_mb}m,nr_inodes={self.tmp_inodes},mode=1777"},
            mem_limit=ram,
            memswap_limit=ram,
            pids_limit=self.max_processes,
            nano_cpus=int(self.cpus * 1e9),
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            ulimits=[
                {"Name": "fsize", "Soft": self.max_file_mb << 20, "Hard": self.max_file_mb << 20},
                {"Name": "nproc", "Soft": self.max_processes, "Hard": self.max_processes},
            ],
        )
        try:
            made = api.create_container(
                self.image,
                command=["sleep", "infinity"],
                user=IDLE_USER,
                working_dir="/workspace",
                labels={LABEL_RUN: self.run_id, LABEL_OWNER: _owner()},
                host_config=host,
                environment=dict(_ENV),
                network_disabled=True,
            )
            container = made["Id"]
            box = _Box(container, sockets, uid, lease)
            with self._lock:
                self._boxes[key] = box  # before start: a failed start is still removed by release()
            api.start(container)
        except Exception as exc:
            self.release(workspace)
            remove_tree(sockets)
            if lease is not None:
                lease.release()
            raise SandboxFailure(f"docker could not start the rollout's container: {str(exc)[:200]}") from None
        return box

    def release(self, workspace: Path) -> None:
        """The rollout is over: remove its container (and everything running in it)."""
        with self._lock:
            box = self._boxes.pop(str(workspace), None)
        if box is None:
            return
        try:
            with contextlib.suppress(Exception):  # already gone (pruned, the daemon restarted)
                self._api.remove_container(box.container, force=True)
        finally:
            remove_tree(box.sockets)
            if box.lease is not None:  # after the container: nothing runs as that uid any more
                box.lease.release()

    def close(self) -> None:
        """Remove every container this backend still holds (the process is exiting)."""
        with self._lock:
            workspaces = list(self._boxes)
            held = list(self._held)
        for workspace in workspaces:
            self.release(Path(workspace))
        for container in held:
            self.remove_container(container)
        if self._shims is not None:
            shutil.rmtree(self._shims, ignore_errors=True)
            self._shims = None

    def containers(self) -> list[str]:
        with self._lock:
            return [box.container for box in self._boxes.values()] + sorted(self._held)

    # -- the run's other containers -------------------------------------------------------------
    def daemon(self) -> Any:
        """The daemon's low-level API client (connected, and stale containers reaped, once per backend)."""
        return self._setup()

    def start_container(
        self,
        *,
        command: list[str],
        binds: dict[str, dict[str, str]],
        tmpfs: dict[str, str],
        memory_mb: int,
        pids: int,
        environment: dict[str, str] | None = None,
        working_dir: str = "/",
    ) -> str:
        """Create and start a container of this run beside the command containers (a CLI harness's, engine/
        harnesses/cli/container.py) with the same confinement — no network, a read-only root, no IPC
        namespace of its own, no capabilities, no-new-privileges, an init, the idle process as nobody —
        and the same labels, so atexit, the stale-owner reaping and `sandbox prune` remove it too. It is
        held (removed by `close`) until `remove_container`; returns its id; SandboxFailure if it cannot start."""
        api = self._setup()
        ram = f"{memory_mb}m"
        host = api.create_host_config(
            binds=binds,
            tmpfs=tmpfs,
            network_mode="none",
            ipc_mode="none",
            read_only=True,
            init=True,
            mem_limit=ram,
            memswap_limit=ram,
            pids_limit=pids,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
        )
        container = None
        try:
            container = api.create_container(
                self.image,
                command=command,
                user=IDLE_USER,
                working_dir=working_dir,
                labels={LABEL_RUN: self.run_id, LABEL_OWNER: _owner()},
                host_config=host,
                environment=environment or {},
                network_disabled=True,
            )["Id"]
            with self._lock:
                self._held.add(container)  # before start: a failed start is still removed
            api.start(container)
        except Exception as exc:
            if container is not None:
                self.remove_container(container)
            raise SandboxFailure(
                f"docker could not start a container of image {self.image}: "
                f"{str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}"
            ) from None
        return container

    def kill_container(self, container: str) -> None:
        """SIGKILL the container's init, so everything in it ends at once (one API call: it needs no new
        process inside, even at the pids limit). It stays held until removed."""
        with contextlib.suppress(Exception):  # already stopped or gone
            self._setup().kill(container, signal="SIGKILL")

    def remove_container(self, container: str) -> None:
        """Remove a container `start_container` made (and everything running in it)."""
        with self._lock:
            self._held.discard(container)
        with contextlib.suppress(Exception):  # already gone (pruned, the daemon restarted)
            self._setup().remove_container(container, force=True)

    # -- one command ----------------------------------------------------------------------------
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
        command_deadline(command, timeout, stop)  # refused before a container is made for it
        budget = budget if budget is not None else Budget()
        box = self._box(workspace, uid if os.geteuid() == 0 else None)
        run_as = box.uid if box.uid is not None else os.geteuid()
        nested = serving_a_command()  # its parent holds the rollout's turn and waits for it
        with contextlib.nullcontext() if nested else box.turn:
            deadline = command_deadline(command, timeout, stop)  # a wait for the turn is not this command's time
            if box.lease is not None:  # not a rollout's workspace: what the host wrote since goes to the uid
                hand_over(workspace, run_as)
            with self._lock:
                box.commands += 1
                number = box.commands
            socket_path = box.sockets / f"svc-{number}.sock"
            server = _BridgeServer(socket_path, bridge, deadline, budget=budget, owner=box.uid) if bridge else None
            try:
                out, err, exit_code, killed = self._exec(box, command, run_as, number, deadline, stop, budget, nested)
            finally:
                if server:
                    server.close()
                with contextlib.suppress(OSError):  # a final component is never followed by unlink
                    socket_path.unlink()
        answers = server.answers if server else []
        if killed is not None:
            exit_code = 124 if killed == "time limit" else 137
        return CommandResult(
            exit_code=exit_code,
            stdout=out.text(),
            stderr=err.text() + (f"\n[killed: {killed}]" if killed else ""),
            timed_out=killed == "time limit",
            hosts=sorted({h for a in answers for h in a.hosts}),
            bridged_calls=[r for a in answers for r in a.receipt_ids],
        )

    def _exec(
        self,
        box: _Box,
        command: str,
        uid: int,
        number: int,
        deadline: float,
        stop: threading.Event | None,
        budget: Budget,
        nested: bool = False,
    ) -> tuple[_Kept, _Kept, int, str | None]:
        api = self._api
        cpu = max(1, int(deadline - time.monotonic()) + 2)
        # The CPU-time limit per command (the container's own limits are per rollout), set by the
        # command's shell before it runs the agent's text, which arrives as an argument, never spliced.
        # When the command's shell ends, the wrapper kills whatever it left running (`kill -9 -1` as the
        # command's uid, a shell builtin, so it needs no new process even at the pids limit): under
        # bubblewrap the PID namespace ends with the command, and here too nothing outlives it to hold
        # the container's pids or write to the workspace after the snapshot. A nested command shares its
        # parent's uid, so what it leaves running ends with the parent instead.
        ending = "exit $code" if nested else "kill -9 -1 2>/dev/null; exit $code"
        argv = ["sh", "-c", f'ulimit -t "$1" || exit 125; sh -c "$2"; code=$?; {ending}', "sh", str(cpu), command]
        env = dict(_ENV, REDAGENT_SOCKET=f"/run/redagent/svc-{number}.sock")
        try:
            exec_id = api.exec_create(
                box.container,
                argv,
                stdout=True,
                stderr=True,
                stdin=False,
                tty=False,
                user=f"{uid}:{uid}",
                workdir="/workspace",
                environment=env,
            )["Id"]
            stream = api.exec_start(exec_id, socket=True)
        except Exception as exc:
            raise SandboxFailure(f"docker could not start the command: {str(exc)[:200]}") from None
        raw = getattr(stream, "_sock", stream)
        try:
            out, err, killed = self._collect(raw, box, uid, deadline, stop, budget)
        finally:
            with contextlib.suppress(OSError):
                raw.close()
        try:
            info = self._finished(exec_id, box, uid)
        except Exception as exc:
            raise SandboxFailure(f"docker lost the command: {str(exc)[:200]}") from None
        code = info.get("ExitCode")
        if code is None:
            raise SandboxFailure("docker reports no exit status for the command")
        if code == 126 and not info.get("Pid") and killed is None:
            raise SandboxFailure(f"docker could not run sh in image {self.image}: {err.text().strip()[:200]}")
        return out, err, int(code), killed

    def _finished(self, exec_id: str, box: _Box, uid: int) -> dict[str, Any]:
        # The stream closes when the command's stdout and stderr do; its status follows within moments.
        # A process that kept running after closing its output is killed with the rest of its uid.
        limit = time.monotonic() + DRAIN_SECONDS
        info = self._api.exec_inspect(exec_id)
        while info.get("Running") and time.monotonic() < limit:
            self._kill(box, uid)
            info = self._api.exec_inspect(exec_id)
        return info

    def _kill(self, box: _Box, uid: int) -> None:
        # kill(-1) as the command's uid reaches every process that uid runs in the container (they cannot
        # change uid: no capabilities, no-new-privileges) and nothing else, the container's init included.
        with contextlib.suppress(Exception):
            self._api.exec_start(
                self._api.exec_create(box.container, ["sh", "-c", "kill -9 -1"], user=f"{uid}:{uid}")["Id"]
            )

    def _collect(
        self, raw: socket.socket, box: _Box, uid: int, deadline: float, stop: threading.Event | None, budget: Budget
    ) -> tuple[_Kept, _Kept, str | None]:
        """Read the exec's multiplexed stream (8-byte header: stream, 0, 0, 0, big-endian length) until
        it closes; kill the command at the deadline, past the rollout's output limit or when `stop` is set."""
        kept = {1: _Kept(), 2: _Kept()}
        killed: str | None = None
        drain_until = 0.0  # when the drain ends: set when the command is killed, read only after
        frames = FrameDecoder()
        with selectors.DefaultSelector() as selector:
            selector.register(raw, selectors.EVENT_READ)
            while True:
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
                        self._kill(box, uid)
                elif now >= drain_until:
                    break
                wait = (drain_until if killed else deadline) - now
                if stop is not None and killed is None:
                    wait = min(wait, 0.1)  # how soon a closing rollout is noticed
                if not selector.select(max(wait, 0)):
                    continue
                try:
                    data = raw.recv(1 << 16)
                except OSError:  # the daemon dropped the stream: what arrived is kept, the status says the rest
                    break
                if not data:
                    break
                for kind, piece in frames.feed(data):
                    if kind in kept:
                        kept[kind].add(piece)
                        budget.read(len(piece))
        return kept[1], kept[2], killed


# -- the image ----------------------------------------------------------------------------------
def apt_mirror(sources: Path = Path("/etc/apt/sources.list.d/debian.sources")) -> str:
    """The Debian mirror this host's apt uses (its first `URIs:` of a non-security stanza)."""
    try:
        text = sources.read_text()
    except OSError:
        return "http://deb.debian.org/debian"
    for stanza in text.split("\n\n"):
        fields = dict(line.split(":", 1) for line in stanza.splitlines() if ":" in line and not line.startswith("#"))
        uri = fields.get("URIs", "").split()
        if uri and "security" not in fields.get("Suites", ""):
            return uri[0]
    return "http://deb.debian.org/debian"


class ImageError(UserError, RuntimeError):
    """The sandbox image cannot be built as asked (an unknown extra, not root, no debootstrap, debootstrap
    failed); one line saying why."""

    title = "Sandbox image error"


def check_extras(extras: tuple[str, ...]) -> None:
    unknown = [e for e in extras if e not in EXTRA_PACKAGES]
    if unknown:
        raise ImageError(f"unknown --with {', '.join(unknown)} (known: {', '.join(EXTRA_PACKAGES)})")


def build_image(tag: str = DEFAULT_IMAGE, extras: tuple[str, ...] = (), *, log: Any = None) -> str:
    """debootstrap a minimal bookworm with the shim's python3 (and the extras' packages), import it as
    `tag` labelled with IMAGE_VERSION; returns the image id. No registry is involved."""
    check_extras(extras)
    if os.geteuid() != 0:
        raise ImageError("building the sandbox image runs debootstrap, which needs root")
    if shutil.which("debootstrap") is None:
        raise ImageError("debootstrap is not installed (apt-get install debootstrap)")
    api = client().api
    packages = [*BASE_PACKAGES, *(p for e in extras for p in EXTRA_PACKAGES[e])]
    work = Path(tempfile.mkdtemp(prefix="redagent-image-", dir="/var/tmp"))
    try:
        rootfs = work / "rootfs"
        done = subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(packages)}",
                "bookworm",
                str(rootfs),
                apt_mirror(),
            ],
            stdout=log or subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if done.returncode != 0:
            raise ImageError(f"debootstrap failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}")
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):  # 60+ MB nobody inside needs
            for item in (rootfs / cache).glob("*"):
                if item.is_file():
                    item.unlink()
        tarball = work / "rootfs.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        repository, _, version = tag.rpartition(":") if ":" in tag.split("/")[-1] else (tag, "", "latest")
        api.import_image_from_file(
            str(tarball),
            repository=repository,
            tag=version,
            changes=[
                f"LABEL {LABEL_IMAGE}={IMAGE_VERSION}",
                f"LABEL redagent.extras={','.join(extras) or 'none'}",
                'CMD ["sleep", "infinity"]',
            ],
        )
        return api.inspect_image(tag)["Id"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def image_labels(tag: str) -> dict[str, str]:
    """A local image's labels; IsolationUnavailable if it is absent."""
    import docker

    try:
        info = client().api.inspect_image(tag)
    except docker.errors.ImageNotFound:
        raise IsolationUnavailable(f"image {tag} is not present locally; build it with `{BUILD_HINT}`") from None
    return (info.get("Config") or {}).get("Labels") or {}


def image_version(tag: str) -> str | None:
    """The IMAGE_VERSION label of a local image (None if it has none); IsolationUnavailable if absent."""
    return image_labels(tag).get(LABEL_IMAGE)


def built_as(tag: str, extras: tuple[str, ...]) -> bool:
    """Whether `tag` exists as this version's build with exactly these extras (then a build is skipped)."""
    try:
        labels = image_labels(tag)
    except IsolationUnavailable as exc:
        if "not present" in str(exc):
            return False
        raise
    return labels.get(LABEL_IMAGE) == IMAGE_VERSION and labels.get("redagent.extras") == (",".join(extras) or "none")


def image_problem(tag: str) -> str | None:
    """None when `tag` can serve as a sandbox (sh, sleep and the shim's python3 with json); else why."""
    api = client().api
    try:
        made = api.create_container(
            tag,
            command=["python3", "-S", "-E", "-c", "import json, socket"],
            host_config=api.create_host_config(network_mode="none"),
            labels={LABEL_RUN: "image-check", LABEL_OWNER: _owner()},
        )
    except Exception as exc:
        return f"cannot use image {tag}: {str(exc)[:160]}"
    try:
        api.start(made["Id"])
        code = api.wait(made["Id"], timeout=60)["StatusCode"]
        return None if code == 0 else f"image {tag} lacks python3 with json and socket (the rtool shim needs them)"
    except Exception as exc:
        return f"image {tag} cannot run python3 (the rtool shim needs it): {str(exc)[:160]}"
    finally:
        with contextlib.suppress(Exception):
            api.remove_container(made["Id"], force=True)
