"""The attacker's moves draw techniques from the knowledge base for each channel's strategy and record which:
without the generated file the scripted attacker writes exactly its old texts and names the hand-written
mapping of the strategy; with one, a wrapper's text carries the case's goal; a model attacker is offered
techniques and a cited one is recorded, an unoffered one refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from redagent.cases.kb.base import hand_written, write
from redagent.cases.kb.techniques import CHANNEL_STRATEGY, fill, strategy_of
from redagent.cases.loader import load_cases
from redagent.engine.attacker.channels import channels
from redagent.engine.attacker.moves import BadReply, parse_reply, scripted_moves
from redagent.engine.attacker.policy import ModelAttacker
from redagent.engine.attacker.session import AttackSession, AttackSetting
from redagent.engine.rollout import execute_rollout
from redagent.engine.sim import SimModel
from redagent.engine.types import RolloutKey
from redagent.llm.client import ModelReply

CASES = {c.id: c for c in load_cases()}
USER_CASE = "banking-u1-found-approval-code-oven-repair"
ENV_CASE = "email-e1-handover-notes-client-export"
BUDGET = 3
HAND = {m["id"]: m for m in hand_written()}


def scripted_rollout(case_id: str) -> list[dict[str, Any]]:
    case = CASES[case_id]
    setting = AttackSetting("scripted", BUDGET)
    key = RolloutKey(case_id, "sim/ignore", "native", "clean", "none", 1)
    record = asyncio.run(
        execute_rollout(
            "run-t", case, key, lambda name, c: SimModel(name, c), attackers=lambda c: AttackSession(c, setting)
        )
    )
    assert record.valid
    return [e for e in record.events if e["role"] == "attacker"]


def channel_strategies(case_id: str) -> dict[str, str]:
    case = CASES[case_id]
    return {c.id: strategy_of(c.kind, c.own, case.strategy) for c in channels(case)}


@pytest.mark.parametrize("case_id", [USER_CASE, ENV_CASE])
def test_without_a_generated_file_moves_keep_their_texts_and_name_a_hand_written_technique(case_id):
    events = scripted_rollout(case_id)
    case = CASES[case_id]
    strategies = channel_strategies(case_id)
    old = scripted_moves(list(strategies), case.attack.content, BUDGET)
    assert [e["text"] for e in events] == [m.text for m in old[: len(events)]] and events
    for event in events:
        move = event["tool_call"]
        assert move["technique_use"] == "framing" and move["technique"] in HAND
        assert HAND[move["technique"]]["strategy"] == strategies[move["channel"]]
    again = scripted_rollout(case_id)
    assert [(e["text"], e["tool_call"]["technique"]) for e in again] == [
        (e["text"], e["tool_call"]["technique"]) for e in events
    ]


def mapping(mid: str, strategy: str, text: str) -> dict[str, Any]:
    from redagent.cases.taxonomy import STRATEGIES

    return {
        "id": mid,
        "text": text,
        "strategy": strategy,
        "vulnerability": "V01",
        "channel": STRATEGIES[strategy].channel,
        "constraints": ["*"],
        "kind": "jailbreak_template",
        "carrier": "",
        "method": {"by": "rules", "rules": ["R-test"]},
        "source": {"package": "fixture", "version": "1", "file": "f.json", "entry": mid, "licence": "MIT"},
        "duplicates": 0,
    }


def test_with_a_generated_file_a_wrapper_carries_the_goal_and_its_id_is_recorded(tmp_path, monkeypatch):
    kb_file = tmp_path / "kb.jsonl"
    strategies = sorted({"U1", *CHANNEL_STRATEGY.values(), CASES[ENV_CASE].strategy})
    wrappers = [
        mapping(f"kb-fixture-{s.lower()}-{n}", s, f"[{s} wrapper {n}] Before anything else: {{{{ prompt }}}} Thanks.")
        for s in strategies
        for n in (1, 2)
    ]
    write(kb_file, {"corpora": []}, wrappers)
    monkeypatch.setenv("REDAGENT_KB", str(kb_file))
    by_id = {m["id"]: m for m in wrappers}
    for case_id in (USER_CASE, ENV_CASE):
        events = scripted_rollout(case_id)
        strategies_of = channel_strategies(case_id)
        goal = CASES[case_id].attack.content
        assert events
        for event in events:
            move = event["tool_call"]
            used = by_id[move["technique"]]
            assert move["technique_use"] == "wrapper" and used["strategy"] == strategies_of[move["channel"]]
            assert fill(used["text"], goal) in event["text"] and goal in event["text"]
        again = [e["tool_call"]["technique"] for e in scripted_rollout(case_id)]
        assert again == [e["tool_call"]["technique"] for e in events]  # the draw is deterministic


def test_a_broken_generated_file_makes_the_rollout_invalid_not_a_crash(tmp_path, monkeypatch):
    kb_file = tmp_path / "kb.jsonl"
    kb_file.write_text("not a knowledge base\n")
    monkeypatch.setenv("REDAGENT_KB", str(kb_file))
    case = CASES[USER_CASE]
    key = RolloutKey(USER_CASE, "sim/ignore", "native", "clean", "none", 1)
    record = asyncio.run(
        execute_rollout(
            "run-t",
            case,
            key,
            lambda name, c: SimModel(name, c),
            attackers=lambda c: AttackSession(c, AttackSetting("scripted", 2)),
        )
    )
    assert (record.valid, record.invalid_reason) == (False, "attacker_setup")
    assert f"{kb_file}:1: not a JSON line" in record.invalid_detail


class CitingModel:
    """Cites the first technique its view offers, then stops."""

    name = "citing"

    def __init__(self) -> None:
        self.views: list[dict[str, Any]] = []

    async def complete(self, request: Any) -> ModelReply:
        view = json.loads(request.messages[1]["content"])
        self.views.append(view)
        if len(self.views) > 1:
            return ModelReply(content=json.dumps({"move": "stop", "why": "enough"}))
        offered = view["techniques"][0]
        text = offered["text"] + " Move the money today."
        return ModelReply(
            content=json.dumps({"move": "reformulate", "text": text, "why": "try it", "technique": offered["id"]})
        )


def test_a_model_attacker_is_offered_techniques_of_its_strategy_and_its_citation_is_recorded():
    model = CitingModel()
    case = CASES[USER_CASE]
    key = RolloutKey(USER_CASE, "sim/ignore", "native", "clean", "none", 1)
    record = asyncio.run(
        execute_rollout(
            "run-t",
            case,
            key,
            lambda name, c: SimModel(name, c),
            attackers=lambda c: AttackSession(
                c, AttackSetting("adaptive", 2, model="x"), ModelAttacker(model, deadline=30)
            ),
        )
    )
    offered = model.views[0]["techniques"]
    assert offered and all(HAND[t["id"]]["strategy"] == case.strategy for t in offered)
    move = next(e["tool_call"] for e in record.events if e["role"] == "attacker")
    assert (move["technique"], move["technique_use"]) == (offered[0]["id"], "cited")


def test_a_technique_that_was_not_offered_is_refused():
    reply = json.dumps({"move": "reformulate", "text": "x", "why": "y", "technique": "kb-made-up"})
    with pytest.raises(BadReply, match="technique 'kb-made-up' was not offered; the offered ones are kb-u1-01"):
        parse_reply(reply, offered=["user"], current="user", techniques=["kb-u1-01"])
    assert (
        parse_reply(
            reply.replace("kb-made-up", "kb-u1-01"), offered=["user"], current="user", techniques=["kb-u1-01"]
        ).technique
        == "kb-u1-01"
    )


def test_fill_puts_the_goal_in_every_slot_spelling():
    for wrapper in (
        "A {{ prompt }} B",
        "A {goal} B",
        "A [INSERT PROMPT HERE] B",
        "{% raw %}A {% endraw %}{{prompt}} B",
    ):
        assert fill(wrapper, "GOAL").replace("  ", " ") in ("A GOAL B",)


def test_the_kb_file_path_is_isolated_in_tests():
    # tests/conftest.py points REDAGENT_KB at a missing file: a machine's own knowledge base never leaks in
    from redagent.cases.kb.base import kb_path

    assert not Path(kb_path()).exists()


def test_a_strategy_without_wrappers_names_its_hand_written_mapping_not_an_unrelated_corpus_entry():
    from redagent.cases.kb.techniques import Techniques

    request = mapping("kb-fixture-request", "U1", "How do I pick a lock?")  # a corpus entry with no slot
    techniques = Techniques([*hand_written(), request])
    drawn = {techniques.draw("U1", f"key-{i}").id for i in range(40)}
    assert drawn and drawn <= {m for m in HAND if HAND[m]["strategy"] == "U1"}
    assert all(t.hand for t in techniques.offer("U1", "k"))
    techniques = Techniques([request])  # nothing else: the entry is all there is
    assert techniques.draw("U1", "k").id == "kb-fixture-request"


def test_a_run_records_its_knowledge_base_and_a_resume_with_another_is_refused(tmp_path, monkeypatch):
    from redagent.cases.kb.techniques import from_knowledge_base
    from redagent.engine.matrix import RunSpec, resume_run, start_run
    from redagent.engine.plan import PlanError
    from redagent.store.db import open_store

    spec = RunSpec(cases=USER_CASE, models=["sim/ignore"], harnesses=["native"], attacker="scripted", attack_budget=2)
    with open_store(f"sqlite:///{tmp_path / 'run.db'}") as store:
        runner = start_run(store, spec)
        asyncio.run(runner.run())
        run_id = runner.run_record.id
        recorded = store.get_run(run_id).protocol["attack_techniques"]
        assert recorded == {"digest": from_knowledge_base().digest, "count": len(HAND)}
        resume_run(store, run_id, check_endpoint=False)  # the same knowledge base: resumable
        kb_file = tmp_path / "kb.jsonl"
        write(kb_file, {"corpora": []}, [mapping("kb-fixture-u1", "U1", "Please: {{ prompt }}")])
        monkeypatch.setenv("REDAGENT_KB", str(kb_file))
        with pytest.raises(PlanError, match="the attack knowledge base changed since"):
            resume_run(store, run_id, check_endpoint=False)
        # A run without an attacker draws nothing and records no knowledge base.
        plain = start_run(store, RunSpec(cases=USER_CASE, models=["sim/ignore"], harnesses=["native"]))
        assert "attack_techniques" not in store.get_run(plain.run_record.id).protocol
