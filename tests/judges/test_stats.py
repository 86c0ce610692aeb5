"""Statistics: each function checked against an independent computation (closed forms, hand counts, slow loops)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from redagent.judges import stats
from redagent.judges.stats import (
    KAPPA_REPS,
    BootstrapUndefined,
    audited_asr,
    cluster_bootstrap,
    cohen_kappa,
    judge_audit,
    paired_effect,
    paired_views,
    percentile_ci,
    ranking_reversals,
    rate_table,
    reg,
    slice_rates,
    wilson,
)
from redagent.store.records import UtilityCount

Z = 1.959963984540054


def wilson_textbook(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927) in the (k + z²/2) / (n + z²) form — algebraically different from the module's."""
    centre = (k + Z * Z / 2) / (n + Z * Z)
    half = Z * math.sqrt(n) / (n + Z * Z) * math.sqrt((k / n) * (1 - k / n) + Z * Z / (4 * n))
    return max(0.0, centre - half), min(1.0, centre + half)


# ---------------------------------------------------------------- Wilson and rate tables


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 10), (10, 10), (3, 10), (81, 263), (510, 2846), (1, 1000)])
def test_wilson_matches_the_closed_form(k, n):
    assert wilson(k, n) == pytest.approx(wilson_textbook(k, n), abs=1e-12)


def test_wilson_matches_published_values():
    # Newcombe (1998), Stat Med 17:857, Table I, method 3 (score interval without continuity correction).
    for (k, n), (low, high) in {
        (81, 263): (0.2553, 0.3662),
        (15, 148): (0.0624, 0.1605),
        (0, 20): (0.0, 0.1611),
        (1, 29): (0.0061, 0.1718),
    }.items():
        got = wilson(k, n)
        assert round(got[0], 4) == low and round(got[1], 4) == high


def test_wilson_edges():
    assert all(math.isnan(x) for x in wilson(0, 0))
    assert wilson(0, 7)[0] == 0.0 and wilson(7, 7)[1] == 1.0
    with pytest.raises(ValueError):
        wilson(5, 3)


def test_rate_table_counts_rates_and_intervals_per_group():
    df = pd.DataFrame(
        {
            "harness": ["react", "native", "native", "react", "native", "shell"],
            "model": ["m2", "m1", "m1", "m2", "m2", "m1"],
            "y": [1, 1, 0, 1, 0, 0],
        }
    )
    table = rate_table(df, ["harness", "model"])
    assert list(table.columns) == ["harness", "model", "harmful", "valid", "rate", "ci_low", "ci_high"]
    assert list(zip(table["harness"], table["model"], strict=True)) == [
        ("native", "m1"),
        ("native", "m2"),
        ("react", "m2"),
        ("shell", "m1"),
    ]
    assert table["harmful"].tolist() == [1, 0, 2, 0]
    assert table["valid"].tolist() == [2, 1, 2, 1]
    assert table["rate"].tolist() == [0.5, 0.0, 1.0, 0.0]
    for row in table.itertuples():
        assert (row.ci_low, row.ci_high) == pytest.approx(wilson_textbook(row.harmful, row.valid), abs=1e-12)


def test_rate_table_rejects_labels_that_are_not_0_1():
    with pytest.raises(ValueError, match="0/1"):
        rate_table(pd.DataFrame({"g": ["a"], "y": [2]}), ["g"])
    with pytest.raises(ValueError, match="missing"):
        rate_table(pd.DataFrame({"g": ["a", "a"], "y": [1, None]}), ["g"])


# ---------------------------------------------------------------- bootstrap


def slow_cluster_bootstrap(y, clusters, reps, seed, strata=None):
    """Reference: per replicate, draw cluster ids with replacement (within strata) and recompute the mean."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"y": y, "c": clusters, "s": 0 if strata is None else strata})
    rows_of = {c: g.index.to_numpy() for c, g in frame.groupby("c")}
    clusters_of = {s: g["c"].unique() for s, g in frame.groupby("s")}
    out = np.empty(reps)
    for r in range(reps):
        drawn = np.concatenate([rng.choice(ids, size=len(ids)) for ids in clusters_of.values()])
        out[r] = y[np.concatenate([rows_of[c] for c in drawn])].mean()
    return out


def clustered_outcomes(n_clusters, seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, size=n_clusters)
    clusters = np.repeat(np.arange(n_clusters), sizes)
    p = rng.beta(2, 3, size=n_clusters)[clusters]
    return (rng.random(len(clusters)) < p).astype(float), clusters


def rate(sums):
    return sums[:, 0] / sums[:, 1]


def test_bootstrap_distribution_matches_a_slow_reference_loop():
    y, clusters = clustered_outcomes(150, seed=3)
    fast = cluster_bootstrap(np.column_stack([y, np.ones_like(y)]), clusters, rate, reps=4000, seed=1)
    slow = slow_cluster_bootstrap(y, clusters, reps=4000, seed=2)
    sd = slow.std()
    assert fast.std() == pytest.approx(sd, rel=0.08)
    assert abs(fast.mean() - slow.mean()) < 0.1 * sd
    for q in (2.5, 97.5):
        assert abs(np.percentile(fast, q) - np.percentile(slow, q)) < 0.25 * sd
    assert percentile_ci(fast) == pytest.approx(tuple(np.percentile(fast, [2.5, 97.5])))


def slow_rao_wu(y, clusters, strata, fractions, reps, seed):
    """Reference Rao–Wu loop: per stratum draw n_h − 1 clusters with replacement, weight each unit by
    1 − λ + λ·n_h/(n_h − 1)·(times its cluster was drawn), λ = √(1 − f_h); the replicate's weighted total."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"y": y, "c": clusters, "s": strata})
    per_cluster = frame.groupby(["s", "c"])["y"].sum()
    out = np.empty(reps)
    for r in range(reps):
        total = 0.0
        for s, group in per_cluster.groupby(level="s"):
            n, lam = len(group), math.sqrt(1 - fractions.get(s, 0.0))
            drawn = np.bincount(rng.integers(0, n, size=n - 1), minlength=n)
            total += float(((1 - lam + lam * n / (n - 1) * drawn) * group.to_numpy()).sum())
        out[r] = total
    return out


def stratified_total_variance(y, clusters, strata, fractions):
    """The textbook variance estimate of a stratified total over cluster totals: Σ_h (1 − f_h) n_h s_h²."""
    frame = pd.DataFrame({"y": y, "c": clusters, "s": strata})
    per_cluster = frame.groupby(["s", "c"])["y"].sum()
    return sum((1 - fractions.get(s, 0.0)) * len(g) * g.var(ddof=1) for s, g in per_cluster.groupby(level="s"))


def test_stratified_bootstrap_matches_a_slow_rao_wu_loop_and_the_textbook_variance():
    _, clusters = clustered_outcomes(120, seed=5)
    # Strata with very different rates: resampling across strata would nearly double the spread.
    strata = np.where(clusters < 60, "high", "low")
    y = (np.random.default_rng(1).random(len(clusters)) < np.where(strata == "high", 0.85, 0.15)).astype(float)
    fractions = {"high": 0.4, "low": 0.0}
    fast = cluster_bootstrap(y, clusters, lambda s: s[:, 0], reps=4000, seed=1, strata=strata, fractions=fractions)
    slow = slow_rao_wu(y, clusters, strata, fractions, reps=4000, seed=2)
    sd = slow.std()
    assert fast.std() == pytest.approx(sd, rel=0.08)
    for q in (2.5, 50, 97.5):
        assert abs(np.percentile(fast, q) - np.percentile(slow, q)) < 0.25 * sd
    # For a total the rescaled bootstrap is centred on the estimate and its variance is the textbook one.
    assert fast.var() == pytest.approx(stratified_total_variance(y, clusters, strata, fractions), rel=0.08)
    assert abs(fast.mean() - y.sum()) < 5 * sd / math.sqrt(4000)


def test_small_strata_get_the_full_variance_not_the_with_replacement_shortfall():
    # Twelve strata of two or three clusters: the with-replacement bootstrap's variance is short by
    # (n_h − 1)/n_h (one half, two thirds); the rescaled one is not.
    rng = np.random.default_rng(4)
    sizes = [2, 3] * 6
    clusters = np.repeat(np.arange(sum(sizes)), 3)
    strata = np.repeat(np.repeat(np.arange(len(sizes)), sizes), 3)
    y = rng.normal(size=len(clusters)) + strata
    textbook = stratified_total_variance(y, clusters, strata, {})
    rescaled = cluster_bootstrap(y, clusters, lambda s: s[:, 0], reps=20_000, seed=3, strata=strata)
    assert rescaled.var() == pytest.approx(textbook, rel=0.05)
    naive = slow_cluster_bootstrap(y, clusters, reps=4000, seed=3, strata=strata) * len(y)  # mean → total
    assert naive.var() < 0.8 * textbook


def test_a_stratum_with_one_cluster_has_no_variance_unless_it_is_a_census():
    y, clusters, strata = np.array([1.0, 0.0, 1.0, 1.0]), np.array(["a", "b", "c", "c"]), np.array(["s", "s", "t", "t"])
    with pytest.raises(BootstrapUndefined, match="fewer than two clusters in stratum t"):
        cluster_bootstrap(y, clusters, lambda s: s[:, 0], reps=10, strata=strata)
    with pytest.raises(BootstrapUndefined, match="fewer than two clusters"):
        cluster_bootstrap(np.ones(3), np.array(["a", "a", "a"]), lambda s: s[:, 0], reps=10)
    # Audited whole (f = 1), the stratum is known exactly: it adds its total to every replicate.
    fixed = cluster_bootstrap(y, clusters, lambda s: s[:, 0], reps=500, strata=strata, fractions={"t": 1.0})
    assert set(np.unique(fixed)) <= {2.0 + 2 * k for k in range(3)}  # 2 (stratum t) + 2·(times a drawn)
    census = cluster_bootstrap(y, clusters, lambda s: s[:, 0], reps=50, strata=strata, fractions={"s": 1.0, "t": 1.0})
    assert (census == y.sum()).all()


def test_bootstrap_is_deterministic_and_independent_of_row_order_and_length():
    y, clusters = clustered_outcomes(40, seed=7)
    values = np.column_stack([y, np.ones_like(y)])
    first = cluster_bootstrap(values, clusters, rate, reps=300, seed=4)
    assert np.array_equal(first, cluster_bootstrap(values, clusters, rate, reps=300, seed=4))
    shuffle = np.random.default_rng(0).permutation(len(y))
    assert np.allclose(first, cluster_bootstrap(values[shuffle], clusters[shuffle], rate, reps=300, seed=4))
    assert np.array_equal(first[:120], cluster_bootstrap(values, clusters, rate, reps=120, seed=4))
    assert not np.array_equal(first, cluster_bootstrap(values, clusters, rate, reps=300, seed=5))


def test_bootstrap_rejects_a_cluster_in_two_strata_and_a_bad_statistic():
    with pytest.raises(ValueError, match="spans several strata"):
        cluster_bootstrap(np.ones(3), ["a", "a", "b"], lambda s: s[:, 0], reps=5, strata=["x", "y", "y"])
    with pytest.raises(ValueError, match="shape"):
        cluster_bootstrap(np.ones(3), ["a", "a", "b"], lambda s: s, reps=5)


def test_percentile_ci_ignores_undefined_replicates():
    assert percentile_ci(np.array([np.nan, 1.0, 2.0, np.inf, 3.0]), alpha=0.0) == (1.0, 3.0)
    assert all(math.isnan(x) for x in percentile_ci(np.array([np.nan, np.nan])))


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 6), min_size=2, max_size=25),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
    stratified=st.booleans(),
)
def test_bootstrap_replicates_are_centred_and_rescale_each_stratum_to_its_size(sizes, data, seed, stratified):
    n_clusters = len(sizes)
    clusters = np.repeat(np.arange(n_clusters), sizes)
    x = np.array(data.draw(st.lists(st.floats(-100, 100), min_size=len(clusters), max_size=len(clusters))))
    cluster_strata = np.arange(n_clusters) % 3 if stratified else np.zeros(n_clusters, dtype=int)
    strata = cluster_strata[clusters]
    counts = np.bincount(cluster_strata, minlength=3)
    # A stratum of one cluster cannot be resampled: audit it whole (f = 1), as the estimator requires.
    fractions = {s: (1.0 if counts[s] == 1 else data.draw(st.sampled_from([0.0, 0.5]))) for s in range(3)}
    # Indicator columns: 1 on the first unit of each cluster, one column per stratum. Their replicate
    # sums are the rescaled number of clusters drawn in that stratum, which must always equal its cluster count.
    first = np.r_[True, clusters[1:] != clusters[:-1]]
    indicators = np.column_stack([first & (strata == s) for s in range(3)]).astype(float)
    reps = 400
    sums = np.empty((reps, 4))

    def keep(s):
        sums[:] = s
        return s[:, 0]

    replicates = cluster_bootstrap(
        np.column_stack([x, indicators]),
        clusters,
        keep,
        reps=reps,
        seed=seed,
        strata=strata if stratified else None,
        fractions=fractions if stratified else None,
    )
    assert np.allclose(sums[:, 1:], counts, rtol=0, atol=1e-9)
    # The total is linear in the weights, so its bootstrap mean is exactly the full-sample total in
    # expectation; allow 5 Monte Carlo standard errors.
    tolerance = 5 * replicates.std() / math.sqrt(reps) + 1e-6 * (1 + abs(x).sum())
    assert abs(replicates.mean() - x.sum()) <= tolerance


# ---------------------------------------------------------------- paired views and McNemar


def views_frame(counts: dict[tuple[int, int], int]) -> pd.DataFrame:
    rows = [(a, b) for (a, b), k in counts.items() for _ in range(k)]
    frame = pd.DataFrame(rows, columns=["traj", "state"])
    return frame.assign(case_id=[f"c{i % 7}" for i in range(len(frame))])


def test_paired_views_counts_and_exact_mcnemar():
    df = views_frame({(1, 1): 10, (0, 0): 5, (1, 0): 3, (0, 1): 12})
    out = paired_views(df, "traj", "state", reps=2000)
    assert (out["n"], out["a_only"], out["b_only"]) == (30, 3, 12)
    assert out["a_rate"] == pytest.approx(13 / 30) and out["b_rate"] == pytest.approx(22 / 30)
    assert out["disagreement"] == pytest.approx(15 / 30)
    assert out["diff"] == pytest.approx(9 / 30)
    assert out["mcnemar_p"] == pytest.approx(binomtest(3, 15, 0.5, alternative="two-sided").pvalue, rel=1e-12)
    # The same p from the binomial sum: two tails of Bin(15, 1/2) at or beyond 3.
    assert out["mcnemar_p"] == pytest.approx(2 * sum(math.comb(15, i) for i in range(4)) / 2**15, rel=1e-12)
    assert out["diff_ci_low"] < out["diff"] < out["diff_ci_high"]


def test_paired_views_without_discordance_has_p_one():
    out = paired_views(views_frame({(1, 1): 4, (0, 0): 6}), "traj", "state", reps=200)
    assert out["mcnemar_p"] == 1.0 and out["disagreement"] == 0.0 and out["diff"] == 0.0
    assert out["diff_ci_low"] == 0.0 and out["diff_ci_high"] == 0.0


# ---------------------------------------------------------------- ranking reversals


def test_ranking_reversals_on_a_hand_made_table():
    rows = [
        # s1: A>B under a, A<B under b → 1 reversal; (A,C) and (B,C) keep their order.
        ("s1", "A", 0.5, 0.3),
        ("s1", "B", 0.4, 0.6),
        ("s1", "C", 0.3, 0.2),
        # s2: A and B tie under a, so no reversal although b orders them.
        ("s2", "A", 0.5, 0.5),
        ("s2", "B", 0.5, 0.7),
        # s3: the order fully reverses → all 3 pairs.
        ("s3", "A", 0.9, 0.1),
        ("s3", "B", 0.5, 0.5),
        ("s3", "C", 0.1, 0.9),
        # s4: one model, no pairs.
        ("s4", "A", 0.2, 0.8),
    ]
    df = pd.DataFrame(rows, columns=["slice", "model", "traj", "state"]).sample(frac=1, random_state=0)
    out = ranking_reversals(df, "traj", "state")
    assert (out["slices"], out["slices_with_reversal"], out["inversions"]) == (4, 2, 4)
    assert out["by_slice"] == [
        {"slice": "s1", "inversions": 1, "pairs": 3},
        {"slice": "s2", "inversions": 0, "pairs": 1},
        {"slice": "s3", "inversions": 3, "pairs": 3},
        {"slice": "s4", "inversions": 0, "pairs": 0},
    ]


def test_slice_rates_builds_the_predefined_slices():
    df = pd.DataFrame(
        {
            "model": ["m1", "m1", "m2", "m2", "m1", "m2"],
            "harness": ["native", "react", "native", "react", "native", "native"],
            "strategy_category": ["user", "tool", "user", "user", "tool", "tool"],
            "traj": [1, 0, 0, 1, 1, 0],
            "state": [1, 1, 0, 1, 0, 1],
        }
    )
    table = slice_rates(df, "traj", "state", {"global": None, "harness": "harness", "category": "strategy_category"})
    cells = {(r.slice, r.model): (r.traj, r.state, r.n) for r in table.itertuples()}
    assert set(table["slice"]) == {"global", "harness=native", "harness=react", "category=user", "category=tool"}
    assert cells[("global", "m1")] == (pytest.approx(2 / 3), pytest.approx(2 / 3), 3)
    assert cells[("harness=native", "m2")] == (0.0, 0.5, 2)
    assert cells[("category=tool", "m1")] == (0.5, 0.5, 2)
    # m1 vs m2 globally: traj 2/3 vs 1/3, state 2/3 vs 2/3 (tie) → no reversal there.
    out = ranking_reversals(table, "traj", "state")
    assert out["slices"] == 5
    by = {s["slice"]: s["inversions"] for s in out["by_slice"]}
    # harness=native: m1 (1, .5) vs m2 (0, .5) and harness=react: m1 (0, 1) vs m2 (1, 1) tie under state;
    # category=tool: m1 (.5, .5) vs m2 (0, 1) is the one reversal.
    assert by == {"category=tool": 1, "category=user": 0, "global": 0, "harness=native": 0, "harness=react": 0}


# ---------------------------------------------------------------- paired effects


def test_paired_effect_counts_on_a_hand_built_table():
    pairs = [(1, 0)] * 4 + [(1, 1)] * 2 + [(0, 0)] * 3 + [(0, 1)] * 1 + [(1, None), (None, 0)]
    df = pd.DataFrame(pairs, columns=["none", "policy"]).assign(case_id=[f"c{i % 5}" for i in range(len(pairs))])
    out = paired_effect(df, "none", "policy", reps=2000)
    assert (out["pairs"], out["incomplete"]) == (10, 2)
    assert (out["prevented"], out["baseline_harmful"], out["introduced"]) == (4, 6, 1)
    assert out["baseline_rate"] == pytest.approx(0.6) and out["treatment_rate"] == pytest.approx(0.3)
    assert out["change_pp"] == pytest.approx(-30.0)
    assert out["ci_low_pp"] <= out["change_pp"] <= out["ci_high_pp"]


def test_paired_effect_interval_matches_a_slow_paired_cluster_loop():
    rng = np.random.default_rng(11)
    case = np.repeat(np.arange(80), rng.integers(1, 5, size=80))
    base = (rng.random(len(case)) < 0.8).astype(float)
    treat = base * (rng.random(len(case)) < 0.3)
    out = paired_effect(pd.DataFrame({"b": base, "t": treat, "case_id": case}), "b", "t", reps=4000, seed=3)
    slow = slow_cluster_bootstrap(100 * (treat - base), case, reps=4000, seed=9)
    sd = slow.std()
    assert out["change_pp"] == pytest.approx(100 * (treat.mean() - base.mean()))
    assert abs(out["ci_low_pp"] - np.percentile(slow, 2.5)) < 0.25 * sd
    assert abs(out["ci_high_pp"] - np.percentile(slow, 97.5)) < 0.25 * sd


def test_paired_effect_with_no_complete_pair_reports_nothing_undefined_as_numbers():
    out = paired_effect(pd.DataFrame({"b": [1, None], "t": [None, 0], "case_id": ["a", "b"]}), "b", "t")
    assert (out["pairs"], out["incomplete"]) == (0, 2)
    assert out["change_pp"] is None and out["ci_low_pp"] is None


# ---------------------------------------------------------------- REG


def test_reg_rates_exclude_unresolved_anchors_and_bounds_count_them_negative():
    df = pd.DataFrame(
        {
            "strategy": ["T4", "T4", "T4", "U1", "U1", "U1", "U1", "T4"],
            "resolved": [True, True, False, True, True, True, False, True],
            "broad": [1, 1, np.nan, 0, 1, 0, np.nan, 0],
            "strict": [1, 0, np.nan, 0, 0, 0, np.nan, 0],
        }
    )
    out = reg(df, by="strategy")
    assert {k: out[k] for k in ("executions", "resolved", "unresolved", "broad", "strict")} == {
        "executions": 8,
        "resolved": 6,
        "unresolved": 2,
        "broad": 3,
        "strict": 1,
    }
    assert out["rate_broad"] == pytest.approx(3 / 6) and out["rate_strict"] == pytest.approx(1 / 6)
    assert out["lower_bound_broad"] == pytest.approx(3 / 8) and out["lower_bound_strict"] == pytest.approx(1 / 8)
    groups = {g["strategy"]: g for g in out["by"]}
    assert (groups["T4"]["rate_broad"], groups["T4"]["lower_bound_broad"]) == (pytest.approx(2 / 3), 0.5)
    assert (groups["U1"]["rate_broad"], groups["U1"]["lower_bound_strict"]) == (pytest.approx(1 / 3), 0.0)


def test_reg_reproduces_the_papers_cohort():
    # 3,177 confirmed violations, 2,846 resolved, 510 broad and 156 strict among them.
    resolved = np.r_[np.ones(2846, bool), np.zeros(331, bool)]
    broad = np.r_[np.ones(510), np.zeros(2336), np.full(331, np.nan)]
    strict = np.r_[np.ones(156), np.zeros(2690), np.full(331, np.nan)]
    out = reg(pd.DataFrame({"resolved": resolved, "broad": broad, "strict": strict}))
    assert [
        round(100 * out[k], 2) for k in ("rate_broad", "rate_strict", "lower_bound_broad", "lower_bound_strict")
    ] == [17.92, 5.48, 16.05, 4.91]


def test_reg_rejects_unlabelled_resolved_rows_and_unnested_strict():
    with pytest.raises(ValueError, match="broad"):
        reg(pd.DataFrame({"resolved": [True], "broad": [np.nan], "strict": [0]}))
    with pytest.raises(ValueError, match="nested"):
        reg(pd.DataFrame({"resolved": [True], "broad": [0], "strict": [1]}))


# ---------------------------------------------------------------- kappa


def kappa_from_table(table: np.ndarray) -> float:
    n = table.sum()
    p_o = np.trace(table) / n
    p_e = sum(table[i, :].sum() * table[:, i].sum() for i in range(len(table))) / n**2
    return (p_o - p_e) / (1 - p_e)


def labels_from_table(table, categories):
    a, b = [], []
    for i, ci in enumerate(categories):
        for j, cj in enumerate(categories):
            a += [ci] * int(table[i, j])
            b += [cj] * int(table[i, j])
    return a, b


def test_kappa_on_the_classic_two_by_two_table():
    # Reviewer A yes/B yes 20, A yes/B no 5, A no/B yes 10, A no/B no 15 → p_o 0.7, p_e 0.5, kappa 0.4.
    a, b = labels_from_table(np.array([[20, 5], [10, 15]]), ["yes", "no"])
    out = cohen_kappa(a, b)
    assert out["n"] == 50 and out["agreement"] == pytest.approx(0.7)
    assert out["kappa"] == pytest.approx(0.4) and out["kappa_defined"] and out["why_undefined"] is None


def test_kappa_with_an_unsure_category():
    table = np.array([[10, 2, 1], [3, 12, 2], [1, 1, 8]])
    a, b = labels_from_table(table, [1, 0, "unsure"])
    order = np.random.default_rng(0).permutation(len(a))
    out = cohen_kappa([a[i] for i in order], [b[i] for i in order])
    assert out["agreement"] == pytest.approx(30 / 40)
    assert out["kappa"] == pytest.approx(kappa_from_table(table))
    # A category only one reviewer used still counts (a zero row or column in the table).
    one_sided = np.array([[5, 1, 0], [2, 6, 0], [1, 0, 0]])
    a, b = labels_from_table(one_sided, [1, 0, "unsure"])
    assert cohen_kappa(a, b)["kappa"] == pytest.approx(kappa_from_table(one_sided))


def test_kappa_undefined_when_both_reviewers_use_one_identical_label():
    out = cohen_kappa([1] * 12, [1] * 12)
    assert out["kappa"] is None and out["kappa_defined"] is False and out["agreement"] == 1.0
    assert "expected agreement is 1" in out["why_undefined"]
    # One constant reviewer alone leaves kappa defined (it is 0: agreement no better than chance).
    defined = cohen_kappa([1] * 4, [1, 0, 1, 0])
    assert defined["kappa_defined"] and defined["kappa"] == pytest.approx(0.0)
    assert cohen_kappa([], [])["why_undefined"] == "no items"


def test_kappa_has_one_interval_whatever_the_caller():
    a, b = labels_from_table(np.array([[20, 5], [10, 15]]), ["yes", "no"])
    out = cohen_kappa(a, b)
    assert out["kappa_reps"] == KAPPA_REPS == 10_000
    assert cohen_kappa(a, b)["kappa_ci"] == out["kappa_ci"]  # no replicate count or seed to choose
    low, high = out["kappa_ci"]
    assert low < out["kappa"] < high


def test_kappa_interval_resamples_cases_and_is_undefined_with_fewer_than_two():
    a, b = labels_from_table(np.array([[20, 5], [10, 15]]), ["yes", "no"])
    # Items come in groups of five from the same case: a case-cluster bootstrap is wider than an item one.
    cases = [f"c{i // 5}" for i in range(len(a))]
    order = np.argsort([x == y for x, y in zip(a, b, strict=True)], kind="stable")  # disagreements share cases
    a, b = [a[i] for i in order], [b[i] for i in order]
    clustered = cohen_kappa(a, b, clusters=cases)
    items = cohen_kappa(a, b)
    assert clustered["kappa"] == pytest.approx(items["kappa"])
    assert clustered["kappa_ci"][1] - clustered["kappa_ci"][0] > items["kappa_ci"][1] - items["kappa_ci"][0]
    assert clustered["clusters"] == 10 and items["clusters"] == 50
    one = cohen_kappa(a, b, clusters=["c"] * len(a))
    assert one["kappa"] == pytest.approx(items["kappa"]) and one["kappa_ci"] == [None, None]
    assert one["why_no_interval"] == "fewer than two clusters (cases) among the items both reviewers labelled"


def test_agreement_interval_resamples_cases_like_kappas():
    a, b = labels_from_table(np.array([[20, 5], [10, 15]]), ["yes", "no"])
    cases = [f"c{i // 5}" for i in range(len(a))]
    order = np.argsort([x == y for x, y in zip(a, b, strict=True)], kind="stable")  # disagreements share cases
    a, b = [a[i] for i in order], [b[i] for i in order]
    clustered, items = cohen_kappa(a, b, clusters=cases), cohen_kappa(a, b)
    assert clustered["agreement"] == items["agreement"] == pytest.approx(0.7)
    assert clustered["agreement_method"] == items["agreement_method"] == "Rao–Wu bootstrap of clusters"
    width = {name: out["agreement_ci"][1] - out["agreement_ci"][0] for name, out in (("c", clustered), ("i", items))}
    assert width["c"] > 1.5 * width["i"]  # ten cases of five items are not fifty independent items
    # Perfect agreement cannot vary in a resample: Wilson, with one observation per case.
    perfect = cohen_kappa(["yes", "no"] * 10, ["yes", "no"] * 10, clusters=[f"c{i // 5}" for i in range(20)])
    assert perfect["agreement_method"] == "Wilson at 4 clusters"
    assert perfect["agreement_ci"] == pytest.approx(list(wilson(4, 4)))


def test_kappa_interval_of_perfect_agreement_is_not_a_collapsed_point():
    # Six items, both reviewers agree on each, both labels used: kappa is 1, and every resample agrees too.
    out = cohen_kappa([1, 0, 1, 0, 1, 1], [1, 0, 1, 0, 1, 1])
    assert out["kappa"] == 1.0 and out["kappa_ci"][1] == 1.0 and out["why_no_interval"] is None
    # The lower end is kappa at raw agreement's Wilson lower bound, with the observed expected agreement 5/9.
    expected = (4 * 4 + 2 * 2) / 36
    assert out["kappa_ci"][0] == pytest.approx((wilson(6, 6)[0] - expected) / (1 - expected))
    assert out["kappa_method"].startswith("no disagreement")


# ---------------------------------------------------------------- judge audit


def test_audited_asr_reproduces_the_papers_correction():
    assert round(audited_asr(55.43, 97.84, 91.27), 2) == 59.42
    assert round(100 * audited_asr(0.5543, 0.9784, 0.9127), 2) == 59.42


def audit_frame(seed: int = 0, population: dict[str, int] | None = None) -> pd.DataFrame:
    """240 sampled items in two strata by judge label; `population` gives each stratum's N_h (default: n_h)."""
    rng = np.random.default_rng(seed)
    n = 240
    y = rng.integers(0, 2, size=n)
    h = np.where(rng.random(n) < 0.9, y, 1 - y)  # the judge is right about 90% of the time
    stratum = np.where(y == 1, "judged-harmful", "judged-safe")
    frame = pd.DataFrame(
        {"y": y, "h": h.astype(float), "stratum": stratum, "case_id": [f"c{i}" for i in rng.integers(0, 90, size=n)]}
    )
    sizes = frame["stratum"].value_counts().to_dict() if population is None else population
    return frame.assign(population=frame["stratum"].map(sizes), excluded=None)


def confusion_metrics(y, h, w):
    tp, fp = (w * (y == 1) * (h == 1)).sum(), (w * (y == 1) * (h == 0)).sum()
    fn, tn = (w * (y == 0) * (h == 1)).sum(), (w * (y == 0) * (h == 0)).sum()
    return {
        "precision": tp / (tp + fp),
        "recall": tp / (tp + fn),
        "specificity": tn / (tn + fp),
        "accuracy": (tp + tn) / (tp + fp + fn + tn),
        "f1": 2 * tp / (2 * tp + fp + fn),
        "judged_asr": (tp + fp) / w.sum(),
        "human_asr": (tp + fn) / w.sum(),
    }


def test_judge_audit_of_a_census_is_the_plain_confusion_matrix_with_no_sampling_error():
    df = audit_frame()
    out = judge_audit(df, reps=1000)
    matrix = pd.crosstab(df["y"], df["h"])
    tp, fp, fn, tn = matrix.loc[1, 1], matrix.loc[1, 0], matrix.loc[0, 1], matrix.loc[0, 0]
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    expected = {
        "precision": precision,
        "recall": recall,
        "specificity": tn / (tn + fp),
        "accuracy": (tp + tn) / len(df),
        "f1": 2 * precision * recall / (precision + recall),
        "judged_asr": df["y"].mean(),
        "human_asr": df["h"].mean(),
        "audited_asr": df["h"].mean(),
    }
    assert out["census"] is True
    for name, value in expected.items():
        assert out[name]["value"] == pytest.approx(value), name
        # Every rollout was audited: the estimate is the population value, and its interval that point.
        assert out[name]["ci_low"] == pytest.approx(value) and out[name]["ci_high"] == pytest.approx(value), name


def test_judge_audit_weights_shift_metrics_as_computed_by_hand():
    # Judged-harmful items stand for 3 population items each, judged-safe for 1: precision (all
    # within one stratum) is unchanged, recall and accuracy move towards the harmful stratum.
    df = pd.DataFrame(
        {
            "y": [1, 1, 1, 1, 0, 0, 0, 0],
            "h": [1, 1, 1, 0, 1, 0, 0, 0],
            "stratum": ["pos"] * 4 + ["neg"] * 4,
            "population": [12] * 4 + [4] * 4,
            "case_id": ["a", "b", "c", "d", "a", "e", "f", "g"],
            "excluded": None,
        }
    )
    out = judge_audit(df, reps=500)
    # Weighted TP = 9, FP = 3, FN = 1, TN = 3, total 16.
    assert out["precision"]["value"] == pytest.approx(9 / 12)
    assert out["recall"]["value"] == pytest.approx(9 / 10)
    assert out["specificity"]["value"] == pytest.approx(3 / 6)
    assert out["accuracy"]["value"] == pytest.approx(12 / 16)
    assert out["f1"]["value"] == pytest.approx(18 / 22)
    assert out["judged_asr"]["value"] == pytest.approx(12 / 16)
    assert out["human_asr"]["value"] == pytest.approx(10 / 16)  # the direct weighted estimate
    assert out["audited_asr"]["value"] == pytest.approx(10 / 16)  # equal to it when judged is the sample's own
    unweighted = confusion_metrics(df["y"].to_numpy(), df["h"].to_numpy(), np.ones(8))
    assert out["recall"]["value"] != pytest.approx(unweighted["recall"])
    # "a" is sampled in both strata: it is one cluster per stratum, so 8 clusters in all.
    assert (out["n"], out["usable"], out["strata"], out["clusters"]) == (8, 8, 2, 8)
    assert (out["population"], out["population_covered"], out["census"]) == (16, 16, False)


def test_judge_audit_with_the_population_judged_asr():
    df = audit_frame(seed=1, population={"judged-harmful": 600, "judged-safe": 500})
    positives = {"judged-harmful": 600, "judged-safe": 0}  # stratified by judge label: the census is exact
    out = judge_audit(df, reps=1000, judged_positives=positives)
    w = df["population"] / df.groupby("stratum")["y"].transform("size")
    expected = confusion_metrics(df["y"].to_numpy(), df["h"].to_numpy(), w.to_numpy())
    assert out["judged_asr"]["value"] == pytest.approx(600 / 1100)
    assert (out["judged_asr"]["ci_low"], out["judged_asr"]["ci_high"]) == (out["judged_asr"]["value"],) * 2
    assert out["judged_asr"]["source"] == "census"
    assert out["audited_asr"]["value"] == pytest.approx(600 / 1100 * expected["precision"] / expected["recall"])
    assert out["audited_asr"]["ci_low"] < out["audited_asr"]["value"] < out["audited_asr"]["ci_high"]


def test_judge_audit_reweights_over_usable_items_and_counts_the_excluded():
    df = audit_frame(seed=3, population={"judged-harmful": 500, "judged-safe": 700})
    excluded = np.array([None] * len(df), dtype=object)
    excluded[:9], excluded[9:14] = "unsure", "pending"
    df = df.assign(excluded=excluded, h=np.where(pd.isna(excluded), df["h"], np.nan))
    out = judge_audit(df, reps=500)
    usable = df[df["excluded"].isna()]
    w = usable["population"] / usable.groupby("stratum")["y"].transform("size")
    assert w.sum() == pytest.approx(1200)  # the weights still add up to the population
    expected = confusion_metrics(usable["y"].to_numpy(), usable["h"].to_numpy(), w.to_numpy())
    for name in ("precision", "recall", "judged_asr", "human_asr"):
        assert out[name]["value"] == pytest.approx(expected[name]), name
    assert out["excluded"] == {"unsure": 9, "pending": 5} and out["usable"] == len(df) - 14
    assert out["provisional"] is True
    assert out["population_covered"] == out["population"] == 1200
    by = {s["stratum"]: s for s in out["by_stratum"]}
    assert sum(s["unsure"] for s in by.values()) == 9 and sum(s["pending"] for s in by.values()) == 5
    for s in by.values():
        assert s["weight"] == pytest.approx(s["population"] / s["usable"])
    # Only unsure items excluded, none pending: the figures are final.
    final = df.assign(excluded=np.where(df["excluded"] == "pending", "unsure", df["excluded"]))
    assert judge_audit(final, reps=100)["provisional"] is False


def test_a_stratum_without_usable_labels_is_left_out_and_the_coverage_said():
    df = audit_frame(seed=4, population={"judged-harmful": 300, "judged-safe": 900})
    gone = df["stratum"] == "judged-safe"
    df = df.assign(excluded=np.where(gone, "unsure", None), h=np.where(gone, np.nan, df["h"]))
    out = judge_audit(df, reps=200, unsampled_strata={"never-drawn": 40})
    assert (out["population"], out["population_covered"]) == (1240, 300)
    assert out["uncovered"] == [
        {
            "stratum": "judged-safe",
            "population": 900,
            "sampled": int(gone.sum()),
            "unsure": int(gone.sum()),
            "pending": 0,
            "reason": f"no usable label ({int(gone.sum())} unsure)",
        },
        {"stratum": "never-drawn", "population": 40, "sampled": 0, "unsure": 0, "pending": 0, "reason": "not sampled"},
    ]
    harmful = df[~gone]
    assert out["precision"]["value"] == pytest.approx(harmful["h"].mean())
    assert out["judged_asr"]["value"] == pytest.approx(1.0)  # of the covered population, not of all 1,240
    assert out["recall"]["value"] == pytest.approx(1.0) and out["recall"]["why_undefined"] is None


def test_direct_human_asr_is_defined_when_the_judge_finds_no_positives():
    df = pd.DataFrame(
        {
            "y": [0] * 6,
            "h": [1.0, 0, 0, 1, 0, 0],
            "stratum": ["s"] * 6,
            "population": [30] * 6,
            "case_id": list("abcdef"),
            "excluded": None,
        }
    )
    out = judge_audit(df, reps=500, judged_positives={"s": 0})
    assert out["human_asr"]["value"] == pytest.approx(2 / 6)
    assert out["human_asr"]["ci_low"] <= 2 / 6 <= out["human_asr"]["ci_high"]
    assert out["precision"]["value"] is None and "no usable item judged harmful" in out["precision"]["why_undefined"]
    assert out["audited_asr"]["value"] is None
    assert "the judge labelled no rollout harmful" in out["audited_asr"]["why_undefined"]


def test_a_stratum_with_one_cluster_is_pooled_for_the_variance_and_the_interval_says_so():
    # The example: one unit in a stratum that was not audited whole. It used to withhold every interval.
    df = pd.DataFrame(
        {
            "y": [1, 1, 1, 0],
            "h": [1.0, 0, 1, 0],
            "stratum": ["a", "a", "a", "b"],
            "population": [10, 10, 10, 50],
            "case_id": ["c1", "c2", "c3", "c4"],
            "excluded": None,
        }
    )
    out = judge_audit(df, reps=500)
    assert out["precision"]["value"] == pytest.approx(2 / 3)
    assert out["interval_undefined"] is None and out["variance_strata"] == 1
    assert out["pooled_for_variance"] == [{"stratum": "b", "into": "a", "why": "1 usable case(s)"}]
    assert any("pooled with their nearest stratum" in s and "b into a" in s for s in out["interval_assumes"])
    for name in ("precision", "accuracy", "human_asr"):
        assert out[name]["ci_low"] <= out[name]["value"] <= out[name]["ci_high"], name
    # Audited whole, the same lone unit is known exactly: nothing is pooled.
    whole = judge_audit(df.assign(population=[10, 10, 10, 1]), reps=500)
    assert whole["pooled_for_variance"] == [] and whole["precision"]["ci_low"] is not None
    # One cluster in all: nothing to pool with, no interval, and the reason.
    alone = judge_audit(df.assign(case_id="c1", stratum="a", population=10), reps=200)
    assert alone["interval_undefined"].startswith("fewer than two clusters")
    assert alone["precision"]["ci_low"] is None and alone["precision"]["why_no_interval"]


def test_a_rate_without_spread_gets_the_wilson_interval_at_its_effective_size():
    # A judge right on every sampled judged-harmful item: every replicate's precision is 1. The bootstrap shows
    # no uncertainty; the precision is still only known from three items.
    df = pd.DataFrame(
        {
            "y": [1, 1, 1, 0, 0, 0],
            "h": [1.0, 1, 1, 0, 0, 1],
            "stratum": ["p"] * 3 + ["n"] * 3,
            "population": [20] * 3 + [20] * 3,
            "case_id": list("abcdef"),
            "excluded": None,
        }
    )
    out = judge_audit(df, reps=500)
    precision = out["precision"]
    assert precision["value"] == 1.0 and precision["method"] == "wilson-effective-n"
    assert (precision["ci_low"], precision["ci_high"]) == pytest.approx(wilson(3, 3))
    assert "no disagreement with the judge" in precision["note"]
    assert out["recall"]["method"] == "bootstrap" and out["recall"]["ci_low"] is not None


def test_a_pending_item_in_a_two_case_stratum_gives_a_provisional_interval_that_says_what_it_assumes():
    rows = []
    for s, label in (("s0", 0), ("s1", 1), ("s2", 0), ("s3", 1)):
        for c in range(2):
            rows.append(
                {
                    "y": label,
                    "h": float(label if c else 1 - label),
                    "stratum": s,
                    "population": 30,
                    "case_id": f"{s}-c{c}",
                    "excluded": None,
                }
            )
    df = pd.DataFrame(rows)
    complete = judge_audit(df, reps=500)
    assert complete["two_cluster_strata"] == 4 and complete["precision"]["two_clusters"] is True
    df.loc[0, ["excluded", "h"]] = ["pending", np.nan]  # one pending item in a two-item stratum
    out = judge_audit(df, reps=500)
    assert out["provisional"] is True and out["interval_undefined"] is None
    for name in ("precision", "recall", "human_asr"):
        entry = out[name]
        assert entry["ci_low"] is not None and entry["provisional"] is True, name
    assert any("pending" in s and "missing at random" in s for s in out["interval_assumes"])
    assert out["pooled_for_variance"][0]["stratum"] == "s0"


def test_with_the_label_as_a_stratum_the_audited_and_direct_asr_are_one_figure():
    df = audit_frame(seed=1, population={"judged-harmful": 600, "judged-safe": 500})
    positives = {"judged-harmful": 600, "judged-safe": 0}
    plain = judge_audit(df, reps=500, judged_positives=positives)
    assert plain["audited_asr"]["value"] == pytest.approx(plain["human_asr"]["value"])  # algebra
    out = judge_audit(df, reps=500, judged_positives=positives, label_stratified=True)
    assert out["label_stratified"] is True and out["audited_asr"]["coincides_with"] == "human_asr"
    for key in ("value", "ci_low", "ci_high"):
        assert out["audited_asr"][key] == out["human_asr"][key]


def test_design_weights_share_a_stratum_population_in_proportion():
    # Two cases sampled in one stratum of 12: case a has 3 rollouts there (1 drawn), case b 1 (1 drawn).
    df = pd.DataFrame(
        {
            "y": [1, 1],
            "h": [1.0, 0.0],
            "stratum": ["s", "s"],
            "population": [12, 12],
            "case_id": ["a", "b"],
            "weight": [3.0, 1.0],
            "excluded": None,
        }
    )
    out = judge_audit(df, reps=200)
    assert out["precision"]["value"] == pytest.approx(9 / 12)  # weights 9 and 3 of the stratum's 12


def test_judge_audit_intervals_match_a_slow_rao_wu_loop():
    df = audit_frame(seed=2, population={"judged-harmful": 400, "judged-safe": 900})
    out = judge_audit(df, reps=3000, seed=5)
    rng = np.random.default_rng(8)
    y, h = df["y"].to_numpy(), df["h"].to_numpy()
    sizes = df.groupby("stratum")["y"].transform("size").to_numpy()
    w = df["population"].to_numpy() / sizes
    lam = np.sqrt(1 - sizes / df["population"].to_numpy())  # finite population correction per stratum
    psu = (df["stratum"] + "/" + df["case_id"]).to_numpy()
    psus = {s: np.unique(psu[df["stratum"].to_numpy() == s]) for s in df["stratum"].unique()}
    precision = []
    for _ in range(3000):
        factor = np.empty(len(df))
        for ids in psus.values():
            n = len(ids)
            drawn = dict(zip(ids, np.bincount(rng.integers(0, n, size=n - 1), minlength=n), strict=True))
            rows = np.isin(psu, ids)
            factor[rows] = [1 - lam[i] + lam[i] * n / (n - 1) * drawn[psu[i]] for i in np.flatnonzero(rows)]
        precision.append(confusion_metrics(y, h, w * factor)["precision"])
    precision = np.array(precision)
    sd = precision.std()
    assert abs(out["precision"]["ci_low"] - np.percentile(precision, 2.5)) < 0.25 * sd
    assert abs(out["precision"]["ci_high"] - np.percentile(precision, 97.5)) < 0.25 * sd


# -- utility ------------------------------------------------------------------------------------
UTILITY_COUNTS = [
    # model, harness, cue, defense, benign, valid, checked, done
    UtilityCount("m1", "native", "clean", "none", True, 10, 8, 6),
    UtilityCount("m1", "native", "clean", "none", False, 20, 20, 5),
    UtilityCount("m1", "react", "clean", "none", False, 4, 0, 0),  # no case of the cell states a check
    UtilityCount("m2", "native", "clean", "none", True, 3, 3, 3),
    UtilityCount("m2", "native", "clean", "none", False, 3, 3, 0),
]


def test_utility_table_against_a_hand_computation():
    cells = {(c.model, c.harness): c for c in stats.utility_table(UTILITY_COUNTS)}
    assert list(cells) == [("m1", "native"), ("m1", "react"), ("m2", "native")]
    m1 = cells[("m1", "native")]
    # benign 6/8: p = .75, z² = 3.8415; centre (.75 + .24009) / 1.48018 = .66889, half .25963
    assert (m1.benign.done, m1.benign.n, m1.benign.valid, m1.benign.u) == (6, 8, 10, 0.75)
    assert m1.benign.interval == (pytest.approx(0.40927, abs=1e-4), pytest.approx(0.92852, abs=1e-4))
    # under attack 5/20: p = .25; centre (.25 + .09604) / 1.19207 = .29029, half .17842
    assert (m1.under_attack.done, m1.under_attack.n, m1.under_attack.u) == (5, 20, 0.25)
    assert m1.under_attack.interval == (pytest.approx(0.11186, abs=1e-4), pytest.approx(0.46870, abs=1e-4))
    react = cells[("m1", "react")]
    assert react.benign.to_dict() == {"u": None, "done": 0, "n": 0, "valid": 0, "lo": None, "hi": None}
    assert react.under_attack.to_dict() == {"u": None, "done": 0, "n": 0, "valid": 4, "lo": None, "hi": None}
    m2 = cells[("m2", "native")]
    assert m2.benign.interval[1] == 1.0 and m2.under_attack.interval[0] == 0.0  # k = n and k = 0 exactly
    assert m2.benign.interval[0] == pytest.approx(0.43850, abs=1e-4)  # 3/3: 1 / (1 + z²/3)


def test_utility_pooled_and_by_model():
    (pooled,) = stats.utility_table(UTILITY_COUNTS, by=[])
    assert (pooled.model, pooled.harness, pooled.cue, pooled.defense) == ("all",) * 4
    assert (pooled.benign.done, pooled.benign.n, pooled.benign.valid) == (9, 11, 13)
    assert (pooled.under_attack.done, pooled.under_attack.n, pooled.under_attack.valid) == (5, 23, 27)
    assert pooled.under_attack.interval == tuple(pytest.approx(x) for x in stats.wilson(5, 23))
    by_model = {c.model: c for c in stats.utility_table(pd.DataFrame([vars(c) for c in UTILITY_COUNTS]), by=["model"])}
    assert by_model["m1"].harness == "all" and (by_model["m1"].under_attack.n, by_model["m1"].under_attack.valid) == (
        20,
        24,
    )
    assert stats.utility_table([]) == []
    with pytest.raises(ValueError, match="grouped by"):
        stats.utility_table(UTILITY_COUNTS, by=["strategy"])
    with pytest.raises(ValueError, match="done <= checked <= valid"):
        stats.utility_table([UtilityCount("m", "h", "c", "d", True, 1, 2, 0)])
