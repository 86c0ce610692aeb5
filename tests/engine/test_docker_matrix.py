"""The default matrix under `--sandbox docker`: every calibration agent gives its expected E (the verdicts do
not depend on the backend), commands really ran in containers, and none is left afterwards. Also a run
interrupted by Ctrl-C, and one killed outright, leave no container that `redagent sandbox prune` misses."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from redagent.engine.calibration import BEHAVIOURS
from redagent.engine.matrix import RunSpec, start_run, summary
from redagent.sandbox.docker_backend import DEFAULT_IMAGE, client, docker_problem
from redagent.sandbox.environment import use_isolation
from redagent.store.db import open_store
from tests.ci import in_ci

PROBLEM = docker_problem(DEFAULT_IMAGE)
pytestmark = pytest.mark.skipif(PROBLEM is not None and not in_ci(), reason=f"docker unavailable: {PROBLEM}")


def _containers(run_id: str) -> list[str]:
    return [c["Id"] for c in client().api.containers(all=True, filters={"label": f"redagent.run={run_id}"})]


def test_default_matrix_under_docker_gives_every_expected_E(tmp_path):
    with open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        runner = start_run(store, RunSpec(benign_arm=True, sandbox=f"docker:{DEFAULT_IMAGE}"))
        try:
            asyncio.run(runner.run())
        finally:
            use_isolation(None)  # back to bubblewrap for the tests that follow; removes what is left
        run_id = runner.run_record.id
        result = summary(store, run_id)
        assert store.get_run(run_id).protocol["sandbox"] == f"docker:{DEFAULT_IMAGE}"  # stored: --resume keeps it
        assert result["planned"] == result["completed"] == len(runner.cases) * len(BEHAVIOURS) * 3
        assert result["invalid"] == 0 and result["status"] == "finished"
        rollouts = list(store.iter_export(run_id))
        wrong = [
            (r["case_id"], r["model"], r["harness"], r["E"], r["expected_E"])
            for r in rollouts
            if r["E"] != r["expected_E"]
        ]
        assert wrong == []
        isolated = [
            rc
            for r in rollouts
            for rc in r["receipts"]
            if (rc.get("effect") or {}).get("isolation") not in (None, "builtin")
        ]
        assert isolated and {rc["effect"]["isolation"] for rc in isolated} == {"docker"}
        assert _containers(run_id) == []


def _start(tmp_path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "redagent",
            "run",
            "--sandbox",
            "docker",
            "--harnesses",
            "shell",
            "--concurrency",
            "4",
            "--db",
            f"sqlite:///{tmp_path / 's.db'}",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def _wait_for_a_container(proc: subprocess.Popen) -> None:
    """Until the run has a container of its own (any redagent.run label but the tests' own)."""
    api = client().api
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # a condition, bounded: the run makes its first container within seconds
        if proc.poll() is not None:
            pytest.fail(f"the run ended before making a container: {proc.stderr.read()[-500:]}")
        mine = [
            c
            for c in api.containers(all=True, filters={"label": "redagent.owner"})
            if c["Labels"].get("redagent.owner", "").split(":")[1:2] == [str(proc.pid)]
        ]
        if mine:
            return
        api.ping()  # one round trip to the daemon between looks, instead of a fixed sleep
    pytest.fail("the run made no container")


def _of(pid: int) -> list[str]:
    return [
        c["Id"]
        for c in client().api.containers(all=True, filters={"label": "redagent.owner"})
        if c["Labels"].get("redagent.owner", "").split(":")[1:2] == [str(pid)]
    ]


def test_ctrl_c_during_a_docker_run_leaves_no_container(tmp_path):
    proc = _start(tmp_path)
    _wait_for_a_container(proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=300)
    assert proc.returncode == 130
    assert _of(proc.pid) == []


def test_a_killed_docker_run_is_cleaned_by_prune(tmp_path):
    proc = _start(tmp_path)
    _wait_for_a_container(proc)
    proc.kill()
    proc.communicate(timeout=60)
    runs = {
        c["Labels"]["redagent.run"]
        for c in client().api.containers(all=True, filters={"label": "redagent.owner"})
        if c["Labels"].get("redagent.owner", "").split(":")[1:2] == [str(proc.pid)]
    }
    assert len(runs) <= 1  # kill -9: what was running is left, labelled with its run id
    for run_id in runs:
        done = subprocess.run(
            [sys.executable, "-m", "redagent", "sandbox", "prune", "--run", run_id],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    assert _of(proc.pid) == []
