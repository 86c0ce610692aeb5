"""Anthropic Messages (`POST /v1/messages`), non-streaming and streaming; used by Claude Code.

Accepted and ignored: the Anthropic-only request fields (`thinking`, `context_management`,
`metadata`, `betas`, cache control on blocks), thinking blocks in the history. A `system` message
inside `messages` is folded into the system prompt like the top-level `system` (string or blocks).
"""

from __future__ import annotations

import json
from typing import Any

from redagent.engine.harnesses.cli.wire import (
    ProtocolError,
    WireRequest,
    arguments_object,
    need,
    new_id,
    sse,
    text_of,
)
from redagent.llm.client import ModelReply


def parse(body: Any) -> WireRequest:
    messages = need(body, "messages", list, "messages")
    system = [text_of(body.get("system"))] if body.get("system") else []
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
            raise ProtocolError(f"messages: messages[{i}] has no user/assistant/system role")
        content = message.get("content")
        if message["role"] == "system":
            system.append(text_of(content))
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise ProtocolError(f"messages: messages[{i}].content is neither text nor blocks")
        if message["role"] == "assistant":
            out.append(_assistant(blocks, i))
        else:
            out.extend(_user(blocks, i))
    tools = []
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise ProtocolError(f"messages: tools[{i}] has no name")
        if "input_schema" not in tool:
            continue  # a server tool (web search, ...) the CLI offers; nothing the sandbox serves
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description") or "",
                    "parameters": tool["input_schema"],
                },
            }
        )
    return WireRequest(
        "messages",
        str(body.get("model") or ""),
        "\n\n".join(s for s in system if s),
        out,
        tools,
        bool(body.get("stream")),
    )


def _assistant(blocks: list[Any], index: int) -> dict[str, Any]:
    texts, calls = [], []
    for block in blocks:
        if not isinstance(block, dict):
            raise ProtocolError(f"messages: messages[{index}] has a non-object block")
        if block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif block.get("type") in ("tool_use", "server_tool_use"):
            calls.append(
                {
                    "id": str(block.get("id") or ""),
                    "type": "function",
                    "function": {
                        "name": str(block.get("name") or ""),
                        "arguments": json.dumps(block.get("input") or {}, ensure_ascii=False),
                    },
                }
            )
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _user(blocks: list[Any], index: int) -> list[dict[str, Any]]:
    results, texts = [], []
    for block in blocks:
        if not isinstance(block, dict):
            raise ProtocolError(f"messages: messages[{index}] has a non-object block")
        if block.get("type") == "tool_result":
            text = text_of(block.get("content"))
            results.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id") or ""), "content": text})
        elif block.get("type") not in ("thinking", "redacted_thinking"):
            text = text_of(block)
            if text:
                texts.append(text)
    return results + ([{"role": "user", "content": "\n".join(texts)}] if texts else [])


def _blocks(reply: ModelReply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.content:
        blocks.append({"type": "text", "text": reply.content})
    for call in reply.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments_object(call.arguments)})
    return blocks


def _usage(reply: ModelReply) -> dict[str, int]:
    return {
        "input_tokens": reply.prompt_tokens,
        "output_tokens": reply.completion_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def render(request: WireRequest, reply: ModelReply) -> dict[str, Any]:
    return {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": _blocks(reply),
        # Anthropic's words for why the reply ended; a reply cut at the token limit says so (max_tokens).
        "stop_reason": "max_tokens" if reply.truncated else "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def render_stream(request: WireRequest, reply: ModelReply) -> list[bytes]:
    message = render(request, reply)
    start = {**message, "content": [], "stop_reason": None, "usage": {**_usage(reply), "output_tokens": 0}}
    events = [sse("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            events.append(
                sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": block["text"]},
                    },
                )
            )
        else:
            events.append(
                sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}},
                )
            )
            events.append(
                sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"], ensure_ascii=False),
                        },
                    },
                )
            )
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": reply.completion_tokens},
            },
        )
    )
    events.append(sse("message_stop", {"type": "message_stop"}))
    return events
