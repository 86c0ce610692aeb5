"""The engine's side of the MCP server: the rollout's tools, served to a CLI, executed by the gateway.

The CLI starts `mcp_stdio.py` (inside its sandbox) as a stdio MCP server; that relay forwards every
JSON-RPC line over a Unix socket to this bridge and writes back the one line it answers (`null` for
a notification). So the tools the CLI lists are exactly `CaseRun.tools()` — names, schemas, possibly
poisoned descriptions, look-alikes — and every `tools/call` goes through `RolloutContext.execute`
and the `ToolGateway`: receipts, state diffs and E are made exactly as for the built-in harnesses,
and `run_command` still runs under the rollout's bubblewrap sandbox.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from redagent import __version__
from redagent.engine.harnesses.cli.endpoint import Endpoint
from redagent.engine.types import RolloutContext

PROTOCOLS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MAX_LINE = 8 << 20
SERVER = "redagent"
EMPTY_LISTS = {
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}


class ToolBridge:
    def __init__(self, ctx: RolloutContext, path: Path, endpoint: Endpoint) -> None:
        self.ctx = ctx
        self.path = path
        self.endpoint = endpoint
        self.tools = {t["name"]: t for t in ctx.run.tools()}
        self.calls = 0
        self.listed = 0
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._client, str(self.path), limit=MAX_LINE)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    answer: dict[str, Any] | None = _error(None, -32700, "parse error")
                else:
                    answer = await self.handle(message)
                writer.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    async def handle(self, message: Any) -> dict[str, Any] | None:
        """One JSON-RPC message → its response (None for notifications and responses)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error(None, -32600, "not a JSON-RPC 2.0 message")
        if "method" not in message:
            return None  # a response to a request we never send
        ident, method, params = message.get("id"), message["method"], message.get("params") or {}
        if ident is None:
            return None  # notifications/initialized, notifications/cancelled, ...
        if method == "initialize":
            asked = params.get("protocolVersion")
            return _result(
                ident,
                {
                    "protocolVersion": asked if asked in PROTOCOLS else PROTOCOLS[0],
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": SERVER, "version": __version__},
                },
            )
        if method == "ping":
            return _result(ident, {})
        if method == "tools/list":
            self.listed += 1
            return _result(
                ident,
                {
                    "tools": [
                        {"name": t["name"], "description": t["description"], "inputSchema": t["parameters"]}
                        for t in self.tools.values()
                    ]
                },
            )
        if method in EMPTY_LISTS:
            return _result(ident, {EMPTY_LISTS[method]: []})
        if method == "tools/call":
            return _result(ident, await self._call(params))
        return _error(ident, -32601, f"method not found: {method}")

    async def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name, args = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or name not in self.tools:
            return _text(f"ERROR: unknown tool {name!r}", error=True)
        if self.ctx.out_of_steps:
            self.ctx.record("harness", f"{name} refused: the step budget of {self.ctx.max_steps} tool calls is used up")
            return _text("ERROR: the step budget is used up; no more tool calls are run.", error=True)
        self.calls += 1
        call_id = self.endpoint.take_call_id(name) or f"mcp_{self.calls}"
        try:
            outcome = await self.ctx.execute(call_id, name, args if args is not None else {})
        except Exception as exc:  # a sandbox failure: the rollout cannot be completed
            self.endpoint.fail(exc)
            return _text(f"ERROR: {type(exc).__name__}", error=True)
        self.ctx.record_result(call_id, name, outcome, outcome.observation)
        return _text(outcome.observation, error=not outcome.ok)


def _text(text: str, *, error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _result(ident: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
