"""Audit estimates on real samples: an independent re-weighting of a sample with unsure and pending items, a
census that must give the population values, the choice of audit, allocation that samples every stratum, and
the same kappa interval everywhere."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from redagent.console.cli import app as cli
from redagent.console.cli import main
from redagent.judges import audit
from redagent.judges.audit import AuditSetupError, allocate, sample
from redagent.judges.report import ReportError, build_report, markdown
from redagent.judges.report_model import Excluded
from redagent.judges.stats import judge_audit
from redagent.store import Store, open_store
from redagent.store.records import JudgeLabelRecord
from tests.dbs import store_url  # noqa: F401
from tests.store.factory import make_rollout, make_run

HARNESSES = ("native", "react", "shell")
TOL = 1e-9


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:  # noqa: F811
    opened = open_store(store_url)
    yield opened
    opened.close()


@pytest.fixture
def population(store) -> pd.DataFrame:
    """run-1: 20 cases × 3 harnesses; the judge (state/rule) says harmful for 3 in 4 rollouts and the truth
    (what reviewers will say) is E, which disagrees with the judge now and then."""
    store.create_run(make_run("run-1", planned=60))
    rows, rollouts, labels = [], [], []
    for i in range(20):
        for harness in HARNESSES:
            r = make_rollout("run-1", f"banking/c{i:02d}", "sim/m1", harness=harness, n_events=2, E=int(i % 3 != 0))
            y = int((i + len(harness)) % 4 != 0)
            rollouts.append(r)
            labels.append(
                JudgeLabelRecord(
                    rollout_id=r.id,
                    run_id="run-1",
                    config_name="state/rule",
                    config_hash="h-state",
                    view="state",
                    contract_hash="c",
                    gate="agent-effects",
                    backbone="rule",
                    label=y,
                    status="ok",
                )
            )
            rows.append({"rollout_id": r.id, "case_id": r.case_id, "harness": harness, "y": y, "truth": r.E})
    store.write_rollouts(rollouts)
    store.write_judge_labels(labels)
    return pd.DataFrame(rows)


def draw(store, n: int, stratify=("harness", "label"), seed: int = 5) -> str:
    return sample(
        store, "run-1", n, list(stratify), seed, "h-state", "rule", reviewers=("alice", "bob"), adjudicator="carol"
    )


def word(value: int) -> str:
    return "harmful" if value else "not_harmful"


def label_with_gaps(store, audit_id: str, truth: dict[str, int]) -> dict[int, str]:
    """Label the audit's items so that some end unsure, some wait for adjudication, some wait for a review.

    Returns each item's fate as this test decided it: "unsure", "pending" or "usable".
    """
    fate = {}
    for k, item in enumerate(store.audit_items(audit_id)):
        item_id, right = item.item_id, word(truth[item.rollout_id])
        wrong = word(1 - truth[item.rollout_id])
        case = k % 8
        if case == 0:  # both unsure; the adjudicator cannot decide either
            store.submit_label(audit_id, item_id, "alice", "unsure")
            store.submit_label(audit_id, item_id, "bob", "unsure")
            store.adjudicate(audit_id, item_id, "carol", "unsure")
            fate[item_id] = "unsure"
        elif case == 1:  # a disagreement the adjudicator has not reached
            store.submit_label(audit_id, item_id, "alice", right)
            store.submit_label(audit_id, item_id, "bob", wrong)
            fate[item_id] = "pending"
        elif case == 2:  # bob has not labelled it yet
            store.submit_label(audit_id, item_id, "alice", right)
            fate[item_id] = "pending"
        elif case == 3:  # a disagreement adjudicated to the truth
            store.submit_label(audit_id, item_id, "alice", wrong)
            store.submit_label(audit_id, item_id, "bob", right)
            store.adjudicate(audit_id, item_id, "carol", right)
            fate[item_id] = "usable"
        else:
            store.submit_label(audit_id, item_id, "alice", right)
            store.submit_label(audit_id, item_id, "bob", right)
            fate[item_id] = "usable"
    return fate


def independent_estimates(population: pd.DataFrame, sampled: pd.DataFrame) -> dict[str, float]:
    """Straightforward stratified re-weighting, written from the definitions (no project code).

    population: every labelled rollout with its stratum, judge label y and truth. sampled: the usable items
    (stratum, y, h). Weight N_h / m_h over the m_h usable items of stratum h; strata with none are not covered.
    """
    n_h = population.groupby("stratum").size()
    m_h = sampled.groupby("stratum").size()
    w = sampled["stratum"].map(n_h / m_h).to_numpy()
    y, h = sampled["y"].to_numpy(), sampled["h"].to_numpy()
    covered = population[population["stratum"].isin(m_h.index)]
    n_cov = len(covered)
    assert w.sum() == pytest.approx(n_cov, abs=1e-9)
    tp, fp = np.sum(w * y * h), np.sum(w * y * (1 - h))
    fn, tn = np.sum(w * (1 - y) * h), np.sum(w * (1 - y) * (1 - h))
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    judged = covered["y"].sum() / n_cov  # the judge's labels are known for every covered rollout
    return {
        "precision": precision,
        "recall": recall,
        "specificity": tn / (tn + fp),
        "accuracy": (tp + tn) / n_cov,
        "f1": 2 * tp / (2 * tp + fp + fn),
        "judged_asr": judged,
        "human_asr": (tp + fn) / n_cov,
        "audited_asr": judged * precision / recall,
        "covered": n_cov,
    }


def strata_of(population: pd.DataFrame) -> pd.Series:
    return "harness=" + population["harness"] + "|label=" + population["y"].astype(str)


# ---------------------------------------------------------------- the Must-show re-weighting


def test_independent_reweighting_with_unsure_and_pending_items_matches_to_1e_9(store, population):
    audit_id = draw(store, n=30)
    truth = dict(zip(population["rollout_id"], population["truth"], strict=True))
    fate = label_with_gaps(store, audit_id, truth)
    pop = population.assign(stratum=strata_of(population))
    by_rollout = pop.set_index("rollout_id")
    items = store.audit_items(audit_id)
    usable = pd.DataFrame(
        [
            {
                "stratum": by_rollout.loc[i.rollout_id, "stratum"],
                "y": by_rollout.loc[i.rollout_id, "y"],
                "h": truth[i.rollout_id],
            }
            for i in items
            if fate[i.item_id] == "usable"
        ]
    )
    expected = independent_estimates(pop, usable)

    report = build_report(store, "run-1", reps=300, only="audit")
    got = report.audit
    assert got is not None and got.audit_id == audit_id
    for name in ("precision", "recall", "specificity", "accuracy", "f1", "judged_asr", "human_asr", "audited_asr"):
        assert abs(got.estimate(name).value - expected[name]) <= TOL, name
    assert got.population_covered == expected["covered"]
    counts = {reason: sum(1 for f in fate.values() if f == reason) for reason in ("unsure", "pending")}
    assert got.excluded == Excluded(**counts) and counts["unsure"] > 0 and counts["pending"] > 0
    assert got.usable == len(usable) and got.provisional is True
    text = markdown(report)
    assert "PROVISIONAL" in text and f"{counts['unsure']} unsure" in text and f"{counts['pending']} pending" in text


def test_a_census_audit_gives_the_population_values(store, population):
    audit_id = draw(store, n=60)
    for item in store.audit_items(audit_id):
        right = word(int(population.set_index("rollout_id").loc[item.rollout_id, "truth"]))
        store.submit_label(audit_id, item.item_id, "alice", right)
        store.submit_label(audit_id, item.item_id, "bob", right)
    got = build_report(store, "run-1", reps=300, only="audit").audit
    assert got is not None
    y, h = population["y"].to_numpy(), population["truth"].to_numpy()
    values = {
        "precision": (y * h).sum() / y.sum(),
        "recall": (y * h).sum() / h.sum(),
        "judged_asr": y.mean(),
        "human_asr": h.mean(),
        "audited_asr": h.mean(),
        "accuracy": (y == h).mean(),
    }
    assert got.census is True and got.provisional is False and got.excluded == Excluded(unsure=0, pending=0)
    for name, value in values.items():
        entry = got.estimate(name)
        assert abs(entry.value - value) <= TOL, name
        assert entry.ci_low <= entry.value <= entry.ci_high, name


@st.composite
def census(draw_: Any) -> pd.DataFrame:
    """A population of rollouts in strata, every one audited and labelled: y (judge), h (human), cases."""
    n_strata = draw_(st.integers(1, 5))
    rows = []
    for s in range(n_strata):
        size = draw_(st.integers(1, 8))
        for _ in range(size):
            rows.append(
                {
                    "stratum": f"s{s}",
                    "case_id": f"c{draw_(st.integers(0, 6))}",
                    "y": draw_(st.integers(0, 1)),
                    "h": float(draw_(st.integers(0, 1))),
                }
            )
    frame = pd.DataFrame(rows)
    return frame.assign(population=frame.groupby("stratum")["y"].transform("size"), excluded=None)


def population_value(name: str, y: np.ndarray, h: np.ndarray) -> float | None:
    tp, fp = float((y * h).sum()), float((y * (1 - h)).sum())
    fn, tn = float(((1 - y) * h).sum()), float(((1 - y) * (1 - h)).sum())
    ratio = {
        "precision": (tp, tp + fp),
        "recall": (tp, tp + fn),
        "specificity": (tn, tn + fp),
        "accuracy": (tp + tn, len(y)),
        "f1": (2 * tp, 2 * tp + fp + fn),
        "judged_asr": (tp + fp, len(y)),
        "human_asr": (tp + fn, len(y)),
    }
    if name == "audited_asr":
        p, r, j = (population_value(k, y, h) for k in ("precision", "recall", "judged_asr"))
        return None if p is None or r is None or not r or not j else j * p / r
    top, bottom = ratio[name]
    return top / bottom if bottom else None


@settings(max_examples=60, deadline=None)
@given(frame=census(), seed=st.integers(0, 2**16))
def test_census_estimates_equal_the_population_values_and_intervals_bracket_them(frame, seed):
    positives = frame.groupby("stratum")["y"].sum().to_dict()
    out = judge_audit(frame, reps=50, seed=seed, judged_positives=positives)
    y, h = frame["y"].to_numpy(dtype=float), frame["h"].to_numpy()
    assert out["census"] is True and out["population_covered"] == out["population"] == len(frame)
    for name in ("precision", "recall", "specificity", "accuracy", "f1", "judged_asr", "human_asr", "audited_asr"):
        expected, entry = population_value(name, y, h), out[name]
        if expected is None:
            assert entry["value"] is None and entry["why_undefined"], name
            continue
        assert abs(entry["value"] - expected) <= TOL, name
        assert entry["ci_low"] <= entry["value"] <= entry["ci_high"], name
        assert entry["ci_high"] - entry["ci_low"] <= TOL, name  # a census has no sampling error


# ---------------------------------------------------------------- which audit


def test_the_newest_audit_is_reported_unless_one_is_named(store, population):
    older = draw(store, n=12, seed=1)
    newer = draw(store, n=18, seed=2)
    assert [a.id for a in store.audits("run-1")][0] == newer
    default = build_report(store, "run-1", reps=100, only="audit").audit
    assert default is not None and default.audit_id == newer and default.items == 18
    assert default.audits == (newer, older)
    chosen = build_report(store, "run-1", reps=100, only="audit", audit_id=older)
    assert chosen.audit is not None and chosen.audit.audit_id == older and chosen.audit.items == 12
    assert f"Audit {older}" in markdown(chosen)
    with pytest.raises(ReportError, match="run run-1 has no audit 'audit-nope'"):
        build_report(store, "run-1", reps=100, only="audit", audit_id="audit-nope")


def test_stats_and_report_commands_take_the_audit(store_url, store, population, tmp_path, capsys):  # noqa: F811
    older = draw(store, n=12, seed=1)
    newer = draw(store, n=18, seed=2)
    runner = CliRunner()
    result = runner.invoke(cli, ["stats", "run-1", "audit", "--reps", "100", "--json", "--db", store_url])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["audit"]["audit_id"] == newer
    result = runner.invoke(cli, ["stats", "run-1", "audit", "--audit", older, "--reps", "100", "--db", store_url])
    assert result.exit_code == 0, result.output
    assert f"Audit {older}" in result.stdout and newer in result.stdout  # the other audit is named as a choice
    out = tmp_path / "report"
    result = runner.invoke(
        cli,
        [
            "report",
            "run-1",
            "--audit",
            older,
            "--out",
            str(out),
            "--format",
            "json,md",
            "--reps",
            "100",
            "--db",
            store_url,
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "report.json").read_text())["audit"]["audit_id"] == older
    assert f"Audit {older}" in (out / "report.md").read_text()
    with pytest.raises(SystemExit) as stopped:
        main(["stats", "run-1", "audit", "--audit", "audit-nope", "--db", store_url])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.startswith(f"error: run run-1 has no audit 'audit-nope' (its audits: {newer}, ")


# ---------------------------------------------------------------- allocation and kappa


def test_a_sample_smaller_than_the_strata_is_refused():
    with pytest.raises(ValueError, match="3 strata"):
        allocate({"a": 5, "b": 5, "c": 5}, 2, random.Random(0), cover_all=True)
    # Enough for every stratum: each gets at least one item.
    assert min(allocate({"a": 5, "b": 50, "c": 5, "d": 1}, 4, random.Random(0), cover_all=True).values()) == 1


def test_an_n_too_small_for_two_cases_per_stratum_merges_strata_never_leaves_one_out(store, population):
    with pytest.raises(AuditSetupError) as caught:
        draw(store, n=1)
    assert (
        str(caught.value) == "a sample of 1 cannot give two cases to even one stratum of 60 labelled rollouts: "
        "ask for at least 2"
    )
    assert store.audits() == []
    audit_id = draw(store, n=5)  # 3 harnesses × 2 judge labels need 12: merged down to two strata
    items = store.audit_items(audit_id)
    assert len({i.stratum for i in items}) == 2
    assert sum(i.population for i in {i.stratum: i for i in items}.values()) == 60  # every rollout covered
    audit_id = draw(store, n=12)
    assert {i.stratum for i in store.audit_items(audit_id)} == set(strata_of(population))


def test_status_and_report_show_the_same_kappa_interval(store, population):
    audit_id = draw(store, n=30)
    truth = dict(zip(population["rollout_id"], population["truth"], strict=True))
    for k, item in enumerate(store.audit_items(audit_id)):
        right, wrong = word(truth[item.rollout_id]), word(1 - truth[item.rollout_id])
        store.submit_label(audit_id, item.item_id, "alice", right)
        store.submit_label(audit_id, item.item_id, "bob", wrong if k % 4 == 0 else right)
    progress = audit.status(store, audit_id)
    for reps in (200, 3000):
        reported = build_report(store, "run-1", reps=reps, only="audit").audit
        assert reported is not None and reported.kappa == progress["kappa"]
        assert list(reported.kappa_ci) == progress["kappa_ci"] and reported.kappa_ci[0] is not None


# ---------------------------------------------------------------- empty cells and invalid counts


def test_cells_without_a_valid_rollout_are_listed_with_their_invalid_count(store, population, tmp_path):
    # sim/m2 ran too, and every one of its rollouts failed; sim/m1 has one invalid rollout beside its 20 valid.
    store.write_rollouts(
        [
            make_rollout("run-1", f"banking/c{i:02d}", "sim/m2", n_events=1, valid=False, invalid_reason="model_error")
            for i in range(3)
        ]
        + [make_rollout("run-1", "banking/c00", "sim/m1", attempt=1, n_events=1, valid=False, invalid_reason="timeout")]
    )
    audit_id = draw(store, n=12)
    report = build_report(store, "run-1", reps=100)
    cells = {(c.source, c.model, c.harness): c for c in report.asr or ()}
    for source in ("execution", "state/rule"):
        empty = cells[(source, "sim/m2", "native")]
        assert (empty.harmful, empty.valid, empty.invalid, empty.rate, empty.ci_low) == (0, 0, 3, None, None)
        assert cells[(source, "sim/m1", "native")].invalid == 1
        assert cells[(source, "sim/m1", "react")].invalid == 0
    expected = population[population["harness"] == "native"]
    assert cells[("execution", "sim/m1", "native")].valid == len(expected)
    text = markdown(report)
    assert "| execution | sim/m2 | native | none | none | 0 | 0 | 3 | — | no valid rollout |" in text
    from redagent.judges.report import write_report

    write_report(report, tmp_path, ["csv"])
    strata_rows = (tmp_path / "audit_strata.csv").read_text().splitlines()
    assert len(strata_rows) == 1 + 6 and report.audit is not None and report.audit.audit_id == audit_id


def test_a_population_changed_since_the_draw_is_said_and_not_mixed_into_the_weights(store, population):
    audit_id = draw(store, n=12)
    for item in store.audit_items(audit_id):
        store.submit_label(audit_id, item.item_id, "alice", "harmful")
        store.submit_label(audit_id, item.item_id, "bob", "harmful")
    late = make_rollout("run-1", "banking/c99", "sim/m1", harness="native", n_events=1)
    store.write_rollouts([late])
    store.write_judge_labels(
        [
            JudgeLabelRecord(
                rollout_id=late.id,
                run_id="run-1",
                config_name="state/rule",
                config_hash="h-state",
                view="state",
                contract_hash="c",
                gate="agent-effects",
                backbone="rule",
                label=1,
                status="ok",
            )
        ]
    )
    got = audit.estimates(store, audit_id, reps=100)
    assert got["population"] == 60  # the weights' population: the one the sample was drawn from
    assert got["judged_asr"]["source"] == "sample"
    assert got["notes"] and "changed since the audit was drawn" in got["notes"][0]
    assert "stratum harness=native|label=1: 15 then, 16 now; 1 stratum in all" in got["notes"][0]
