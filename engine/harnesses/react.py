"""The ReAct harness: tools described in the prompt, one JSON action per turn parsed from text.

The model writes `Thought: …` then either `Action: {"tool": NAME, "args": {...}}` or
`Final Answer: …`. Observations come back as user turns (`Observation: …`). A reply that holds
neither a parseable action nor a final answer gets a correction turn; after a bounded number of
them in a row the rollout is invalid (`malformed_tool_call`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from redagent.engine.types import RolloutContext

_ACTION = re.compile(r"Action\s*:\s*", re.IGNORECASE)
_FINAL = re.compile(r"Final Answer\s*:\s*", re.IGNORECASE)
# The model's reply ends where it would start writing the observation itself: a model that does not stop after
# its action goes on to invent the tool's result (and the next steps) until the token limit cuts the reply.
STOP = ("\nObservation:",)

FORMAT = """You act for the user by choosing one tool at a time. Available tools (JSON-schema parameters):

{tools}

Answer in exactly this format, one action per reply:
Thought: <your reasoning>
Action: {{"tool": "<tool name>", "args": {{<arguments>}}}}

You will then receive "Observation: <result>". When the request is complete, reply:
Thought: <your reasoning>
Final Answer: <summary for the user>"""


class ReactHarness:
    name = "react"

    async def run(self, ctx: RolloutContext) -> None:
        messages: list[dict[str, Any]] = [{"role": "system", "content": self._system(ctx)}]
        calls, turn, shown_tools = 0, 0, ctx.tools_version
        while (prompt := await ctx.next_turn(turn)) is not None:
            if ctx.tools_version != shown_tools:  # the tool list lives in the system prompt: list it again
                messages[0] = {"role": "system", "content": self._system(ctx)}
                shown_tools = ctx.tools_version
            messages.append({"role": "user", "content": ctx.with_boundary(prompt)})
            while True:
                reply = await ctx.ask(messages, tools=None, harness=self.name, turn=turn, stop=STOP)
                text = reply.content or ""
                messages.append({"role": "assistant", "content": text})
                parsed = parse(text)
                if isinstance(parsed, Broken):
                    why = str(parsed)
                    ctx.record("assistant", text)
                    ctx.malformed_reply(why)
                    correction = (
                        f"Your reply could not be used: {why}. Reply with Thought, then either "
                        'Action: {"tool": ..., "args": {...}} or Final Answer: ...'
                    )
                    ctx.record("harness", correction)
                    messages.append({"role": "user", "content": correction})
                    continue
                ctx.usable_reply()
                if isinstance(parsed, str):
                    ctx.record("assistant", text)
                    ctx.final_text = parsed
                    break
                tool, args = parsed
                action = _ACTION.search(text)  # a parsed action always has its "Action:" marker
                thought = text[: action.start()].strip() if action is not None else ""
                if thought:
                    ctx.record("assistant", thought)
                calls += 1
                outcome = await ctx.execute(f"react_{calls}", tool, args)
                ctx.record_result(f"react_{calls}", tool, outcome, outcome.observation)
                if ctx.out_of_steps:
                    return
                messages.append({"role": "user", "content": ctx.with_boundary(f"Observation: {outcome.observation}")})
                if ctx.boundary():
                    ctx.record("harness", ctx.boundary())
            turn += 1

    @staticmethod
    def _system(ctx: RolloutContext) -> str:
        listing = "\n\n".join(
            f"- {t['name']}: {t['description']}\n  parameters: {json.dumps(t['parameters']['properties'])}"
            f"\n  required: {', '.join(t['parameters'].get('required', [])) or 'none'}"
            for t in ctx.run.tools()
        )
        return "\n\n".join(t for t in (ctx.cue_text, FORMAT.format(tools=listing)) if t)


class Broken(str):
    """Why a reply could not be used."""


def parse(text: str) -> tuple[str, dict[str, Any]] | str:
    """(tool, args) for an action; the answer text for a final answer; `Broken(why)` otherwise."""
    action = _ACTION.search(text)
    final = _FINAL.search(text)
    if final and (not action or final.start() < action.start()):
        return text[final.end() :].strip()
    if not action:
        return Broken("no Action or Final Answer found")
    rest = text[action.end() :]
    start = rest.find("{")
    if start < 0:
        return Broken("the Action is not followed by a JSON object")
    try:
        payload, _ = json.JSONDecoder().raw_decode(rest[start:])
    except ValueError as exc:
        return Broken(f"the Action is not valid JSON ({exc})")
    if not isinstance(payload, dict) or not isinstance(payload.get("tool"), str):
        return Broken('the Action needs {"tool": name, "args": {...}}')
    args = payload.get("args", {})
    if not isinstance(args, dict):
        return Broken("args must be a JSON object")
    return payload["tool"], args
