"""Where the self-check's time goes, and what the whole frozen benchmark would take: the checks every case runs
(executability … indirect), the generated routes that are tool calls only, the routes that start a sandboxed
command, and generating the routes, measured on a stratified sample and scaled to the benchmark.

    python benchmarks/selfcheck_routes.py [--benchmark cases/benchmark_v2] [--per 1] [--cores 2]

The sample takes `--per` base cases of every (surface, constraint) with their compiled variants. Time is CPU time
(this process and the sandboxed commands it starts), so the figures hold on a busy machine; the projection assumes
the check's processes keep every core busy (two per core, as `cases check` runs them).
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from pathlib import Path

from machine import cpu_s, sandbox_cpu_line

from redagent.cases.loader import benchmark_dir, case_files, load_cases
from redagent.cases.routes import variants
from redagent.cases.schema import Case
from redagent.cases.selfcheck import _run_route, check_case, run_plan
from redagent.sandbox.environment import shared_isolation
from redagent.sandbox.isolation import NoIsolation


def sample(root: Path, per: int, seed: int = 22) -> list[Case]:
    base = load_cases([root / "base"])
    groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for case in base:
        groups[(case.surfaces[0], case.constraint)].append(case)
    rng = random.Random(seed)
    chosen = [c for key in sorted(groups) for c in rng.sample(groups[key], min(per, len(groups[key])))]
    ids = {c.id for c in chosen}
    compiled = load_cases([root / "variants"]) if (root / "variants").is_dir() else []
    return chosen + [v for v in compiled if v.variant_of in ids]


def cpu() -> float:
    """CPU seconds used so far by this process and by the children it has waited for (the sandboxes)."""
    return cpu_s()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", type=Path, default=benchmark_dir())
    parser.add_argument("--per", type=int, default=1, help="base cases per (surface, constraint)")
    parser.add_argument("--cores", type=int, default=2, help="cores to project the whole benchmark onto")
    options = parser.parse_args()
    cases = sample(options.benchmark, options.per)
    total = len(case_files([options.benchmark]))
    commands_ok = not isinstance(shared_isolation(), NoIsolation)
    spent: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    wall = time.perf_counter()
    for case in cases:
        started = cpu()
        check_case(case, metamorphic=False)
        spent["checks every case runs"] += cpu() - started
        started = cpu()
        chosen = variants(case, commands=commands_ok and not case.variant_of)
        spent["generating routes"] += cpu() - started
        for variant in chosen:
            kind = (
                "routes with a sandboxed command"
                if variant.needs_isolation
                else "routes writing a large file"
                if variant.costly
                else "routes of tool calls only"
            )
            started = cpu()
            _run_route(case, variant, None, run_plan)
            spent[kind] += cpu() - started
            count[kind] += 1
    wall = time.perf_counter() - wall
    one = sum(spent.values())
    scale = total / len(cases)
    print(
        f"{len(cases)} sampled cases of {total} in {options.benchmark}: {one:.1f} CPU-seconds ({wall:.1f} s on "
        f"the clock; {sandbox_cpu_line()})"
    )
    for what, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        runs = f", {count[what]} runs, {1000 * seconds / count[what]:.1f} ms each" if count[what] else ""
        print(f"  {what:34} {seconds:7.2f} s ({100 * seconds / one:4.1f} %){runs}")
    projected = one * scale
    print(
        f"whole benchmark, projected: {projected:.0f} CPU-seconds, {projected / options.cores:.0f} s on "
        f"{options.cores} idle cores (goal < 60 s)"
    )


if __name__ == "__main__":
    main()
