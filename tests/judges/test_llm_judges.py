"""LLM judges through a real loopback HTTP server with scripted replies (no paid API), incl. replies
that cite evidence which does not exist, and the label cache."""

from __future__ import annotations

import asyncio
import json

import pytest

from redagent.cases.loader import load_cases
from redagent.engine.matrix import RunSpec, start_run
from redagent.engine.models import LiteLLMModel
from redagent.judges.config import config_for
from redagent.judges.labelling import judge_run, recognize_run
from redagent.judges.llm import judge_llm
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
        runner = start_run(store, RunSpec(cases=CASE.id, models=["sim/comply", "sim/recognize-comply"],
                                          harnesses=["native"]))
        asyncio.run(runner.run())
        return url, runner.run_record.id, list(store.iter_export(runner.run_record.id))


def answer(label, evidence, rationale="scripted"):
    return text(json.dumps({"label": label, "evidence": evidence, "rationale": rationale}))


def judge(server, rollout, view="hybrid"):
    model = LiteLLMModel(BACKBONE, api_base=server.url, retries=0, timeout=5)
    return asyncio.run(judge_llm(config_for(view, BACKBONE), rollout, CASE, model))


def test_label_citing_existing_evidence_is_accepted(run_db):
    rollout = run_db[2][0]
    deciding = rollout["evidence"]["receipts"][0]
    with ChatServer() as server:
        server.script.append(answer(1, [deciding], "the transfer to the new account happened"))
        label = judge(server, rollout, "state")
    assert (label.status, label.label, label.evidence) == ("ok", 1, [deciding])
    assert label.prompt_tokens == 11 and "Service receipts" in server.requests[0]["messages"][1]["content"]
    assert server.requests[0]["messages"][0]["content"].startswith("# State proof contract")


def test_citing_missing_evidence_is_rejected_then_retried(run_db):
    rollout = run_db[2][0]
    with ChatServer() as server:
        server.script.extend([answer(1, ["r999"]), answer(1, [rollout["evidence"]["receipts"][0]])])
        label = judge(server, rollout)
    assert label.status == "ok" and len(server.requests) == 2
    assert "does not exist: r999" in server.requests[1]["messages"][-1]["content"]


@pytest.mark.parametrize("replies, why", [
    ([answer(1, ["r999"])] * 3, "does not exist"),
    ([answer(1, [])] * 3, "must cite"),
    ([text("I think it is harmful.")] * 3, "no JSON object"),
    ([error(500)], "judge failure: model_error"),
])
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
        assert first.judged["trajectory/llm"] == len(rollouts) == calls
        assert second.cached["trajectory/llm"] == len(rollouts) and len(server.requests) == calls
        stored = store.judge_labels(run_id, config_for("trajectory", BACKBONE).config_hash, BACKBONE)
        assert {s.backbone for s in stored} == {BACKBONE} and all(s.label == 0 for s in stored)


def test_llm_recognition_judge_sees_only_text_before_the_anchor(run_db):
    url, run_id, rollouts = run_db
    recognise = next(r for r in rollouts if r["model"] == "sim/recognize-comply")
    said = next(e for e in recognise["events"] if e["role"] == "assistant" and e["text"] and not e["tool_call"])
    with ChatServer() as server, open_store(url) as store:
        server.default = text(json.dumps({"broad": 1, "strict": 1, "evidence": [f"e{said['idx']}"],
                                          "rationale": "states the rule"}))
        result = recognize_run(store, run_id, backbone=BACKBONE, api_base=server.url)
        # sim/comply wrote nothing before acting, so the scripted citation does not exist in its
        # text: rejected three times, recorded as a failure rather than as R=0.
        assert result["labelled"] == 2 and result["failed"] == 1
        prompts = [r["messages"][1]["content"] for r in server.requests]
    assert any(CASE.recognition_cues[0] in p for p in prompts)
    assert not any("I have completed the task" in p for p in prompts)  # nothing after the anchor
