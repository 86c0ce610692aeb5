"""The full measurement pipeline on a calibration run: judge, recognise, audit, report — and the report's
JSON interface, with the numbers checked against independent counts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from redagent.engine.matrix import RunSpec, start_run
from redagent.judges import audit
from redagent.judges.config import config_for
from redagent.judges.labelling import judge_run, recognize_run
from redagent.judges.stats import audited_asr
from redagent.store.db import open_store


def redagent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redagent", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    url = f"sqlite:///{folder / 'run.db'}"
    with open_store(url) as store:
        spec = RunSpec(
            cases="banking-*,email-*",
            models=["sim/comply", "sim/ignore", "sim/indirect", "sim/attempt-fail", "sim/recognize-comply"],
            harnesses=["native", "shell"],
            cues=["clean", "disclosed"],
        )
        runner = start_run(store, spec)
        asyncio.run(runner.run())
        run_id = runner.run_record.id
        judge_run(store, run_id, ["trajectory", "state", "hybrid"])
        recognize_run(store, run_id)
        config = config_for("trajectory")
        audit_id = audit.sample(
            store,
            run_id,
            40,
            ["harness", "label"],
            3,
            config.config_hash,
            reviewers=("alice", "bob"),
            adjudicator="carol",
            config_name=config.name,
        )
        items = store.audit_items(audit_id)
        truth = {r.rollout_id: r.E for r in store.outcome_rows(run_id)}
        for n, item in enumerate(items):
            right = "harmful" if truth[item.rollout_id] else "not_harmful"
            store.submit_label(audit_id, item.item_id, "alice", right)
            # bob errs on every fifth item, so there is something to adjudicate
            wrong = {"harmful": "not_harmful", "not_harmful": "harmful"}[right]
            store.submit_label(audit_id, item.item_id, "bob", wrong if n % 5 == 0 else right)
        for item in store.adjudication_queue(audit_id, "carol"):
            store.adjudicate(
                audit_id,
                item.item_id,
                "carol",
                "harmful" if truth[next(i.rollout_id for i in items if i.item_id == item.item_id)] else "not_harmful",
            )
    out = folder / "out"
    result = redagent("report", run_id, "--out", str(out), "--db", url, "--reps", "2000")
    assert result.returncode == 0, result.stderr
    return url, run_id, out


def test_report_json_interface(audited):
    _, _, out = audited
    report = json.loads((out / "report.json").read_text())
    assert {"protocol", "asr", "views", "reg", "audit"} <= set(report)
    cell = report["asr"][0]
    assert {
        "model",
        "harness",
        "cue",
        "defense",
        "source",
        "backbone",
        "harmful",
        "valid",
        "rate",
        "ci_low",
        "ci_high",
    } <= set(cell)
    assert {c["source"] for c in report["asr"]} == {"execution", "trajectory/rule", "state/rule", "hybrid/rule"}
    view = report["views"][0]
    assert {"a", "b", "n", "a_only", "b_only", "mcnemar_p", "diff", "diff_ci_low", "diff_ci_high"} <= set(view)
    assert {
        "broad",
        "strict",
        "resolved",
        "unresolved",
        "rate_broad",
        "rate_strict",
        "lower_bound_broad",
        "lower_bound_strict",
    } <= set(report["reg"])
    for metric in ("precision", "recall", "specificity", "f1", "accuracy", "judged_asr", "audited_asr"):
        assert {"value", "ci_low", "ci_high"} <= set(report["audit"][metric]), metric
    assert {"kappa", "agreement"} <= set(report["audit"])
    for name in ("report.md", "asr.csv", "views.csv", "asr_matrix.png", "strategy_heatmap.png", "view_comparison.png"):
        assert (out / name).exists(), name


def test_report_numbers_match_independent_counts(audited):
    url, run_id, out = audited
    report = json.loads((out / "report.json").read_text())
    with open_store(url) as store:
        rows = store.outcome_rows(run_id)
        traj = {
            r.rollout_id: r.label for r in store.labelled_rows(run_id, config_for("trajectory").config_hash, "rule")
        }
        state = {r.rollout_id: r.label for r in store.labelled_rows(run_id, config_for("state").config_hash, "rule")}
    comply = [r for r in rows if (r.model, r.harness, r.cue) == ("sim/comply", "shell", "disclosed")]
    cell = next(
        c
        for c in report["asr"]
        if c["source"] == "execution"
        and c["model"] == "sim/comply"
        and c["harness"] == "shell"
        and c["cue"] == "disclosed"
    )
    assert (cell["harmful"], cell["valid"]) == (sum(r.E for r in comply), len(comply))
    pair = next(v for v in report["views"] if (v["a"], v["b"], v["model"]) == ("trajectory/rule", "state/rule", "all"))
    assert pair["a_only"] == sum(1 for k in traj if traj[k] == 1 and state[k] == 0)
    assert pair["b_only"] == sum(1 for k in traj if traj[k] == 0 and state[k] == 1)
    assert pair["b_only"] > 0 and pair["diff"] == pytest.approx((sum(state.values()) - sum(traj.values())) / len(traj))
    audit_block = report["audit"]
    assert audit_block["agreement"] == pytest.approx(0.8)  # bob disagrees on every fifth item
    expected = audited_asr(
        audit_block["judged_asr"]["value"], audit_block["precision"]["value"], audit_block["recall"]["value"]
    )
    assert audit_block["audited_asr"]["value"] == pytest.approx(expected)
    markdown = (out / "report.md").read_text()
    assert f"| execution | sim/comply | shell | disclosed | none | {cell['harmful']} | {cell['valid']} |" in markdown


def test_stats_command_matches_the_report(audited):
    url, run_id, out = audited
    result = redagent("stats", run_id, "asr", "--db", url, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["asr"] == json.loads((out / "report.json").read_text())["asr"]


@pytest.mark.parametrize(
    "args, message",
    [
        (("judge", "run-missing"), "no run"),
        (("report", "run-missing", "--out", "/tmp/x"), "no run"),
        (("judge", "RUN", "--views", "vibes"), "unknown view"),
        (("judge", "RUN", "--backbone", "nosuchprovider/x"), "unknown model provider"),
        (("stats", "RUN", "nonsense"), "unknown table"),
        (
            (
                "audit",
                "sample",
                "RUN",
                "--n",
                "100000",
                "--config",
                "state/rule",
                "--reviewers",
                "a,b",
                "--adjudicator",
                "c",
                "--seed",
                "1",
                "--stratify",
                "harness",
            ),
            "larger than the population",
        ),
    ],
)
def test_bad_input_is_one_line(audited, args, message):
    url, run_id, _ = audited
    result = redagent(*[run_id if a == "RUN" else a for a in args], "--db", url)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr and "Traceback" not in result.stderr


def test_semantic_cases_are_reported_as_an_upper_bound_until_an_llm_hybrid_judge_decides(tmp_path):
    from redagent.cases.loader import benchmark_dir
    from redagent.judges.report import build_report, markdown
    from redagent.judges.report_model import Semantic, SemanticBound, SemanticJudge
    from redagent.store.records import JudgeLabelRecord

    files = sorted(benchmark_dir().glob("base/*/*-c28-*.yaml"))[:3]
    if len(files) < 3:
        pytest.skip("no compiled benchmark in this checkout")
    with open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        runner = start_run(
            store,
            RunSpec(
                cases=",".join(map(str, files)) + ",banking-e2-invoice-bank-details-change",
                models=["sim/comply", "sim/ignore"],
                harnesses=["native"],
            ),
        )
        asyncio.run(runner.run())
        run_id = runner.run_record.id
        rollouts = {r.rollout_id: r for r in store.iter_rollouts(run_id)}
        semantic = [r for r in rollouts.values() if "-c28-" in r.case_id]
        harmful = sorted(r.rollout_id for r in semantic if r.E == 1)
        assert len(semantic) == 6 and len(harmful) == 3  # sim/comply does the rule's part on every case

        report = build_report(store, run_id, reps=200, only="asr")
        assert report.semantic == Semantic(
            cases=3,
            valid=6,
            harmful_by_rule=3,
            llm_hybrid=(),
            bounds={"upper": SemanticBound(cases=3, valid=6, harmful_by_rule=3, candidates=3, range=(0, 3))},
        )
        assert "upper-bound cases (3 cases, 6 rollouts): the rule decides a deterministic part" in markdown(report)
        assert "harmful between 0 and 3" in markdown(report)

        # An LLM hybrid judge decides four of them: it finds one of the three rule-harmful ones honest.
        config = config_for("hybrid", "openai/judge")
        decided = harmful + sorted(r.rollout_id for r in semantic if r.E == 0)[:1]
        store.write_judge_labels(
            [
                JudgeLabelRecord(
                    rollout_id=rid,
                    run_id=run_id,
                    config_name=config.name,
                    config_hash=config.config_hash,
                    view="hybrid",
                    contract_hash=config.contract_hash,
                    gate=config.gate,
                    backbone="openai/judge",
                    label=0 if rid == harmful[0] or rid not in harmful else 1,
                    status="ok",
                )
                for rid in decided
            ]
        )
        semantic = build_report(store, run_id, reps=200, only="asr").semantic
        assert semantic is not None and semantic.llm_hybrid == (
            SemanticJudge(config=config.name, backbone="openai/judge", decided=4, harmful=2, undecided=2),
        )
