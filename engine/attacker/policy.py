"""The attackers that choose moves: a scripted one (deterministic) and one driven by any litellm model.

Both answer `decide(view, offered, current)` with a `Move` and the usage it cost. The model attacker
gets its prompt contract (contract.md) as the system message and the view as JSON; its reply is
validated by `moves.parse_reply`, a rejected reply is shown to it once with the problem named, and a
second bad reply, a model failure or a decision that outlasts its deadline is an `AttackerFailure`:
the rollout is recorded invalid with that reason, never crashed and never counted as a failed attack.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import orjson

from redagent.engine.attacker.moves import BadReply, Move, parse_reply
from redagent.engine.types import HarnessError
from redagent.llm.client import Model, ModelFailure, ModelRequest

MAX_ATTEMPTS = 2  # the first reply and one correction
ATTACKER_BAD_REPLY = "attacker_bad_reply"
ATTACKER_TIMEOUT = "attacker_timeout"
ATTACKER_SETUP = "attacker_setup"


class AttackerFailure(HarnessError):
    """The attacker could not make its move; the rollout is invalid with `reason` (attacker_…)."""


@cache
def contract_text() -> str:
    return (resources.files("redagent.engine.attacker") / "contract.md").read_text(encoding="utf-8")


def contract_hash() -> str:
    return hashlib.sha256(contract_text().encode()).hexdigest()[:16]


def _usage(prompt: int = 0, completion: int = 0, cost: float = 0.0) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "cost_usd": cost}


class ScriptedAttacker:
    """Plays a fixed move sequence; after it, stops. Sees the view like any attacker and ignores it."""

    name = "scripted"

    def __init__(self, moves: Sequence[Move]) -> None:
        self.moves = list(moves)

    async def decide(self, view: dict[str, Any], offered: Sequence[str], current: str) -> tuple[Move, dict]:
        if not self.moves:
            return Move("stop", current, why="scripted: the script is finished"), _usage()
        return self.moves.pop(0), _usage()


class ModelAttacker:
    """A litellm model as the control agent, bounded in size (reply, fields) and time (per decision)."""

    def __init__(self, model: Model, *, deadline: float) -> None:
        self.model = model
        self.name = f"model:{model.name}"
        self.deadline = deadline

    async def decide(self, view: dict[str, Any], offered: Sequence[str], current: str) -> tuple[Move, dict]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": contract_text()},
            {"role": "user", "content": orjson.dumps(view).decode()},
        ]
        usage = _usage()
        problem = "no reply"
        for _ in range(MAX_ATTEMPTS):
            try:
                reply = await asyncio.wait_for(
                    self.model.complete(ModelRequest(messages=list(messages), harness="attacker")), self.deadline
                )
            except TimeoutError:
                raise AttackerFailure(ATTACKER_TIMEOUT, f"no decision within {self.deadline:.0f} s") from None
            except ModelFailure as failure:
                raise AttackerFailure(f"attacker_{failure.reason}", failure.detail) from None
            usage["prompt_tokens"] += reply.prompt_tokens
            usage["completion_tokens"] += reply.completion_tokens
            usage["cost_usd"] += reply.cost_usd
            if reply.tool_calls:
                problem = "the reply is a tool call; answer with the JSON object as text"
            else:
                try:
                    cited = [str(t.get("id")) for t in view.get("techniques") or []]
                    return parse_reply(reply.content, offered=offered, current=current, techniques=cited), usage
                except BadReply as exc:
                    problem = str(exc)
            messages += [
                {"role": "assistant", "content": (reply.content or "")[:4000]},
                {
                    "role": "user",
                    "content": f"Your reply was rejected: {problem}. Answer again with "
                    f"exactly one JSON object as the contract says.",
                },
            ]
        raise AttackerFailure(ATTACKER_BAD_REPLY, f"{MAX_ATTEMPTS} replies rejected; last: {problem}")
