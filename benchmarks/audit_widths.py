"""Audit interval widths at several sample sizes: the default run, judged, audited in full by two reviewers.

    python benchmarks/audit_widths.py [--n 120 180 360] [--disagree 0.0] [--seed 0] [--reps 10000]

Runs the default matrix (built-in cases × calibration agents × three harnesses, benign arm) into a fresh
SQLite store, judges it with the hybrid rule judge, and for each n draws `redagent audit sample --n N
--stratify harness,strategy,label --seed S` (the sampler's suggested size is printed by `audit sample
--plan-only`). Both reviewers label every item by the verifier's outcome E — except a seeded share
`--disagree` of items, where both say the opposite, so that the judge and the humans disagree there
and the intervals come from the bootstrap rather than from Wilson's bound on a perfect sample. Then
`redagent audit stats` and a table of every interval's width (high − low), with its method.

Every step goes through the `redagent` commands a user runs; only the labelling is written directly through
the store's reviewer API (`submit_labels`), as the console's import of a filled-in sheet does.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from redagent.store import open_store

METRICS = ("precision", "recall", "specificity", "f1", "accuracy", "human_asr", "audited_asr")


def redagent(*args: str, db: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "redagent", *args, "--db", f"sqlite:///{db}", "--json"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"redagent {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def label_all(db: Path, run_id: str, audit_id: str, disagree: float, seed: int) -> tuple[int, int]:
    """Both reviewers label every item by E, flipped on a seeded share; returns (items, flipped)."""
    rng = random.Random(seed)
    with open_store(f"sqlite:///{db}") as store:
        items = store.audit_items(audit_id)
        outcome = {r["rollout_id"]: r["E"] for r in store.iter_export(run_id)}
        entries, flipped = [], 0
        # By rollout: the items' ids and order are random (issue 34), so the seeded flips follow the rollouts.
        for item in sorted(items, key=lambda item: item.rollout_id):
            harmful = outcome[item.rollout_id] == 1
            if rng.random() < disagree:
                harmful, flipped = not harmful, flipped + 1
            entries.append((item.item_id, "harmful" if harmful else "not_harmful", ""))
        for reviewer in ("alice", "bob"):
            store.submit_labels(audit_id, reviewer, entries)
    return len(items), flipped


def width(interval: dict | list | None) -> str:
    if isinstance(interval, list):
        low, high = interval
    elif isinstance(interval, dict) and interval.get("ci_low") is not None:
        low, high = interval["ci_low"], interval["ci_high"]
    else:
        return "—"
    return f"{high - low:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[120, 180, 360])
    parser.add_argument("--disagree", type=float, default=0.0, help="share of items the reviewers label against E")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reps", type=int, default=10000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "audit.db"
        run = redagent("run", db=db)
        redagent("judge", run["run_id"], "--views", "hybrid", db=db)
        print(f"default run {run['run_id']}: {run['valid']} valid rollouts; judged (hybrid/rule)")
        header = f"{'n':>5} {'strata':>7} {'flipped':>8} " + " ".join(f"{m:>12}" for m in METRICS)
        print(header + f" {'agreement':>10} {'kappa':>7}  methods")
        for n in options.n:
            sample = redagent(
                "audit", "sample", run["run_id"], "--n", str(n), "--stratify", "harness,strategy,label",
                "--seed", str(options.seed), "--config", "hybrid/rule", "--reviewers", "alice,bob",
                "--adjudicator", "carol", db=db,
            )  # fmt: skip
            items, flipped = label_all(db, run["run_id"], sample["audit_id"], options.disagree, options.seed + n)
            stats = redagent("audit", "stats", sample["audit_id"], "--reps", str(options.reps), db=db)
            missing = [m for m in METRICS if width(stats.get(m)) == "—"]
            methods = sorted({stats[m]["method"] for m in METRICS if isinstance(stats.get(m), dict)})
            print(
                f"{items:>5} {stats['strata']:>7} {flipped:>8} "
                + " ".join(f"{width(stats.get(m)):>12}" for m in METRICS)
                + f" {width(stats.get('agreement_ci')):>10} {width(stats.get('kappa_ci')):>7}  {', '.join(methods)}"
                + (f"  NO INTERVAL: {', '.join(missing)}" if missing else "")
            )


if __name__ == "__main__":
    main()
