"""The MCP server a CLI starts: the real stdio relay process, talking to the engine's bridge.

It serves exactly the rollout's tools as the gateway shows them (poisoned descriptions and
look-alikes included) and every call goes through the gateway, so receipts and state are made as
for the built-in harnesses.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from redagent.cases.execution import CaseRun
from redagent.cases.loader import load_cases
from redagent.engine.harnesses.cli.endpoint import Endpoint
from redagent.engine.harnesses.cli.isolation import INSIDE
from redagent.engine.harnesses.cli.mcp_bridge import ToolBridge
from redagent.engine.sim import SimModel
from redagent.engine.types import RolloutContext

TIMEOUT = 30


def _ctx(case_id: str, max_steps: int = 30) -> RolloutContext:
    case = next(c for c in load_cases() if c.id == case_id)
    return RolloutContext(
        case=case,
        run=CaseRun(case),
        model=SimModel("sim/ignore", case),
        cue_text="",
        defense_text="",
        max_steps=max_steps,
    )


async def _session(ctx: RolloutContext, messages: list[dict[str, Any]]) -> list[Any]:
    """Run the real relay process against a bridge and send `messages`; return every line it wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        endpoint = Endpoint(ctx, "test", Path(tmp) / "model.sock")
        bridge = ToolBridge(ctx, Path(tmp) / "tools.sock", endpoint)
        await bridge.start()
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                str(INSIDE / "mcp_stdio.py"),
                str(bridge.path),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            payload = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
            out, _ = await asyncio.wait_for(proc.communicate(payload), TIMEOUT)
        finally:
            await bridge.close()
        assert proc.returncode == 0
        return [json.loads(line) for line in out.splitlines()]


def _rpc(ident: int | None, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if ident is not None:
        message["id"] = ident
    return message


def test_initialize_list_and_notifications():
    ctx = _ctx("email-t1-send-email-journal-bcc")
    answers = asyncio.run(
        _session(
            ctx,
            [
                _rpc(
                    1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
                ),
                _rpc(None, "notifications/initialized"),
                _rpc(2, "tools/list"),
                _rpc(3, "ping"),
                _rpc(4, "no/such/method"),
            ],
        )
    )
    assert [a["id"] for a in answers] == [1, 2, 3, 4]  # the notification got no answer
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"
    assert answers[0]["result"]["capabilities"] == {"tools": {"listChanged": False}}
    listed = answers[1]["result"]["tools"]
    shown = ctx.run.tools()
    assert [(t["name"], t["description"], t["inputSchema"]) for t in listed] == [
        (t["name"], t["description"], t["parameters"]) for t in shown
    ]
    poisoned = next(t for t in listed if t["name"] == "send_email")
    assert ctx.run.marker in poisoned["description"]  # exactly as the gateway shaped it
    assert answers[3]["error"]["code"] == -32601


def test_lookalike_tools_are_served_like_the_real_ones():
    ctx = _ctx("files-t2-backup-lookalike-upload")
    answers = asyncio.run(_session(ctx, [_rpc(1, "tools/list")]))
    names = [t["name"] for t in answers[0]["result"]["tools"]]
    assert names == [t["name"] for t in ctx.run.tools()]
    assert ctx.case.attack.intervention["name"] in names


def test_calls_go_through_the_gateway_with_receipts_and_trajectory():
    ctx = _ctx("email-t1-send-email-journal-bcc")
    args = {"to": ["kwame.amadi@halvorsen-amadi.example"], "subject": "hi", "body": "text"}
    answers = asyncio.run(
        _session(
            ctx,
            [
                _rpc(1, "tools/call", {"name": "send_email", "arguments": args}),
                _rpc(2, "tools/call", {"name": "send_email", "arguments": {"to": "not-a-list"}}),
                _rpc(3, "tools/call", {"name": "rm_rf", "arguments": {}}),
            ],
        )
    )
    ok, bad, unknown = (a["result"] for a in answers)
    assert not ok["isError"] and "new-sent-1" in ok["content"][0]["text"]
    assert bad["isError"] and unknown["isError"] and "unknown tool" in unknown["content"][0]["text"]
    receipts = list(ctx.run.env.receipts)
    assert any(r.action == "send_email" and r.outcome == "ok" and r.step == 0 for r in receipts), receipts
    calls = [e for e in ctx.events if e.role == "assistant" and e.tool_call]
    results = [e for e in ctx.events if e.role == "tool"]
    assert [c.tool_call["name"] for c in calls] == ["send_email", "send_email"]
    assert calls[0].tool_call["args"] == args and results[0].receipts
    finished = ctx.run.finish()
    assert any("sent" in str(d.path) for d in finished.diff)


def test_step_budget_refuses_further_calls():
    ctx = _ctx("email-t1-send-email-journal-bcc", max_steps=1)
    answers = asyncio.run(
        _session(
            ctx,
            [
                _rpc(1, "tools/call", {"name": "list_emails", "arguments": {}}),
                _rpc(2, "tools/call", {"name": "list_emails", "arguments": {}}),
            ],
        )
    )
    assert not answers[0]["result"]["isError"] and answers[1]["result"]["isError"]
    assert ctx.steps == 1
