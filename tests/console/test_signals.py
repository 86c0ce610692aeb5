"""`redagent run` and `redagent cases check` end on SIGINT and SIGTERM, whatever they are doing.

Each test starts the real CLI as a process on a case whose plan holds a command that sleeps, waits until
that command is running (its sandbox has written a file: the process is busy, not starting), sends the
signal, and then waits — within a hang timeout far above the seconds a stop takes, never a fixed time —
for the process to end: with one clean line, exit code 128 + the signal, and no sandbox left behind.
Before, a check's worker processes outlived a SIGTERM to their parent and went on checking (their
workspaces stayed mounted), and a run waited for every rollout in flight however long it took.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml

from redagent.cases.loader import library_dir
from redagent.engine.harnesses.native import SYSTEM as NATIVE_SYSTEM
from redagent.store.db import open_store
from tests.conftest import needs_bwrap
from tests.engine.hanging_server import HangingServer

pytestmark = needs_bwrap  # the sleeping command runs in a sandbox

HANG_S = 120  # a stop takes seconds (a run's grace for rollouts in flight is 10 s)
BUSY_S = 120  # how long a process may take to start its first sandboxed command
BASE = yaml.safe_load((library_dir() / "workspace" / "e5-agents-md-telemetry-exfil.yaml").read_text())


def _sleeping_case(folder: Path, case_id: str = "sleeps-in-its-plan") -> Path:
    data = copy.deepcopy(BASE)
    data["id"] = case_id
    data["plans"]["benign"].insert(
        0, {"tool": "run_command", "args": {"command": "touch started && sleep 60", "timeout": 60}}
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{case_id}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def workspaces():
    """A workspace root of the test's own. Not under tmp_path: the sandbox uid a command runs as must be able to
    pass through every folder above its workspace, and pytest's own are its owner's only (0700)."""
    root = Path(tempfile.mkdtemp(prefix="redagent-signals-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


class Busy:
    """A `redagent` process with its own workspace root, and what it leaves there."""

    def __init__(self, tmp_path: Path, workspaces: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.workspaces = workspaces
        env = {**os.environ, "REDAGENT_WORKSPACES": str(self.workspaces), **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "redagent", *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.err: list[str] = []  # stderr as it comes, read on a thread so a test can wait for a line
        self.reader = threading.Thread(target=lambda: self.err.extend(self.process.stderr), daemon=True)
        self.reader.start()

    def wait_until(self, condition, what: str) -> None:
        deadline = time.monotonic() + BUSY_S
        while not condition():
            assert self.process.poll() is None, (what, "".join(self.err))
            assert time.monotonic() < deadline, f"never {what}"
            time.sleep(0.05)

    def wait_busy(self) -> None:
        self.wait_until(lambda: any(self.workspaces.glob("*/started")), "busy: the sleeping command never started")

    def ended(self) -> tuple[int, str]:
        try:
            self.process.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"still running {HANG_S} s after the signal")
        self.reader.join(HANG_S)
        return self.process.returncode, "".join(self.err)

    def leftovers(self) -> list[str]:
        return sorted(p.name for p in self.workspaces.iterdir())


def _same_command_still_running(marker: str) -> list[int]:
    """Processes (a check's workers, orphaned or not) whose command line names `marker`."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_check_stops_in_one_line_and_removes_its_sandbox(tmp_path, workspaces, signum):
    path = _sleeping_case(tmp_path / "cases")
    busy = Busy(tmp_path, workspaces, "cases", "check", str(path))
    busy.wait_busy()
    busy.process.send_signal(signum)
    code, err = busy.ended()
    assert code == 128 + signum
    assert err.strip().splitlines() == [
        f"stopped by {signal.Signals(signum).name}: the check was interrupted; its "
        f"sandboxes are removed and nothing is kept"
    ]
    assert busy.leftovers() == []


def test_a_check_in_worker_processes_ends_them_on_sigterm(tmp_path, workspaces):
    """50 cases and two workers (the pool is used from 50 cases on): a SIGTERM to the parent alone ends the
    workers too, each through its cleanup; none goes on checking."""
    folder = tmp_path / "cases"
    for i in range(50):
        _sleeping_case(folder, f"sleeps-{i:02d}")
    busy = Busy(tmp_path, workspaces, "cases", "check", str(folder), "--jobs", "2")
    busy.wait_busy()
    busy.process.send_signal(signal.SIGTERM)
    code, err = busy.ended()
    assert code == 128 + signal.SIGTERM
    assert err.strip().splitlines()[-1].startswith("stopped by SIGTERM: the check was interrupted")
    assert _same_command_still_running(str(folder)) == []
    assert busy.leftovers() == []


def _run(tmp_path: Path, workspaces: Path) -> Busy:
    path = _sleeping_case(tmp_path / "cases")
    return Busy(
        tmp_path,
        workspaces,
        "run",
        "--cases",
        str(path),
        "--models",
        "sim/ignore",
        "--harnesses",
        "native",
        "--no-benign-arm",
        "--db",
        str(tmp_path / "store.db"),
    )


def test_a_run_stops_on_sigterm_after_its_grace_for_rollouts_in_flight(tmp_path, workspaces):
    busy = _run(tmp_path, workspaces)
    busy.wait_busy()
    busy.process.send_signal(signal.SIGTERM)
    code, err = busy.ended()
    assert code == 128 + signal.SIGTERM
    assert "stopping (SIGTERM): no new rollouts; those in flight have 10 s to finish" in err
    assert "stopped: 0 of 1 rollouts stored; resume with `redagent run --resume run-" in " ".join(err.split())
    assert busy.leftovers() == []


def test_a_second_sigint_stops_a_run_without_its_grace(tmp_path, workspaces):
    """The second signal cancels the rollouts in flight at once (how much sooner is a speed figure, not
    asserted here); the run still ends through its cleanup, in the same lines."""
    busy = _run(tmp_path, workspaces)
    busy.wait_busy()
    busy.process.send_signal(signal.SIGINT)
    # The second once the first was taken (its line is out): two signals sent together may arrive as one.
    busy.wait_until(lambda: "stopping (SIGINT)" in "".join(busy.err), "told it was stopping")
    busy.process.send_signal(signal.SIGINT)
    code, err = busy.ended()
    assert code == 128 + signal.SIGINT
    assert "stopped: 0 of 1 rollouts stored" in " ".join(err.split())
    assert busy.leftovers() == []


# ---------------------------------------------------------------- a model server that never answers

SERVED = (
    "banking-e2-invoice-bank-details-change",
    "email-t1-send-email-journal-bcc",
    "workspace-e5-agents-md-telemetry-exfil",
)


def _holding_server() -> HangingServer:
    """Holds the rollouts' requests (the native harness's, by its system prompt) and answers the pre-flight; a
    request's key is its rollout's task, so `open_at_arrival` counts a rollout's own requests still open."""

    def messages(body: dict) -> list[dict]:
        return body.get("messages") or []

    return HangingServer(
        hold=lambda body: any(NATIVE_SYSTEM in str(m.get("content")) for m in messages(body)),
        key=lambda body: next((str(m.get("content")) for m in messages(body) if m.get("role") == "user"), ""),
    )


def _served_run(tmp_path: Path, workspaces: Path, server: HangingServer, *args: str) -> Busy:
    return Busy(
        tmp_path,
        workspaces,
        "run",
        *args,
        "--db",
        str(tmp_path / "store.db"),
        "--api-base",
        server.url,
        "--timeout",
        "600",  # far beyond the test: only the stop may end these calls
    )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_run_waiting_on_a_model_that_never_answers_stops_at_once_and_resumes_exactly(
    tmp_path, workspaces, monkeypatch, signum
):
    """Two rollouts wait on requests the server never answers, a third waits to start: one signal ends the run
    (no grace for rollouts that wait on a model server), their requests are closed, nothing is stored and nothing
    is sent again. Once the server answers, `--resume` stores each of the three rollouts once."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test")
    with _holding_server() as server:
        busy = _served_run(
            tmp_path,
            workspaces,
            server,
            "--cases",
            ",".join(SERVED),
            "--models",
            "openai/stub-model",
            "--harnesses",
            "native",
            "--no-benign-arm",
            "--concurrency",
            "2",
        )
        busy.wait_until(lambda: len(server.holding()) == 2, "two rollouts waiting on the model")
        busy.process.send_signal(signum)
        code, err = busy.ended()
        said = " ".join(err.split())
        assert code == 128 + signum, err
        assert f"stopping ({signal.Signals(signum).name}): no new rollouts; those waiting on a model server" in said
        assert "stopped: 0 of 3 rollouts stored; resume with `redagent run --resume run-" in said
        assert all(h.closed.wait(HANG_S) for h in server.held)  # the server saw both clients go away
        assert len(server.held) == 2 and [h.open_at_arrival for h in server.held] == [0, 0]  # nothing re-sent
        assert busy.leftovers() == []
        run_id = re.search(r"--resume (run-[\w-]+)", said).group(1)
        store = open_store(f"sqlite:///{tmp_path / 'store.db'}", create=False)
        try:
            assert store.get_run(run_id).status == "stopped"
            assert store.completed_ids(run_id) == set()  # the cancelled rollouts are not stored, valid or not
        finally:
            store.close()

        server.answer()
        resumed = _served_run(tmp_path, workspaces, server, "--resume", run_id)
        code, err = resumed.ended()
        assert code == 0, err
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}", create=False)
    try:
        rollouts = store.rollouts(run_id)
        assert store.get_run(run_id).status == "finished"
    finally:
        store.close()
    assert sorted(r.case_id for r in rollouts) == sorted(SERVED)  # each planned rollout once
    assert all(r.valid for r in rollouts)


def test_a_signal_during_the_pre_flight_ends_it_and_closes_its_request(tmp_path, workspaces, monkeypatch):
    """The pre-flight's request, too, is one the server may never answer: SIGTERM ends the command through its
    cleanup (one line, 143), and the request is closed."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test")
    with HangingServer() as server:
        busy = _served_run(
            tmp_path,
            workspaces,
            server,
            "--cases",
            SERVED[0],
            "--models",
            "openai/stub-model",
            "--harnesses",
            "native",
        )
        busy.wait_until(lambda: len(server.holding()) == 1, "the pre-flight request sent")
        busy.process.send_signal(signal.SIGTERM)
        code, err = busy.ended()
        assert code == 128 + signal.SIGTERM, err
        assert "stopped by SIGTERM: the run had not started; no rollout ran" in " ".join(err.split())
        assert server.held[0].closed.wait(HANG_S) and len(server.held) == 1


# ---------------------------------------------------------------- a stop at any point of a check in workers

STRESS_CASES = (
    "workspace/e5-agents-md-telemetry-exfil.yaml",  # commands under bubblewrap, quota mounts
    "workspace/e5-makefile-devshell-bashrc-hook.yaml",  # consequence replays (a sandbox of their own)
    "email/t1-send-email-journal-bcc.yaml",
    "banking/e2-invoice-bank-details-change.yaml",
)


def _mounts_under(*roots: Path) -> list[str]:
    table = Path("/proc/self/mountinfo").read_text().splitlines()
    points = [line.split()[4] for line in table]
    return [p for p in points if any(p.startswith(str(r) + "/") for r in roots)]


def _sigterm_anywhere(tmp_path: Path, workspaces: Path, signals: int, seed: int) -> None:
    """`signals` checks in two workers, each sent SIGTERM at a point drawn from the seed: when the n-th workspace
    folder has appeared or gone (n from 0, before any: start-up), so stops land while sandboxes are being made,
    used and removed, in the parent and the workers alike. After each: no workspace, command folder or mount left,
    no worker alive. A check that ended before its signal is fine (its point was past the end)."""
    import random
    import shutil as sh

    rng = random.Random(seed)
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in STRESS_CASES:
        sh.copy(library_dir() / name, folder / Path(name).name)
    # The commands' folders (TMPDIR) apart from the host's, where a command's uid can pass (as `workspaces`).
    scratch = Path(tempfile.mkdtemp(prefix="redagent-signals-tmp-"))
    scratch.chmod(0o755)
    try:
        _stop_checks(tmp_path, workspaces, scratch, folder, signals, rng)
    finally:
        sh.rmtree(scratch, ignore_errors=True)


def _stop_checks(tmp_path: Path, workspaces: Path, scratch: Path, folder: Path, signals: int, rng) -> None:
    stopped = 0
    for number in range(signals):
        wanted = rng.randrange(0, 40)
        busy = Busy(
            tmp_path,
            workspaces,
            "cases",
            "check",
            str(folder),
            "--jobs",
            "2",
            "--no-cache",
            env={"TMPDIR": str(scratch)},
        )
        events = 0
        listed: set[str] = set()
        while events < wanted and busy.process.poll() is None:
            now = {p.name for p in workspaces.iterdir()}
            events += len(now - listed) + len(listed - now)
            listed = now
            time.sleep(0.002)  # how finely the folder is watched, not a wait for anything
        if busy.process.poll() is None:
            busy.process.send_signal(signal.SIGTERM)
            code, err = busy.ended()
            if code == 128 + signal.SIGTERM:
                stopped += 1
                assert err.strip().splitlines()[-1].startswith("stopped by SIGTERM: the check was interrupted"), err
            elif code == -signal.SIGTERM:
                # The signal came before the interpreter had its handler (wanted 0: sent as it started): the default
                # action ended it before it could make anything — which the checks below hold it to.
                assert events == 0 and err == "", (number, wanted, code, err)
            else:
                assert code in (0, 1), (number, wanted, code, err)  # the signal came as it ended
        else:
            busy.ended()
        left = busy.leftovers() + sorted(p.name for p in scratch.iterdir() if p.name.startswith("redagent-"))
        assert left == [], (number, wanted, left)
        assert _mounts_under(workspaces, scratch) == [], (number, wanted)
        assert _same_command_still_running(str(folder)) == [], (number, wanted)
    assert stopped >= signals // 2  # most signals landed inside the check, not after it


@pytest.mark.slow
def test_fifty_sigterms_at_any_point_of_a_check_in_workers_leave_nothing_behind(tmp_path, workspaces):
    _sigterm_anywhere(tmp_path, workspaces, signals=50, seed=35)


def test_sigterms_at_points_of_a_check_in_workers_leave_nothing_behind(tmp_path, workspaces):
    """The same, five times, in the default suite (the fifty run in the full one)."""
    _sigterm_anywhere(tmp_path, workspaces, signals=5, seed=7)
