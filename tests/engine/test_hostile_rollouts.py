"""Rollouts that end badly still end cleanly: cancelled, crashed or with a workspace the final snapshot
cannot read, the sandbox is closed, the workspace removed, and the rollout is invalid with its reason."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from redagent.cases.execution import CaseRun
from redagent.cases.loader import library_dir, load_cases
from redagent.engine import rollout as rollout_module
from redagent.engine.rollout import execute_rollout
from redagent.engine.types import RolloutKey
from redagent.llm.client import ModelReply, ToolCall
from redagent.sandbox.services.workspace import Workspace
from redagent.store.db import open_store
from tests.conftest import needs_bwrap

CASE_FILE = library_dir() / "workspace" / "t1-run-command-preflight-script.yaml"
HOSTILE = (
    "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('agent.sock')\"; mkfifo pipe; "
    "ln -s loop loop; ln -s / root; printf x > \"$(printf 'bad\\377name')\"; "
)


@pytest.fixture
def case():
    return load_cases([str(CASE_FILE)])[0]


@pytest.fixture
def runs(monkeypatch):
    """Every CaseRun the rollouts make, to look at their workspaces afterwards."""
    made: list[CaseRun] = []

    class Recorded(CaseRun):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(rollout_module, "CaseRun", Recorded)
    return made


class Scripted:
    """A model that makes the given tool calls one per reply, then answers."""

    def __init__(self, *calls: tuple[str, dict]) -> None:
        self.calls = list(calls)

    async def complete(self, request) -> ModelReply:
        if not self.calls:
            return ModelReply(content="done")
        name, args = self.calls.pop(0)
        return ModelReply(tool_calls=[ToolCall(f"c{len(self.calls)}", name, json.dumps(args))])


def key(model: str = "test/scripted", harness: str = "native") -> RolloutKey:
    return RolloutKey(
        case_id="workspace-t1-run-command-preflight-script",
        model=model,
        harness=harness,
        cue="clean",
        defense="none",
        attempt=0,
    )


def children() -> set[int]:
    """Live (not zombie) child processes of this process."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            if fields.get("PPid", "").strip() == str(os.getpid()) and not fields.get("State", "").startswith("Z"):
                found.add(int(entry))
    return found


@needs_bwrap
def test_cancelled_rollout_kills_its_command_and_removes_its_workspace(case, runs):
    before = children()

    async def scenario():
        model = Scripted(("run_command", {"command": "touch started; sleep 50", "timeout": 60}))
        task = asyncio.create_task(execute_rollout("run", case, key(), lambda *_: model))
        while not (runs and (runs[0].env.workspace_dir / "started").exists()):
            assert not task.done()
            await asyncio.sleep(0.01)  # polls the condition; the command is running once the file exists
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(scenario(), 30))
    assert not runs[0].env.workspace_dir.exists()
    assert children() <= before


@needs_bwrap
def test_a_hostile_workspace_is_judged_and_removed(case, runs):
    record = asyncio.run(
        execute_rollout(
            "run",
            case,
            key(),
            lambda *_: Scripted(
                ("run_command", {"command": HOSTILE + "echo made"}),
                ("read_file", {"path": "pipe"}),
                ("list_dir", {"path": "."}),
            ),
        )
    )
    assert record.valid, (record.invalid_reason, record.invalid_detail)
    files = record.final["workspace"]["files"]
    assert files["agent.sock"] == {"special": "socket"} and files["pipe"] == {"special": "fifo"}
    assert "bad\\xffname\x00" in files  # a name that is not UTF-8: its escaped bytes and a NUL (sandbox/names.py)
    assert not runs[0].env.workspace_dir.exists()


def test_a_final_snapshot_that_fails_is_an_invalid_rollout(case, runs, monkeypatch):
    real = Workspace.snapshot
    taken: list[int] = []

    def failing_second(self):
        taken.append(1)
        if len(taken) > 1:
            raise RuntimeError("unreadable workspace")
        return real(self)

    monkeypatch.setattr(Workspace, "snapshot", failing_second)
    record = asyncio.run(
        execute_rollout("run", case, key(), lambda *_: Scripted(("write_file", {"path": "x.txt", "content": "y"})))
    )
    assert not record.valid and record.invalid_reason == "sandbox_error"
    assert record.invalid_detail == "final snapshot failed: RuntimeError: unreadable workspace"
    assert record.E is None and record.U is None and record.final == {} and record.baseline
    assert [r["action"] for r in record.receipts] == ["write_file"] and record.events
    assert not runs[0].env.workspace_dir.exists()


def test_a_baseline_that_fails_is_an_invalid_rollout(case, monkeypatch):
    made: list[Path] = []
    real_load = Workspace.load

    def load(self, seed):
        real_load(self, seed)
        made.append(self.root)

    def broken(self):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(Workspace, "load", load)
    monkeypatch.setattr(Workspace, "snapshot", broken)
    record = asyncio.run(execute_rollout("run", case, key(), lambda *_: Scripted()))
    assert not record.valid and record.invalid_reason == "sandbox_error"
    assert "Input/output error" in record.invalid_detail
    assert made and not made[0].exists()


def test_cancelled_inside_the_harness_is_an_invalid_rollout(case, runs):
    class Cancelling:
        async def complete(self, request):
            raise asyncio.CancelledError()  # a future the harness awaited was cancelled, not this task

    record = asyncio.run(execute_rollout("run", case, key(), lambda *_: Cancelling()))
    assert not record.valid and record.invalid_reason == "cancelled" and record.E is None
    assert not runs[0].env.workspace_dir.exists()


def test_a_crashing_model_factory_leaves_no_workspace(case, runs):
    def factory(*_):
        raise LookupError("no such model")

    with pytest.raises(LookupError):
        asyncio.run(execute_rollout("run", case, key(), factory))
    assert runs and not runs[0].env.workspace_dir.exists()


@needs_bwrap
def test_redagent_run_on_a_case_whose_agent_makes_a_socket(tmp_path):
    text = CASE_FILE.read_text()
    benign = "      args: {command: python3 validate_manifest.py data/manifest_2026-03.csv}\n"
    assert benign in text
    # A block scalar needs no escaping: the command goes in as the agent would type it.
    hostile = text.replace(
        benign,
        f"      args:\n        command: >-\n          {HOSTILE}"
        "python3 validate_manifest.py data/manifest_2026-03.csv\n",
    )
    case_file = tmp_path / "hostile.yaml"
    case_file.write_text(
        hostile.replace("id: workspace-t1-run-command-preflight-script", "id: workspace-hostile-socket")
    )
    db = f"sqlite:///{tmp_path / 'run.db'}"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "redagent",
            "run",
            "--cases",
            str(case_file),
            "--models",
            "sim/comply,sim/ignore",
            "--harnesses",
            "native,shell",
            "--db",
            db,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["planned"] == result["completed"] == 8 and result["invalid"] == 0, result
    with open_store(db) as store:
        rollouts = list(store.iter_export(result["run_id"]))
        assert store.get_run(result["run_id"]).status == "finished"
    made = [r for r in rollouts if (r["final"]["workspace"]["files"].get("agent.sock") or {}).get("special")]
    assert made, "no rollout ran the hostile command"
