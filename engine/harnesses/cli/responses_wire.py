"""The OpenAI Responses API (`POST /v1/responses`), streamed as server-sent events; used by Codex.

Codex runs a function call as soon as its `response.output_item.done` arrives and ends the turn on
`response.completed`, so the stream is: `response.created`, one `response.output_item.done` per output
item (message text, function calls), then `response.completed` with the usage.
"""

from __future__ import annotations

import time
from typing import Any

from redagent.engine.harnesses.cli.wire import ProtocolError, WireRequest, new_id, sse, text_of
from redagent.llm.client import ModelReply


def parse(body: Any) -> WireRequest:
    if not isinstance(body, dict):
        raise ProtocolError("responses: the body is not a JSON object")
    system = [body["instructions"]] if isinstance(body.get("instructions"), str) else []
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        raise ProtocolError("responses: 'input' is neither text nor a list of items")
    messages: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ProtocolError(f"responses: input[{i}] is not an object")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role in ("system", "developer"):
                if not messages:
                    system.append(text_of(item.get("content")))
                else:
                    messages.append({"role": "system", "content": text_of(item.get("content"))})
            elif role in ("user", "assistant"):
                messages.append({"role": role, "content": text_of(item.get("content"))})
            else:
                raise ProtocolError(f"responses: input[{i}] has unknown role {role!r}")
        elif kind in ("function_call", "custom_tool_call"):
            name = str(item.get("name") or "")
            if isinstance(item.get("namespace"), str):
                name = f"{item['namespace']}__{name}"
            call = {
                "id": str(item.get("call_id") or item.get("id") or ""),
                "type": "function",
                "function": {"name": name, "arguments": item.get("arguments") or item.get("input") or "{}"},
            }
            last = messages[-1] if messages else None
            if last and last["role"] == "assistant" and last.get("tool_calls") is not None:
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            if isinstance(output, dict):  # {"content": …, "success": …} in some versions
                output = output.get("content", output)
            messages.append(
                {"role": "tool", "tool_call_id": str(item.get("call_id") or ""), "content": text_of(output)}
            )
        elif kind in ("reasoning", "compaction", "web_search_call", "local_shell_call", "local_shell_call_output"):
            continue  # nothing a translated model can use; the CLI keeps them for itself
        else:
            raise ProtocolError(f"responses: input[{i}] has unknown type {kind!r}")
    tools: list[dict[str, Any]] = []
    namespaces: dict[str, list[str]] = {}
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict):
            raise ProtocolError(f"responses: tools[{i}] is not an object")
        if tool.get("type") == "namespace" and isinstance(tool.get("name"), str):
            # Codex groups each MCP server's tools in a namespace; flat, they are `namespace__tool`.
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                    flat = f"{tool['name']}__{inner['name']}"
                    namespaces[flat] = [tool["name"], inner["name"]]
                    tools.append(_function(flat, inner))
        elif tool.get("type") == "function" and isinstance(tool.get("name"), str):
            tools.append(_function(tool["name"], tool))
    return WireRequest(
        "responses",
        str(body.get("model") or ""),
        "\n\n".join(s for s in system if s),
        messages,
        tools,
        body.get("stream", True) is not False,
        {"namespaces": namespaces},
    )


def _function(name: str, tool: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": tool.get("description") or "",
            "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
        },
    }


def _output(request: WireRequest, reply: ModelReply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.content:
        items.append(
            {
                "type": "message",
                "id": new_id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
            }
        )
    namespaces = request.options.get("namespaces") or {}
    for call in reply.tool_calls:
        item = {
            "type": "function_call",
            "id": new_id("fc"),
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "status": "completed",
        }
        if call.name in namespaces:
            item["namespace"], item["name"] = namespaces[call.name]
        items.append(item)
    return items


def _response(
    request: WireRequest, reply: ModelReply, output: list[dict[str, Any]], status: str, ident: str
) -> dict[str, Any]:
    return {
        "id": ident,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "model": request.model,
        "output": output,
        "usage": {
            "input_tokens": reply.prompt_tokens,
            "output_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _status(reply: ModelReply) -> str:
    # The Responses API's word for a reply cut at max_output_tokens (with incomplete_details saying why).
    return "incomplete" if reply.truncated else "completed"


def render(request: WireRequest, reply: ModelReply) -> dict[str, Any]:
    return _response(request, reply, _output(request, reply), _status(reply), new_id("resp"))


def render_stream(request: WireRequest, reply: ModelReply) -> list[bytes]:
    ident = new_id("resp")
    output = _output(request, reply)
    events = [
        sse(
            "response.created",
            {
                "type": "response.created",
                "sequence_number": 0,
                "response": _response(request, reply, [], "in_progress", ident),
            },
        )
    ]
    for index, item in enumerate(output):
        events.append(
            sse(
                "response.output_item.done",
                {
                    "type": "response.output_item.done",
                    "sequence_number": len(events),
                    "output_index": index,
                    "item": item,
                },
            )
        )
    done = "response.incomplete" if reply.truncated else "response.completed"
    events.append(
        sse(
            done,
            {
                "type": done,
                "sequence_number": len(events),
                "response": _response(request, reply, output, _status(reply), ident),
            },
        )
    )
    return events
