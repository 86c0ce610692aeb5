"""The CLI model endpoint, driven over its real Unix socket with a raw HTTP client — no CLI needed.

Each wire format (chat completions streaming and not, Responses SSE, Anthropic Messages with
Anthropic-only fields) is translated to the engine's `ModelRequest` and back; the cue and defense
are inserted the same way for every format; the step budget, prompt records, protocol errors and
model failures behave as the rollout needs.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from redagent.cases.execution import CaseRun
from redagent.cases.loader import load_cases
from redagent.engine.harnesses.cli.endpoint import BUDGET_TEXT, Endpoint
from redagent.engine.types import HarnessError, RolloutContext
from redagent.llm.client import ModelFailure, ModelReply, ModelRequest, ToolCall

CASE_ID = "email-t1-send-email-journal-bcc"  # a poisoned send_email description


def _case():
    return next(c for c in load_cases() if c.id == CASE_ID)


class Scripted:
    """A model that answers from a list and keeps every request it was sent."""

    name = "scripted"

    def __init__(self, *replies: ModelReply | Exception) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def _ctx(model, *, cue: str = "", defense: str = "", max_steps: int = 30) -> RolloutContext:
    case = _case()
    return RolloutContext(
        case=case, run=CaseRun(case), model=model, cue_text=cue, defense_text=defense, max_steps=max_steps
    )


async def _serve(ctx: RolloutContext, calls: list[tuple[str, str, Any]], harness: str = "test") -> list[Any]:
    """Start the endpoint on a fresh socket, send each (method, path, body) and return the answers."""
    with tempfile.TemporaryDirectory() as tmp:
        endpoint = Endpoint(ctx, harness, Path(tmp) / "model.sock")
        await endpoint.start()
        answers: list[Any] = []
        try:
            connector = aiohttp.UnixConnector(path=str(endpoint.path))
            async with aiohttp.ClientSession(connector=connector) as http:
                for method, path, body in calls:
                    data = body if isinstance(body, bytes | str) else json.dumps(body)
                    async with http.request(
                        method, f"http://endpoint{path}", data=data, headers={"Content-Type": "application/json"}
                    ) as response:
                        text = await response.text()
                        kind = response.headers.get("Content-Type", "")
                        answers.append((response.status, _sse(text) if "event-stream" in kind else json.loads(text)))
        finally:
            await endpoint.close()
        answers.append(endpoint)
        return answers


def _sse(text: str) -> list[tuple[str | None, Any]]:
    events = []
    for block in text.strip().split("\n\n"):
        name, data = None, None
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        events.append((name, data if data == "[DONE]" else json.loads(data)))
    return events


def _tools(prefix: str, ctx: RolloutContext) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": prefix + t["name"], "description": t["description"], "parameters": t["parameters"]},
        }
        for t in ctx.run.tools()
    ]


CALL = ModelReply(
    content="Sending it now.",
    tool_calls=[ToolCall("call_1", "send_email", '{"to": ["a@b.example"]}')],
    prompt_tokens=11,
    completion_tokens=7,
)


def test_chat_completions_non_streaming_maps_gateway_names_onto_the_clis_prefix():
    model = Scripted(CALL)
    ctx = _ctx(model)
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "Send it."}],
        "tools": _tools("mcp_redagent_", ctx),
    }
    (status, answer), endpoint = asyncio.run(_serve(ctx, [("POST", "/v1/chat/completions", body)]))
    assert status == 200
    message = answer["choices"][0]["message"]
    assert answer["choices"][0]["finish_reason"] == "tool_calls"
    assert message["tool_calls"][0]["function"]["name"] == "mcp_redagent_send_email"
    assert answer["usage"] == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    assert model.requests[0].messages[0] == {"role": "system", "content": "You are Hermes."}
    assert ctx.prompt_tokens == 11 and ctx.completion_tokens == 7
    assert endpoint.pending[0] == ("call_1", "send_email")  # the MCP call it becomes gets this id
    assert [e.text for e in ctx.events if e.role == "assistant"] == ["Sending it now."]


def test_chat_completions_stream_is_sse_chunks_with_usage_and_done():
    ctx = _ctx(Scripted(CALL))
    body = {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Send it."}]}],
        "tools": _tools("redagent__", ctx),
    }
    (status, events), _ = asyncio.run(_serve(ctx, [("POST", "/v1/chat/completions", body)]))
    assert status == 200
    assert events[-1] == (None, "[DONE]")
    chunks = [data for _, data in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "Sending it now."
    call = next(
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in chunks
        if c["choices"] and c["choices"][0]["delta"].get("tool_calls")
    )
    assert call["function"] == {"name": "redagent__send_email", "arguments": '{"to": ["a@b.example"]}'}
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 18


def test_responses_stream_ends_with_output_item_done_then_completed_and_keeps_namespaces():
    model = Scripted(CALL, ModelReply(content="Done."))
    ctx = _ctx(model)
    namespace = {
        "type": "namespace",
        "name": "mcp__redagent",
        "description": "Tools in the mcp__redagent namespace.",
        "tools": [
            {
                "type": "function",
                "name": t["name"],
                "description": t["description"],
                "parameters": t["parameters"],
                "strict": False,
            }
            for t in ctx.run.tools()
        ],
    }
    first = {
        "model": "m",
        "stream": True,
        "instructions": "You are Codex.",
        "tools": [namespace],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Send it."}]},
        ],
    }
    second = {
        **first,
        "input": first["input"]
        + [
            {"type": "reasoning", "summary": []},
            {
                "type": "function_call",
                "call_id": "call_1",
                "namespace": "mcp__redagent",
                "name": "send_email",
                "arguments": '{"to": ["a@b.example"]}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "sent"},
        ],
    }
    (_, events), (_, events2), _ = asyncio.run(
        _serve(ctx, [("POST", "/v1/responses", first), ("POST", "/v1/responses", second)])
    )
    names = [name for name, _ in events]
    assert names[0] == "response.created" and names[-1] == "response.completed"
    assert names[1:-1] == ["response.output_item.done", "response.output_item.done"]
    call = events[2][1]["item"]
    assert call["type"] == "function_call" and call["namespace"] == "mcp__redagent" and call["name"] == "send_email"
    assert events[-1][1]["response"]["usage"]["input_tokens"] == 11
    assert events2[1][1]["item"]["content"][0]["text"] == "Done."
    sent = model.requests[1].messages
    assert sent[0] == {"role": "system", "content": "You are Codex.\n\nrules"}
    assert sent[2]["tool_calls"][0]["function"]["name"] == "mcp__redagent__send_email"
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "sent"}
    assert ctx.final_text == "Done."


def test_anthropic_messages_accepts_anthropic_only_fields_and_streams_blocks():
    model = Scripted(CALL)
    ctx = _ctx(model)
    tools = [
        {"name": "mcp__redagent__" + t["name"], "description": t["description"], "input_schema": t["parameters"]}
        for t in ctx.run.tools()
    ] + [{"type": "web_search_20250305", "name": "web_search"}]
    body = {
        "model": "claude",
        "stream": True,
        "max_tokens": 32000,
        "thinking": {"type": "enabled", "budget_tokens": 1},
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "metadata": {"user_id": "x"},
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "tools": tools,
        "messages": [
            {"role": "system", "content": "Extra system text."},
            {"role": "user", "content": [{"type": "text", "text": "Send it."}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "s"},
                    {"type": "tool_use", "id": "toolu_1", "name": "mcp__redagent__read_email", "input": {"id": "m-1"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "the mail"}]}
                ],
            },
        ],
    }
    (status, events), (count_status, count), (_, models), _ = asyncio.run(
        _serve(
            ctx,
            [
                ("POST", "/v1/messages?beta=true", body),
                ("POST", "/v1/messages/count_tokens", body),
                ("GET", "/v1/models", b""),
            ],
        )
    )
    assert status == 200 and count_status == 200 and count["input_tokens"] > 0 and models["data"]
    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    tool_block = events[4][1]["content_block"]
    assert tool_block["type"] == "tool_use" and tool_block["name"] == "mcp__redagent__send_email"
    assert json.loads(events[5][1]["delta"]["partial_json"]) == {"to": ["a@b.example"]}
    assert events[7][1]["delta"]["stop_reason"] == "tool_use"
    sent = model.requests[0]
    assert sent.messages[0] == {"role": "system", "content": "You are Claude Code.\n\nExtra system text."}
    assert sent.messages[2]["tool_calls"][0]["function"]["arguments"] == '{"id": "m-1"}'
    assert sent.messages[3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "the mail"}
    assert "web_search" not in [t["function"]["name"] for t in sent.tools]


def test_cue_and_defense_are_inserted_the_same_way_for_every_format():
    shapes = {}
    for fmt in ("chat", "responses", "messages"):
        model = Scripted(ModelReply(content="ok"))
        ctx = _ctx(model, cue="CUE TEXT", defense="DEFENSE TEXT")
        if fmt == "chat":
            path, body = (
                "/v1/chat/completions",
                {
                    "messages": [
                        {"role": "system", "content": "SYS"},
                        {"role": "user", "content": "task"},
                        {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "c1",
                                    "type": "function",
                                    "function": {"name": "x__read_email", "arguments": "{}"},
                                }
                            ],
                        },
                        {"role": "tool", "tool_call_id": "c1", "content": "result"},
                    ],
                    "tools": _tools("x__", ctx),
                },
            )
        elif fmt == "responses":
            path, body = (
                "/v1/responses",
                {
                    "instructions": "SYS",
                    "tools": [
                        {"type": "function", "name": "x__" + t["name"], "parameters": t["parameters"]}
                        for t in ctx.run.tools()
                    ],
                    "input": [
                        {"type": "message", "role": "user", "content": "task"},
                        {"type": "function_call", "call_id": "c1", "name": "x__read_email", "arguments": "{}"},
                        {"type": "function_call_output", "call_id": "c1", "output": "result"},
                    ],
                },
            )
        else:
            path, body = (
                "/v1/messages",
                {
                    "system": "SYS",
                    "max_tokens": 10,
                    "tools": [{"name": "x__" + t["name"], "input_schema": t["parameters"]} for t in ctx.run.tools()],
                    "messages": [
                        {"role": "user", "content": "task"},
                        {
                            "role": "assistant",
                            "content": [{"type": "tool_use", "id": "c1", "name": "x__read_email", "input": {}}],
                        },
                        {
                            "role": "user",
                            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "result"}],
                        },
                    ],
                },
            )
        (status, _), _ = asyncio.run(_serve(ctx, [("POST", path, body)]))
        assert status == 200
        shapes[fmt] = [(m["role"], m.get("content")) for m in model.requests[0].messages]
        assert [e.text for e in ctx.events if e.role == "harness"] == ["DEFENSE TEXT"]
    assert (
        shapes["chat"]
        == shapes["responses"]
        == shapes["messages"]
        == [
            ("system", "CUE TEXT\n\nSYS"),
            ("user", "task\n\nDEFENSE TEXT"),
            ("assistant", None),
            ("tool", "result"),
            ("user", "DEFENSE TEXT"),
        ]
    )


def test_step_budget_stops_the_cli_without_asking_the_model():
    model = Scripted()
    ctx = _ctx(model, max_steps=2)
    ctx.steps = 2
    body = {"messages": [{"role": "user", "content": "go"}], "tools": _tools("p_", ctx)}
    (status, answer), endpoint = asyncio.run(_serve(ctx, [("POST", "/v1/chat/completions", body)]))
    assert status == 200 and answer["choices"][0]["message"]["content"] == BUDGET_TEXT
    assert model.requests == [] and endpoint.budget_hit


def test_side_requests_without_served_tools_do_not_reach_a_calibration_agent():
    from redagent.engine.sim import SimModel

    ctx = _ctx(SimModel("sim/comply", _case()))
    body = {"messages": [{"role": "user", "content": "Write a title for this chat"}]}
    (status, answer), endpoint = asyncio.run(_serve(ctx, [("POST", "/v1/chat/completions", body)]))
    assert status == 200 and answer["choices"][0]["message"]["content"] == "OK"
    assert endpoint.aux_requests == 1 and endpoint.agent_requests == 0 and ctx.events == []


def test_prompt_and_tool_list_are_recorded_with_how_each_description_arrived():
    ctx = _ctx(Scripted(ModelReply(content="ok")))
    tools = _tools("p__", ctx)
    for tool in tools:
        if tool["function"]["name"] == "p__send_email":
            tool["function"]["description"] = "Send a new email. [redacted]"
        if tool["function"]["name"] == "p__read_email":
            tool["function"]["description"] = "<untrusted>" + tool["function"]["description"] + "</untrusted>"
    body = {
        "messages": [{"role": "system", "content": "THE SYSTEM PROMPT"}, {"role": "user", "content": "go"}],
        "tools": tools,
    }
    (_, _), endpoint = asyncio.run(_serve(ctx, [("POST", "/v1/chat/completions", body)]))
    art = endpoint.artifact()
    assert art["prompts"][0]["system"] == "THE SYSTEM PROMPT"
    assert {t["name"] for t in art["prompts"][0]["tools"]} == {t["function"]["name"] for t in tools}
    assert art["tool_descriptions"]["send_email"] == "rewritten"
    assert art["tool_descriptions"]["read_email"] == "wrapped"
    assert art["tool_descriptions"]["list_emails"] == "verbatim"


def test_unusable_request_is_a_400_and_an_endpoint_protocol_failure():
    ctx = _ctx(Scripted())
    (status, answer), (status2, _), endpoint = asyncio.run(
        _serve(ctx, [("POST", "/v1/chat/completions", b"{not json"), ("POST", "/v1/messages", {"messages": "nope"})])
    )
    assert status == 400 and status2 == 400 and answer["error"]["type"] == "invalid_request_error"
    assert isinstance(endpoint.failure, HarnessError) and endpoint.failure.reason == "endpoint_protocol"


def test_model_failure_is_a_500_and_keeps_the_models_reason():
    ctx = _ctx(Scripted(ModelFailure("rate_limited", "429 after 4 attempts")))
    body = {"messages": [{"role": "user", "content": "go"}], "tools": _tools("p_", ctx)}
    (status, _), endpoint = asyncio.run(_serve(ctx, [("POST", "/v1/chat/completions", body)]))
    assert status == 500
    assert isinstance(endpoint.failure, ModelFailure) and endpoint.failure.reason == "rate_limited"


@pytest.mark.parametrize("path", ["/v1/unknown", "/api/show"])
def test_unknown_paths_are_404(path):
    ctx = _ctx(Scripted())
    (status, answer), endpoint = asyncio.run(_serve(ctx, [("POST", path, {})]))
    assert status == 404 and endpoint.failure is None
