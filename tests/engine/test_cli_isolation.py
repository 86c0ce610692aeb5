"""The CLI harness machinery end to end with a small stand-in CLI (no real CLI installed needed).

The stand-in is a Python program that runs inside the real bubblewrap sandbox and behaves like an
agent CLI: it starts the stdio MCP relay, lists the tools, and loops over the model endpoint on
loopback (chat completions) until the model stops calling tools. Other modes hang, crash, eat
memory or speak garbage, which must become typed invalid rollouts.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from redagent.cases.loader import load_cases
from redagent.engine.calibration import BEHAVIOURS
from redagent.engine.harnesses.cli import harness as harness_module
from redagent.engine.harnesses.cli.harness import CLIHarness
from redagent.engine.harnesses.cli.isolation import Limits
from redagent.engine.harnesses.cli.profile import Profile, Setup
from redagent.engine.rollout import execute_rollout
from redagent.engine.sim import SimModel
from redagent.engine.types import RolloutKey

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

FAKE_CLI = r"""
import json, os, signal, socket, subprocess, sys, urllib.request
mode, prompt = sys.argv[1], sys.argv[2]
if mode == "sleep":  # hangs until the harness kills it
    signal.pause()
if mode == "crash":
    sys.stderr.write("boom: the stand-in crashed\n"); sys.exit(3)
if mode == "memory":
    hog = [bytearray(1 << 20) for _ in range(400)]; signal.pause()
def post(path, body):
    req = urllib.request.Request("http://127.0.0.1:8765" + path, data=body,
                                 headers={"Content-Type": "application/json"})
    try:
        return json.loads(urllib.request.urlopen(req, timeout=60).read())
    except urllib.error.HTTPError as exc:
        return {"status": exc.code}
if mode == "protocol":
    print(json.dumps(post("/v1/chat/completions", b"{garbage"))); sys.exit(1)
facts = {"uid": os.getuid(), "home": os.environ["HOME"], "cwd": os.getcwd()}
for path in ("/home/agent/probe", "/workdir/probe", "/usr/probe", "/etc/probe"):
    try:
        open(path, "w").close(); facts[path] = "writable"
    except OSError:
        facts[path] = "read-only"
try:
    socket.create_connection(("10.255.255.1", 80), timeout=2); facts["network"] = "reachable"
except OSError:
    facts["network"] = "unreachable"
facts["root_listing"] = sorted(os.listdir("/"))
mcp = subprocess.Popen(["/usr/bin/python3", "/opt/redagent/mcp_stdio.py", "/run/redagent/tools.sock"],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def rpc(ident, method, params):
    mcp.stdin.write((json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n").encode())
    mcp.stdin.flush()
    return json.loads(mcp.stdout.readline())["result"]
rpc(1, "initialize", {"protocolVersion": "2025-06-18"})
tools = [{"type": "function", "function": {"name": "fake__" + t["name"], "description": t["description"],
                                           "parameters": t["inputSchema"]}} for t in rpc(2, "tools/list", {})["tools"]]
messages = [{"role": "system", "content": "You are the stand-in CLI."}, {"role": "user", "content": prompt}]
for n in range(50):
    reply = post("/v1/chat/completions", json.dumps({"model": "m", "messages": messages, "tools": tools}).encode())
    message = reply["choices"][0]["message"]
    messages.append(message)
    if not message.get("tool_calls"):
        break
    for call in message["tool_calls"]:
        result = rpc(10 + n, "tools/call", {"name": call["function"]["name"].removeprefix("fake__"),
                                            "arguments": json.loads(call["function"]["arguments"])})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result["content"][0]["text"]})
print(json.dumps({"facts": facts, "final": message.get("content")}))
"""


class StandIn(Profile):
    name = "stand-in"
    version = "1.0"
    package = "stand-in"
    kind = "npm"
    binary = "stand-in"
    wire = "chat"

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def config_files(self, setup: Setup) -> dict[str, str]:
        return {"stand_in.py": FAKE_CLI}

    def command(self, executable: str, prompt: str, turn: int, session: str | None, setup: Setup) -> list[str]:
        return ["/usr/bin/python3", f"{setup.home}/stand_in.py", self.mode, prompt]

    def transcript(self, home: Path, stdout: str) -> Any:
        return json.loads(stdout) if stdout.strip().startswith("{") else stdout


class Installed:
    installed = True
    executable = Path("/usr/bin/python3")

    def path(self) -> str:
        return "/usr/bin:/bin"

    def read_only(self) -> list[Path]:
        return []


@pytest.fixture(autouse=True)
def _installed(monkeypatch):
    monkeypatch.setattr(harness_module, "installation", lambda profile: Installed())


def _rollout(
    mode: str,
    agent: str = "sim/comply",
    case_id: str = "email-t1-send-email-journal-bcc",
    limits: Limits | None = None,
    defense: str = "none",
):
    case = next(c for c in load_cases() if c.id == case_id)
    harness = CLIHarness(StandIn(mode), limits)
    key = RolloutKey(case.id, agent, "stand-in", "clean", defense, 1)
    from redagent.engine import rollout as rollout_module

    original = rollout_module.get_harness
    rollout_module.get_harness = lambda name: harness
    try:
        return asyncio.run(execute_rollout("run-cli", case, key, lambda n, c: SimModel(n, c)))
    finally:
        rollout_module.get_harness = original


def _artifact(record) -> dict[str, Any]:
    return json.loads(next(e["text"] for e in record.events if e["role"] == "transcript"))


@pytest.mark.parametrize("agent", sorted(BEHAVIOURS))
def test_every_calibration_agent_through_the_stand_in_cli_gets_its_expected_E(agent):
    record = _rollout("agent", agent)
    assert record.valid, record.invalid_detail
    assert record.E == record.expected_E


def test_the_sandbox_isolates_the_cli():
    record = _rollout("agent")
    facts = _artifact(record)["turns"][0]["transcript"]["facts"]
    assert facts["network"] == "unreachable"
    assert facts["/home/agent/probe"] == facts["/workdir/probe"] == "writable"
    assert facts["/usr/probe"] == facts["/etc/probe"] == "read-only"
    assert facts["cwd"] == "/workdir" and facts["home"] == "/home/agent"
    assert "root" not in facts["root_listing"] and "work" not in facts["root_listing"]


def test_trajectory_comes_from_the_choke_points_and_the_transcript_is_kept():
    record = _rollout("agent")
    roles = [e["role"] for e in record.events]
    assert roles[0] == "user" and roles[-1] == "transcript"
    calls = [e for e in record.events if e["role"] == "assistant" and e["tool_call"]]
    tools = [e for e in record.events if e["role"] == "tool"]
    assert calls and len(calls) == len(tools)
    assert [c["tool_call"]["id"] for c in calls] == [t["tool_call"]["id"] for t in tools]
    assert calls[0]["tool_call"]["id"].startswith("call_")  # the model's own call id, matched by the bridge
    art = _artifact(record)
    assert art["harness"] == "stand-in" and art["config_hash"] and art["mcp"]["calls"] == len(calls)
    turn = art["turns"][0]
    assert turn["exit_code"] == 0 and turn["cpu_seconds"] > 0 and turn["seconds"] > 0
    assert art["endpoint"]["prompts"][0]["system"] == "You are the stand-in CLI."
    assert art["endpoint"]["tool_descriptions"]["send_email"] == "verbatim"
    assert record.final_text == _artifact(record)["turns"][0]["transcript"]["final"]


def test_policy_reminder_reaches_the_agent_through_the_endpoint():
    record = _rollout("agent", "sim/reminder-sensitive", defense="policy-reminder")
    assert record.valid and record.E == 0 == record.expected_E


def test_a_hanging_cli_is_killed_and_the_rollout_is_a_harness_timeout():
    record = _rollout("sleep", limits=Limits(wall_seconds=2))
    assert not record.valid and record.invalid_reason == "harness_timeout" and record.E is None


def test_a_crashing_cli_is_a_harness_crash_with_its_last_stderr_line():
    record = _rollout("crash")
    assert record.invalid_reason == "harness_crash" and "boom" in record.invalid_detail
    assert "exited with 3" in record.invalid_detail


def test_a_cli_over_its_memory_limit_is_killed():
    record = _rollout("memory", limits=Limits(wall_seconds=60, memory_mb=150))
    assert record.invalid_reason == "harness_crash" and "memory" in record.invalid_detail


def test_garbage_on_the_wire_is_an_endpoint_protocol_failure():
    record = _rollout("protocol")
    assert record.invalid_reason == "endpoint_protocol"


def test_a_missing_cli_is_one_line_naming_the_install_command(monkeypatch):
    class Missing(Installed):
        installed = False

    monkeypatch.setattr(harness_module, "installation", lambda profile: Missing())
    record = _rollout("agent")
    assert record.invalid_reason == "harness_missing"
    assert record.invalid_detail == "harness stand-in is not installed; run `redagent harnesses install stand-in`"


def test_the_transcript_artifact_is_bounded_and_stays_one_json_document():
    from types import SimpleNamespace

    from redagent.engine.harnesses.cli.harness import ARTIFACT_CHARS

    endpoint = SimpleNamespace(artifact=lambda: {"prompts": [{"system": "s" * 500_000}], "decisions": []})
    bridge = SimpleNamespace(listed=1, calls=0)
    turns = [{"turn": i, "transcript": ["x" * 400_000]} for i in range(3)]
    text = CLIHarness(StandIn("agent"))._artifact(turns, endpoint, bridge)
    assert len(text) <= ARTIFACT_CHARS
    data = json.loads(text)
    assert data["harness"] == "stand-in" and len(data["turns"]) == 3
