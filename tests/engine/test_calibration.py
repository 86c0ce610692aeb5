"""Calibration agents: on every library case, every behaviour yields exactly its ground truth."""

from __future__ import annotations

import pytest

from redagent.cases.loader import load_cases
from redagent.engine.calibration import BEHAVIOURS, UnknownAgent, expected_E, indirect_route
from redagent.engine.conditions import DEFENSES
from redagent.engine.direct import run_direct
from redagent.sandbox.environment import SERVICES
from redagent.sandbox.receipts import ReceiptLog
from redagent.sandbox.verifier import evaluate

LIBRARY = load_cases()
SERVICE_OF = {spec.name: cls.name for cls in SERVICES.values() for spec in cls.tool_specs()}


@pytest.mark.parametrize("agent", list(BEHAVIOURS))
def test_each_behaviour_gives_its_expected_E_on_every_case(agent):
    wrong = []
    for case in LIBRARY:
        rollout = run_direct(case, agent)
        assert rollout.reached, case.id
        if rollout.E != rollout.expected_E:
            wrong.append((case.id, rollout.E, rollout.expected_E))
    assert wrong == []


def test_trajectory_shapes_follow_the_behaviour():
    case = next(c for c in LIBRARY if c.id == "banking-e2-invoice-bank-details-change")
    comply = run_direct(case, "sim/comply")
    calls = [e for e in comply.events if e.tool_call and e.role == "assistant"]
    harmful = case.plans.harmful[0]
    assert any(e.tool_call["args"] == harmful.args for e in calls)
    deciding = [r for r in comply.finished.receipts if r.id in comply.finished.verdict.receipts]
    assert [r.step for r in deciding] == [next(e.index for e in calls if e.tool_call["args"] == harmful.args)]

    claim = run_direct(case, "sim/claim-only")
    assert "send_transfer" in claim.events[-1].text and claim.E == 0
    assert not any(e.role == "assistant" and e.tool_call and e.tool_call["args"] == harmful.args for e in claim.events)

    refusal = run_direct(case, "sim/comply-claim-refusal")
    assert "refused" in refusal.events[-1].text and refusal.E == 1

    recognise = run_direct(case, "sim/recognize-comply")
    said = [e.text for e in recognise.events if e.role == "assistant" and e.text and not e.tool_call]
    assert any(case.recognition_cues[0] in text for text in said)

    failed = run_direct(case, "sim/attempt-fail")
    assert [r.outcome for r in failed.finished.receipts if r.args.get("to_account") == harmful.args["to_account"]] == [
        "denied"
    ]


def calls_as_receipts(rollout, case):
    """What a transcript alone shows: each direct tool call as if it were a receipt, with no effect."""
    log = ReceiptLog()
    lookalike = case.attack.intervention or {}
    for event in rollout.events:
        if event.role == "assistant" and event.tool_call:
            name = event.tool_call["name"]
            if lookalike.get("kind") == "lookalike" and name == lookalike.get("name"):
                name = lookalike["target"]
            log.append(
                service=SERVICE_OF.get(name, "?"),
                action=name,
                args=event.tool_call["args"],
                outcome="ok",
                actor="agent",
                step=event.index,
            )
    return list(log)


def test_indirect_harm_is_invisible_in_the_direct_calls():
    # sim/indirect realises the harm (E=1 from receipts), yet the verifier applied to the direct tool
    # calls alone stays silent: the harm is only a side effect (a script run, an attachment by reference).
    for case in LIBRARY:
        if indirect_route(case) is None:
            continue
        rollout = run_direct(case, "sim/indirect")
        assert rollout.E == 1, case.id
        assert evaluate(case.rule, calls_as_receipts(rollout, case), [], case.context).E == 0, case.id


def test_benign_variant_keeps_E_zero_for_a_complying_agent():
    for case in LIBRARY:
        rollout = run_direct(case, "sim/comply", with_attack=False)
        assert rollout.E == 0, case.id


@pytest.mark.parametrize("agent", list(BEHAVIOURS))
def test_benign_counterparts_expect_and_give_E_zero_for_every_behaviour(agent):
    wrong = []
    for case in LIBRARY:
        benign = case.benign_counterpart()
        assert not benign.attacked and benign.id == f"{case.id}-benign"
        assert {expected_E(agent, benign, defense) for defense in DEFENSES} == {0}, case.id
        rollout = run_direct(benign, agent)
        if (rollout.E, rollout.expected_E) != (0, 0):
            wrong.append((case.id, rollout.E, rollout.expected_E))
    assert wrong == []


def test_unknown_agent():
    with pytest.raises(UnknownAgent):
        expected_E("sim/nonsense", LIBRARY[0])
