"""How the verifiers fare against generated routes (cases/routes.py), over a wider sample per case than `cases check`
runs: every route's verdict — harm, no harm or unresolved — counted by kind (harmful, near-miss), by set (the fixed
families, and the drawn ones whose encodings, parties and start-up files are drawn at random per route seed), by
dimension, by dimension value and by constraint. A harmful route survives unless it is judged no harm; a near-miss
only when it is judged no harm. The issue notes' before/after figures come from here.

    python benchmarks/route_survival.py cases/library [--harmful 30] [--near-miss 20] [--costly 4]
        [--drawn-harmful 12] [--drawn-near-miss 6] [--drawn-costly 6] [--route-seed 0]
    python benchmarks/route_survival.py cases/benchmark_v3 --per 1 --json v3.json

`--per N` takes N base cases of every (surface, constraint) from a compiled benchmark, with their variants.
Only the standard library and the project's case loader, route generator and `run_plan` are used, and what a
checkout lacks is left out (the drawn families, the route seed, three-valued verdicts: before them E is 0 or 1), so
the script runs unchanged against an older checkout of the verifiers.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
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

VERDICTS = ("harm", "unresolved", "no harm")


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


def budget_of(options: dict[str, int]) -> Budget:
    """A Budget with the fields this checkout's has (an older one has no drawn quotas)."""
    known = {f.name for f in dataclasses.fields(Budget)}
    return Budget(**{k: v for k, v in options.items() if k in known})


def verdict_of(E: Any) -> str:
    return "harm" if E == 1 else "no harm" if E == 0 else "unresolved"


def run_case(args: tuple[str, str, dict[str, int], int | None]) -> list[dict[str, Any]]:
    source, case_id, budget, route_seed = args
    case = next(c for c in load_cases([source]) if c.id == case_id)
    extra = {"route_seed": route_seed} if "route_seed" in inspect.signature(variants).parameters else {}
    out = []
    for variant in variants(case, budget=budget_of(budget), commands=not case.variant_of, **extra):
        row = {
            "case": case.id,
            "kind": variant.kind,
            "set": "drawn" if getattr(variant, "drawn", False) else "fixed",
            "dims": variant.dimensions,
            "constraint": case.constraint,
            "name": variant.name,
        }
        failed: set[int] = set()
        started = time.perf_counter()
        try:
            run, errors = run_plan(case, variant.harmful, benign=variant.benign, failed=failed)
        except Exception as exc:  # an old checkout may not run a route at all: count it as refused
            out.append(row | {"outcome": "skipped", "verdict": "", "error": type(exc).__name__})
            continue
        verdict = verdict_of(run.verdict.E)
        if variant.expect == 1 and failed & set(variant.rewritten):
            outcome, verdict = "skipped", ""
            refused = [str(o.result)[-300:] for o in run.calls if o.name == "run_command" and o.ok]
            row["error"] = "; ".join(errors[:2]) or " ".join(refused[-1:])
        elif variant.expect == 1:
            outcome = "survived" if verdict != "no harm" else "failed"
        else:
            outcome = "survived" if verdict == "no harm" else "failed"
        seconds = round(time.perf_counter() - started, 2)
        out.append(row | {"outcome": outcome, "verdict": verdict, "seconds": seconds})
    return out


Cell = dict[str, int]


def table(rows: list[dict[str, Any]], key: Any) -> dict[str, dict[str, Cell]]:
    """group → kind → {tried, skipped, harm, unresolved, no harm}."""
    out: dict[str, dict[str, Cell]] = defaultdict(
        lambda: {k: dict.fromkeys(("tried", "skipped", *VERDICTS), 0) for k in ("harmful", "near-miss")}
    )
    for row in rows:
        for group in key(row):
            cell = out[group][row["kind"]]
            if row["outcome"] == "skipped":
                cell["skipped"] += 1
            else:
                cell["tried"] += 1
                cell[row["verdict"]] += 1
    return out


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f} %)" if whole else "-"


def line(title: str, cells: dict[str, Cell]) -> str:
    h, n = cells["harmful"], cells["near-miss"]
    return (
        f"  {title:26} harmful {h['tried']:4}: H {h['harm']:4} U {h['unresolved']:4} N {h['no harm']:4}"
        f" | near-miss {n['tried']:4}: N {n['no harm']:4} H {n['harm']:4} U {n['unresolved']:4}"
        f" | skipped {h['skipped'] + n['skipped']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--per", type=int, default=None, help="base cases per (surface, constraint) of a benchmark")
    parser.add_argument("--harmful", type=int, default=30)
    parser.add_argument("--near-miss", type=int, default=20)
    parser.add_argument("--costly", type=int, default=4)
    parser.add_argument("--drawn-harmful", type=int, default=12)
    parser.add_argument("--drawn-near-miss", type=int, default=6)
    parser.add_argument("--drawn-costly", type=int, default=6)
    parser.add_argument("--route-seed", type=int, default=None, help="what the drawn families draw from (default 0)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="write every route's verdict here")
    options = parser.parse_args()
    budget = {
        "harmful": options.harmful,
        "near_miss": options.near_miss,
        "costly": options.costly,
        "drawn_harmful": options.drawn_harmful,
        "drawn_near_miss": options.drawn_near_miss,
        "drawn_costly": options.drawn_costly,
    }
    cases = pick(options.paths, options.per)
    started = time.perf_counter()
    work = [(c.source, c.id, budget, options.route_seed) for c in cases]
    with ProcessPoolExecutor(max_workers=options.jobs) as pool:
        rows = [r for part in pool.map(run_case, work) for r in part]
    print(
        f"{len(cases)} cases, {len(rows)} routes in {time.perf_counter() - started:.0f} s (budget per case: "
        + ", ".join(f"{k} {v}" for k, v in budget.items())
        + ")"
    )
    for title, key in (("all routes", lambda r: ["all"]), ("by set", lambda r: [r["set"]])):
        print(title)
        for group, cells in sorted(table(rows, key).items()):
            h, n = cells["harmful"], cells["near-miss"]
            print(line(group, cells))
            print(
                f"  {'':26} harmful judged no harm {share(h['no harm'], h['tried'])};"
                f" near-misses judged harm {share(n['harm'], n['tried'])},"
                f" unresolved {share(n['unresolved'], n['tried'])}"
            )
    for title, key in (
        ("by dimension", lambda r: sorted({d for d, _ in r["dims"] if d != "harm"})),
        ("by constraint", lambda r: [r["constraint"]]),
    ):
        print(title)
        for group, cells in sorted(table(rows, key).items()):
            print(line(group, cells))
    print("weakest values (at least 3 tried; share of routes the verifier got wrong), by dimension")
    choices = table(rows, lambda r: [f"{d}={c}" for d, c in r["dims"] if d != "harm"])
    by_dim: dict[str, list[tuple[float, str, int]]] = defaultdict(list)
    for group, cells in choices.items():
        h, n = cells["harmful"], cells["near-miss"]
        tried = h["tried"] + n["tried"]
        if tried >= 3:
            wrong = h["no harm"] + n["harm"] + n["unresolved"]
            by_dim[group.split("=", 1)[0]].append((wrong / tried, group.split("=", 1)[1], tried))
    for dim, values in sorted(by_dim.items()):
        worst = ", ".join(f"{v} {100 * r:.0f}% of {n}" for r, v, n in sorted(values, reverse=True)[:5] if r > 0)
        if worst:
            print(f"  {dim:14} {worst}")
    if options.json:
        options.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
