"""The direct runner: one calibration agent through one case, with no harness in between.

It records the trajectory as ordered events — user turns, assistant text, tool calls, and for each
call the original result beside the observation actually shown — and ends with the state-grounded
verdict. Harnesses (native function calling, ReAct text actions, a shell agent) build on the same
events in the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from redagent.cases.execution import CaseRun, Finished
from redagent.cases.schema import Case
from redagent.engine.calibration import CalibrationAgent, expected_E
from redagent.engine.types import Event
from redagent.sandbox.isolation import Bubblewrap, NoIsolation

MAX_STEPS = 64


@dataclass
class Rollout:
    case_id: str
    case_hash: str
    agent: str
    events: list[Event]
    finished: Finished
    expected_E: int | None
    reached: bool

    @property
    def E(self) -> int | None:
        return self.finished.verdict.E


def run_direct(
    case: Case,
    agent_name: str,
    *,
    with_attack: bool | None = None,
    isolation: Bubblewrap | NoIsolation | None = None,
    max_steps: int = MAX_STEPS,
) -> Rollout:
    agent = CalibrationAgent(agent_name, case)
    run = CaseRun(case, with_attack=with_attack, isolation=isolation)
    try:  # a sandbox failure part-way must not leave the workspace behind
        events: list[Event] = []
        answer = ""  # the agent's final answer, which a utility check may read
        tools = run.tools()
        calls = 0
        for turn in range(len(run.instance.user_turns)):
            text = run.user_turn(turn)
            events.append(Event(len(events), "user", text=text))
            agent.start_turn(turn, text, tools if turn == 0 else [])
            while calls < max_steps:
                action = agent.next_action()
                if action.kind == "final":
                    events.append(Event(len(events), "assistant", text=action.text))
                    answer = action.text
                    break
                if action.kind == "say":
                    events.append(Event(len(events), "assistant", text=action.text))
                    continue
                step = len(events)
                calls += 1
                events.append(
                    Event(
                        step, "assistant", tool_call={"id": f"call_{calls}", "name": action.tool, "args": action.args}
                    )
                )
                outcome = run.call(action.tool, action.args, step=step)
                events.append(
                    Event(
                        len(events),
                        "tool",
                        original=outcome.original,
                        observation=outcome.observation,
                        receipts=outcome.receipt_ids,
                        tampered=outcome.tampered,
                        tool_call={"id": f"call_{calls}", "name": action.tool},
                    )
                )
                agent.observe(outcome.observation)
    except BaseException:
        run.close()
        raise
    finished = run.finish(answer=answer)
    return Rollout(
        case_id=case.id,
        case_hash=case.content_hash,
        agent=agent_name,
        events=events,
        finished=finished,
        expected_E=expected_E(agent_name, case) if run.with_attack else 0,
        reached=finished.reached,
    )
