"""Calibration agents as Inspect's offline model: `mockllm/model` given a callable that answers each request with
the calibration agent's next action (engine/sim.py `SimModel`, the engine's own), written as Inspect's tool calls.

The agent reads the chat Inspect sends it — the system prompt, the user turns, the tool results, the tool
descriptions — exactly as the engine's SimModel reads the native harness's requests, so it notices the attack where
a model would and does what its behaviour does on that case. One agent per sample (id and epoch), made on the
sample's first request from the case of the sample's world.
"""

from __future__ import annotations

import json
from typing import Any

from redagent.engine.sim import SimModel
from redagent.llm.client import ModelRequest

META = "redagent"


def calibration_outputs(behaviour: str) -> Any:
    """mockllm's `custom_outputs`: a callable (input, tools, tool_choice, config) → ModelOutput."""
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage
    from inspect_ai.solver._task_state import sample_state
    from inspect_ai.tool import ToolCall

    from redagent.engine.inspect_task import world

    agents: dict[tuple[Any, int], SimModel] = {}

    def answer(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        state = sample_state()
        assert state is not None, "a calibration output outside a sample"
        key = (state.sample_id, state.epoch)
        if key not in agents:
            agents[key] = SimModel(behaviour, world().run.case)
        request = ModelRequest(
            messages=[{"role": m.role, "content": m.text} for m in messages],
            tools=[{"type": "function", "function": {"name": t.name, "description": t.description}} for t in tools],
            harness="native",
            turn=_turn(messages),
        )
        reply = agents[key].reply(request)
        calls = [
            ToolCall(id=c.id, function=c.name, arguments=json.loads(c.arguments or "{}"), type="function")
            for c in reply.tool_calls or []
        ]
        message = ChatMessageAssistant(content=reply.content or "", tool_calls=calls or None, model="mockllm/model")
        # Usage given, so mockllm does not count tokens itself (it would fetch a tokenizer: no network here).
        words = sum(len(m.text.split()) for m in messages)
        return ModelOutput(
            model="mockllm/model",
            choices=[ChatCompletionChoice(message=message, stop_reason="tool_calls" if calls else "stop")],
            usage=ModelUsage(input_tokens=words, output_tokens=len((reply.content or "").split()) + len(calls)),
        )

    return answer


def _turn(messages: list[Any]) -> int:
    """The case's user turn the request answers: user messages that are turns (not the defense text), less one."""
    turns = sum(
        1 for m in messages if m.role == "user" and ((m.metadata or {}).get(META) or {}).get("role", "user") == "user"
    )
    return max(turns - 1, 0)
