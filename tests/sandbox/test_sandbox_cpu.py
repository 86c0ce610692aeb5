"""A sandboxed command's CPU is counted for the process that ran it: in `CommandResult.cpu_s` and in the process's
RUSAGE_CHILDREN, which the benchmarks read. bubblewrap's PID 1 outlives its parent, so without the reaper between the
engine and bwrap the command's CPU went to init and a command burning a second showed as a few milliseconds."""

from __future__ import annotations

import resource
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from redagent.sandbox import isolation
from redagent.sandbox.environment import workspace_root
from redagent.sandbox.isolation import Bubblewrap, sandbox_cpu_problem
from redagent.sandbox.services.workspace import remove_tree
from tests.conftest import needs_bwrap

pytestmark = [
    needs_bwrap,
    pytest.mark.skipif(sandbox_cpu_problem() is not None, reason=str(sandbox_cpu_problem())),
]

LOOP = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"
HANG_S = 120  # a hang catcher: the commands here take about a second of CPU


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _loop_cpu_outside() -> float:
    """What the same loop costs as a plain child process (waited for, so counted): the reference."""
    before = _children_cpu()
    subprocess.run(["sh", "-c", LOOP], check=True)
    return _children_cpu() - before


@pytest.fixture
def workspace():
    """A workspace where rollouts' live (pytest's own folders are their owner's only: a command's uid could not
    pass through them)."""
    folder = Path(tempfile.mkdtemp(prefix="redagent-ws-cpu-", dir=workspace_root()))
    yield folder
    remove_tree(folder)


def test_a_command_s_cpu_is_counted_for_the_process_that_ran_it(workspace):
    reference = _loop_cpu_outside()
    before = _children_cpu()
    result = Bubblewrap().run(workspace, f"{LOOP}; echo done", timeout=HANG_S)
    counted = _children_cpu() - before
    assert result.exit_code == 0 and result.stdout == "done\n"
    assert result.cpu_s is not None and result.cpu_s >= 0.8 * reference, (result.cpu_s, reference)
    assert counted >= result.cpu_s * 0.99  # the process's own rusage holds it too (what the benchmarks read)


def test_a_killed_command_s_cpu_is_counted_up_to_its_kill(workspace):
    """Stopped after its loop (the rollout closing): the loop's CPU is still counted, PID 1 having reaped it."""
    stop = threading.Event()
    done = {}

    def command() -> None:
        done["result"] = Bubblewrap().run(workspace, f"{LOOP}; touch looped; sleep {HANG_S}", timeout=HANG_S, stop=stop)

    reference = _loop_cpu_outside()
    worker = threading.Thread(target=command)
    worker.start()
    deadline = time.monotonic() + HANG_S
    while not (workspace / "looped").exists():
        assert worker.is_alive() and time.monotonic() < deadline, "the loop never finished"
        time.sleep(0.02)
    stop.set()
    worker.join(HANG_S)
    result = done["result"]
    assert result.exit_code == 137 and "[killed: rollout closed]" in result.stderr
    assert result.cpu_s is not None and result.cpu_s >= 0.8 * reference, (result.cpu_s, reference)


def test_exit_codes_pass_through_the_reaper(workspace):
    sandbox = Bubblewrap()
    assert sandbox.run(workspace, "exit 3", timeout=HANG_S).exit_code == 3
    assert sandbox.run(workspace, "kill -9 $$", timeout=HANG_S).exit_code == 137
    background = sandbox.run(workspace, "sleep 600 & echo started", timeout=HANG_S)
    assert background.exit_code == 0 and background.stdout == "started\n"  # ended with PID 1, not waited for


def test_without_the_reaper_nothing_is_claimed(workspace, monkeypatch):
    monkeypatch.setattr(isolation, "_reaper_argv", lambda: ())
    result = Bubblewrap().run(workspace, "echo plain", timeout=HANG_S)
    assert result.exit_code == 0 and result.stdout == "plain\n" and result.cpu_s is None
