"""OpenAI chat completions (`POST /v1/chat/completions`), non-streaming and streaming (SSE).

Used by Hermes agent and OpenClaw. The request's messages are already in the engine's format; the
leading system / developer messages are the CLI's system prompt.
"""

from __future__ import annotations

import time
from typing import Any

from redagent.engine.harnesses.cli.wire import ProtocolError, WireRequest, need, new_id, sse, text_of
from redagent.llm.client import ModelReply


def parse(body: Any) -> WireRequest:
    messages = need(body, "messages", list, "chat completions")
    system: list[str] = []
    rest: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ProtocolError(f"chat completions: messages[{i}] has no role")
        role = message["role"]
        if role in ("system", "developer") and not rest:
            system.append(text_of(message.get("content")))
            continue
        rest.append(_message(message, i))
    tools = []
    for i, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ProtocolError(f"chat completions: tools[{i}] is not a function tool")
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": function["name"],
                    "description": function.get("description") or "",
                    "parameters": function.get("parameters") or {"type": "object", "properties": {}},
                },
            }
        )
    options = {"include_usage": bool((body.get("stream_options") or {}).get("include_usage"))}
    return WireRequest(
        "chat",
        str(body.get("model") or ""),
        "\n\n".join(s for s in system if s),
        rest,
        tools,
        bool(body.get("stream")),
        options,
    )


def _message(message: dict[str, Any], index: int) -> dict[str, Any]:
    role = message["role"]
    if role == "developer":
        role = "system"
    if role not in ("system", "user", "assistant", "tool"):
        raise ProtocolError(f"chat completions: messages[{index}] has unknown role {role!r}")
    out: dict[str, Any] = {"role": role, "content": text_of(message.get("content"))}
    if role == "assistant" and message.get("tool_calls"):
        calls = []
        for call in message["tool_calls"]:
            function = call.get("function") or {}
            calls.append(
                {
                    "id": str(call.get("id") or ""),
                    "type": "function",
                    "function": {
                        "name": str(function.get("name") or ""),
                        "arguments": function.get("arguments") or "{}",
                    },
                }
            )
        out["tool_calls"] = calls
        out["content"] = out["content"] or None
    if role == "tool":
        out["tool_call_id"] = str(message.get("tool_call_id") or "")
    return out


def _finish(reply: ModelReply) -> str:
    """Why the reply ended, told to the CLI as the model's server told it (a cut side request stays cut)."""
    return "length" if reply.truncated else "tool_calls" if reply.tool_calls else "stop"


def _calls(reply: ModelReply) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in reply.tool_calls
    ]


def _usage(reply: ModelReply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def render(request: WireRequest, reply: ModelReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_calls:
        message["tool_calls"] = _calls(reply)
    return {
        "id": new_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        "usage": _usage(reply),
    }


def render_stream(request: WireRequest, reply: ModelReply) -> list[bytes]:
    ident, created = new_id("chatcmpl"), int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse(
            None,
            {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": request.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            },
        )

    events = [chunk({"role": "assistant", "content": ""})]
    if reply.content:
        events.append(chunk({"content": reply.content}))
    for i, call in enumerate(reply.tool_calls):
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        }
                    ]
                }
            )
        )
    events.append(chunk({}, _finish(reply)))
    if request.options.get("include_usage"):
        events.append(
            sse(
                None,
                {
                    "id": ident,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": request.model,
                    "choices": [],
                    "usage": _usage(reply),
                },
            )
        )
    events.append(sse(None, "[DONE]"))
    return events
