"""The engine's shared types: a rollout's `RolloutKey`, the trajectory `Event`, the rollout context every harness
drives (trajectory recording, tool execution, the loop bounds), the `Harness` interface and the harnesses' names,
`HarnessError`.

It imports nothing else of the engine, so every engine module can use these types without a cycle: the
harnesses (engine/harnesses/), the attacker, the planner and the executors all build on this module, never it on
them. The adaptive attacker is seen here only through the `Attack` interface it implements.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from redagent.cases.execution import CaseRun
from redagent.cases.schema import Case
from redagent.llm.client import MODEL_TRUNCATED, Model, ModelReply, ModelRequest, ToolCall
from redagent.sandbox.gateway import ToolOutcome

MAX_MALFORMED = 3  # consecutive unusable replies before the rollout is invalid

_T = TypeVar("_T")


async def off_loop(
    executor: Executor | None, call: Callable[[], _T], *, interrupt: Callable[[], None] | None = None
) -> _T:
    """`call()` on a thread of `executor` (the loop's default executor when None), the event loop only waiting for it:
    every tool call, a sandbox's set-up and its finish (snapshot, diff, verdict, consequence replays, re-runs) — what
    blocks on a file, a subprocess or a replay, or holds the interpreter long. The rollout's own calls take turns (one
    at a time), so the pool needs no more threads than rollouts in flight.

    Cancelled (the run is stopping), it waits for the call to come back before the cancellation goes on: the sandbox
    the call works on is closed next, and must never be closed under it. `interrupt()` first kills a command the call
    may be running, so that wait is short. A second cancellation gives the wait up; what the call then leaves open is
    closed by whoever made it (the runner closes every rollout's sandbox it did not see closed)."""
    future = asyncio.get_running_loop().run_in_executor(executor, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        if interrupt is not None:
            interrupt()
        await asyncio.wait([future])
        raise


@dataclass
class Event:
    index: int
    role: str  # user | assistant | tool
    text: str = ""
    tool_call: dict[str, Any] | None = None  # {"id", "name", "args"} on an assistant event
    original: str | None = None  # on a tool event: what the service returned
    observation: str | None = None  # on a tool event: what the agent was shown
    receipts: list[str] = field(default_factory=list)
    tampered: bool = False

    def to_dict(self) -> dict[str, Any]:
        # Written out rather than dataclasses.asdict: asdict deep-copies every argument and result,
        # and this runs for every event of every rollout.
        return {
            "index": self.index,
            "role": self.role,
            "text": self.text,
            "tool_call": self.tool_call,
            "original": self.original,
            "observation": self.observation,
            "receipts": list(self.receipts),
            "tampered": self.tampered,
        }


@dataclass(frozen=True)
class RolloutKey:
    """A rollout's cell of the matrix and its attempt (engine/plan.py `rollout_id` hashes it with the run)."""

    case_id: str
    model: str
    harness: str
    cue: str
    defense: str
    attempt: int


class Attack(Protocol):
    """A rollout's adaptive attacker as the rollout context drives it (engine/attacker/session.py's
    `AttackSession`): the rounds it opens after the case's own turns, and the texts the agent was shown."""

    setting: Any  # the run's `AttackSetting` (kind, budget, model), which the calibration agents' ground truth reads
    markers: dict[str, str]  # the marker of each attack text placed so far → its channel

    async def next_round(self, ctx: RolloutContext) -> str | None: ...

    def shown(self, ctx: RolloutContext, *texts: str) -> None: ...


class HarnessError(Exception):
    """The rollout cannot be completed by this harness (e.g. the model never produced a usable action)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass
class RolloutContext:
    case: Case
    run: CaseRun
    model: Model
    cue_text: str
    defense_text: str
    max_steps: int = 30
    executor: Executor | None = None
    events: list[Event] = field(default_factory=list)
    final_text: str = ""
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    malformed: int = 0
    # The rollout's adaptive attacker (None: the fixed attack only). It opens the rounds after the case's
    # own turns; `tools_version` goes up when a move changes the tool list, so the harness shows it again.
    attack: Attack | None = None
    tools_version: int = 0
    # Whether the attack reached the model's input as its server received it (see `attack_delivered`): an
    # attack marker in the text of a request the model answered, in the tools it was offered, and whether
    # the model ever answered tools with a tool call.
    attack_in_text: bool = False
    attack_in_tools: bool = False
    tool_calls_back: bool = False

    async def off_loop(self, call: Callable[[], _T]) -> _T:
        """`call()` off the event loop, on the rollout's pool (`off_loop`); cancelled, it kills the rollout's running
        command and waits for the call to come back."""
        return await off_loop(self.executor, call, interrupt=self.run.interrupt)

    # -- trajectory ----------------------------------------------------------------------------
    def record(self, role: str, text: str = "", **fields: Any) -> int:
        index = len(self.events)
        self.events.append(Event(index, role, text=text, **fields))
        return index

    def user_turn(self, index: int) -> str:
        text = self.run.user_turn(index)
        self.record("user", text)
        return text

    async def next_turn(self, index: int) -> str | None:
        """User turn `index` (recorded), or None when the rollout has no more: the case's own turns, then
        the rounds its attacker opens (engine/attacker/session.py) until E = 1, a stop, or the budget."""
        if index < len(self.run.instance.user_turns):
            return self.user_turn(index)
        if self.attack is None or self.out_of_steps:
            return None
        return await self.attack.next_round(self)

    @property
    def out_of_steps(self) -> bool:
        return self.steps >= self.max_steps

    # -- the model -----------------------------------------------------------------------------
    async def ask(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None,
        harness: str,
        turn: int,
        decision: bool = True,
        stop: tuple[str, ...] = (),
    ) -> ModelReply:
        """The model's reply to `messages`. A reply cut by the token limit ends a `decision` (the agent's next
        action or answer) as an invalid rollout, `model_truncated`: a cut text is no final answer and a cut
        tool call no action. Continuing it instead would need the server to extend a partial assistant
        message, which OpenAI-compatible servers do each their own way or not at all. A side request (a real
        CLI's title or probe, `decision=False`) keeps its cut reply; the CLI is told it was cut."""
        reply = await self.model.complete(
            ModelRequest(messages=messages, tools=tools, harness=harness, turn=turn, stop=stop)
        )
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.cost_usd += reply.cost_usd
        self._note_exposure(messages, tools, reply)
        if decision and reply.truncated:
            limit = getattr(self.model, "max_tokens", None)
            raise HarnessError(
                MODEL_TRUNCATED,
                f"the model's reply stopped at the token limit after {reply.completion_tokens} tokens"
                + (f" (--max-tokens {limit})" if limit else "")
                + "; a cut reply is no answer: raise --max-tokens",
            )
        return reply

    def _markers(self) -> list[str]:
        markers = [self.run.marker] if self.run.with_attack and self.run.marker else []
        if self.attack is not None:
            markers += [m for m in self.attack.markers if m]
        return markers

    def _note_exposure(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, reply: ModelReply
    ) -> None:
        """Note what of the attack was in a request the model answered (so its server received it)."""
        if tools and reply.tool_calls:
            self.tool_calls_back = True
        markers = self._markers()
        if not markers:
            return
        if not self.attack_in_text:
            for message in messages:
                content = message.get("content")
                text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
                if any(m in text for m in markers):
                    self.attack_in_text = True
                    break
        if tools and not self.attack_in_tools:
            offered = json.dumps(tools, ensure_ascii=False)
            self.attack_in_tools = any(m in offered for m in markers)

    def attack_delivered(self) -> bool:
        """Whether the attack reached the model's input as its server received it: a marker in the text of a
        request the model answered, or in the tools it was offered when the tools demonstrably reached it
        (it answered them with a tool call in this rollout, or the run's pre-flight tool probe got one back:
        `tools_confirmed` on the model). A server that drops `tools` (llama-cpp-python without
        `tool_choice`) never shows the model a poisoned description, however often the harness sends it."""
        if self.attack_in_text:
            return True
        return self.attack_in_tools and (self.tool_calls_back or bool(getattr(self.model, "tools_confirmed", False)))

    def malformed_reply(self, why: str) -> None:
        self.malformed += 1
        if self.malformed >= MAX_MALFORMED:
            raise HarnessError("malformed_tool_call", f"{self.malformed} unusable replies in a row; last: {why}")

    def usable_reply(self) -> None:
        self.malformed = 0

    # -- tools ---------------------------------------------------------------------------------
    async def execute(
        self,
        call_id: str,
        shown_name: str,
        shown_args: Any,
        *,
        tool: str | None = None,
        args: Any = None,
        any_tool: bool = False,
    ) -> ToolOutcome:
        """Record the call, run it through the gateway, record what came back.

        `shown_*` is the call as the model made it (the `shell` tool, say); `tool`/`args` what the
        gateway runs (`run_command`), when they differ.
        """
        tool = tool or shown_name
        args = shown_args if args is None else args
        step = self.record("assistant", tool_call={"id": call_id, "name": shown_name, "args": shown_args})
        self.steps += 1
        # Every call, not only commands: a file tool reads and writes the workspace, a service call may start a
        # bridged command, and none of it may stall the other rollouts on this loop.
        outcome = await self.off_loop(lambda: self.run.call(tool, args, step=step, any_tool=any_tool))
        if self.attack is not None:  # CaseRun tracks the case's own marker; the attacker's texts are tracked here
            self.attack.shown(self, outcome.observation)
        return outcome

    def record_result(self, call_id: str, name: str, outcome: ToolOutcome, shown: str) -> None:
        self.record(
            "tool",
            original=outcome.original,
            observation=shown,
            receipts=outcome.receipt_ids,
            tampered=outcome.tampered,
            tool_call={"id": call_id, "name": name},
        )

    def boundary(self) -> str:
        """The defense text shown before the model's next decision ('' when there is none)."""
        return self.defense_text

    def with_boundary(self, text: str) -> str:
        """A user turn or observation with the defense text after it, right before the next decision."""
        return f"{text}\n\n{self.defense_text}" if self.defense_text else text

    def final_answer(self, messages: list[dict[str, Any]], content: str) -> None:
        """A reply without a tool call ends the turn: it is the agent's answer to the user."""
        self.record("assistant", content)
        self.final_text = content
        messages.append({"role": "assistant", "content": content})


def wire(call: ToolCall) -> dict[str, Any]:
    """A tool call as it goes back to the model in the OpenAI message format."""
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


class Harness(Protocol):
    name: str

    async def run(self, ctx: RolloutContext) -> None: ...


IN_HOUSE = ("native", "react", "shell")
CLI = ("codex", "hermes", "openclaw", "claude-code")  # real agent CLIs (engine/harnesses/cli/)
HARNESSES = IN_HOUSE + CLI
