"""`audit stats` before and after a change, on the same fully labelled audit: the same estimates and widths?

    python benchmarks/audit_stats_same.py --before DIR [--n 120 360] [--seed 1] [--disagree 0.1] [--reps 10000]

DIR is an older tree laid out as installed (a folder holding a `redagent` package: symlinks to an older
checkout's folders, as benchmarks/case_bounds.py takes). The default run (every built-in case, every calibration
agent, the three in-house harnesses, the benign arm) is run and judged (hybrid rule judge) once, by the older tree,
and copied; each tree then opens its copy (the newer one migrates it), draws `audit sample --n N --stratify
harness,strategy,label --seed SEED` — the owner's seed — has both reviewers label every item by the verifier's E,
except a share --disagree of the rollouts (chosen by a hash of the rollout id and the seed, so the same rollouts in
both trees whatever the items' ids and orders) where both say the opposite, and prints `audit stats --json`. The
two outputs are compared field by field (the audit's own id aside): issue 34 moved every member-visible field off
the seed, and the owner's draw, and so every estimate and interval, must not move.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LABEL = """
import hashlib, sys
from redagent.store import open_store
db, run_id, audit_id, share, seed = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
with open_store(db) as store:
    outcome = {r["rollout_id"]: r["E"] for r in store.iter_export(run_id)}
    entries, flipped = [], 0
    for item in store.audit_items(audit_id):
        harmful = outcome[item.rollout_id] == 1
        draw = int(hashlib.sha256(f"{seed}|{item.rollout_id}".encode()).hexdigest()[:8], 16) / 2**32
        if draw < share:
            harmful, flipped = not harmful, flipped + 1
        entries.append((item.item_id, "harmful" if harmful else "not_harmful", ""))
    for reviewer in ("alice", "bob"):
        store.submit_labels(audit_id, reviewer, entries)
print(flipped)
"""


def run(tree: str | None, *args: str) -> str:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def redagent(tree: str | None, db: Path, *args: str) -> dict:
    return json.loads(run(tree, "-m", "redagent", *args, "--db", f"sqlite:///{db}", "--json"))


def audit_stats(tree: str | None, db: Path, run_id: str, n: int, options: argparse.Namespace) -> dict:
    sample = redagent(
        tree, db, "audit", "sample", run_id, "--n", str(n), "--stratify", "harness,strategy,label",
        "--seed", str(options.seed), "--config", "hybrid/rule", "--reviewers", "alice,bob", "--adjudicator", "carol",
    )  # fmt: skip
    flipped = run(
        tree, "-c", LABEL, f"sqlite:///{db}", run_id, sample["audit_id"], str(options.disagree), str(options.seed)
    )
    stats = redagent(tree, db, "audit", "stats", sample["audit_id"], "--reps", str(options.reps))
    stats.pop("audit_id")
    return {"flipped": int(flipped), **stats}


def differences(before: object, after: object, where: str = "") -> list[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in sorted(set(before) | set(after)):
            if key not in before or key not in after:
                found.append(f"{where}.{key}: only {'after' if key in after else 'before'}")
            else:
                found += differences(before[key], after[key], f"{where}.{key}")
        return found
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            d for i, (b, a) in enumerate(zip(before, after, strict=True)) for d in differences(b, a, f"{where}[{i}]")
        ]
    return [] if before == after else [f"{where}: {before!r} → {after!r}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the older tree (a folder holding a `redagent` package)")
    parser.add_argument("--n", type=int, nargs="+", default=[120, 360])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--disagree", type=float, default=0.1, help="share of rollouts both reviewers label against E")
    parser.add_argument("--reps", type=int, default=10000)
    options = parser.parse_args()
    if not (Path(options.before) / "redagent" / "__init__.py").exists():
        raise SystemExit(f"error: --before {options.before}: no redagent package there")
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder) / "run.db"
        made = redagent(options.before, base, "run")
        run_id = made["run_id"]
        redagent(options.before, base, "judge", run_id, "--views", "hybrid")
        print(f"default run {run_id}: {made['valid']} valid rollouts, judged (hybrid/rule) by the older tree")
        for n in options.n:
            results = {}
            for name, tree in (("before", options.before), ("after", None)):
                copy = Path(folder) / f"{name}-{n}.db"
                shutil.copyfile(base, copy)
                results[name] = audit_stats(tree, copy, run_id, n, options)
            found = differences(results["before"], results["after"])
            widths = {
                m: round(entry["ci_high"] - entry["ci_low"], 6)
                for m, entry in results["after"].items()
                if isinstance(entry, dict) and entry.get("ci_low") is not None
            }
            print(
                f"n={n} (seed {options.seed}, {results['after']['flipped']} rollouts labelled against E): "
                + ("identical" if not found else f"{len(found)} differences")
                + f"; widths {json.dumps(widths)}"
            )
            for line in found[:20]:
                print("  " + line)


if __name__ == "__main__":
    main()
