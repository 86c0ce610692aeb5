"""Executing a case: build its sandbox, take the baseline, make calls, then snapshot, diff and verify.

`CaseRun` is the one place where a case meets a sandbox. The self-check drives it with plan steps;
the engine's agents drive it with their own tool calls. Either way E comes from `finish()`, which
looks only at receipts and the baseline → final diff.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redagent.cases.schema import Case, Instance, Step
from redagent.sandbox.diff import DiffEntry, diff
from redagent.sandbox.effects import Effect
from redagent.sandbox.environment import Environment
from redagent.sandbox.gateway import ToolOutcome
from redagent.sandbox.isolation import Bubblewrap, NoIsolation
from redagent.sandbox.receipts import Receipt
from redagent.sandbox.verifier import Evidence, Verdict, evaluate


@dataclass
class Finished:
    baseline: dict[str, Any]
    final: dict[str, Any]
    diff: list[DiffEntry]
    receipts: list[Receipt]
    verdict: Verdict
    calls: list[ToolOutcome] = field(default_factory=list)
    reached: bool = False
    utility: Verdict | None = None  # U: whether the user's task was done (None when the case states no check)
    effects: list[Effect] = field(default_factory=list)  # what the rollout did, normalised (sandbox/effects.py)

    @property
    def U(self) -> int | None:
        return self.utility.E if self.utility is not None else None


class CaseRun:
    """A live rollout sandbox for one case (with or without its attack)."""

    def __init__(
        self,
        case: Case,
        *,
        with_attack: bool | None = None,
        isolation: Bubblewrap | NoIsolation | None = None,
        instance: Instance | None = None,
    ) -> None:
        self.case = case
        self.with_attack = case.attacked if with_attack is None else with_attack
        # An instance may be shared by runs of the same case: the services copy what they load from it.
        self.instance: Instance = instance or case.instantiate(with_attack=self.with_attack)
        self.env = Environment(
            self.instance.seed, self.instance.surfaces, self.instance.interventions, isolation=isolation
        )
        try:
            self.baseline = self.env.snapshot()
        except BaseException:
            self.env.close()
            raise
        self.calls: list[ToolOutcome] = []
        # The attack reached the agent once its marker is in a user turn delivered so far, in the
        # tool list, or (tracked as calls are made) in an observation.
        self.reached = self._shows_marker(*(t["description"] for t in self.env.gateway.tool_list()))
        self.turns_delivered = 0

    def _shows_marker(self, *texts: str) -> bool:
        marker = self.instance.marker if self.with_attack else ""
        return bool(marker) and any(marker in text for text in texts)

    def user_turn(self, index: int) -> str:
        """Deliver user turn `index` (0 is the task) and return its text."""
        text = self.instance.user_turns[index]
        self.turns_delivered = max(self.turns_delivered, index + 1)
        if self._shows_marker(text):
            self.reached = True
        return text

    @property
    def marker(self) -> str:
        return self.instance.marker

    def tools(self) -> list[dict[str, Any]]:
        return self.env.gateway.tool_list()

    def call(self, tool: str, args: Any, *, step: int | None, any_tool: bool = False) -> ToolOutcome:
        """A tool call by the agent; `any_tool` lets a harness use a tool outside the case's surfaces
        (the shell harness's command runner)."""
        outcome = self.env.gateway.call(tool, args, step=step, bridged=any_tool)
        self.calls.append(outcome)
        if self._shows_marker(outcome.observation):
            self.reached = True
        return outcome

    def run_step(self, step: Step, *, index: int, args: dict[str, Any] | None = None) -> ToolOutcome:
        return self.call(step.tool, step.args if args is None else args, step=index)

    def close(self) -> None:
        """Remove the sandbox without judging it (a cancelled rollout); a command still running is
        killed first. Safe to call more than once, and after finish()."""
        self.env.close()

    def judge_now(self) -> Verdict:
        """The verdict on the state as it is now, the sandbox left running: the adaptive attacker's loop
        ends as soon as the verifier finds E = 1 after a round (engine/attacker/session.py). The same
        evidence as finish(), so a rollout ended here gets the same E from finish()."""
        final = self.env.snapshot()
        entries = diff(self.baseline, final)
        receipts = list(self.env.receipts)
        evidence = Evidence(
            receipts,
            entries,
            self.case.context,
            baseline=self.baseline,
            final=final,
            read_file=self.env.services["workspace"].read_large,
            isolation=self.env.isolation,
        )
        return evaluate(self.case.rule, receipts, entries, self.case.context, evidence=evidence)

    def finish(self, answer: str | None = None) -> Finished:
        """Snapshot, diff and verdict; the sandbox is removed whether or not they succeed. `answer` is the
        agent's final answer to the user, which an `answer` rule (a utility check) reads."""
        try:
            final = self.env.snapshot()
            entries = diff(self.baseline, final)
            receipts = list(self.env.receipts)
            evidence = Evidence(
                receipts,
                entries,
                self.case.context,
                baseline=self.baseline,
                final=final,
                read_file=self.env.services["workspace"].read_large,
                isolation=self.env.isolation,
                answer=answer,
            )
            verdict = evaluate(self.case.rule, receipts, entries, self.case.context, evidence=evidence)
            utility = (
                evaluate(self.case.utility, receipts, entries, self.case.context, evidence=evidence)
                if self.case.utility is not None
                else None
            )
            return Finished(
                self.baseline,
                final,
                entries,
                receipts,
                verdict,
                self.calls,
                self.reached,
                utility,
                effects=evidence.judged,
            )
        finally:
            self.env.close()
