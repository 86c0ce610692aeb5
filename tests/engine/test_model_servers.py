"""Real model servers' quirks, reproduced by loopback stand-ins (tests/engine/model_servers.py, where each quirk's
source is cited): every in-house harness makes tool calls through each, the CLI endpoint's translations send
requests each accepts, a reply cut at the token limit is marked, and the pre-flight knows the server.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from redagent.cases.loader import load_cases
from redagent.engine.rollout import execute_rollout
from redagent.engine.types import RolloutKey
from redagent.llm.client import (
    MODEL_TRUNCATED,
    LiteLLMModel,
    ModelConfigError,
    ModelRequest,
    preflight,
)
from tests.engine.model_servers import SERVERS, VLLM, LlamaCppPython, Ollama, StandIn

CASES = {c.id: c for c in load_cases()}
CASE = CASES["banking-e2-invoice-bank-details-change"]
TOOL_CASE = CASES["email-t1-send-email-journal-bcc"]  # the attack is in send_email's description


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")


def model_for(server: StandIn, **options) -> LiteLLMModel:
    return LiteLLMModel(server.litellm_model, api_base=server.url, timeout=20, retries=0, **options)


def rollout(model: LiteLLMModel, harness: str, case=CASE, max_steps: int = 4):
    key = RolloutKey(case.id, model.name, harness, "clean", "none", 1)
    return asyncio.run(execute_rollout("run-servers", case, key, lambda name, c: model, max_steps=max_steps))


def tool_calls(record) -> list[dict]:
    return [e["tool_call"] for e in record.events if e["role"] == "assistant" and e["tool_call"]]


@pytest.mark.parametrize("harness", ["native", "react", "shell"])
@pytest.mark.parametrize("server_name", list(SERVERS))
def test_every_in_house_harness_makes_tool_calls_through_each_server(server_name, harness):
    with SERVERS[server_name]() as server:
        record = rollout(model_for(server), harness)
    assert record.valid, (record.invalid_reason, record.invalid_detail)
    assert tool_calls(record), "no tool call reached the sandbox"
    assert record.final_text  # the conversation went on past the tool result to a final answer
    if harness != "react":
        offered = [r for r in server.requests if r.get("tools")]
        # The tools reached the model, and the request after a tool call was accepted (not a 500 or 400).
        assert offered and any(server.shown_tools)
        assert len(server.requests) >= 2


def test_without_tool_choice_llama_cpp_python_drops_the_tools_and_no_tool_call_is_made():
    """The quirk the default `tool_choice: auto` is for: omitted, the model never sees a tool."""
    with LlamaCppPython() as server:
        record = rollout(model_for(server, tool_choice="omit"), "native")
    assert record.valid and not tool_calls(record)
    assert not any(server.shown_tools) and all("tool_choice" not in r for r in server.requests)


def test_react_sends_its_stop_sequence_except_to_a_model_that_refuses_stop():
    request = ModelRequest(messages=[{"role": "user", "content": "hi"}], stop=("\nObservation:",))
    local = LiteLLMModel("openai/toy", api_base="http://127.0.0.1:9/v1")
    assert local.payload(request)["stop"] == ["\nObservation:"]
    assert "stop" not in local.payload(ModelRequest(messages=request.messages))  # nothing to stop at: no key
    # OpenAI's gpt-5 answers a request with `stop` with HTTP 400 (litellm's table knows it).
    assert "stop" not in LiteLLMModel("openai/gpt-5").payload(request)


def test_assistant_tool_call_messages_carry_content_and_tool_results_their_id():
    with LlamaCppPython() as server:
        rollout(model_for(server), "native")
    follow_up = next(r for r in server.requests if any(m["role"] == "tool" for m in r["messages"]))
    assistant = next(m for m in follow_up["messages"] if m.get("tool_calls"))
    assert assistant["content"] == ""  # litellm drops a None; llama.cpp's templates need the key
    tool = next(m for m in follow_up["messages"] if m["role"] == "tool")
    assert tool["tool_call_id"] == assistant["tool_calls"][0]["id"] and isinstance(tool["content"], str)
    assert follow_up["tool_choice"] == "auto"


def test_a_malformed_tool_call_goes_to_ollama_as_an_object():
    """Ollama takes arguments as a JSON object; a model's malformed call still makes a request it accepts."""
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{oops"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ERROR: not JSON"},
    ]
    with Ollama() as server:
        reply = asyncio.run(model_for(server).complete(ModelRequest(messages=history)))
    assert reply.content
    sent = server.requests[-1]["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert sent == {"_raw": "{oops"}


def test_vllm_without_auto_tool_choice_refuses_auto_and_required_works():
    with VLLM(auto_tool_choice=False) as server:
        refused = rollout(model_for(server), "native")
        forced = rollout(model_for(server, tool_choice="required"), "native", max_steps=2)
    assert not refused.valid and refused.invalid_reason == "model_bad_request"
    assert "enable-auto-tool-choice" in (refused.invalid_detail or "")
    assert forced.valid and tool_calls(forced)


# ---------------------------------------------------------------- cut replies


@pytest.mark.parametrize("server_name", ["llama-cpp-python", "ollama"])
@pytest.mark.parametrize("harness", ["native", "react"])
def test_a_reply_cut_at_max_tokens_is_an_invalid_rollout_not_a_final_answer(server_name, harness):
    with SERVERS[server_name](long_answers=True) as server:
        record = rollout(model_for(server, max_tokens=12), harness)
    assert not record.valid and record.invalid_reason == MODEL_TRUNCATED and record.E is None
    assert "--max-tokens 12" in (record.invalid_detail or "")
    assert record.final_text == ""  # the cut text was never stored as the answer


def test_the_same_reply_within_the_limit_is_the_final_answer():
    with LlamaCppPython(long_answers=True) as server:
        record = rollout(model_for(server, max_tokens=400), "native")
    assert record.valid and record.final_text.startswith("word0")


# ---------------------------------------------------------------- exposure as the server received it


def test_exposure_counts_an_attack_in_tool_descriptions_only_when_the_tools_reached_the_model():
    with LlamaCppPython() as server:
        dropped = rollout(model_for(server, tool_choice="omit"), "native", case=TOOL_CASE)
        shown = rollout(model_for(server), "native", case=TOOL_CASE)
    marker = TOOL_CASE.instantiate(with_attack=True).marker
    offered = [json.dumps(r["tools"]) for r in server.requests if r.get("tools")]
    assert marker and offered and all(marker in t for t in offered)  # the harness sent the poison both times
    assert dropped.valid and not dropped.reached  # the server dropped them: the model never saw the attack
    assert shown.valid and shown.reached


# ---------------------------------------------------------------- the pre-flight


def test_preflight_stops_a_wrong_model_name_on_a_server_that_answers_any_name():
    with LlamaCppPython(model="smollm2-135m") as server:
        with pytest.raises(ModelConfigError) as wrong:
            preflight("openai/smolm2-135m", server.url, timeout=10)
        found = preflight("openai/smollm2-135m", server.url, timeout=10)
    message = str(wrong.value)
    assert "serves no model 'smolm2-135m'" in message and "smollm2-135m" in message
    assert "llama-cpp-python" in message and "answers any model name" in message
    assert found.server == "llama-cpp-python" and found.tool_calls is True and not found.warnings


def test_preflight_names_vllms_fix_for_auto_tool_choice():
    with VLLM(model="qwen", auto_tool_choice=False) as server:
        with pytest.raises(ModelConfigError) as refused:
            preflight("hosted_vllm/qwen", server.url, timeout=10)
        forced = preflight("hosted_vllm/qwen", server.url, timeout=10, tool_choice="required")
    assert "--enable-auto-tool-choice --tool-call-parser" in str(refused.value)
    assert forced.tool_calls is True


def test_preflight_names_an_ollama_model_without_tool_support():
    with Ollama(model="smollm2", tools_capable=False) as server:
        with pytest.raises(ModelConfigError) as refused:
            preflight("ollama_chat/smollm2", server.url, timeout=10)
        plain = preflight("ollama_chat/smollm2", server.url, timeout=10, probe_tools=False)
    assert "does not support tools" in str(refused.value) and "ollama show" in str(refused.value)
    assert plain.server == "Ollama" and plain.tool_calls is None


def test_preflight_warns_when_the_server_returns_no_tool_call():
    with LlamaCppPython() as server:
        found = preflight("openai/toy", server.url, timeout=10, tool_choice="omit")
    assert found.tool_calls is False
    assert len(found.warnings) == 1 and "chatml-function-calling" in found.warnings[0]


# ---------------------------------------------------------------- the real-CLI endpoint's translations


def _cli_requests(ctx) -> dict[str, tuple[str, list[dict]]]:
    """Requests as the CLIs send them (shapes recorded from Hermes/OpenClaw, Codex and Claude Code, see
    test_cli_endpoint.py): a first turn, then the same conversation after one tool call and its result."""
    tools = ctx.run.tools()
    chat_tools = [{"type": "function", "function": {"name": "mcp_redagent_" + t["name"], **_spec(t)}} for t in tools]
    chat_first = {"model": "m", "messages": [{"role": "user", "content": "Do the task."}], "tools": chat_tools}
    chat_second = {
        **chat_first,
        "messages": chat_first["messages"]
        + [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "mcp_redagent_read_email", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "the mail"},
        ],
    }
    namespace = {
        "type": "namespace",
        "name": "mcp__redagent",
        "tools": [{"type": "function", "name": t["name"], **_spec(t)} for t in tools],
    }
    responses_first = {
        "model": "m",
        "stream": True,
        "instructions": "You are Codex.",
        "tools": [namespace],
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Do the task."}]}],
    }
    responses_second = {
        **responses_first,
        "input": responses_first["input"]
        + [
            {
                "type": "function_call",
                "call_id": "c1",
                "namespace": "mcp__redagent",
                "name": "read_email",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "c1", "output": "the mail"},
        ],
    }
    anthropic_tools = [
        {"name": "mcp__redagent__" + t["name"], "description": t["description"], "input_schema": t["parameters"]}
        for t in tools
    ]
    messages_first = {
        "model": "claude",
        "max_tokens": 32000,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": anthropic_tools,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Do the task."}]}],
    }
    messages_second = {
        **messages_first,
        "messages": messages_first["messages"]
        + [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "mcp__redagent__read_email", "input": {}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "the mail"}]},
        ],
    }
    return {
        "chat": ("/v1/chat/completions", [chat_first, chat_second]),
        "responses": ("/v1/responses", [responses_first, responses_second]),
        "messages": ("/v1/messages", [messages_first, messages_second]),
    }


def _spec(tool: dict) -> dict:
    return {"description": tool["description"], "parameters": tool["parameters"]}


@pytest.mark.parametrize("wire", ["chat", "responses", "messages"])
@pytest.mark.parametrize("server_name", list(SERVERS))
def test_the_cli_endpoints_translations_make_requests_each_server_accepts(server_name, wire):
    from tests.engine.test_cli_endpoint import _ctx, _serve

    with SERVERS[server_name]() as server:
        ctx = _ctx(model_for(server))
        path, bodies = _cli_requests(ctx)[wire]
        answers = asyncio.run(_serve(ctx, [("POST", path, body) for body in bodies]))
    endpoint = answers.pop()
    assert [status for status, _ in answers] == [200, 200], answers
    assert endpoint.failure is None
    first, second = server.requests[-2:]
    assert first["tools"] and any(server.shown_tools)  # the tools reached the model
    assert endpoint.pending or any(e.tool_call for e in ctx.events)  # the first reply was a tool call
    if server_name != "ollama":  # litellm drops tool_choice for Ollama, which ignores it anyway
        assert first["tool_choice"] == "auto" and second["tool_choice"] == "auto"
    assistant = next(m for m in second["messages"] if m.get("tool_calls"))
    assert assistant["content"] == ""
    assert ctx.final_text  # the reply after the tool result ended the turn


# ---------------------------------------------------------------- the command line


def _run(capsys, db: str, server: StandIn, model: str, *extra: str) -> tuple[int, str, str]:
    from tests.engine.test_run_health import cli

    return cli(
        capsys,
        "run",
        "--cases",
        CASE.id,
        "--models",
        model,
        "--harnesses",
        "native",
        "--api-base",
        server.url,
        "--no-benign-arm",
        "--db",
        db,
        *extra,
    )


def test_run_stops_on_a_misspelt_model_at_a_server_that_answers_any_name(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    with LlamaCppPython(model="smollm2-135m") as server:
        code, out, err = _run(capsys, db, server, "openai/smollm-135m")
        assert [r for r in server.requests if r.get("tools")] == []  # stopped before the tool probe
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "serves no model 'smollm-135m'" in err and "answers any model name" in err
    from redagent.store.db import open_store

    with open_store(db) as store:
        assert store.list_runs() == []


def test_tool_choice_is_stored_with_the_run_and_a_dropped_tool_offer_is_said_before_it(tmp_path, capsys):
    from tests.engine.test_run_health import cli

    db = f"sqlite:///{tmp_path / 'runs.db'}"
    with LlamaCppPython() as server:
        code, out, err = _run(capsys, db, server, "openai/toy", "--tool-choice", "omit", "--json")
        assert all("tool_choice" not in r for r in server.requests)
    assert code == 0, err
    assert "warning: model openai/toy: offered a tool and asked to call it" in err  # before the run
    run_id = json.loads(out)["run_id"]
    code, out, _ = cli(capsys, "runs", "show", run_id, "--db", db, "--json")
    protocol = json.loads(out)["protocol"]
    assert protocol["tool_choice"] == "omit" and protocol["tool_probe"] == {"openai/toy": False}
    with LlamaCppPython() as server:
        code, _, err = _run(capsys, db, server, "openai/toy", "--tool-choice", "sometimes")
    assert code == 2 and "unknown --tool-choice 'sometimes'" in err and len(err.strip().splitlines()) == 1


def test_runs_show_counts_the_replies_cut_at_max_tokens(tmp_path, capsys):
    from tests.engine.test_run_health import cli

    db = f"sqlite:///{tmp_path / 'runs.db'}"
    with LlamaCppPython(long_answers=True) as server:
        code, out, err = _run(capsys, db, server, "openai/toy", "--max-tokens", "12", "--harnesses", "native,react")
    assert code == 0, err
    code, out, _ = cli(capsys, "runs", "show", json.loads(_last_json(capsys, db))["run_id"], "--db", db)
    assert "invalid: model_truncated 2" in out
    assert "1 of 1 rollouts ended on a reply cut at the token limit (--max-tokens 12)" in out


def _last_json(capsys, db: str) -> str:
    from tests.engine.test_run_health import cli

    code, out, _ = cli(capsys, "runs", "list", "--db", db, "--json")
    return json.dumps({"run_id": json.loads(out)[0]["run_id"]})


@pytest.mark.parametrize(
    "wire, path, cut_mark",
    [
        ("chat", "/v1/chat/completions", lambda a: a["choices"][0]["finish_reason"] == "length"),
        ("messages", "/v1/messages", lambda a: a["stop_reason"] == "max_tokens"),
    ],
)
def test_through_the_cli_endpoint_a_cut_decision_fails_the_rollout_and_a_cut_side_request_says_so(wire, path, cut_mark):
    from tests.engine.test_cli_endpoint import _ctx, _serve

    with LlamaCppPython(long_answers=True) as server:
        ctx = _ctx(model_for(server, max_tokens=12))
        first, second = _cli_requests(ctx)[wire][1]
        side = {**first, "tools": []}  # a title request: no served tool
        (side_status, side_answer), (status, _), endpoint = asyncio.run(
            _serve(ctx, [("POST", path, side), ("POST", path, second)])
        )
    assert side_status == 200 and cut_mark(side_answer)  # the CLI is told its side reply was cut
    assert status == 500 and endpoint.failure is not None
    assert getattr(endpoint.failure, "reason", None) == MODEL_TRUNCATED
    assert ctx.final_text == ""
