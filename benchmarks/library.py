"""Library construction cost: compiling and self-checking the whole library, and the self-check of
every frozen base case on its own (target: under 30 seconds), with peak memory.

    python benchmarks/library.py [--skip-compile]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from redagent.cases.checkpool import check_many
from redagent.cases.construction.library import build
from redagent.cases.loader import benchmark_dir, load_cases
from redagent.cases.selfcheck import check_case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-compile", action="store_true")
    options = parser.parse_args()
    if not options.skip_compile:
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            report = build(Path(folder))
            elapsed = time.perf_counter() - started
        print(
            f"compile + self-check + variants: {len(report.kept)} base cases kept, {len(report.rejected)} "
            f"rejected, variants {dict(report.variants)} in {elapsed:.1f} s"
        )
    started = time.perf_counter()
    cases = load_cases([benchmark_dir() / "base"])
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    failed = sum(not check_case(case).passed for case in cases)
    serial = time.perf_counter() - started
    jobs = os.cpu_count() or 1
    started = time.perf_counter()
    parallel_failed = sum(not c.passed for c in check_many(cases, jobs))
    parallel = time.perf_counter() - started
    print(
        f"frozen base cases: {len(cases)} loaded in {loaded:.1f} s; self-check of all: {serial:.1f} s in one "
        f"process, {parallel:.1f} s in {jobs} (target < 30 s); {failed}/{parallel_failed} failing; peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
