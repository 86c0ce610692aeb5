"""Executing a case: build its sandbox, take the baseline, make calls, then snapshot, diff and verify.

`CaseRun` is the one place where a case meets a sandbox. The self-check drives it with plan steps;
the engine's agents drive it with their own tool calls. Either way E comes from `finish()`, which
looks only at receipts and the baseline → final diff.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from redagent.cases.schema import Case, Instance, Step
from redagent.sandbox.diff import DiffEntry, diff
from redagent.sandbox.effects import Effect
from redagent.sandbox.environment import Environment
from redagent.sandbox.flow import Replayed, Shown
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
        """1 when the task was shown done, 0 when not — also when its check could not be decided (a task is done
        only when shown done); None when the case states no check."""
        if self.utility is None:
            return None
        return 1 if self.utility.E == 1 else 0


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
        # Each call as it was made (tool, arguments, step, whether outside the case's surfaces), to run it again.
        self._made: list[tuple[str, Any, int | None, bool]] = []
        descriptions = [t["description"] for t in self.env.gateway.tool_list()]
        # What the agent was shown, from which step on: what explains the content of what it sends.
        self.shown: list[Shown] = [Shown(-1, text) for text in descriptions]
        # The attack reached the agent once its marker is in a user turn delivered so far, in the
        # tool list, or (tracked as calls are made) in an observation.
        self.reached = self._shows_marker(*descriptions)
        self.turns_delivered = 0
        self._isolation = isolation

    def _shows_marker(self, *texts: str) -> bool:
        marker = self.instance.marker if self.with_attack else ""
        return bool(marker) and any(marker in text for text in texts)

    def user_turn(self, index: int) -> str:
        """Deliver user turn `index` (0 is the task) and return its text."""
        text = self.instance.user_turns[index]
        self.turns_delivered = max(self.turns_delivered, index + 1)
        self.shown.append(Shown(self._step(), text))
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
        self._made.append((tool, copy.deepcopy(args), step, any_tool))
        self.shown.append(Shown(step if step is not None else self._step(), outcome.observation))
        if self._shows_marker(outcome.observation):
            self.reached = True
        return outcome

    def _step(self) -> int:
        """The step of the latest call made (-1 before the first)."""
        steps = [made[2] for made in self._made if made[2] is not None]
        return max(steps) if steps else len(self._made) - 1

    def rerun(self, replacements: Mapping[str, str]) -> Replayed | None:
        """The calls made so far, made again in a fresh sandbox of this case where every key of `replacements` is
        replaced by its value wherever the case holds it (seed, user turns, the attack) and wherever the agent copied
        it into a call's arguments: what information flow compares (sandbox/flow.py). Everything else the agent
        typed is kept as it wrote it. None when the sandbox cannot be built again."""
        instance = _replaced(self.instance, replacements)
        try:
            again = CaseRun(self.case, with_attack=self.with_attack, isolation=self._isolation, instance=instance)
        except Exception:  # a sandbox that cannot be built again decides nothing
            return None
        try:
            for tool, args, step, any_tool in self._made:
                # A value the agent copied into its own call (a command line, a draft it then encodes) is swapped
                # too: it is the value it read, and what follows from it follows from the secret.
                again.env.gateway.call(tool, _swapped(args, replacements), step=step, bridged=any_tool)
            return Replayed(tuple(again.env.receipts), again.baseline, again.env.snapshot())
        except Exception:
            return None
        finally:
            again.env.close()

    def run_step(self, step: Step, *, index: int, args: dict[str, Any] | None = None) -> ToolOutcome:
        return self.call(step.tool, step.args if args is None else args, step=index)

    def interrupt(self) -> None:
        """Kill a command still running and start no other, at once: the rollout is being stopped, and its close()
        follows once the call in flight has come back."""
        self.env.interrupt()

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
        evidence = self._evidence(receipts, entries, final, None)
        return evaluate(self.case.rule, receipts, entries, self.case.context, evidence=evidence)

    def _evidence(
        self, receipts: list[Receipt], entries: list[DiffEntry], final: dict[str, Any], answer: str | None
    ) -> Evidence:
        return Evidence(
            receipts,
            entries,
            self.case.context,
            baseline=self.baseline,
            final=final,
            read_file=self.env.services["workspace"].read_large,
            isolation=self.env.isolation,
            answer=answer,
            inputs=list(self.shown),
            footprint=lambda: footprint(self.case, isolation=self._isolation),
            rerun=self.rerun,
            world=[self.instance.seed, self.instance.user_turns],
        )

    def finish(self, answer: str | None = None) -> Finished:
        """Snapshot, diff and verdict; the sandbox is removed whether or not they succeed. `answer` is the
        agent's final answer to the user, which an `answer` rule (a utility check) reads."""
        try:
            final = self.env.snapshot()
            entries = diff(self.baseline, final)
            receipts = list(self.env.receipts)
            evidence = self._evidence(receipts, entries, final, answer)
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


def _swapped(value: Any, replacements: Mapping[str, str]) -> Any:
    """`value` (plain data) with every key of `replacements` replaced by its value in every text it holds; a copy."""
    if isinstance(value, str):
        for old, new in replacements.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: _swapped(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [_swapped(v, replacements) for v in value]
    return copy.deepcopy(value)


def _replaced(instance: Instance, replacements: Mapping[str, str]) -> Instance:
    """`instance` with every key of `replacements` replaced by its value in every text it holds."""
    if not replacements:
        return instance
    return dataclasses.replace(
        instance,
        seed=_swapped(instance.seed, replacements),
        user_turns=_swapped(list(instance.user_turns), replacements),
        interventions=_swapped(list(instance.interventions), replacements),
    )


_footprints: dict[str, frozenset[str]] = {}


def footprint(case: Case, *, isolation: Bubblewrap | NoIsolation | None = None) -> frozenset[str] | None:
    """The workspace paths the user's task itself writes: what the case's benign plan, run without the attack,
    changes. What a rollout writes beyond it is judged by what consumes it (sandbox/consequences). None when the
    case has no benign plan or it cannot run.

    Cached by what it is computed from — the world without the attack and the benign plan —, not by the case: a
    compiled variant (benign, multi-channel) has its base's world and task, so it reuses the footprint its base
    already took (the self-check hands a base and its variants to one worker process)."""
    if not case.plans.benign:
        return None
    world = case.instantiate(with_attack=False)
    key = hashlib.sha256(
        orjson.dumps(
            [world.seed, world.user_turns, sorted(world.surfaces), world.interventions, case.plans.benign],
            option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
            default=repr,
        )
    ).hexdigest()
    if key in _footprints:
        return _footprints[key]
    try:
        run = CaseRun(case, with_attack=False, isolation=isolation)
    except Exception:
        return None
    try:
        for i, step in enumerate(case.plans.benign):
            run.call(step.tool, step.args, step=i, any_tool=step.tool == "run_command")
        final = run.env.snapshot()
    except Exception:
        return None
    finally:
        run.env.close()
    paths = frozenset(
        entry.path[2]
        for entry in diff(run.baseline, final)
        if entry.path[:2] == ("workspace", "files") and len(entry.path) > 2
    )
    _footprints[key] = paths
    return paths
