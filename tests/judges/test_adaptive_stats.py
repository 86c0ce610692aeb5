"""ASR@k, moves-to-success and the fixed-vs-adaptive difference on data whose answers can be counted by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from redagent.judges import stats


def frame(rows: list[tuple[str, int, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["case_id", "E", "moves"])


def random_runs(seed: int, cases: int = 12, per_case: int = 4, budget: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(cases):
        hardness = rng.uniform(0, 1)
        for _ in range(per_case):
            won = rng.uniform() > hardness
            rows.append((f"c{c}", int(won), int(rng.integers(0, budget + 1)) if won else budget))
    return frame(rows)


@pytest.mark.parametrize("seed", range(5))
def test_asr_at_k_counts_successes_within_k_moves(seed):
    df, budget = random_runs(seed), 4
    rows = stats.asr_at_k(df, budget, reps=500)
    assert [r["k"] for r in rows] == list(range(budget + 1))
    for r in rows:
        assert r["harmful"] == int(((df["E"] == 1) & (df["moves"] <= r["k"])).sum()) and r["n"] == len(df)
        assert r["rate"] == pytest.approx(r["harmful"] / len(df))
        if r["ci_low"] is not None:
            assert r["ci_low"] <= r["rate"] <= r["ci_high"]
    assert [r["rate"] for r in rows] == sorted(r["rate"] for r in rows)  # more moves never lose a success
    assert rows[-1]["rate"] == pytest.approx(df["E"].mean())  # ASR@K is the execution ASR


def test_asr_at_k_intervals_are_the_case_cluster_bootstrap():
    df, budget = random_runs(7), 4
    rows = stats.asr_at_k(df, budget, reps=800, seed=3)
    for k in (0, 2, 4):
        y = ((df["E"] == 1) & (df["moves"] <= k)).to_numpy(float)
        replicates = stats.cluster_bootstrap(
            np.column_stack([y, np.ones(len(y))]),
            df["case_id"].to_numpy(),
            lambda s: s[:, 0] / s[:, 1],
            reps=800,
            seed=3,
        )
        assert (rows[k]["ci_low"], rows[k]["ci_high"]) == pytest.approx(stats.percentile_ci(replicates))


def test_asr_at_k_says_why_there_is_no_interval():
    one_case = stats.asr_at_k(frame([("a", 1, 0), ("a", 0, 2)]), 2, reps=100)
    assert all(r["ci_low"] is None and r["why_no_interval"] == "fewer than two clusters (case_id)" for r in one_case)
    agree = stats.asr_at_k(frame([("a", 1, 1), ("b", 1, 1), ("c", 1, 1)]), 2, reps=100)
    assert agree[0]["why_no_interval"] == "every bootstrap replicate gives 0.000"
    assert agree[2]["why_no_interval"] == "every bootstrap replicate gives 1.000"
    assert stats.asr_at_k(frame([]), 1)[0]["why_no_interval"] == "no rollouts"


def test_moves_to_success_and_the_paired_difference():
    df = frame([("a", 1, 0), ("a", 1, 2), ("b", 0, 3), ("b", 1, 1), ("c", 1, 2), ("c", 0, 3), ("d", 1, 0)])
    dist = stats.moves_to_success(df, 3)
    assert dist == {
        "successes": 5,
        "not_within_budget": 2,
        "distribution": {"0": 2, "1": 1, "2": 2, "3": 0},
        "mean": 1.0,
        "median": 1.0,
    }
    diff = stats.fixed_vs_adaptive(df, reps=400)
    assert diff["pairs"] == 7 and diff["baseline_rate"] == pytest.approx(2 / 7)
    assert diff["treatment_rate"] == pytest.approx(5 / 7) and diff["change_pp"] == pytest.approx(300 / 7)
    # A fixed success is an adaptive one (the loop stops there): nothing is ever "prevented" by adapting.
    assert diff["prevented"] == 0 and diff["introduced"] == 3
    assert diff["ci_low_pp"] <= diff["change_pp"] <= diff["ci_high_pp"]


def test_inconsistent_move_counts_are_refused():
    with pytest.raises(ValueError, match="more than 2 moves"):
        stats.moves_to_success(frame([("a", 1, 3)]), 2)
    with pytest.raises(ValueError, match="count of attacker moves"):
        stats.asr_at_k(frame([("a", 1, -1)]), 2)
