"""Stopping and resuming: kill -9 mid-run loses only in-flight rollouts and never duplicates one;
Ctrl-C stops cleanly (exit 130); --resume completes exactly the missing rollouts."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

RUN = [
    sys.executable,
    "-m",
    "redagent",
    "run",
    "--cases",
    "banking-*,email-*,workspace-*",
    "--concurrency",
    "2",
    "--json",
]
ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "120"}


def stored(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("select count(*) from rollout").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def start(db: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [*RUN, "--db", f"sqlite:///{db}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, text=True
    )


def wait_for(db: Path, at_least: int, proc: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while stored(db) < at_least:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "run made no progress"
        time.sleep(0.05)


def snapshot(db: Path) -> dict[str, tuple]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "select r.id, r.e, r.valid, count(e.id) from rollout r join event e on e.rollout_id = r.id group by r.id"
        ).fetchall()
    return {row[0]: row[1:] for row in rows}


def resume(db: Path, run_id: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "redagent", "run", "--resume", run_id, "--db", f"sqlite:///{db}", "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def run_id_of(db: Path) -> tuple[str, int]:
    with sqlite3.connect(db) as conn:
        return conn.execute("select id, planned from run").fetchone()


@pytest.mark.slow
def test_kill_9_then_resume_completes_without_duplicates(tmp_path):
    db = tmp_path / "killed.db"
    proc = start(db)
    wait_for(db, 150, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    run_id, planned = run_id_of(db)
    before = snapshot(db)
    assert 0 < len(before) < planned
    summary = resume(db, run_id)
    assert summary["completed"] == summary["planned"] == planned and summary["invalid"] == 0
    with sqlite3.connect(db) as conn:
        total, distinct = conn.execute("select count(*), count(distinct id) from rollout").fetchone()
        cells = conn.execute(
            "select count(*) from (select distinct case_id, model, harness, cue, defense, attempt from rollout)"
        ).fetchone()[0]
        status = conn.execute("select status from run").fetchone()[0]
    assert total == distinct == cells == planned and status == "finished"
    after = snapshot(db)
    assert {k: after[k] for k in before} == before  # rollouts stored before the kill are intact


def test_ctrl_c_stops_cleanly_and_resume_finishes(tmp_path):
    db = tmp_path / "stopped.db"
    proc = start(db)
    wait_for(db, 50, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err  # stopped by Ctrl-C: the summary is printed, the exit is not a success
    stopped = json.loads(out)
    assert stopped["completed"] < stopped["planned"] and "resume with" in err
    with sqlite3.connect(db) as conn:
        assert conn.execute("select status from run").fetchone()[0] == "stopped"
    assert stored(db) == stopped["completed"]
    summary = resume(db, stopped["run_id"])
    assert summary["completed"] == summary["planned"]
