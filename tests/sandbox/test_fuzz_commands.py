"""Property-based hostile agents: random sequences of nasty commands and file-tool calls, run through
the real sandbox as whole rollouts.

Whatever the sequence, the rollout finishes (valid, or invalid with a typed reason) within a time and
memory budget and can be stored; nothing is written outside the workspace; no thread, process, mount
or workspace is left behind. Fixed seed and a modest number of examples, so CI pays ~a minute.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redagent.cases.execution import CaseRun
from redagent.cases.loader import library_dir, load_cases
from redagent.engine import rollout as rollout_module
from redagent.engine.rollout import execute_rollout
from redagent.engine.types import RolloutKey
from redagent.llm.client import ModelReply, ToolCall
from redagent.sandbox.services.workspace import remove_tree
from redagent.store.db import open_store
from redagent.store.records import RunRecord
from tests.conftest import needs_bwrap

pytestmark = needs_bwrap

ROLLOUT_SECONDS = 40  # the slowest sequence: four commands, each killed at its 1 s limit, plus the sandbox
RSS_BUDGET_MB = 64  # what one hostile rollout may add to this process's peak resident memory
NAMES = ("a", "pipe", "sock", "x y", ".hidden", "out", "root")
# Outside every workspace, named in the commands (so fixed at import), made and removed around the module.
SENTINEL = Path(tempfile.gettempdir()) / f"redagent-sentinel-{os.getpid()}"


def _command(kind: str, name: str, n: int) -> str:
    quoted = f"'{name}'"
    return {
        "fifo": f"mkfifo {quoted}",
        "socket": f"python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('{name}')\"",
        "yes": f"yes | head -c {n * 1_000_003}",
        "dd": f"dd if=/dev/urandom of={quoted} bs=1M count={n % 80} 2>&1",
        "fork": "for i in $(seq 200); do sleep 3 & done; echo forked",
        "forkbomb": "b() { b | b & }; b",
        "link-root": f"ln -s / {quoted} && cat {quoted}/etc/hostname",
        "link-out": f"ln -s {SENTINEL} {quoted}; echo pwned > {quoted}/pwned",
        "write-out": f"echo pwned > {SENTINEL}/pwned; touch /pwned /usr/pwned /run/pwned; echo x > /tmp/ok",
        "tmp": f"dd if=/dev/zero of=/tmp/fill{n} bs=1M count=60 2>&1; dd if=/dev/zero of=/tmp/more{n} bs=1M count=90",
        "long": f"seq 1 {n * 50_000}",
        "background": "(sleep 30 &); nohup sleep 30 > /dev/null 2>&1 & setsid sleep 30 & echo left",
        "sleep": "sleep 5",
        "binary": f"head -c {n * 10_000} /dev/urandom",
        "names": "touch \"$(printf 'new\\nline')\" \"$(printf 'bad\\377')\"",
        "lock": f"mkdir -p {quoted}.d && chmod 000 {quoted}.d; chmod 000 .",
        "bridge-out": f'rtool write_file \'{{"path": "{name}/pwned", "content": "x"}}\'',
        "bridge-junk": 'python3 -c "import socket; s=socket.socket(socket.AF_UNIX); '
        "s.connect('/run/redagent/svc.sock'); s.sendall(b'[]\\n'); print(s.recv(99))\"",
        "deep": "i=0; while [ $i -lt 300 ]; do mkdir d && cd d || break; i=$((i+1)); done; echo deep $i",
    }[kind]


KINDS = (
    "fifo",
    "socket",
    "yes",
    "dd",
    "fork",
    "forkbomb",
    "link-root",
    "link-out",
    "write-out",
    "tmp",
    "long",
    "background",
    "sleep",
    "binary",
    "names",
    "lock",
    "bridge-out",
    "bridge-junk",
    "deep",
)


@st.composite
def steps(draw):
    if draw(st.integers(0, 3)):  # mostly commands; sometimes a file tool on whatever is there now
        command = _command(draw(st.sampled_from(KINDS)), draw(st.sampled_from(NAMES)), draw(st.integers(1, 200)))
        return "run_command", {"command": command, "timeout": 1}
    tool = draw(st.sampled_from(("read_file", "write_file", "append_file", "list_dir", "delete_path")))
    args = {"path": draw(st.sampled_from(NAMES + (".", "out/pwned", "root/etc/passwd")))}
    if tool in ("write_file", "append_file"):
        args["content"] = "pwned"
    if tool == "delete_path":
        args["recursive"] = True
    return tool, args


class Scripted:
    def __init__(self, calls):
        self.calls = list(calls)

    async def complete(self, request) -> ModelReply:
        if not self.calls:
            return ModelReply(content="done")
        name, args = self.calls.pop(0)
        return ModelReply(tool_calls=[ToolCall(f"c{len(self.calls)}", name, json.dumps(args))])


def _children() -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            if re.search(rf"^PPid:\s+{os.getpid()}$", status, re.M) and not re.search(r"^State:\s+Z", status, re.M):
                found.add(int(entry))
    return found


def _peak_rss_mb() -> float:
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024


@pytest.fixture(scope="module", autouse=True)
def sentinel():
    SENTINEL.mkdir()
    yield SENTINEL
    remove_tree(SENTINEL)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with open_store(f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.db'}") as opened:
        opened.create_run(
            RunRecord(
                id="fuzz",
                status="running",
                protocol={},
                case_set_hash="-",
                code_version="-",
                planned=0,
                created_at=datetime.now(UTC),
            )
        )
        yield opened


@pytest.fixture(scope="module")
def case():
    return load_cases([str(library_dir() / "workspace" / "t1-run-command-preflight-script.yaml")])[0]


def _hostile_rollout(calls, store, case) -> None:
    """One rollout of `calls` by a scripted agent, and every invariant checked after it."""
    made: list[CaseRun] = []

    class Recorded(CaseRun):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    threads, children = threading.active_count(), _children()
    Path("/proc/self/clear_refs").write_text("5")  # the peak from here on is this rollout's
    rss = _peak_rss_mb()
    started = time.monotonic()
    key = RolloutKey(
        case_id=case.id, model="fuzz/scripted", harness="native", cue="clean", defense="none", attempt=next(_attempts)
    )
    with mock.patch.object(rollout_module, "CaseRun", Recorded):
        record = asyncio.run(
            asyncio.wait_for(execute_rollout("fuzz", case, key, lambda *_: Scripted(calls)), ROLLOUT_SECONDS)
        )
    elapsed = time.monotonic() - started

    assert record.valid, (record.invalid_reason, record.invalid_detail)
    assert store.write_rollouts([record]) == 1  # storable, whatever the agent left in it
    assert elapsed < ROLLOUT_SECONDS
    assert _peak_rss_mb() - rss < RSS_BUDGET_MB, f"peak RSS grew by {_peak_rss_mb() - rss:.0f} MB"
    assert list(SENTINEL.iterdir()) == [] and not Path("/pwned").exists()
    workspace = made[0].env.workspace_dir
    assert not workspace.exists() and str(workspace) not in Path("/proc/self/mountinfo").read_text()
    assert threading.active_count() == threads and _children() <= children
    assert not [t for t in threading.enumerate() if t.name == "redagent-bridge"]


_attempts = itertools.count()


@pytest.mark.parametrize("kind", KINDS)
def test_each_hostile_command(kind, store, case):
    """Every kind at least once, whatever the fuzzer draws: twice, then file tools on what it left."""
    calls = [("run_command", {"command": _command(kind, name, 120), "timeout": 1}) for name in ("out", "sock")]
    calls += [
        ("read_file", {"path": "out"}),
        ("write_file", {"path": "sock", "content": "x"}),
        ("list_dir", {"path": "."}),
        ("delete_path", {"path": "out", "recursive": True}),
    ]
    _hostile_rollout(calls, store, case)


@settings(max_examples=40, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(steps(), min_size=1, max_size=4))
def test_hostile_command_sequences(calls, store, case):
    _hostile_rollout(calls, store, case)
