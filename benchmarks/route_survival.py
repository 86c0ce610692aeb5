"""How the verifiers fare against generated routes (cases/routes.py): routes tried and survived — the verifier gave
the E the route expects — by kind (harmful, near-miss), by dimension, by dimension value and by constraint, over a
wider sample per case than `cases check` runs. The issue note's before/after figures come from here.

    python benchmarks/route_survival.py cases/library [--harmful 30] [--near-miss 20] [--costly 4]
    python benchmarks/route_survival.py cases/benchmark_v2 --per 1 --json v2.json

`--per N` takes N base cases of every (surface, constraint) from a compiled benchmark, with their variants.
Only the standard library and the project's case loader, route generator and `run_plan` are used, so the script
runs unchanged against an older checkout of the verifiers.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from redagent.cases.loader import load_cases
from redagent.cases.routes import Budget, variants
from redagent.cases.schema import Case
from redagent.cases.selfcheck import run_plan


def pick(paths: list[Path], per: int | None) -> list[Case]:
    if per is None:
        return load_cases(paths)
    chosen: list[Case] = []
    for root in paths:
        base = load_cases([root / "base"])
        groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
        for case in base:
            groups[(case.surfaces[0], case.constraint)].append(case)
        rng = random.Random(22)
        picked = [c for key in sorted(groups) for c in rng.sample(groups[key], min(per, len(groups[key])))]
        ids = {c.id for c in picked}
        compiled = load_cases([root / "variants"]) if (root / "variants").is_dir() else []
        chosen += picked + [v for v in compiled if v.variant_of in ids]
    return chosen


def run_case(args: tuple[str, str, Budget]) -> list[dict[str, Any]]:
    source, case_id, budget = args
    case = next(c for c in load_cases([source]) if c.id == case_id)
    out = []
    for variant in variants(case, budget=budget, commands=not case.variant_of):
        failed: set[int] = set()
        try:
            run, _ = run_plan(case, variant.harmful, benign=variant.benign, failed=failed)
        except Exception as exc:  # an old checkout may not run a route at all: count it as refused
            out.append(
                {
                    "kind": variant.kind,
                    "dims": variant.dimensions,
                    "outcome": "skipped",
                    "constraint": case.constraint,
                    "name": variant.name,
                    "error": type(exc).__name__,
                }
            )
            continue
        if variant.expect == 1 and failed & set(variant.rewritten):
            outcome = "skipped"
        else:
            outcome = "survived" if run.verdict.E == variant.expect else "failed"
        out.append(
            {
                "kind": variant.kind,
                "dims": variant.dimensions,
                "outcome": outcome,
                "constraint": case.constraint,
                "name": variant.name,
                "case": case.id,
            }
        )
    return out


def table(rows: list[dict[str, Any]], key: Any) -> dict[str, dict[str, list[int]]]:
    """group → kind → [tried, survived, skipped]."""
    out: dict[str, dict[str, list[int]]] = defaultdict(lambda: {"harmful": [0, 0, 0], "near-miss": [0, 0, 0]})
    for row in rows:
        for group in key(row):
            cell = out[group][row["kind"]]
            if row["outcome"] == "skipped":
                cell[2] += 1
            else:
                cell[0] += 1
                cell[1] += row["outcome"] == "survived"
    return out


def share(cell: list[int]) -> str:
    return f"{cell[1]:4}/{cell[0]:<4} {100 * cell[1] / cell[0]:5.1f} %" if cell[0] else f"{'-':>9} {'':7}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--per", type=int, default=None, help="base cases per (surface, constraint) of a benchmark")
    parser.add_argument("--harmful", type=int, default=30)
    parser.add_argument("--near-miss", type=int, default=20)
    parser.add_argument("--costly", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="write every route's outcome here")
    options = parser.parse_args()
    budget = Budget(options.harmful, options.near_miss, options.costly)
    cases = pick(options.paths, options.per)
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=options.jobs) as pool:
        rows = [r for part in pool.map(run_case, [(c.source, c.id, budget) for c in cases]) for r in part]
    print(
        f"{len(cases)} cases, {len(rows)} routes in {time.perf_counter() - started:.0f} s "
        f"(budget per case: {options.harmful} harmful, {options.near_miss} near-misses, {options.costly} costly)"
    )
    kinds = table(rows, lambda r: ["all"])["all"]
    print(f"{'':24} {'harmful survived':>22} {'near-misses survived':>24}   skipped (refused)")
    print(
        f"{'all routes':24} {share(kinds['harmful']):>22} {share(kinds['near-miss']):>24}   "
        f"{kinds['harmful'][2] + kinds['near-miss'][2]}"
    )
    for title, key in (
        ("by dimension", lambda r: sorted({d for d, _ in r["dims"] if d != "harm"})),
        ("by constraint", lambda r: [r["constraint"]]),
    ):
        print(title)
        for group, cell in sorted(table(rows, key).items()):
            print(
                f"  {group:22} {share(cell['harmful']):>22} {share(cell['near-miss']):>24}   "
                f"{cell['harmful'][2] + cell['near-miss'][2]}"
            )
    print("weakest values (at least 3 tried), by dimension")
    choices = table(rows, lambda r: [f"{d}={c}" for d, c in r["dims"] if d != "harm"])
    by_dim: dict[str, list[tuple[float, str, int]]] = defaultdict(list)
    for group, cell in choices.items():
        tried = cell["harmful"][0] + cell["near-miss"][0]
        if tried >= 3:
            rate = (cell["harmful"][1] + cell["near-miss"][1]) / tried
            by_dim[group.split("=", 1)[0]].append((rate, group.split("=", 1)[1], tried))
    for dim, values in sorted(by_dim.items()):
        worst = ", ".join(f"{v} {100 * r:.0f}% of {n}" for r, v, n in sorted(values)[:5] if r < 1)
        if worst:
            print(f"  {dim:12} {worst}")
    if options.json:
        options.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
