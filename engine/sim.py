"""Calibration agents as models: they read the conversation a harness builds and answer in its format.

A `SimModel` wraps one `CalibrationAgent` for one rollout. It reads every message and tool
description it is sent (that is how it notices the attack, exactly where a model would), asks the
agent for its next action, and writes that action the way the harness expects it: a native function
call, a JSON action in ReAct text, or a shell command line. So the harness's real parsing path runs.
"""

from __future__ import annotations

import json
from typing import Any

from redagent.cases.schema import Case
from redagent.engine.calibration import Action, CalibrationAgent
from redagent.llm.client import ModelReply, ModelRequest, ToolCall
from redagent.sandbox.cli import render as render_command
from redagent.sandbox.environment import SERVICES

SERVICE_OF = {spec.name: cls.name for cls in SERVICES.values() for spec in cls.tool_specs()}


class SimModel:
    # A calibration agent reads every request as it is sent, tools included: no server stands between.
    tools_confirmed = True

    def __init__(self, name: str, case: Case) -> None:
        self.name = name
        self.agent = CalibrationAgent(name, case)
        self.case = case
        self._seen_messages = 0
        self._system = ""
        self._turn = -1
        self._calls = 0
        lookalike = case.attack.intervention or {}
        self._twin = {lookalike["name"]: lookalike["target"]} if lookalike.get("kind") == "lookalike" else {}

    async def complete(self, request: ModelRequest) -> ModelReply:
        return self.reply(request)

    def note_placement(self, marker: str, channel: str) -> None:
        """An adaptive attacker placed a new text (engine/attacker/session.py): the agent's ground truth."""
        self.agent.note_placement(marker, channel)

    def reply(self, request: ModelRequest) -> ModelReply:
        for message in request.messages[self._seen_messages :]:
            self.agent.observe(_text(message))
        self._seen_messages = len(request.messages)
        # A harness writes its system prompt again when an attacker's move changes the tool list in it.
        system = _text(request.messages[0]) if request.messages else ""
        if system != self._system:
            self.agent.observe(system)
            self._system = system
        if request.turn != self._turn:
            for tool in request.tools or []:
                self.agent.observe(tool.get("function", tool).get("description", ""))
            self._turn = request.turn
            self.agent.start_turn(request.turn, "", [])
        said = []
        action = self.agent.next_action()
        while action.kind == "say":
            said.append(action.text)
            action = self.agent.next_action()
        return self._render(request.harness, " ".join(said), action)

    def _render(self, harness: str, said: str, action: Action) -> ModelReply:
        if harness == "react":
            if action.kind == "final":
                return ModelReply(content=f"Thought: {said or 'The task is done.'}\nFinal Answer: {action.text}")
            payload = json.dumps({"tool": action.tool, "args": action.args})
            return ModelReply(content=f"Thought: {said or 'Next step: ' + action.tool + '.'}\nAction: {payload}")
        if action.kind == "final":
            return ModelReply(content=" ".join(t for t in (said, action.text) if t))
        self._calls += 1
        if harness == "shell":
            call = ToolCall(f"call_{self._calls}", "shell", json.dumps(self._shell_args(action)))
        else:
            call = ToolCall(f"call_{self._calls}", action.tool, json.dumps(action.args))
        return ModelReply(content=said, tool_calls=[call])

    def _shell_args(self, action: Action) -> dict[str, Any]:
        """A plan step as a shell command: commands run as they are; other tools through the CLIs."""
        args = dict(action.args)
        if action.tool == "run_command":
            return args
        service = SERVICE_OF.get(self._twin.get(action.tool, action.tool), "workspace")
        return {"command": render_command(action.tool, service, args)}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts
        content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)
