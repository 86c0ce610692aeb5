"""LLM judges through a real loopback HTTP server with scripted replies (no paid API), incl. replies
that cite evidence which does not exist, and the label cache."""

from __future__ import annotations

import asyncio
import json

import pytest

from redagent.cases.loader import load_cases
from redagent.engine.matrix import RunSpec, start_run
from redagent.judges.config import config_for
from redagent.judges.labelling import judge_run, recognition_contract_hash, recognize_run
from redagent.judges.llm import judge_llm
from redagent.llm.client import PREFLIGHT_PROMPT, LiteLLMModel
from redagent.store.db import open_store
from tests.engine.openai_stub import ChatServer, error, text

CASE = next(c for c in load_cases() if c.id == "banking-e2-invoice-bank-details-change")
BACKBONE = "openai/judge-stub"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test")


@pytest.fixture(scope="module")
def run_db(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('llmjudge') / 'run.db'}"
    with open_store(url) as store:
        runner = start_run(
            store, RunSpec(cases=CASE.id, models=["sim/comply", "sim/recognize-comply"], harnesses=["native"])
        )
        asyncio.run(runner.run())
        return url, runner.run_record.id, list(store.iter_rollouts(runner.run_record.id))


def answer(label, evidence, rationale="scripted"):
    return text(json.dumps({"label": label, "evidence": evidence, "rationale": rationale}))


def judge(server, rollout, view="hybrid"):
    model = LiteLLMModel(BACKBONE, api_base=server.url, retries=0, timeout=5)
    return asyncio.run(judge_llm(config_for(view, BACKBONE), rollout, CASE, model))


def test_label_citing_existing_evidence_is_accepted(run_db):
    rollout = run_db[2][0]
    deciding = rollout.verdict.receipts[0]
    with ChatServer() as server:
        server.script.append(answer(1, [deciding], "the transfer to the new account happened"))
        label = judge(server, rollout, "state")
    assert (label.status, label.label, label.evidence) == ("ok", 1, [deciding])
    assert label.prompt_tokens == 11 and "Service receipts" in server.requests[0]["messages"][1]["content"]
    assert server.requests[0]["messages"][0]["content"].startswith("# State proof contract")


def test_citing_missing_evidence_is_rejected_then_retried(run_db):
    rollout = run_db[2][0]
    with ChatServer() as server:
        server.script.extend([answer(1, ["r999"]), answer(1, [rollout.verdict.receipts[0]])])
        label = judge(server, rollout)
    assert label.status == "ok" and len(server.requests) == 2
    assert "does not exist: r999" in server.requests[1]["messages"][-1]["content"]


@pytest.mark.parametrize(
    "replies, why",
    [
        ([answer(1, ["r999"])] * 3, "does not exist"),
        ([answer(1, [])] * 3, "must cite"),
        ([text("I think it is harmful.")] * 3, "no JSON object"),
        ([error(500)], "judge failure: model_server_error"),
    ],
)
def test_judge_failures_are_recorded_not_guessed(run_db, replies, why):
    with ChatServer() as server:
        server.script.extend(replies)
        label = judge(server, run_db[2][0])
    assert label.status == "failed" and label.label is None and why in label.rationale


def test_labels_are_cached_by_rollout_config_and_backbone(run_db):
    url, run_id, rollouts = run_db
    with ChatServer() as server, open_store(url) as store:
        server.default = answer(0, [], "no effect violates the rule")
        first = judge_run(store, run_id, ["trajectory"], backbone=BACKBONE, api_base=server.url)
        calls = len(server.requests)
        second = judge_run(store, run_id, ["trajectory"], backbone=BACKBONE, api_base=server.url)
        # One pre-flight request per command, then one per label; the second run is all cache.
        assert first.judged["trajectory/llm"] == len(rollouts) == calls - 1
        assert second.cached["trajectory/llm"] == len(rollouts) and len(server.requests) == calls + 1
        assert server.requests[0]["messages"] == server.requests[-1]["messages"] == PREFLIGHT_PROMPT
        stored = store.judge_labels(run_id, config_for("trajectory", BACKBONE).config_hash, BACKBONE)
        assert {s.backbone for s in stored} == {BACKBONE} and all(s.label == 0 for s in stored)


def test_llm_recognition_judge_sees_only_text_before_the_anchor(run_db):
    url, run_id, rollouts = run_db
    recognise = next(r for r in rollouts if r.model == "sim/recognize-comply")
    said = next(e for e in recognise.events if e.role == "assistant" and e.text and not e.tool_call)
    with ChatServer() as server, open_store(url) as store:
        server.default = text(
            json.dumps({"broad": 1, "strict": 1, "evidence": [said.id], "rationale": "states the rule"})
        )
        result = recognize_run(store, run_id, backbone=BACKBONE, api_base=server.url)
        # sim/comply wrote nothing before acting, so the scripted citation does not exist in its
        # text: rejected three times, recorded as a failure rather than as R=0.
        assert result["labelled"] == 2 and result["failed"] == 1
        assert server.requests[0]["messages"] == PREFLIGHT_PROMPT
        prompts = [r["messages"][1]["content"] for r in server.requests[1:]]
    assert any(CASE.recognition_cues[0] in p for p in prompts)
    assert not any("I have completed the task" in p for p in prompts)  # nothing after the anchor


def test_a_judge_reply_of_the_wrong_shape_is_a_stored_failure_whose_reason_is_refreshed(tmp_path):
    url = f"sqlite:///{tmp_path / 'shape.db'}"
    with open_store(url) as store, ChatServer() as server:
        runner = start_run(store, RunSpec(cases=CASE.id, models=["sim/comply"], harnesses=["native"]))
        asyncio.run(runner.run())
        run_id = runner.run_record.id
        config = config_for("state", BACKBONE)
        server.default = text(json.dumps({"label": True, "evidence": 5}))  # a bool label, evidence no list
        first = judge_run(store, run_id, ["state"], backbone=BACKBONE, api_base=server.url, retries=0)
        assert first.failed["state/llm"] == 1 and first.judged["state/llm"] == 0
        [stored] = store.judge_labels(run_id, config.config_hash, BACKBONE)
        assert stored.status == "failed" and stored.label is None
        assert "wrong shape" in stored.rationale and "evidence: Input should be a valid list" in stored.rationale
        # The retry fails for another reason: the stored reason is the new one, not the first.
        server.default = text("I cannot decide.")
        judge_run(store, run_id, ["state"], backbone=BACKBONE, api_base=server.url, retries=0)
        [again] = store.judge_labels(run_id, config.config_hash, BACKBONE)
        assert again.status == "failed" and again.rationale == "judge failure: no JSON object in the answer"
        deciding = store.get_rollout(store.rollouts(run_id)[0].id).evidence["receipts"][0]
        server.default = answer(1, [deciding])
        judge_run(store, run_id, ["state"], backbone=BACKBONE, api_base=server.url, retries=0)
        [ok] = store.judge_labels(run_id, config.config_hash, BACKBONE)
        assert (ok.status, ok.label) == ("ok", 1)


def test_a_recognition_reply_of_the_wrong_shape_is_a_stored_failure_not_a_crash(tmp_path):
    url = f"sqlite:///{tmp_path / 'recognise.db'}"
    with open_store(url) as store, ChatServer() as server:
        runner = start_run(store, RunSpec(cases=CASE.id, models=["sim/recognize-comply"], harnesses=["native"]))
        asyncio.run(runner.run())
        run_id = runner.run_record.id
        server.default = text(json.dumps({"broad": 1, "strict": 0, "evidence": 7}))  # 'int' is not iterable
        result = recognize_run(store, run_id, backbone=BACKBONE, api_base=server.url)
        assert (result["labelled"], result["failed"]) == (1, 1)
        [label] = store.recognition_labels(run_id, BACKBONE, recognition_contract_hash(BACKBONE))
        assert label.status == "failed" and "evidence: Input should be a valid list" in label.rationale
        # A failed recognition label is tried again (and replaced) on the next run, not kept as done.
        server.default = text(json.dumps({"broad": 0, "strict": 0, "evidence": [], "rationale": "no"}))
        again = recognize_run(store, run_id, backbone=BACKBONE, api_base=server.url)
        assert (again["labelled"], again["failed"], again["cached"]) == (1, 0, 0)
        [label] = store.recognition_labels(run_id, BACKBONE, recognition_contract_hash(BACKBONE))
        assert (label.status, label.broad) == ("ok", 0)


def test_labels_are_stored_as_they_are_produced(run_db, tmp_path, monkeypatch):
    """A judge that dies mid-run keeps every label it made before (not only whole pages of 200)."""
    import shutil

    from redagent.judges import llm

    url, run_id, rollouts = run_db
    copy = tmp_path / "copy.db"
    shutil.copy(url.removeprefix("sqlite:///"), copy)
    calls = []
    real = llm.judge_llm

    async def dies_on_the_second(config, rollout, case, model):
        calls.append(rollout.rollout_id)
        if len(calls) == 2:
            raise RuntimeError("the judge process was killed")
        return await real(config, rollout, case, model)

    monkeypatch.setattr(llm, "judge_llm", dies_on_the_second)
    with ChatServer() as server, open_store(f"sqlite:///{copy}") as store:
        server.default = answer(0, [], "nothing harmful")
        with pytest.raises(RuntimeError, match="killed"):
            judge_run(store, run_id, ["hybrid"], backbone=BACKBONE, api_base=server.url, concurrency=1)
        stored = store.judge_labels(run_id, config_for("hybrid", BACKBONE).config_hash, BACKBONE)
    assert len(rollouts) == 2 and [s.rollout_id for s in stored] == calls[:1]


def test_judge_options_reach_the_model(run_db, tmp_path, capsys):
    import shutil

    from redagent.console.cli import main

    url, run_id, _ = run_db
    copy = tmp_path / "options.db"
    shutil.copy(url.removeprefix("sqlite:///"), copy)
    with ChatServer() as server:
        server.default = answer(0, [], "nothing harmful")
        with pytest.raises(SystemExit) as done:
            main(
                [
                    "judge",
                    run_id,
                    "--views",
                    "state",
                    "--backbone",
                    BACKBONE,
                    "--api-base",
                    server.url,
                    "--max-tokens",
                    "333",
                    "--timeout",
                    "9",
                    "--retries",
                    "1",
                    "--db",
                    f"sqlite:///{copy}",
                ]
            )
        assert done.value.code in (0, None)
        assert {r["max_tokens"] for r in server.requests[1:]} == {333}  # after the pre-flight
    assert "state/llm (openai/judge-stub): judged 2" in capsys.readouterr().out
