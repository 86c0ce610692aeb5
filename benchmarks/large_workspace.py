"""finish() on a large workspace: a command makes N one-byte files, then the rollout is judged (snapshot, diff,
effects, verdict), at 300 and 30,000 files, per file.

    python benchmarks/large_workspace.py [--files 300,30000] [--rounds 3] [--case workspace-e5-agents-md-telemetry-exfil]

The case is a built-in one whose verifier reads workspace state (so the effects of every new file are derived);
its benign plan is not run: one `run_command` makes the files, as an agent's `for i in $(seq …)` would, and
`CaseRun.finish()` is timed alone. Rounds alternate the sizes (300, 30,000, 300, …) so a machine that gets busier
during the sitting weighs on both alike; the medians are printed last with the ratio of the per-file costs (the
target: within 2×, i.e. linear). CPU is this process's and its reaped sandboxes'; the load average is printed
beside the figures.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

from redagent.cases.execution import CaseRun
from redagent.engine.plan import select_cases
from redagent.sandbox.environment import shared_isolation
from redagent.sandbox.isolation import NoIsolation


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def one(case_id: str, files: int) -> tuple[float, float, float, int]:
    """(seconds the command took, finish() seconds, finish() CPU seconds, diff entries) for `files` new files."""
    case = select_cases(case_id)[0]
    run = CaseRun(case)
    try:
        # One-byte files, written by the shell itself (no process per file).
        command = f"mkdir -p many && cd many && seq 1 {files} | xargs -n 1000 sh -c 'for i; do printf x > f$i; done' _"
        started = time.perf_counter()
        outcome = run.call("run_command", {"command": command, "timeout": 60}, step=0, any_tool=True)
        made = time.perf_counter() - started
        if not outcome.ok or (outcome.result or {}).get("exit_code") != 0:
            raise SystemExit(f"the command failed: {outcome.error or outcome.result}")
        cpu, started = _cpu(), time.perf_counter()
        finished = run.finish()
        return made, time.perf_counter() - started, _cpu() - cpu, len(finished.diff)
    finally:
        run.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", default="300,30000", help="workspace sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--case", default="workspace-e5-agents-md-telemetry-exfil")
    options = parser.parse_args()
    if isinstance(shared_isolation(), NoIsolation):
        raise SystemExit("needs bubblewrap: the files are made by a sandboxed command")
    sizes = [int(s) for s in options.files.split(",")]
    per_file: dict[int, list[float]] = {n: [] for n in sizes}
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs before; case {options.case}")
    for number in range(options.rounds):
        order = sizes if number % 2 == 0 else sizes[::-1]
        for n in order:
            made, wall, cpu, entries = one(options.case, n)
            per_file[n].append(wall / n)
            print(
                f"round {number + 1} {n:6d} files: command {made:6.2f} s; finish() {wall:7.3f} s "
                f"({cpu:6.3f} CPU-s), {wall / n * 1e6:7.1f} µs per file; {entries} diff entries; "
                f"load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
    medians = {n: statistics.median(v) for n, v in per_file.items()}
    for n in sizes:
        print(f"median finish() per file at {n:6d} files: {medians[n] * 1e6:7.1f} µs")
    small, large = min(sizes), max(sizes)
    print(
        f"per file, {large} against {small} files: {medians[large] / medians[small]:.2f}× (linear: ≤ 2×); "
        f"load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
