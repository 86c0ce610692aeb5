"""Case-clustered bootstrap speed: 10,000 replicates over 30,000 rollouts, against a slow per-replicate loop.

    python benchmarks/bootstrap.py [--reps 10000] [--rollouts 30000] [--clusters 1000 2000 3000]
                                   [--reference-reps 200] [--repeat 3]

For each cluster count, prints the median seconds of `cluster_bootstrap` (statistic: a rate, the
sum of labels over the sum of ones) over --repeat runs, then the time of a straightforward reference
that loops over replicates, gathers the rows of the drawn clusters and recomputes the rate, on
--reference-reps replicates; extrapolated per replicate, their ratio is the speed-up. Both intervals
are printed too, as a sanity check (the reference's, from few replicates, is the noisier one).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from redagent.judges.stats import cluster_bootstrap, percentile_ci


def synthetic(rollouts: int, clusters: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """0/1 outcomes whose rate varies by case, as real cases differ in difficulty."""
    rng = np.random.default_rng(seed)
    case = rng.integers(0, clusters, size=rollouts)
    difficulty = rng.beta(2, 2, size=clusters)
    y = (rng.random(rollouts) < difficulty[case]).astype(np.float64)
    return y, case


def rate(sums: np.ndarray) -> np.ndarray:
    return sums[:, 0] / sums[:, 1]


def reference(y: np.ndarray, case: np.ndarray, reps: int, seed: int = 0) -> np.ndarray:
    """The textbook loop: per replicate, draw clusters with replacement and recompute from the rows."""
    rng = np.random.default_rng(seed)
    labels = np.unique(case)
    rows_of = {c: np.flatnonzero(case == c) for c in labels}
    out = np.empty(reps)
    for r in range(reps):
        drawn = rng.choice(labels, size=len(labels), replace=True)
        rows = np.concatenate([rows_of[c] for c in drawn])
        out[r] = y[rows].mean()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=10_000)
    parser.add_argument("--rollouts", type=int, default=30_000)
    parser.add_argument("--clusters", type=int, nargs="+", default=[1000, 2000, 3000])
    parser.add_argument("--reference-reps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    for clusters in options.clusters:
        y, case = synthetic(options.rollouts, clusters)
        values = np.column_stack([y, np.ones_like(y)])
        timings = []
        for _ in range(options.repeat):
            started = time.perf_counter()
            replicates = cluster_bootstrap(values, case, rate, reps=options.reps, seed=0)
            timings.append(time.perf_counter() - started)
        fast = statistics.median(timings)
        n_clusters = len(np.unique(case))
        print(
            f"bootstrap: {options.reps} replicates over {options.rollouts} rollouts in {n_clusters} clusters: "
            f"{fast:.2f} s (median of {options.repeat}; min {min(timings):.2f}, max {max(timings):.2f})"
        )
        started = time.perf_counter()
        slow = reference(y, case, options.reference_reps)
        slow_seconds = time.perf_counter() - started
        per_rep_ratio = (slow_seconds / options.reference_reps) / (fast / options.reps)
        print(
            f"  reference loop: {options.reference_reps} replicates in {slow_seconds:.2f} s "
            f"(≈ {slow_seconds / options.reference_reps * options.reps:.1f} s for {options.reps}); "
            f"per replicate the vectorised bootstrap is {per_rep_ratio:.0f}× faster"
        )
        low, high = percentile_ci(replicates)
        ref_low, ref_high = percentile_ci(slow)
        print(
            f"  rate {y.mean():.4f}; 95% CI vectorised [{low:.4f}, {high:.4f}], "
            f"reference [{ref_low:.4f}, {ref_high:.4f}]"
        )


if __name__ == "__main__":
    main()
