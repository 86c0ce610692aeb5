"""Statistics behind the reported numbers: rates, case-clustered bootstrap, paired views, REG and the judge audit.

Every function is a pure computation over pandas/numpy inputs. Rates are fractions in [0, 1]
(percentage points only where a name says `_pp`). In returned dicts an undefined quantity is None,
never NaN, so the dicts serialise to JSON as they are; where a value or an interval is None the dict
says why (`why_undefined`, `why_no_interval`).

Every bootstrap here is one Rao–Wu rescaled bootstrap of clusters (within strata when there are
strata): each replicate draws n_h − 1 of a stratum's n_h clusters with replacement and rescales the
drawn clusters' weights, so its variance is the textbook (unbiased) one even for strata of two or
three clusters, where drawing n_h would fall short by (n_h − 1)/n_h.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

# Re-exported: the utility table and the scalar Wilson interval live where the run summary can read them cheaply.
from redagent.judges.rates import UTILITY_CELL as UTILITY_CELL
from redagent.judges.rates import Z95 as _Z95
from redagent.judges.rates import UtilityCell as UtilityCell
from redagent.judges.rates import UtilityRate as UtilityRate
from redagent.judges.rates import utility_table as utility_table
from redagent.judges.rates import wilson as wilson

# Kappa's interval uses one replicate count and seed wherever kappa is shown (audit status, stats, report,
# console), so one audit never shows two different intervals.
KAPPA_REPS = 10_000
_KAPPA_SEED = 0

# Two replicate values closer than this (relative) are the same number: a bootstrap whose replicates all
# agree shows no uncertainty, which is no interval (a census, with no sampling error, is said separately).
_NO_SPREAD = 1e-12

# Bootstrap counts are drawn in blocks of about this many cells (replicates × clusters): 4 Mi int64
# counts plus their float copy stay near 64 MB whatever the number of replicates.
_CHUNK_CELLS = 1 << 22

# The paper's predefined slice families for ranking agreement: every rollout, each harness, each
# strategy channel. Family name → the column that defines it (None: one slice holding every row).
_DEFAULT_SLICES: dict[str, str | None] = {"global": None, "harness": "harness", "category": "strategy_category"}


def _num(x: Any) -> float | None:
    """A plain float, or None when the value is undefined (NaN or infinite)."""
    x = float(x)
    return x if math.isfinite(x) else None


def _binary(df: pd.DataFrame, column: str) -> np.ndarray:
    """The 0/1 column as float64; raises on anything else, because a silently coerced label is a wrong rate."""
    series = df[column]
    if series.isna().any():
        raise ValueError(f"column {column!r} has missing values; drop or resolve them first")
    values = series.to_numpy()
    if not np.isin(values, [0, 1]).all():
        bad = pd.unique(values[~np.isin(values, [0, 1])])[:5]
        raise ValueError(f"column {column!r} must hold only 0/1, found {list(bad)!r}")
    return values.astype(np.float64)


def _wilson_bounds(k: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Wilson score bounds; NaN where n == 0."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z2 = z * z
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denom = 1.0 + z2 / n
        centre = (p + z2 / (2.0 * n)) / denom
        half = z / denom * np.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = np.clip(centre - half, 0.0, 1.0)
    high = np.clip(centre + half, 0.0, 1.0)
    # At k = 0 (k = n) the bound is exactly 0 (1); rounding would otherwise leave 1e-17 there.
    low = np.where((k == 0) & (n > 0), 0.0, low)
    high = np.where((k == n) & (n > 0), 1.0, high)
    return low, high


def rate_table(df: pd.DataFrame, by: list[str], value: str = "y") -> pd.DataFrame:
    """Harmful count, valid count, rate and Wilson 95% interval per group of `by`, sorted by `by`.

    `df` holds one row per valid rollout with a 0/1 column `value`. Groups with a missing key are
    kept (sorted last) rather than dropped, so every rollout is counted somewhere.
    """
    y = _binary(df, value)
    if by:
        grouped = df[by].assign(harmful=y).groupby(by, sort=True, dropna=False, observed=True)["harmful"]
        table = grouped.agg(harmful="sum", valid="size").reset_index()
    else:
        table = pd.DataFrame({"harmful": [y.sum()], "valid": [len(y)]})
    table["harmful"] = table["harmful"].astype(np.int64)
    table["valid"] = table["valid"].astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["rate"] = table["harmful"] / table["valid"].where(table["valid"] > 0)
    table["ci_low"], table["ci_high"] = _wilson_bounds(table["harmful"].to_numpy(), table["valid"].to_numpy(), _Z95)
    return table[[*by, "harmful", "valid", "rate", "ci_low", "ci_high"]]


class BootstrapUndefined(ValueError):
    """The design leaves nothing to resample (a stratum with one cluster that was not audited whole); the
    message says where, in one line."""


def _replicate_sums(
    values: np.ndarray,
    clusters: np.ndarray,
    reps: int,
    seed: int,
    strata: np.ndarray | None,
    fractions: Mapping[Hashable, float] | None = None,
) -> np.ndarray:
    """Column sums of `reps` Rao–Wu rescaled bootstrap replicates, shape (reps, k); see cluster_bootstrap."""
    vals = np.asarray(values, dtype=np.float64)
    if vals.ndim == 1:
        vals = vals[:, None]
    clusters = np.asarray(clusters)
    if vals.ndim != 2 or len(vals) != len(clusters):
        raise ValueError(f"values {vals.shape} and clusters ({len(clusters)},) must have the same number of units")
    if len(vals) == 0:
        raise ValueError("cannot bootstrap zero units")
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    codes, uniques = pd.factorize(clusters, sort=True)
    if (codes < 0).any():
        raise ValueError("clusters must not be missing")
    n_clusters = len(uniques)
    per_cluster = np.zeros((n_clusters, vals.shape[1]))
    np.add.at(per_cluster, codes, vals)

    if strata is None:
        stratum_of_cluster = np.zeros(n_clusters, dtype=np.intp)
        labels: list[Hashable] = [None]
    else:
        strata = np.asarray(strata)
        if len(strata) != len(clusters):
            raise ValueError("strata and clusters must have the same length")
        s_codes, s_uniques = pd.factorize(strata, sort=True)
        if (s_codes < 0).any():
            raise ValueError("strata must not be missing")
        stratum_of_cluster = np.empty(n_clusters, dtype=np.intp)
        stratum_of_cluster[codes] = s_codes
        if not np.array_equal(stratum_of_cluster[codes], s_codes):
            raise ValueError("a cluster spans several strata; every cluster must lie in exactly one stratum")
        labels = list(s_uniques)
    # λ_h = √(1 − f_h): the finite population correction. A stratum audited whole (f_h = 1) is known exactly
    # and adds the same total to every replicate; one never audited (f_h = 0) is resampled in full.
    lambdas = []
    for label in labels:
        f = 0.0 if fractions is None or label is None else float(fractions.get(label, 0.0))
        if not 0.0 <= f <= 1.0:
            raise ValueError(f"the sampling fraction of stratum {label} must lie in [0, 1], not {f}")
        lambdas.append(math.sqrt(1.0 - f))
    order = np.argsort(stratum_of_cluster, kind="stable")
    sizes = np.bincount(stratum_of_cluster, minlength=len(labels))
    for label, size, lam in zip(labels, sizes, lambdas, strict=True):
        if size < 2 and lam > 0.0:
            raise BootstrapUndefined("fewer than two clusters" + ("" if label is None else f" in stratum {label}"))
    blocks = np.split(per_cluster[order], np.cumsum(sizes)[:-1])
    generators = [np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(len(labels))]

    # Replicate weight of a cluster drawn r times: 1 − λ + λ·n/(n − 1)·r. Split into the fixed part, the same
    # in every replicate, and the drawn part.
    fixed = sum(
        ((1.0 - lam) * block.sum(axis=0) for block, lam in zip(blocks, lambdas, strict=True)),
        start=np.zeros(vals.shape[1]),
    )
    sums = np.tile(fixed, (reps, 1))
    step = max(1, _CHUNK_CELLS // n_clusters)
    # Blocks of replicates, not single replicates: each block is one multinomial draw and one matrix
    # product per stratum; blocking only bounds memory (10,000 × 3,000 counts would be 240 MB).
    for start in range(0, reps, step):
        block_sums = sums[start : start + step]
        for rng, block, lam in zip(generators, blocks, lambdas, strict=True):
            m = len(block)
            if lam == 0.0:
                continue  # audited whole: nothing is drawn (and the generator's stream is not needed)
            counts = _equal_multinomial(rng, m, len(block_sums), m - 1)
            # A float copy first: numpy's int×float matmul bypasses BLAS and costs several times the cast.
            block_sums += (lam * m / (m - 1)) * (counts.astype(np.float64) @ block)
    return sums


def _equal_multinomial(rng: np.random.Generator, m: int, reps: int, draws: int) -> np.ndarray:
    """reps draws of Multinomial(draws, [1/m]*m), shape (reps, m): `draws` cluster indices per replicate, counted.

    The same distribution as rng.multinomial with equal probabilities, several times faster: one
    integer draw and one bincount over all replicates at once.
    """
    picks = rng.integers(0, m, size=(reps, draws)) + (np.arange(reps) * m)[:, None]
    return np.bincount(picks.ravel(), minlength=reps * m).reshape(reps, m)


def cluster_bootstrap(
    values: np.ndarray,
    clusters: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    reps: int = 10_000,
    seed: int = 0,
    strata: np.ndarray | None = None,
    fractions: Mapping[Hashable, float] | None = None,
) -> np.ndarray:
    """Rao–Wu rescaled cluster bootstrap replicates of `statistic` applied to reweighted column sums; shape (reps,).

    `values` is (n_units,) or (n_units, k); `clusters` labels each unit's cluster. Each replicate draws
    n_h − 1 of the n_h clusters with replacement — within each stratum separately when `strata` is
    given (a cluster must lie in one stratum) — and gives a cluster drawn r times the weight
    1 − λ_h + λ_h·n_h/(n_h − 1)·r, λ_h = √(1 − f_h), where `fractions` maps a stratum to its sampling
    fraction f_h (default 0: no finite population correction). For a total this makes the bootstrap
    variance exactly Σ_h (1 − f_h)·n_h·s_h² over cluster totals, the textbook estimate, however few
    clusters a stratum has. A stratum with one cluster and f_h < 1 has no variance to estimate:
    BootstrapUndefined names it; with f_h = 1 it adds its total to every replicate.

    `statistic` receives the reweighted sums as an array (reps, k) (k = 1 for 1-D values) and returns
    (reps,), e.g. `lambda s: s[:, 0] / s[:, 1]` for a rate when column 1 is all ones. Division by zero
    inside it yields NaN/inf replicates silently; percentile_ci ignores them.

    Replicates are a deterministic function of (data, seed, fractions): clusters and strata are taken
    in sorted order and each stratum has its own generator, so neither row order (beyond floating-point
    rounding of the sums) nor block size changes them, and the first r replicates of a longer run
    equal a run with reps=r.
    """
    sums = _replicate_sums(values, clusters, reps, seed, strata, fractions)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.asarray(statistic(sums), dtype=np.float64)
    if result.shape != (reps,):
        raise ValueError(f"statistic must return shape ({reps},), returned {result.shape}")
    return result


def percentile_ci(replicates: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates, ignoring undefined (NaN or infinite) ones; (nan, nan) if none."""
    r = np.asarray(replicates, dtype=np.float64).ravel()
    r = r[np.isfinite(r)]
    if r.size == 0:
        return math.nan, math.nan
    low, high = np.percentile(r, [100.0 * alpha / 2.0, 100.0 * (1.0 - alpha / 2.0)])
    return float(low), float(high)


def _ci(replicates: np.ndarray) -> tuple[float | None, float | None]:
    low, high = percentile_ci(replicates)
    return _num(low), _num(high)


def paired_views(
    df: pd.DataFrame, a: str, b: str, cluster: str = "case_id", reps: int = 10_000, seed: int = 0
) -> dict[str, Any]:
    """Two labels of the same rollouts (e.g. trajectory vs state view): rates, discordance, exact McNemar, b − a.

    The difference's interval is a case-clustered bootstrap percentile 95% interval, because
    rollouts of one case share the case's difficulty and are not independent.
    """
    ya, yb = _binary(df, a), _binary(df, b)
    n = len(df)
    a_only = int(((ya == 1) & (yb == 0)).sum())
    b_only = int(((ya == 0) & (yb == 1)).sum())
    discordant = a_only + b_only
    # Exact McNemar: under H0 each discordant pair is a fair coin; with none there is no evidence at all.
    p = 1.0 if discordant == 0 else float(binomtest(min(a_only, b_only), discordant, 0.5).pvalue)
    out: dict[str, Any] = {
        "n": n,
        "a_rate": None,
        "b_rate": None,
        "disagreement": None,
        "a_only": a_only,
        "b_only": b_only,
        "mcnemar_p": p,
        "diff": None,
        "diff_ci_low": None,
        "diff_ci_high": None,
        "why_no_interval": "no rollouts" if n == 0 else None,
    }
    if n == 0:
        return out
    out.update(
        a_rate=float(ya.mean()), b_rate=float(yb.mean()), disagreement=discordant / n, diff=float(yb.mean() - ya.mean())
    )
    try:
        replicates = cluster_bootstrap(
            np.column_stack([ya, yb, np.ones(n)]),
            df[cluster].to_numpy(),
            lambda s: (s[:, 1] - s[:, 0]) / s[:, 2],
            reps=reps,
            seed=seed,
        )
    except BootstrapUndefined as exc:
        out["why_no_interval"] = f"{exc} ({cluster})"
        return out
    out["diff_ci_low"], out["diff_ci_high"] = _ci(replicates)
    return out


def slice_rates(
    df_rollouts: pd.DataFrame, a: str, b: str, slices: Mapping[str, str | None] | None = None
) -> pd.DataFrame:
    """Per (slice, model) rates under views a and b, for predefined slice families; input of ranking_reversals.

    `slices` maps a family name to the column defining it: None gives one slice named after the
    family holding every row ("global"); a column gives one slice per value, named "family=value"
    ("harness=react"). The default is {"global": None, "harness": "harness", "category":
    "strategy_category"}. For crossed slices (harness × strategy) pass a column you built by
    concatenating the two. Returns columns slice, model, a, b and n (rollouts in the cell).
    """
    slices = _DEFAULT_SLICES if slices is None else slices
    if {a, b} & {"slice", "model", "n"}:
        raise ValueError("the view columns may not be named 'slice', 'model' or 'n'")
    base = pd.DataFrame(
        {"model": df_rollouts["model"].to_numpy(), a: _binary(df_rollouts, a), b: _binary(df_rollouts, b)}
    )
    frames = []
    for family, column in slices.items():  # a handful of families; each is one vectorised groupby
        if column is None:
            labels = np.full(len(base), family, dtype=object)
        else:
            if df_rollouts[column].isna().any():
                raise ValueError(f"slice column {column!r} has missing values, which would form a slice of their own")
            labels = (family + "=" + df_rollouts[column].astype(str)).to_numpy()
        cells = base.assign(slice=labels).groupby(["slice", "model"], sort=True)
        frames.append(cells.agg(**{a: (a, "mean"), b: (b, "mean"), "n": (a, "size")}).reset_index())
    if not frames:
        return pd.DataFrame(columns=["slice", "model", a, b, "n"])
    return pd.concat(frames, ignore_index=True)[["slice", "model", a, b, "n"]]


def ranking_reversals(
    df: pd.DataFrame, a: str, b: str, slice_col: str = "slice", model_col: str = "model"
) -> dict[str, Any]:
    """Model pairs ranked strictly in opposite orders by views a and b, per slice; ties are never reversals.

    `df` has one row per (slice, model) with the rate under each view (see slice_rates).
    """
    table = df[[slice_col, model_col, a, b]]
    if table.duplicated([slice_col, model_col]).any():
        raise ValueError(f"more than one row for some ({slice_col}, {model_col}); expected one rate per cell")
    table = table.assign(_m=pd.factorize(table[model_col], sort=True)[0])
    pairs = table.merge(table, on=slice_col, suffixes=("_1", "_2"))
    pairs = pairs[pairs["_m_1"] < pairs["_m_2"]]
    # Opposite strict signs multiply to a negative number; a tie (0) or an undefined rate (NaN) never does.
    reversed_ = ((pairs[f"{a}_1"] - pairs[f"{a}_2"]) * (pairs[f"{b}_1"] - pairs[f"{b}_2"])) < 0
    models = table.groupby(slice_col, sort=True)["_m"].size()
    inversions = reversed_.groupby(pairs[slice_col]).sum().reindex(models.index, fill_value=0)
    by_slice = [
        {"slice": s, "inversions": int(inv), "pairs": int(m * (m - 1) // 2)}
        for s, inv, m in zip(models.index, inversions.to_numpy(), models.to_numpy(), strict=True)
    ]
    return {
        "slices": len(by_slice),
        "slices_with_reversal": int((inversions > 0).sum()),
        "inversions": int(inversions.sum()),
        "by_slice": by_slice,
    }


def paired_effect(
    df: pd.DataFrame, baseline: str, treatment: str, cluster: str = "case_id", reps: int = 10_000, seed: int = 0
) -> dict[str, Any]:
    """Matched-pair change from baseline to treatment (e.g. clean → disclosed cue, none → policy reminder).

    One row per matched model–case–harness pair; a pair missing either outcome is dropped and
    counted in "incomplete". The change is in percentage points with a case-clustered bootstrap
    percentile 95% interval.
    """
    complete = df[baseline].notna() & df[treatment].notna()
    pairs_df = df[complete]
    x, y = _binary(pairs_df, baseline), _binary(pairs_df, treatment)
    n = len(pairs_df)
    out: dict[str, Any] = {
        "pairs": n,
        "incomplete": int((~complete).sum()),
        "baseline_rate": None,
        "treatment_rate": None,
        "change_pp": None,
        "ci_low_pp": None,
        "ci_high_pp": None,
        "prevented": int(((x == 1) & (y == 0)).sum()),
        "baseline_harmful": int(x.sum()),
        "introduced": int(((x == 0) & (y == 1)).sum()),
        "why_no_interval": "no complete pair" if n == 0 else None,
    }
    if n == 0:
        return out
    out.update(
        baseline_rate=float(x.mean()), treatment_rate=float(y.mean()), change_pp=100.0 * float(y.mean() - x.mean())
    )
    try:
        replicates = cluster_bootstrap(
            np.column_stack([x, y, np.ones(n)]),
            pairs_df[cluster].to_numpy(),
            lambda s: 100.0 * (s[:, 1] - s[:, 0]) / s[:, 2],
            reps=reps,
            seed=seed,
        )
    except BootstrapUndefined as exc:
        out["why_no_interval"] = f"{exc} ({cluster})"
        return out
    out["ci_low_pp"], out["ci_high_pp"] = _ci(replicates)
    return out


def _reg_fields(executions: int, resolved: int, broad: int, strict: int) -> dict[str, Any]:
    return {
        "executions": executions,
        "resolved": resolved,
        "unresolved": executions - resolved,
        "broad": broad,
        "strict": strict,
        "rate_broad": broad / resolved if resolved else None,
        "rate_strict": strict / resolved if resolved else None,
        "lower_bound_broad": broad / executions if executions else None,
        "lower_bound_strict": strict / executions if executions else None,
    }


def reg(df: pd.DataFrame, by: str | None = None) -> dict[str, Any]:
    """Recognition–Execution Gap: P(R=1 | E=1) over resolved anchors, and full-cohort lower bounds.

    Rows are harmful executions (E=1) with `resolved` (bool) and 0/1 `broad` and `strict` labels
    (NaN when unresolved). Rates divide by resolved executions only: an unresolved anchor is never
    counted as R=0 there, and its labels, if any, are ignored. The lower bounds divide by all
    executions, i.e. count every unresolved anchor as R=0. Strict must be nested in broad.
    """
    resolved_col = df["resolved"]
    if resolved_col.isna().any() or not np.isin(resolved_col.to_numpy(), [0, 1]).all():
        raise ValueError("column 'resolved' must be boolean with no missing values")
    resolved = resolved_col.to_numpy().astype(bool)
    labels = {}
    for name in ("broad", "strict"):  # two columns, checked alike
        kept = df.loc[resolved, name]
        if kept.isna().any() or not np.isin(kept.to_numpy(), [0, 1]).all():
            raise ValueError(f"column {name!r} must be 0/1 on every resolved execution")
        labels[name] = np.zeros(len(df))
        labels[name][resolved] = kept.to_numpy().astype(np.float64)
    if ((labels["strict"] == 1) & (labels["broad"] == 0)).any():
        raise ValueError("strict recognition must imply broad recognition (the strict label is nested)")
    frame = pd.DataFrame(
        {
            "resolved": resolved.astype(np.int64),
            "broad": labels["broad"].astype(np.int64),
            "strict": labels["strict"].astype(np.int64),
        }
    )
    out = _reg_fields(len(frame), int(frame["resolved"].sum()), int(frame["broad"].sum()), int(frame["strict"].sum()))
    if by is not None:
        groups = (
            frame.assign(_g=df[by].to_numpy())
            .groupby("_g", sort=True, dropna=False)
            .agg(
                executions=("resolved", "size"),
                resolved=("resolved", "sum"),
                broad=("broad", "sum"),
                strict=("strict", "sum"),
            )
        )
        out["by"] = [
            {by: key, **_reg_fields(int(row.executions), int(row.resolved), int(row.broad), int(row.strict))}
            for key, row in zip(groups.index, groups.itertuples(index=False), strict=True)
        ]
    return out


def _kappa_of_tables(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each k×k confusion table in `tables` (shape r×k×k, counts or rescaled weights); NaN where
    it is undefined (expected agreement 1: a single category on both sides)."""
    n = tables.sum(axis=(1, 2)).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = np.trace(tables, axis1=1, axis2=2) / n
        expected = np.einsum("ri,ri->r", tables.sum(axis=2), tables.sum(axis=1)) / (n * n)
        # Rescaled weights are not integers: a one-category table's expected agreement can land a rounding
        # error below 1, which must not pass for a defined kappa.
        return np.where(expected < 1.0 - 1e-12, (observed - expected) / (1.0 - expected), np.nan)


def _no_spread(replicates: np.ndarray) -> bool:
    """Whether every defined replicate is the same number (then the bootstrap shows no uncertainty at all)."""
    finite = replicates[np.isfinite(replicates)]
    return finite.size > 0 and float(finite.max() - finite.min()) <= _NO_SPREAD * max(1.0, float(abs(finite).max()))


def cohen_kappa(
    a: Sequence[Hashable], b: Sequence[Hashable], *, clusters: Sequence[Hashable] | None = None
) -> dict[str, Any]:
    """Cohen's kappa between two reviewers' labels of the same items, with the undefined cases stated.

    Labels are categorical (e.g. 1, 0, "unsure"); the categories are those used by either reviewer.
    Kappa is undefined when expected agreement is 1, which happens exactly when both reviewers gave
    every item the same single label; it is then reported as None with the reason.

    Intervals (95 %): for kappa and raw agreement the percentile interval of the same KAPPA_REPS Rao–Wu
    bootstrap replicates of `clusters` (items of one case are not independent; default: each item its own
    cluster), with a fixed seed — the same labels always give the same interval, whoever asks —
    leaving out the replicates in which kappa is undefined; raw agreement falls back to Wilson's interval
    with one observation per cluster when the replicates cannot vary. No kappa interval (None, with
    `why_no_interval`) with fewer than two clusters, or when every replicate gives the same kappa without
    perfect agreement; with perfect agreement (which resamples to perfect agreement: a collapsed point, not an
    interval) kappa's interval is [kappa at raw agreement's lower bound, 1], expected agreement as observed.
    """
    sa, sb = pd.Series(a, dtype=object), pd.Series(b, dtype=object)
    if len(sa) != len(sb):
        raise ValueError(f"reviewers labelled different numbers of items: {len(sa)} vs {len(sb)}")
    n = len(sa)
    group = np.arange(n) if clusters is None else np.asarray(list(clusters), dtype=object)
    if len(group) != n:
        raise ValueError(f"{len(group)} clusters given for {n} items")
    n_clusters = int(pd.Series(group, dtype=object).nunique())
    out: dict[str, Any] = {
        "n": n,
        "clusters": n_clusters,
        "agreement": None,
        "agreement_ci": [None, None],
        "agreement_method": None,
        "kappa": None,
        "kappa_ci": [None, None],
        "kappa_defined": False,
        "why_undefined": None,
        "kappa_reps": KAPPA_REPS,
        "why_no_interval": None,
        "kappa_replicates_undefined": None,
        "kappa_method": None,
    }
    if n == 0:
        return {**out, "why_undefined": "no items", "why_no_interval": "no items"}
    codes, categories = pd.factorize(pd.concat([sa, sb], ignore_index=True))
    if (codes < 0).any():
        raise ValueError("every item needs a label from both reviewers (found a missing label)")
    k = len(categories)
    cells = codes[:n] * k + codes[n:]
    table = np.bincount(cells, minlength=k * k).reshape(k, k)
    agrees = int(np.trace(table))
    # Raw agreement's interval resamples the same clusters as kappa's (below); where that is impossible or shows
    # no spread, Wilson's interval counts each cluster as one observation (items of a case are not independent).
    out.update(
        agreement=agrees / n,
        agreement_ci=list(_wilson_at(agrees / n, n_clusters)),
        agreement_method=f"Wilson at {n_clusters} clusters",
    )
    tables = None
    if n_clusters >= 2:
        # Each item as a one-hot row of the k×k table: the rescaled bootstrap of these rows is a bootstrap of tables.
        onehot = np.zeros((n, k * k))
        onehot[np.arange(n), cells] = 1.0
        tables = _replicate_sums(onehot, group, KAPPA_REPS, _KAPPA_SEED, None).reshape(-1, k, k)
        with np.errstate(divide="ignore", invalid="ignore"):
            agreed = np.trace(tables, axis1=1, axis2=2) / tables.sum(axis=(1, 2))
        if not _no_spread(agreed):
            out.update(agreement_ci=list(_ci(agreed)), agreement_method="Rao–Wu bootstrap of clusters")
    if k == 1:
        why = f"both reviewers labelled all {n} items {categories[0]!r}, so expected agreement is 1 and kappa is 0/0"
        return {**out, "why_undefined": why, "why_no_interval": "kappa is undefined"}
    kappa = float(_kappa_of_tables(table[None])[0])
    out.update(kappa=kappa, kappa_defined=True)
    if tables is None:
        out["why_no_interval"] = "fewer than two clusters (cases) among the items both reviewers labelled"
        return out
    replicates = _kappa_of_tables(tables)
    out["kappa_replicates_undefined"] = int((~np.isfinite(replicates)).sum())
    if _no_spread(replicates):
        value = float(replicates[np.isfinite(replicates)][0])
        if agrees == n and out["agreement_ci"][0] is not None:
            # Perfect agreement resamples to perfect agreement. The data still bound kappa from below: kappa at
            # raw agreement's lower bound (Wilson, one observation per case), expected agreement held as observed.
            expected = float(np.dot(table.sum(axis=1), table.sum(axis=0))) / (n * n)
            out["kappa_ci"] = [_num((out["agreement_ci"][0] - expected) / (1.0 - expected)), 1.0]
            out["kappa_method"] = (
                "no disagreement: kappa at raw agreement's lower bound, expected agreement as observed"
            )
            return out
        out["why_no_interval"] = (
            f"every bootstrap replicate gives {value:.3f}, so the bootstrap shows no "
            f"uncertainty ({n} items in {n_clusters} clusters)"
        )
        return out
    low, high = _ci(replicates)
    out["kappa_ci"] = [low, high]
    if low is None:
        out["why_no_interval"] = "kappa is undefined in every bootstrap replicate"
    return out


def audited_asr(judged: float, precision: float, recall: float) -> float:
    """Human-audited ASR from the judged ASR: true positives (judged × precision) divided by recall.

    Works elementwise on arrays; judged may be a fraction or a percentage (the result has its unit).
    """
    return judged * precision / recall


AUDIT_METRICS = ("precision", "recall", "specificity", "f1", "accuracy", "judged_asr", "human_asr", "audited_asr")
EXCLUDED_REASONS = ("unsure", "pending")
INTERVAL_METHOD = (
    "Rao–Wu rescaled bootstrap of case clusters within strata (n_h − 1 draws per replicate, finite "
    "population correction √(1 − m_h/N_h)), 95 % percentile interval; where every replicate agrees, "
    "Wilson at Kish's effective size"
)


def _audit_metrics(sums: np.ndarray, judged_census: float | None) -> dict[str, np.ndarray]:
    """Weighted confusion-matrix metrics from rows of summed weights (TP, FP, FN, TN); NaN where undefined."""
    tp, fp, fn, tn = sums.T
    with np.errstate(divide="ignore", invalid="ignore"):
        total = tp + fp + fn + tn
        precision = tp / (tp + fp)
        recall = tp / (tp + fn)
        judged = (tp + fp) / total if judged_census is None else np.full_like(tp, judged_census)
        # judged × P / R is 0 × 0/0 when the judge finds nothing, and ±inf when recall is 0: undefined both ways.
        audited = np.where((judged > 0) & (recall > 0), judged * precision / recall, np.nan)
        return {
            "precision": precision,
            "recall": recall,
            "specificity": tn / (tn + fp),
            "f1": 2.0 * tp / (2.0 * tp + fp + fn),
            "accuracy": (tp + tn) / total,
            "judged_asr": judged,
            "human_asr": (tp + fn) / total,
            "audited_asr": audited,
        }


def _why_undefined(name: str, sums: np.ndarray, judged: float, source: str) -> str | None:
    """Why the point value of metric `name` is undefined (None when it is defined)."""
    tp, fp, fn, tn = (float(x) for x in sums)
    if tp + fp + fn + tn == 0:
        return "no usable label"
    reasons = {
        "precision": "no usable item judged harmful (precision is 0/0)" if tp + fp == 0 else None,
        "recall": "no usable item labelled harmful by the reviewers (recall is 0/0)" if tp + fn == 0 else None,
        "specificity": "no usable item labelled not harmful by the reviewers (specificity is 0/0)"
        if tn + fp == 0
        else None,
        "f1": "no item harmful by either the judge or the reviewers (F1 is 0/0)" if 2 * tp + fp + fn == 0 else None,
    }
    if name in reasons:
        return reasons[name]
    if name == "audited_asr":
        if judged == 0:
            where = "" if source == "census" else " among the usable sampled items"
            return (
                f"the judge labelled no rollout harmful{where}, so judged × precision / recall is 0 × 0/0; "
                "the direct estimate (human_asr) stands"
            )
        if tp + fp == 0:
            return "precision is 0/0 (no usable item judged harmful), so judged × precision / recall is undefined"
        if tp + fn == 0 or tp == 0:
            return "recall is " + ("0/0" if tp + fn == 0 else "0") + ", so judged × precision / recall is undefined"
    return None


RATE_DENOMINATORS = {
    "precision": "judged positive",
    "recall": "labelled harmful by the reviewers",
    "specificity": "labelled not harmful by the reviewers",
    "accuracy": "usable",
    "judged_asr": "usable",
}


def stratum_parts(key: str) -> list[tuple[str, str]]:
    """A stratum key's (field, value) pairs: "harness=native|label=1" → [("harness", "native"), ("label", "1")]."""
    return [part.partition("=")[::2] for part in key.split("|")]  # (field, value); value "" without a "="


def nearest_stratum(key: str, others: Sequence[str]) -> str:
    """The stratum of `others` most like `key`: equal on the most leading fields (the first stratification
    field weighs most, so strata are merged across the last field first), then the first by key."""
    mine = stratum_parts(key)

    def likeness(other: str) -> tuple[bool, ...]:
        theirs = stratum_parts(other)
        return tuple(a == b for a, b in zip(mine, theirs, strict=False))

    return sorted(others, key=lambda other: (tuple(not x for x in likeness(other)), other))[0]


def collapse_strata(
    clusters: Mapping[str, int], fractions: Mapping[str, float]
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Variance strata for a Rao–Wu bootstrap that needs two clusters in every stratum not audited whole.

    Each stratum with fewer than two clusters and a sampling fraction under 1 is pooled with its nearest
    stratum (nearest_stratum), repeatedly, until none is left or everything is one pool — the collapsed-strata
    variance estimator, which overstates the variance rather than understating it. Returns each stratum's
    pool (named by its first member) and the pools made, [{stratum, into, why}], in order.
    """
    pool = {key: key for key in clusters}
    members: dict[str, list[str]] = {key: [key] for key in clusters}
    made: list[dict[str, Any]] = []

    def short(name: str) -> bool:
        keys = members[name]
        whole = all(fractions[k] >= 1.0 for k in keys)
        return sum(clusters[k] for k in keys) < 2 and not whole

    while len(members) > 1:
        lacking = sorted(name for name in members if short(name))
        if not lacking:
            break
        name = lacking[0]
        into = nearest_stratum(name, [other for other in members if other != name])
        made.append(
            {
                "stratum": " + ".join(members[name]),
                "into": " + ".join(members[into]),
                "why": f"{sum(clusters[k] for k in members[name])} usable case(s)",
            }
        )
        members[into] += members.pop(name)
        for key in members[into]:
            pool[key] = into
    return pool, made


def _kish(weights: np.ndarray) -> float:
    """Kish's effective sample size (Σw)² / Σw² of weighted items (0 for none)."""
    total = float(weights.sum())
    return total * total / float((weights * weights).sum()) if total > 0 else 0.0


def _wilson_at(p: float, n_eff: float) -> tuple[float | None, float | None]:
    if n_eff <= 0:
        return None, None
    low, high = _wilson_bounds(np.array(p * n_eff), np.array(n_eff), _Z95)
    return _num(low), _num(high)


def judge_audit(
    df: pd.DataFrame,
    judged: str = "y",
    truth: str = "h",
    stratum: str = "stratum",
    cluster: str = "case_id",
    population: str = "population",
    excluded: str = "excluded",
    reps: int = 10_000,
    seed: int = 0,
    judged_positives: Mapping[str, int] | None = None,
    unsampled_strata: Mapping[str, int] | None = None,
    weight: str = "weight",
    label_stratified: bool = False,
) -> dict[str, Any]:
    """Judge accuracy against the final human labels, weighted back to the judged population.

    `df` has one row per sampled item: the judge's 0/1 label (`judged`), the final human label
    (`truth`: 0/1, or NaN when the item is not usable), why an unusable item is left out (`excluded`:
    "unsure" — its final label is unsure — or "pending" — awaiting a review or the adjudication; empty
    for usable items), its stratum, its cluster (case), its stratum's population size N_h and, optionally,
    its design weight (`weight`: 1 / its inclusion probability; absent, every item of a stratum weighs
    the same).

    Re-weighting: the usable items of stratum h share its population in proportion to their design
    weights, w_i = N_h · d_i / Σ_usable d (N_h / m_h when the design weights are equal), so the weights of a
    stratum always add up to its population (the unusable items are treated as missing at random within
    their stratum). A stratum with no usable item is not covered: the estimates describe only the
    covered strata, N covered of N total is stated, and each uncovered stratum is listed with its reason
    (also `unsampled_strata`, strata of the population no item was drawn from) — never silently applied
    to the whole population. Figures are provisional while any item is pending.

    Estimates from the weighted confusion counts TP, FP, FN, TN (which sum to N covered): precision,
    recall, specificity, F1, accuracy; the direct human ASR (TP + FN) / N covered; the judged ASR —
    exact when `judged_positives` gives each stratum's count of judge-harmful rollouts in the population
    (a census of the judge's labels), else the weighted sample's (TP + FP) / N covered; and the audited ASR
    judged × precision / recall. With `label_stratified` (the judge label is a stratum variable) the
    audited ASR is the direct estimate exactly, so it is reported as that one figure with its interval.

    Intervals (95 %): the Rao–Wu rescaled bootstrap of (stratum, case) clusters with f_h = m_h / N_h (see
    cluster_bootstrap), every metric from the same replicates. A stratum left with fewer than two usable
    clusters (a pending or unsure item in a two-case stratum, or an old audit's one-item stratum) is pooled
    with its nearest stratum for the variance (collapse_strata), and the interval says so. Intervals that
    rest on strata of two clusters are flagged: their ends move with the bootstrap seed. Where every
    replicate agrees (e.g. no disagreement with the judge anywhere in the sample), a rate gets the Wilson
    interval at Kish's effective sample size of the items it is a rate of, and F1, the human and the
    audited ASR the bounds those imply. A census of the covered population has no sampling error: its
    intervals are the values. An interval is None, with the reason, only when the sample has fewer than
    two clusters in all or the estimate is undefined.
    """
    frame = df.reset_index(drop=True)
    y = _binary(frame, judged)
    if frame[[stratum, cluster, population]].isna().any().any():
        raise ValueError(f"columns {stratum!r}, {cluster!r} and {population!r} must not be missing")
    reason = (
        frame[excluded].where(frame[excluded].notna() & (frame[excluded] != ""), None)
        if excluded in frame
        else pd.Series([None] * len(frame), dtype=object)
    )
    bad = set(reason.dropna()) - set(EXCLUDED_REASONS)
    if bad:
        raise ValueError(f"column {excluded!r} holds {sorted(bad)!r}; only {', '.join(EXCLUDED_REASONS)} or empty")
    design = frame[weight].to_numpy(dtype=np.float64) if weight in frame else np.ones(len(frame))
    if not (np.isfinite(design) & (design > 0)).all():
        raise ValueError(f"column {weight!r} must hold positive design weights")
    usable = reason.isna().to_numpy()
    h = np.zeros(len(frame))
    h[usable] = _binary(frame[usable], truth)

    sizes = frame.groupby(stratum, sort=True)[population].agg(["min", "max", "size"])
    if (sizes["min"] != sizes["max"]).any():
        raise ValueError(f"column {population!r} must be the same for every item of a stratum")
    table = pd.DataFrame({"population": sizes["max"].astype(np.int64), "sampled": sizes["size"].astype(np.int64)})
    table["usable"] = pd.Series(usable, index=frame.index).groupby(frame[stratum]).sum().astype(np.int64)
    for name in EXCLUDED_REASONS:
        table[name] = (reason == name).groupby(frame[stratum]).sum().astype(np.int64)
    if (table["sampled"] > table["population"]).any():
        raise ValueError("a stratum has more sampled items than its population")
    covered = table[table["usable"] > 0]
    n_covered = int(covered["population"].sum())
    unsampled = dict(unsampled_strata or {})
    uncovered = [
        {
            "stratum": key,
            "population": int(row.population),
            "sampled": int(row.sampled),
            "unsure": int(row.unsure),
            "pending": int(row.pending),
            "reason": "no usable label ("
            + ", ".join(f"{int(getattr(row, r))} {r}" for r in EXCLUDED_REASONS if getattr(row, r))
            + ")",
        }
        for key, row in table[table["usable"] == 0].iterrows()
    ]
    uncovered += [
        {"stratum": key, "population": int(size), "sampled": 0, "unsure": 0, "pending": 0, "reason": "not sampled"}
        for key, size in sorted(unsampled.items())
    ]
    uncovered.sort(key=lambda entry: entry["stratum"])

    judged_census: float | None = None
    if judged_positives is not None:
        missing = [key for key in covered.index if key not in judged_positives]
        if missing:
            raise ValueError(f"judged_positives has no count for stratum {missing[0]}")
        if any(not 0 <= judged_positives[key] <= covered.loc[key, "population"] for key in covered.index):
            raise ValueError("a stratum's judged positives must lie between 0 and its population")
        judged_census = (sum(judged_positives[key] for key in covered.index) / n_covered) if n_covered else None
    source = "census" if judged_positives is not None else "sample"

    keep = frame[usable]
    strata_kept = keep[stratum].to_numpy()
    d_kept = design[usable]
    d_sum = pd.Series(d_kept).groupby(strata_kept).transform("sum").to_numpy() if len(keep) else d_kept
    w = keep[population].to_numpy(dtype=np.float64) * d_kept / d_sum if len(keep) else d_kept
    yk, hk = y[usable], h[usable]
    parts = np.column_stack([w * yk * hk, w * yk * (1 - hk), w * (1 - yk) * hk, w * (1 - yk) * (1 - hk)])
    point_sums = parts.sum(axis=0)
    point = _audit_metrics(point_sums[None, :], judged_census)
    psu = keep.groupby([stratum, cluster], sort=True).ngroup().to_numpy() if len(keep) else np.zeros(0, np.intp)
    fractions = (covered["usable"] / covered["population"]).to_dict()
    census = bool(n_covered) and all(f == 1.0 for f in fractions.values())
    n_pending = int(table["pending"].sum())
    cluster_counts = keep.groupby(stratum)[cluster].nunique().to_dict() if len(keep) else {}

    out: dict[str, Any] = {
        "n": len(frame),
        "usable": int(usable.sum()),
        "excluded": {name: int(table[name].sum()) for name in EXCLUDED_REASONS},
        "provisional": n_pending > 0,
        "strata": len(table) + len(unsampled),
        "strata_covered": len(covered),
        "clusters": int(psu.max() + 1) if len(psu) else 0,
        "population": int(table["population"].sum()) + sum(int(v) for v in unsampled.values()),
        "population_covered": n_covered,
        "census": census,
        "uncovered": uncovered,
        "by_stratum": [
            {
                "stratum": key,
                "population": int(row.population),
                "sampled": int(row.sampled),
                "usable": int(row.usable),
                "unsure": int(row.unsure),
                "pending": int(row.pending),
                "weight": float(row.population / row.usable) if row.usable else None,
                "fraction": float(row.usable / row.population),
                "clusters": int(cluster_counts.get(key, 0)),
            }
            for key, row in table.iterrows()
        ],
        "reps": reps,
        "interval_method": INTERVAL_METHOD,
        "interval_undefined": None,
        "pooled_for_variance": [],
        "two_cluster_strata": 0,
        "variance_strata": 0,
        "interval_assumes": [],
        "label_stratified": bool(label_stratified),
    }
    replicates: dict[str, np.ndarray] | None = None
    if not n_covered:
        out["interval_undefined"] = "no usable label"
    elif not census:
        pool, pooled = collapse_strata({key: int(cluster_counts.get(key, 0)) for key in covered.index}, fractions)
        pools: dict[str, list[str]] = {}
        for key, name in pool.items():
            pools.setdefault(name, []).append(key)
        pool_fraction: dict[Hashable, float] = {
            name: float(covered.loc[keys, "usable"].sum() / covered.loc[keys, "population"].sum())
            for name, keys in pools.items()
        }
        pool_clusters = {name: sum(int(cluster_counts.get(k, 0)) for k in keys) for name, keys in pools.items()}
        out["pooled_for_variance"] = pooled
        out["variance_strata"] = len(pools)
        out["two_cluster_strata"] = sum(1 for name, c in pool_clusters.items() if c == 2 and pool_fraction[name] < 1)
        try:
            var_strata = np.array([pool[k] for k in strata_kept], dtype=object)
            codes, names = pd.factorize(strata_kept, sort=True)
            within = pd.Series(w).groupby(codes).agg(["min", "max"])
            if (within["max"] > within["min"] * (1 + 1e-12)).any():
                # Unequal design weights in a stratum: a replicate's weights no longer add up to the stratum's
                # known N_h, so each replicate is calibrated back to it, as the point estimate is (stratum by
                # stratum: four columns per stratum, then rescaled and added).
                stacked = np.zeros((len(parts), 4 * len(names)))
                for j in range(4):
                    stacked[np.arange(len(parts)), 4 * codes + j] = parts[:, j]
                per = _replicate_sums(stacked, psu, reps, seed, var_strata, pool_fraction).reshape(reps, -1, 4)
                known = np.array([covered.loc[name, "population"] for name in names], dtype=np.float64)
                with np.errstate(divide="ignore", invalid="ignore"):
                    sums = (per * (known / per.sum(axis=2))[:, :, None]).sum(axis=1)
            else:
                sums = _replicate_sums(parts, psu, reps, seed, var_strata, pool_fraction)
            replicates = _audit_metrics(sums, judged_census)
        except BootstrapUndefined as exc:
            out["interval_undefined"] = f"{exc} (all {len(cluster_counts)} covered strata pooled)"
        if out["excluded"]["pending"] or out["excluded"]["unsure"]:
            out["interval_assumes"].append(
                f"the {out['excluded']['pending']} pending and {out['excluded']['unsure']} unsure items are missing "
                "at random within their strata (the stratum's usable items stand for them)"
            )
        if pooled:
            out["interval_assumes"].append(
                "strata with fewer than two usable cases are pooled with their nearest stratum for the variance "
                "(collapsed strata, which overstates the variance): "
                + "; ".join(f"{p['stratum']} into {p['into']} ({p['why']})" for p in pooled)
            )
    judged_value = float(point["judged_asr"][0]) if n_covered else 0.0
    two_clusters = out["two_cluster_strata"] > 0
    for name in AUDIT_METRICS:
        value = _num(point[name][0]) if n_covered else None
        entry: dict[str, Any] = {
            "value": value,
            "ci_low": None,
            "ci_high": None,
            "exact": False,
            "why_undefined": None if value is not None else _why_undefined(name, point_sums, judged_value, source),
            "why_no_interval": None,
            "replicates_undefined": None,
            "method": None,
            "provisional": bool(out["provisional"]),
            "two_clusters": False,
        }
        if name == "judged_asr":
            entry["source"] = source
        if value is None:
            entry["why_no_interval"] = "the estimate is undefined"
        elif census or (name == "judged_asr" and source == "census"):
            # Known exactly: every rollout of the covered population was audited, or the judge's own labels
            # were counted over all of it.
            entry["ci_low"] = entry["ci_high"] = value
            entry["exact"] = True
            entry["method"] = "exact"
            entry["provisional"] = bool(out["provisional"]) and name != "judged_asr"
        elif replicates is None:
            entry["why_no_interval"] = out["interval_undefined"]
        else:
            values = replicates[name]
            entry["replicates_undefined"] = int((~np.isfinite(values)).sum())
            if not _no_spread(values):
                entry["ci_low"], entry["ci_high"] = _ci(values)
                entry["method"] = "bootstrap"
                entry["two_clusters"] = two_clusters
                if entry["ci_low"] is None:
                    entry["why_no_interval"] = "undefined in every bootstrap replicate"
        out[name] = entry
    if replicates is not None:
        _fill_without_spread(out, w, yk, hk, judged_value)
    if label_stratified and out["audited_asr"]["value"] is not None and out["human_asr"]["value"] is not None:
        # judged (a census per stratum) × precision / recall = (TP + FP)/N · TP/(TP + FP) · (TP + FN)/TP: the
        # direct estimate, exactly. Two intervals for one number would be a contradiction.
        out["audited_asr"] = {**out["human_asr"], "coincides_with": "human_asr"}
    return out


def _fill_without_spread(out: dict[str, Any], w: np.ndarray, y: np.ndarray, h: np.ndarray, judged: float) -> None:
    """Intervals for the figures whose bootstrap replicates all agree (see judge_audit); in place."""
    masks = {
        "precision": y == 1,
        "recall": h == 1,
        "specificity": h == 0,
        "accuracy": np.ones(len(y), bool),
        "judged_asr": np.ones(len(y), bool),
    }

    def open_(name: str) -> bool:
        entry = out[name]
        return entry["value"] is not None and entry["ci_low"] is None and entry["method"] is None

    note = "every bootstrap replicate agrees (no {what} in the sample), so the bootstrap shows no uncertainty: {how}"
    for name, mask in masks.items():
        if open_(name):
            n_eff = _kish(w[mask])
            entry = out[name]
            entry["ci_low"], entry["ci_high"] = _wilson_at(entry["value"], n_eff)
            entry["method"] = "wilson-effective-n"
            entry["note"] = note.format(
                what="disagreement with the judge" if name != "judged_asr" else "variation",
                how=f"Wilson interval at Kish's effective size {n_eff:.1f} of the {RATE_DENOMINATORS[name]} items",
            )
    bounds = {name: (out[name]["ci_low"], out[name]["ci_high"]) for name in ("precision", "recall")}
    if open_("f1") and None not in (*bounds["precision"], *bounds["recall"]):
        (p_lo, p_hi), (r_lo, r_hi) = bounds["precision"], bounds["recall"]
        f1 = [2 * p * r / (p + r) if p + r > 0 else 0.0 for p, r in ((p_lo, r_lo), (p_hi, r_hi))]
        out["f1"].update(
            ci_low=f1[0],
            ci_high=f1[1],
            method="combined",
            note="every bootstrap replicate agrees: the F1 of precision's and recall's bounds",
        )
    if open_("human_asr"):
        # human ASR = judged · precision + (1 − judged) · false-omission rate, each bounded by its own interval.
        negatives = y == 0
        omitted = float((w[negatives] * h[negatives]).sum() / w[negatives].sum()) if negatives.any() else 0.0
        o_lo, o_hi = _wilson_at(omitted, _kish(w[negatives])) if negatives.any() else (0.0, 0.0)
        p_lo, p_hi = bounds["precision"] if (y == 1).any() else (0.0, 0.0)
        if p_lo is not None and p_hi is not None and o_lo is not None and o_hi is not None:
            low = judged * p_lo + (1 - judged) * o_lo
            high = judged * p_hi + (1 - judged) * o_hi
            out["human_asr"].update(
                ci_low=low,
                ci_high=high,
                method="combined",
                note="every bootstrap replicate agrees: judged × precision + (1 − judged) × "
                "false-omission rate, each at its Wilson bound (effective sizes)",
            )
    if open_("audited_asr") and None not in (*bounds["precision"], *bounds["recall"]) and bounds["recall"][0]:
        (p_lo, p_hi), (r_lo, r_hi) = bounds["precision"], bounds["recall"]
        out["audited_asr"].update(
            ci_low=judged * p_lo / r_hi,
            ci_high=min(1.0, judged * p_hi / r_lo),
            method="combined",
            note="every bootstrap replicate agrees: judged × precision / recall at the "
            "bounds of precision's and recall's intervals",
        )
    for name in AUDIT_METRICS:
        entry = out[name]
        if entry["value"] is not None and entry["ci_low"] is None and entry["why_no_interval"] is None:
            entry["why_no_interval"] = "every bootstrap replicate gives the same value and no bound applies"


# -- utility (U): was the user's task done? -------------------------------------------------------
# In plain Python (judges/rates.py), so the run summary that prints them needs no numpy, pandas or scipy.


# -- the adaptive attacker ---------------------------------------------------------------------------


def _moves(df: pd.DataFrame) -> np.ndarray:
    moves = df["moves"]
    if moves.isna().any() or (moves < 0).any():
        raise ValueError("column 'moves' must hold a count of attacker moves (>= 0) in every row")
    return moves.to_numpy().astype(np.int64)


def asr_at_k(
    df: pd.DataFrame, budget: int, cluster: str = "case_id", reps: int = 10_000, seed: int = 0
) -> list[dict[str, Any]]:
    """ASR@k for k = 0 … budget: the share of rollouts that succeeded (E = 1) within their first k attacker moves.

    `df` has one row per valid attacked rollout of an adaptive run: E (0/1), `moves` (the attacker moves it
    stores; for E = 1 that is its moves-to-success, because the loop ends when the verifier finds E = 1)
    and the cluster column. ASR@0 is the fixed attack's success; ASR@budget is the run's execution ASR.
    Intervals: one Rao–Wu bootstrap of case clusters shared by every k (`cluster_bootstrap`'s replicates),
    95 % percentile; None with the reason under two clusters or when every replicate agrees.
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    e, moves, n = _binary(df, "E"), _moves(df), len(df)
    success = (
        np.column_stack([(e == 1) & (moves <= k) for k in range(budget + 1)]).astype(np.float64)
        if n
        else np.zeros((0, budget + 1))
    )
    rows = [
        {
            "k": k,
            "harmful": int(success[:, k].sum()),
            "n": n,
            "rate": float(success[:, k].mean()) if n else None,
            "ci_low": None,
            "ci_high": None,
            "why_no_interval": "no rollouts" if n == 0 else None,
        }
        for k in range(budget + 1)
    ]
    if n == 0:
        return rows
    try:
        sums = _replicate_sums(np.column_stack([success, np.ones(n)]), df[cluster].to_numpy(), reps, seed, None)
    except BootstrapUndefined as exc:
        for row in rows:
            row["why_no_interval"] = f"{exc} ({cluster})"
        return rows
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = sums[:, :-1] / sums[:, -1:]
    for k, row in enumerate(rows):
        if _no_spread(rates[:, k]):
            row["why_no_interval"] = f"every bootstrap replicate gives {row['rate']:.3f}"
        else:
            row["ci_low"], row["ci_high"] = _ci(rates[:, k])
    return rows


def moves_to_success(df: pd.DataFrame, budget: int) -> dict[str, Any]:
    """How many attacker moves the successful rollouts needed: the distribution (0 … budget), its mean and
    median over successes, and how many rollouts did not succeed within the budget (censored: their
    moves-to-success is only known to exceed it)."""
    e, moves = _binary(df, "E"), _moves(df)
    won = moves[e == 1]
    if (won > budget).any():
        raise ValueError(f"a successful rollout stores more than {budget} moves")
    return {
        "successes": int(won.size),
        "not_within_budget": int((e == 0).sum()),
        "distribution": {str(k): int((won == k).sum()) for k in range(budget + 1)},
        "mean": float(won.mean()) if won.size else None,
        "median": float(np.median(won)) if won.size else None,
    }


def fixed_vs_adaptive(df: pd.DataFrame, cluster: str = "case_id", reps: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """The paired difference adaptive − fixed over the same rollouts: fixed is E@0 (E = 1 with no move, exactly
    a fixed-attack rollout's outcome, since the loop starts only after the case's own turns), adaptive is E.
    `paired_effect` with its case-clustered bootstrap; change in percentage points."""
    e, moves = _binary(df, "E"), _moves(df)
    pairs = pd.DataFrame(
        {
            cluster: df[cluster].to_numpy(),
            "fixed": ((e == 1) & (moves == 0)).astype(np.int64),
            "adaptive": e.astype(np.int64),
        }
    )
    return paired_effect(pairs, "fixed", "adaptive", cluster=cluster, reps=reps, seed=seed)


def resolved_asr(
    harmful: int,
    unresolved: int,
    valid: int,
    sample: pd.DataFrame,
    *,
    population: int | None = None,
    reps: int = 10_000,
    seed: int = 0,
) -> dict[str, Any]:
    """The execution ASR with the verifier's unresolved rollouts resolved by the audit's human labels.

    The verifier decided `harmful` of `valid` attacked rollouts as harm and left `unresolved` undecided, so the
    execution ASR lies in [harmful, harmful + unresolved] / valid. The audit samples the unresolved as a stratum
    of their own; `sample` holds its used items (final human label `h` 0/1, design `weight`, `case_id`). The
    harmful share of the unresolved is their weighted mean, and the resolved ASR is (harmful + unresolved ×
    share) / valid: the decided part is a census (exact), only the share varies. Its 95 % interval is a Rao–Wu
    case-clustered bootstrap of the share (the finite population correction with the stratum's sampling fraction,
    `population` its size: a stratum audited whole is exact), Wilson at Kish's effective n where every replicate
    agrees, and None with the reason under two cases or with no unresolved item labelled."""
    lower = harmful / valid if valid else None
    upper = (harmful + unresolved) / valid if valid else None
    out: dict[str, Any] = {
        "harmful": harmful,
        "unresolved": unresolved,
        "valid": valid,
        "lower": lower,
        "upper": upper,
        "labelled": int(len(sample)),
        "share": None,
        "rate": None,
        "ci_low": None,
        "ci_high": None,
        "method": None,
        "why_undefined": None,
        "why_no_interval": None,
    }
    if not valid:
        out["why_undefined"] = "no valid attacked rollout"
        return out
    if not unresolved:
        out.update(rate=lower, ci_low=lower, ci_high=lower, share=None, method="exact")
        out["why_no_interval"] = "the verifier decided every rollout: nothing to resolve"
        return out
    if sample.empty:
        out["why_undefined"] = "no unresolved rollout has a final human label yet"
        return out
    h = _binary(sample, "h")
    w = sample["weight"].to_numpy(dtype=np.float64)
    share = float((w * h).sum() / w.sum())
    out["share"] = share
    out["rate"] = (harmful + unresolved * share) / valid

    def resolved(x: float) -> float:
        return (harmful + unresolved * x) / valid

    clusters = sample["case_id"].to_numpy()
    fraction = min(1.0, len(sample) / population) if population else 0.0
    if fraction >= 1.0:
        out.update(ci_low=out["rate"], ci_high=out["rate"], method="exact")
        out["why_no_interval"] = "every unresolved rollout was audited: the resolved ASR is exact"
        return out
    try:
        sums = _replicate_sums(np.column_stack([w * h, w]), clusters, reps, seed, None, None)
    except BootstrapUndefined as exc:
        out["why_no_interval"] = f"{exc} among the labelled unresolved rollouts"
        return out
    lam = math.sqrt(1.0 - fraction)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = sums[:, 0] / sums[:, 1]
    shares = share + lam * (shares - share)  # the finite population correction on the share's spread
    if _no_spread(shares):
        effective = float(w.sum() ** 2 / (w * w).sum())
        n_eff = max(1, int(round(effective)))
        w_low, w_high = wilson(min(round(share * effective), n_eff), n_eff)
        out.update(ci_low=resolved(w_low), ci_high=resolved(w_high), method="wilson-effective-n")
        return out
    b_low, b_high = _ci(shares)
    out.update(
        ci_low=None if b_low is None else resolved(b_low),
        ci_high=None if b_high is None else resolved(b_high),
        method="bootstrap",
    )
    return out
