"""An Inspect sample of the `redagent/bench` task as the rollout the store keeps (engine/inspect_task.py's scorer).

The trajectory is rebuilt from the chat as the engine records it (engine/types.py `Event`): user turns, the
assistant's text, then each tool call followed by its result — what the service returned beside what the agent was
shown, the receipts the call made and whether an intervention changed it. The results come from the calls the
sample's world served (engine/inspect_sandbox.py `CaseSandbox.calls`), paired with the chat's tool calls in the
order made: a case tool by its name and arguments; a tool of the agent's own (Inspect's `bash()`, a scaffold's shell)
with the commands and file operations it ran through the sandbox meanwhile. Each receipt then gets the step (event
index) of the tool call that caused it, as the engine's gateway writes it, so the judges' views read it the same.

The document is the per-sample metadata judges/inspect_export.py writes (its `rollout_sample`), plus the events:
what `redagent import inspect` reads back.
"""

from __future__ import annotations

from collections import deque
from datetime import UTC, datetime
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from inspect_ai.solver import TaskState

from redagent.cases.execution import Finished
from redagent.cases.schema import Case
from redagent.engine.inspect_sandbox import META, Call, CaseSandbox
from redagent.engine.plan import rollout_id
from redagent.engine.types import RolloutKey

# The version of the metadata mapping `redagent import inspect` reads: judges/inspect_export.py FORMAT, the export's
# (the engine imports nothing of judges/; tests/engine/test_inspect_task.py imports what this writes).
FORMAT = 1
# What the task's agent notes in a user message's metadata: its stored role where it is not its chat role (the
# defense text: "harness"), and a user turn's own text where the model was shown it with the defense text after it.
ROLE, TURN = "role", "turn"


def case_document(case: Case) -> dict[str, Any]:
    """What a sample knows of its case before it runs (also what an errored sample is imported from)."""
    return {
        "case": {
            "id": case.id,
            "version": case.version,
            "hash": case.content_hash,
            "benign": not case.attacked,
            "file": case.source or None,
        },
        "ivc": {
            "strategy": case.strategy,
            "vulnerability": case.vulnerability,
            "constraint": case.constraint,
            "surfaces": list(case.surfaces),
            "channel": case.channel,
        },
    }


def rollout_document(state: TaskState, box: CaseSandbox, finished: Finished) -> dict[str, Any]:
    """The sample's rollout, as judges/inspect_export.py's sample metadata holds one."""
    meta = state.metadata.get(META, {})
    case = box.run.case
    model = str(state.model)
    cell = {**meta["cell"], "model": model, "attempt": int(state.epoch)}
    key = RolloutKey(case.id, model, cell["harness"], cell["cue"], cell["defense"], cell["attempt"])
    events, steps = trajectory(
        state.messages, box.calls, set(box.run.env.gateway.specs) | set(box.run.env.gateway.lookalikes)
    )
    receipts = []
    for receipt in finished.receipts:
        doc = receipt.to_dict()
        if receipt.actor != "setup" and doc["step"] is None:
            doc["step"] = steps.get(receipt.id)
        receipts.append(doc)
    verdict = finished.verdict.to_dict()
    started = str(meta.get("started_at") or datetime.now(UTC).isoformat())
    usage = _usage()
    return {
        "format": FORMAT,
        "rollout_id": rollout_id(str(meta["run_id"]), key, case.content_hash),
        **case_document(case),
        "cell": cell,
        "validity": {"valid": True, "invalid_reason": None, "invalid_detail": None},
        "outcome": {
            "E": verdict["E"],
            "U": finished.U,
            "expected_E": None,  # an Inspect model has no known ground truth (calibration agents are the engine's)
            "reached": finished.reached,
            "evidence": verdict["evidence"],
        },
        "final_text": state.output.completion if state.output else "",
        "receipts": receipts,
        "diff": [d.to_dict() for d in finished.diff],
        "snapshots": {"baseline": finished.baseline, "final": finished.final},
        "usage": usage,
        "timing": {
            "started_at": started,
            "finished_at": datetime.now(UTC).isoformat(),
            "duration_ms": (datetime.now(UTC) - datetime.fromisoformat(started)).total_seconds() * 1000,
        },
        "baseline_rollout_id": None,
        "events": events,
    }


def _usage() -> dict[str, Any]:
    """The sample's model usage as Inspect counted it (every model call of the sample)."""
    # inspect-ai keeps the running sample's usage here (the pinned 0.3.285; its public API has no reader of it).
    from inspect_ai.model._model import sample_model_usage

    prompt = completion = 0
    cost = 0.0
    for usage in sample_model_usage().values():
        prompt += int(usage.input_tokens)
        completion += int(usage.output_tokens)
        cost += float(usage.total_cost or 0.0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "cost_usd": cost}


def _event(idx: int, role: str, text: str = "", **fields: Any) -> dict[str, Any]:
    return {
        "idx": idx,
        "role": role,
        "text": text,
        "tool_call": fields.get("tool_call"),
        "original": fields.get("original"),
        "observation": fields.get("observation"),
        "receipts": list(fields.get("receipts") or []),
        "tampered": bool(fields.get("tampered", False)),
    }


def trajectory(
    messages: list[ChatMessage], calls: list[Call], case_tools: set[str]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The chat as trajectory events, and each receipt id's step (the event index of the tool call that made it)."""
    results = {m.tool_call_id: m for m in messages if isinstance(m, ChatMessageTool) and m.tool_call_id}
    answered: set[str] = set()
    pending = deque(calls)
    events: list[dict[str, Any]] = []
    steps: dict[str, int] = {}
    for message in messages:
        if isinstance(message, ChatMessageUser):
            noted = (message.metadata or {}).get(META) or {}
            events.append(_event(len(events), str(noted.get(ROLE, "user")), str(noted.get(TURN, message.text))))
        elif isinstance(message, ChatMessageAssistant):
            if message.text or not message.tool_calls:
                events.append(_event(len(events), "assistant", message.text))
            for call in message.tool_calls or []:
                step = len(events)
                events.append(
                    _event(step, "assistant", tool_call={"id": call.id, "name": call.function, "args": call.arguments})
                )
                served = _served(pending, call.function, call.arguments, case_tools)
                for made in served:
                    for rid in made.outcome.receipt_ids:
                        steps.setdefault(rid, step)
                shown = results.get(call.id)
                answered.add(call.id)
                events.append(_result(len(events), call.id, call.function, shown, served, case_tools))
        elif isinstance(message, ChatMessageTool) and message.tool_call_id not in answered:
            # A result of no call in the chat (an agent that rewrote its history): kept where it stands.
            events.append(
                _result(len(events), message.tool_call_id or "", message.function or "", message, [], case_tools)
            )
    return events, steps


def _served(pending: deque[Call], name: str, args: dict[str, Any], case_tools: set[str]) -> list[Call]:
    """The world's calls that answered one tool call of the chat: a case tool's own call (the next one of that name
    and arguments; none when Inspect refused it before it reached the world), else what the agent's own tool ran
    through the sandbox (the calls up to the next case tool's)."""
    if name in case_tools:
        for made in list(pending):
            if made.tool == name and made.args == args and not made.sandboxed:
                while pending[0] is not made:  # calls no chat message shows (an agent's hidden step) stay unpaired
                    pending.popleft()
                return [pending.popleft()]
        return []
    served = []
    while pending and pending[0].sandboxed:
        served.append(pending.popleft())
    return served


def _result(
    idx: int, call_id: str, name: str, shown: ChatMessageTool | None, served: list[Call], case_tools: set[str]
) -> dict[str, Any]:
    observation = shown.text if shown is not None else ""
    receipts = [rid for made in served for rid in made.outcome.receipt_ids]
    if name in case_tools and len(served) == 1:
        outcome = served[0].outcome
        original: str | None = outcome.original
        tampered = outcome.tampered
    else:
        original = observation if shown is not None else None
        tampered = False
    return _event(
        idx,
        "tool",
        original=original,
        observation=observation,
        receipts=receipts,
        tampered=tampered,
        tool_call={"id": call_id, "name": name},
    )
