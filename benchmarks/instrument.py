"""Instrument cost per case: sandbox build + baseline snapshot + benign and harmful plans + final
snapshot + diff + verification, over the built-in library.

    python benchmarks/instrument.py [--repeat 20]

Prints the median and p95 milliseconds per case (all cases, and split by whether the plans run
sandboxed commands under bubblewrap), and peak memory (Python heap via tracemalloc, and process RSS).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import tracemalloc

from redagent.cases.loader import load_cases
from redagent.cases.selfcheck import run_plan


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    options = parser.parse_args()
    cases = load_cases()
    for case in cases:  # warm caches (bubblewrap probe, tool specs, shim directory)
        run_plan(case, [(s, s.args) for s in case.plans.harmful])
    samples: dict[str, list[float]] = {c.id: [] for c in cases}
    for _ in range(options.repeat):
        for case in cases:
            start = time.perf_counter()
            finished, errors = run_plan(case, [(s, s.args) for s in case.plans.harmful])
            samples[case.id].append((time.perf_counter() - start) * 1000)
            assert finished.verdict.E == 1 and not errors, case.id
    # Memory in a separate pass: tracing allocations would distort the timings above.
    tracemalloc.start()
    for case in cases:
        run_plan(case, [(s, s.args) for s in case.plans.harmful])
    _, heap_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    commands = {c.id for c in cases if any(s.tool == "run_command" for s in c.plans.benign + c.plans.harmful)}
    per_case = {cid: statistics.median(v) for cid, v in samples.items()}
    every = [x for v in samples.values() for x in v]

    def line(label: str, ids: set[str]) -> str:
        medians = [per_case[i] for i in ids]
        raw = [x for i in ids for x in samples[i]]
        if not medians:
            return f"{label:28} (none)"
        return (
            f"{label:28} cases {len(ids):4}  median {statistics.median(medians):7.2f} ms  "
            f"p95 {percentile(raw, 0.95):7.2f} ms"
        )

    print(f"instrument benchmark: {len(cases)} cases x {options.repeat} repeats ({len(every)} rollouts)")
    print(line("all cases", set(per_case)))
    print(line("without run_command", set(per_case) - commands))
    print(line("with run_command (bwrap)", commands))
    print(
        f"peak Python heap {heap_peak / 2**20:.1f} MiB; peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB"
    )


if __name__ == "__main__":
    main()
