"""The CLI harnesses under `--sandbox docker`: the CLI runs in a container of the rollout's own and reaches the
model endpoint and the MCP bridge only through the two mounted Unix sockets.

A stand-in CLI (tests/engine/test_cli_isolation.py's, run by the image's python3) shows the machinery: every
calibration agent's expected E, the container's confinement (no network, only its mounts), the same limits
and typed failures as under bubblewrap, a container removed after every rollout. A real CLI (Codex, the
fastest) runs on starter cases under both backends and must give the same E and the same effects.

Skipped (saying why) without a Docker daemon and the sandbox image, or without Codex, outside CI; in CI
(`.ci/run` starts dockerd, builds the image and runs `make harnesses`) they must run.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from redagent.cases.loader import load_cases
from redagent.engine.calibration import BEHAVIOURS
from redagent.engine.harnesses.cli import harness as harness_module
from redagent.engine.harnesses.cli import profile as cli_profile
from redagent.engine.harnesses.cli.container import SYSTEM_DIRS, mounts
from redagent.engine.harnesses.cli.harness import CLIHarness
from redagent.engine.harnesses.cli.install import installation
from redagent.engine.harnesses.cli.isolation import Limits
from redagent.engine.harnesses.cli.profile import Setup
from redagent.engine.matrix import RunSpec, start_run
from redagent.engine.rollout import execute_rollout
from redagent.engine.sim import SimModel
from redagent.engine.types import RolloutKey
from redagent.sandbox.docker_backend import DEFAULT_IMAGE, Docker, client, docker_problem
from redagent.sandbox.environment import use_isolation
from redagent.store.db import open_store
from tests.ci import in_ci
from tests.engine.test_cli_isolation import FAKE_CLI, StandIn
from tests.engine.test_docker_matrix import _of, _wait_for_a_container

PROBLEM = docker_problem(DEFAULT_IMAGE)
pytestmark = pytest.mark.skipif(PROBLEM is not None and not in_ci(), reason=f"docker unavailable: {PROBLEM}")

# What the stand-in learns about its container before it behaves as an agent (mode "probe").
PROBE = r"""
import json, os, socket, sys
facts = {"uid": os.getuid(), "cwd": os.getcwd(), "home": os.environ["HOME"]}
try:
    socket.create_connection(("10.255.255.1", 80), timeout=2); facts["network"] = "reachable"
except OSError:
    facts["network"] = "unreachable"
facts["interfaces"] = sorted(os.listdir("/sys/class/net"))
facts["root_listing"] = sorted(os.listdir("/"))
mounted = []
for line in open("/proc/self/mountinfo"):
    point = line.split()[4]
    if not point.startswith(("/proc", "/sys", "/dev")):
        mounted.append(point)
facts["mounts"] = sorted(set(mounted))
for path in ("/home/agent/probe", "/workdir/probe", "/usr/probe", "/etc/probe", "/probe",
             sys.argv[1] + "/probe", "/run/redagent/probe"):
    try:
        open(path, "w").close(); facts[path] = "writable"
    except OSError:
        facts[path] = "read-only"
facts["installed"] = open(sys.argv[1] + "/marker").read()
facts["sockets"] = sorted(n for n in os.listdir("/run/redagent") if n.endswith(".sock"))
facts["docker_socket"] = os.path.exists("/var/run/docker.sock") or os.path.exists("/run/docker.sock")
facts["pid1"] = open("/proc/1/cmdline", "rb").read().split(b"\0")[0].decode()
print(json.dumps(facts))
"""


class DockerStandIn(StandIn):
    """The stand-in CLI, and (mode "probe") a look at its container first."""

    def __init__(self, mode: str, installed: Path | None = None) -> None:
        super().__init__(mode)
        self.installed = installed

    def config_files(self, setup: Setup) -> dict[str, str]:
        return {"stand_in.py": FAKE_CLI, "probe.py": PROBE}

    def command(self, executable: str, prompt: str, turn: int, session: str | None, setup: Setup) -> list[str]:
        if self.mode == "probe":
            script = 'python3 "$1/probe.py" "$2" >"$1/facts.json" && exec python3 "$1/stand_in.py" agent "$3"'
            return ["sh", "-c", script, "sh", setup.home, str(self.installed), prompt]
        return super().command(executable, prompt, turn, session, setup)

    def transcript(self, home: Path, stdout: str) -> Any:
        facts = home / "facts.json"
        data = super().transcript(home, stdout)
        if facts.exists() and isinstance(data, dict):
            data["probe"] = json.loads(facts.read_text())
        return data


class Installed:
    installed = True
    executable = Path("/usr/bin/python3")

    def __init__(self, read_only: list[Path]) -> None:
        self._read_only = read_only

    def path(self) -> str:
        return "/usr/bin:/bin"

    def read_only(self) -> list[Path]:
        return self._read_only


def _run_ids_containers(run_id: str) -> list[str]:
    return [c["Id"] for c in client().api.containers(all=True, filters={"label": f"redagent.run={run_id}"})]


@pytest.fixture
def docker_run(monkeypatch, tmp_path):
    """The Docker backend as the process's backend (as `--sandbox docker` makes it), the stand-in installed."""
    install = tmp_path / "install"
    install.mkdir()
    (install / "marker").write_text("the CLI's installation")
    monkeypatch.setattr(harness_module, "installation", lambda profile: Installed([install]))
    backend = Docker(run_id="test-cli-docker", memory_mb=512)
    use_isolation(backend)
    try:
        yield install
    finally:
        use_isolation(None)  # closes the backend: removes whatever it still holds
    assert _run_ids_containers("test-cli-docker") == []


def _rollout(
    profile: StandIn,
    agent: str = "sim/comply",
    case_id: str = "email-t1-send-email-journal-bcc",
    limits: Limits | None = None,
):
    case = next(c for c in load_cases() if c.id == case_id)
    harness = CLIHarness(profile, limits)
    key = RolloutKey(case.id, agent, "stand-in", "clean", "none", 1)
    from redagent.engine import rollout as rollout_module

    original = rollout_module.get_harness
    rollout_module.get_harness = lambda name: harness
    try:
        record = asyncio.run(execute_rollout("test-cli-docker", case, key, lambda n, c: SimModel(n, c)))
    finally:
        rollout_module.get_harness = original
    assert _run_ids_containers("test-cli-docker") == []  # removed with the rollout, whatever happened
    return record


def _artifact(record) -> dict[str, Any]:
    return json.loads(next(e["text"] for e in record.events if e["role"] == "transcript"))


@pytest.mark.parametrize("agent", sorted(BEHAVIOURS))
def test_every_calibration_agent_through_the_stand_in_cli_in_docker_gets_its_expected_E(docker_run, agent):
    record = _rollout(DockerStandIn("agent"), agent)
    assert record.valid, record.invalid_detail
    assert record.E == record.expected_E
    art = _artifact(record)
    assert art["isolation"]["backend"] == "docker" and art["isolation"]["image"] == DEFAULT_IMAGE
    assert art["mcp"]["calls"] == len([e for e in record.events if e["role"] == "assistant" and e["tool_call"]])


def test_the_cli_container_has_no_network_and_only_its_mounts(docker_run):
    install = docker_run
    record = _rollout(DockerStandIn("probe", install), "sim/comply")
    assert record.valid, record.invalid_detail
    facts = _artifact(record)["turns"][0]["transcript"]["probe"]
    assert facts["network"] == "unreachable" and facts["interfaces"] == ["lo"]
    assert facts["uid"] != 0 and facts["cwd"] == "/workdir" and facts["home"] == "/home/agent"
    # Nothing of the host but its mounts: the installation (read-only, at its own path), the private
    # home, working directory and socket directory, the relay programs, a passwd naming the CLI's uid;
    # the skeleton over /home (a top-level directory outside SYSTEM_DIRS holding a mount point); a tmpfs
    # /tmp; Docker's own init and /etc/hostname.
    skeleton = {f"/{install.parts[1]}"} if install.parts[1] not in SYSTEM_DIRS else set()
    assert facts["mounts"] == sorted(
        {
            "/",
            "/tmp",
            str(install),
            "/home",
            "/home/agent",
            "/workdir",
            "/run/redagent",
            "/opt/redagent",
            "/etc/passwd",
            "/etc/group",
            "/etc/hostname",
            "/usr/sbin/docker-init",
        }
        | skeleton
    )
    assert "work" not in facts["root_listing"] and not facts["docker_socket"]
    assert facts["installed"] == "the CLI's installation"
    assert facts[f"{install}/probe"] == "read-only"
    assert facts["/home/agent/probe"] == facts["/workdir/probe"] == facts["/run/redagent/probe"] == "writable"
    assert facts["/usr/probe"] == facts["/etc/probe"] == facts["/probe"] == "read-only"
    assert facts["sockets"] == ["model.sock", "tools.sock"]  # the only ways out: the endpoint and the bridge
    assert facts["pid1"] != "/sbin/init"  # the container's own PID namespace (docker-init), not the host's
    assert record.E == record.expected_E


def test_a_path_under_an_untraversable_directory_is_reached_through_a_skeleton(tmp_path):
    root = tmp_path / "rollout"
    root.mkdir()
    binds = mounts(root, [Path("/root/.cache/redagent/harnesses/codex-1"), Path("/usr/local/lib/x")])
    assert binds[str(root / "skeleton" / "root")] == {"bind": "/root", "mode": "ro"}
    assert (root / "skeleton" / "root" / ".cache" / "redagent" / "harnesses" / "codex-1").is_dir()
    assert oct((root / "skeleton" / "root").stat().st_mode & 0o777) == "0o755"
    assert not (root / "skeleton" / "usr").exists()  # a system directory: mounted into as it is
    assert binds["/root/.cache/redagent/harnesses/codex-1"] == {
        "bind": "/root/.cache/redagent/harnesses/codex-1",
        "mode": "ro",
    }


def test_a_hanging_cli_in_docker_is_a_harness_timeout(docker_run):
    record = _rollout(DockerStandIn("sleep"), limits=Limits(wall_seconds=2))
    assert not record.valid and record.invalid_reason == "harness_timeout" and record.E is None


def test_a_crashing_cli_in_docker_is_a_harness_crash_with_its_last_stderr_line(docker_run):
    record = _rollout(DockerStandIn("crash"))
    assert record.invalid_reason == "harness_crash" and "boom" in record.invalid_detail
    assert "exited with 3" in record.invalid_detail


def test_a_cli_in_docker_over_its_memory_limit_is_killed(docker_run):
    record = _rollout(DockerStandIn("memory"), limits=Limits(wall_seconds=60, memory_mb=150))
    assert record.invalid_reason == "harness_crash" and "memory" in record.invalid_detail


def test_garbage_on_the_wire_in_docker_is_an_endpoint_protocol_failure(docker_run):
    assert _rollout(DockerStandIn("protocol")).invalid_reason == "endpoint_protocol"


@pytest.fixture
def image_without_python():
    """The sandbox image with python3 removed (a user's image that lacks what the CLI's relay needs)."""
    api = client().api
    tag = "redagent-test-no-python:1"
    made = api.create_container(
        DEFAULT_IMAGE, command=["sh", "-c", "rm -f /usr/bin/python3*"], labels={"redagent.run": "test-cli-docker-image"}
    )
    try:
        api.start(made["Id"])
        assert api.wait(made["Id"], timeout=60)["StatusCode"] == 0
        api.commit(made["Id"], repository="redagent-test-no-python", tag="1")
    finally:
        api.remove_container(made["Id"], force=True)
    try:
        yield tag
    finally:
        api.remove_image(tag, force=True)


def test_an_image_without_python_is_one_line_naming_the_build_command(monkeypatch, tmp_path, image_without_python):
    monkeypatch.setattr(harness_module, "installation", lambda profile: Installed([]))
    use_isolation(Docker(image_without_python, run_id="test-cli-docker"))
    try:
        record = _rollout(DockerStandIn("agent"))
    finally:
        use_isolation(None)
    assert record.invalid_reason == "sandbox_error"
    assert record.invalid_detail == (
        f"image {image_without_python} has no /usr/bin/python3, which runs the CLI's "
        "relay inside the container; build one with `redagent sandbox image build`"
    )


# -- a real CLI ---------------------------------------------------------------------------------------
REAL = "codex"  # the fastest of the four (benchmarks/harnesses.py)
# A command-free case and one whose page has the agent run curl (run_command, in the command container).
REAL_CASES = ("email-t1-send-email-journal-bcc", "cross-e3-docs-page-token-check-curl")
needs_real = pytest.mark.skipif(
    not installation(cli_profile(REAL)).installed and not in_ci(),
    reason=f"{REAL} is not installed (redagent harnesses install {REAL})",
)


def _real_run(tmp_path, sandbox: str) -> tuple[str, list[dict[str, Any]], list[Any]]:
    kind = sandbox.partition(":")[0]
    store = open_store(f"sqlite:///{tmp_path / kind}.db")
    try:
        runner = start_run(
            store,
            RunSpec(
                harnesses=[REAL], cases=",".join(REAL_CASES), models=list(BEHAVIOURS), concurrency=4, sandbox=sandbox
            ),
        )
        try:
            asyncio.run(runner.run())
        finally:
            use_isolation(None)
        run_id = runner.run_record.id
        rows = list(store.iter_export(run_id))
        records = [store.get_rollout(r.id) for r in store.rollouts(run_id)]
        return run_id, rows, records
    finally:
        store.close()


def _effects(row: dict[str, Any]) -> list[tuple[str, ...]]:
    """What the rollout did, as its receipts say (without the backend's name, which differs by design)."""
    return sorted(
        (rc["service"], rc["action"], rc["outcome"], rc["via"] or "", json.dumps(rc["args"], sort_keys=True))
        for rc in row["receipts"]
    )


@needs_real
def test_a_real_cli_in_docker_gives_the_same_E_and_effects_as_under_bubblewrap(tmp_path):
    run_id, docker_rows, records = _real_run(tmp_path, f"docker:{DEFAULT_IMAGE}")
    _, bwrap_rows, _ = _real_run(tmp_path, "bwrap")
    assert len(docker_rows) == len(REAL_CASES) * len(BEHAVIOURS)
    assert [(r["case_id"], r["model"], r["invalid_detail"]) for r in docker_rows if not r["valid"]] == []
    assert [(r["case_id"], r["model"], r["E"], r["expected_E"]) for r in docker_rows if r["E"] != r["expected_E"]] == []
    by_key = {(r["case_id"], r["model"]): r for r in bwrap_rows}
    assert {k: (r["E"], _effects(r)) for k, r in ((k, by_key[k]) for k in by_key)} == {
        (r["case_id"], r["model"]): (r["E"], _effects(r)) for r in docker_rows
    }
    for record in records:
        art = _artifact(record)
        assert art["isolation"]["backend"] == "docker" and all(t["exit_code"] == 0 for t in art["turns"])
        calls = [e for e in record.events if e["role"] == "assistant" and e["tool_call"]]
        assert len(calls) == art["mcp"]["calls"] > 0  # every tool call came through the mounted bridge socket
    isolated = {
        (rc.get("effect") or {}).get("isolation")
        for r in docker_rows
        for rc in r["receipts"]
        if rc["action"] == "run_command"
    } - {None, "builtin"}
    assert isolated == {"docker"}  # the agent's commands ran in the rollout's command container
    assert _run_ids_containers(run_id) == []


@needs_real
def test_ctrl_c_during_a_cli_run_in_docker_leaves_no_container(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "redagent",
            "run",
            "--sandbox",
            "docker",
            "--harnesses",
            REAL,
            "--cases",
            ",".join(REAL_CASES),
            "--concurrency",
            "2",
            "--db",
            f"sqlite:///{tmp_path / 's.db'}",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    _wait_for_a_container(proc)  # the first CLI container is made as its rollout starts
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=300)
    assert proc.returncode == 130
    assert _of(proc.pid) == []
