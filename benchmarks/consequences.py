"""What judging by consequence costs, and what it says about the benchmark's own plans.

    python benchmarks/consequences.py [--cases 6] [--constraint C05|C04|both] [--version v2|v3]

For each chosen case of the frozen benchmark (C05 cases get `persistence`, with the task's footprint — the
paths the benign plan writes, as the verifier passes it —, C04 cases `protections` with the case's
`values.c04_controls` / `c04_keep`), the case's plans are run in a sandbox (`CaseRun`): the benign plan, the
harmful plan and each of its mutated (harmless) forms. Printed per call: seconds cold (nothing cached: the
baseline and the final state replayed), warm (the baseline cached: what every further route of a case costs),
cached (the same final state again), and the three-valued verdict (harm; no harm; unresolved: no finding and
something undecided) against what the plan means (harmful plan: harm; benign plan and mutations: no harm).
Then medians, the CPU the calls took (this process's and its sandboxes', which the reaper in
sandbox/isolation.py counts for it), the machine's load (which says how far the wall times are stretched), and
every disagreement.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from machine import cpu_s, sandbox_cpu_line

from redagent.cases.execution import CaseRun
from redagent.cases.loader import load_case
from redagent.sandbox.consequences import persist, persistence, protect, protections, replay
from redagent.sandbox.isolation import default_isolation

CASES = Path(__file__).resolve().parents[1] / "cases"
BENCHMARKS = {"v2": CASES / "benchmark_v2" / "base" / "workspace", "v3": CASES / "benchmark_v3" / "base" / "workspace"}


def final_files(case, steps, isolation):
    """The workspace before and after running `steps` of `case` (with its attack) in a sandbox."""
    run = CaseRun(case, isolation=isolation)
    try:
        for index, step in enumerate(steps):
            run.call(step.tool, step.args, step=index, any_tool=True)
        final = run.env.snapshot()
    finally:
        run.close()
    return run.baseline["workspace"]["files"], final["workspace"]["files"]


def judge(case, baseline, final, isolation, footprint=None):
    if case.constraint == "C05":
        return persistence(baseline, final, isolation=isolation, footprint=footprint)
    values = case.values
    return protections(
        baseline, final, values.get("c04_controls") or [], values.get("c04_keep") or [], isolation=isolation
    )


def clear() -> None:
    replay.clear_cache()
    persist.clear_cache()
    protect.clear_cache()


def forget_final(final) -> None:
    """Drop what is cached about this final state only: the baseline's replay or emulation stays."""
    digest = replay.State.of(final, None).digest()
    with replay._cache_lock:
        for key in [k for k in replay._cache if k.endswith(digest)]:
            del replay._cache[key]
    with protect._lock:
        protect._cache.clear()
    persist.clear_cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=6, help="cases per constraint (spread over the families)")
    parser.add_argument("--constraint", choices=("C05", "C04", "both"), default="both")
    parser.add_argument("--version", choices=sorted(BENCHMARKS), default="v2")
    options = parser.parse_args()
    isolation = default_isolation()
    wanted = ("C05", "C04") if options.constraint == "both" else (options.constraint,)
    rows, disagreements = [], []
    spent = cpu_s()
    for constraint in wanted:
        paths = sorted(BENCHMARKS[options.version].glob(f"*-{constraint.lower()}-*.yaml"))
        by_family: dict[str, list[Path]] = {}
        for path in paths:
            by_family.setdefault(path.name.split("-", 2)[2], []).append(path)
        chosen = [
            group[i]
            for i in range(max(len(g) for g in by_family.values()))
            for group in by_family.values()
            if i < len(group)
        ][: options.cases]
        for path in chosen:
            case = load_case(path)
            plans = [("harmful", list(case.plans.harmful), True)]
            plans.append(("benign", list(case.plans.benign), False))
            for number, override in enumerate(case.plans.harmful[-1].mutate):
                steps = list(case.plans.harmful)
                last = steps[-1]
                steps[-1] = type(last)(last.tool, {**last.args, **override})
                plans.append((f"mutate {number + 1}", steps, False))
            clear()
            benign_baseline, benign_final = final_files(case, list(case.plans.benign), isolation)
            footprint = frozenset(persist.written_paths(benign_baseline, benign_final))
            for label, steps, harmful in plans:
                baseline, final = final_files(case, steps, isolation)
                if label == "harmful":
                    started = time.perf_counter()
                    found = judge(case, baseline, final, isolation, footprint)
                    cold = time.perf_counter() - started
                    forget_final(final)
                    started = time.perf_counter()
                    judge(case, baseline, final, isolation, footprint)
                    warm = time.perf_counter() - started
                else:
                    started = time.perf_counter()
                    found = judge(case, baseline, final, isolation, footprint)
                    cold, warm = float("nan"), time.perf_counter() - started
                started = time.perf_counter()
                judge(case, baseline, final, isolation, footprint)
                cached = time.perf_counter() - started
                verdict = "harm" if found.harmful else "no harm" if found.judged else "unresolved"
                agrees = verdict == ("harm" if harmful else "no harm")
                rows.append((constraint, path.stem, label, cold, warm, cached, verdict, agrees))
                print(
                    f"{constraint} {path.stem:55s} {label:9s} cold {cold:5.2f}s warm {warm:5.2f}s "
                    f"cached {cached * 1000:6.1f}ms {verdict:10s} {'ok' if agrees else 'DISAGREES'}",
                    flush=True,
                )
                if not agrees:
                    disagreements.append((path.stem, label, found))
    for constraint in wanted:
        mine = [r for r in rows if r[0] == constraint]
        if not mine:
            continue
        colds = [r[3] for r in mine if r[3] == r[3]]
        print(
            f"\n{constraint}: {len(mine)} calls; median cold {statistics.median(colds):.2f}s, median warm "
            f"{statistics.median(r[4] for r in mine):.2f}s, median cached "
            f"{statistics.median(r[5] for r in mine) * 1000:.1f}ms; "
            f"{sum(r[7] for r in mine)}/{len(mine)} verdicts as the plans mean, "
            f"{sum(r[6] == 'unresolved' for r in mine)} unresolved"
        )
    print(
        f"CPU {cpu_s() - spent:.1f} s over {len(rows)} plans ({sandbox_cpu_line()}); load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    for stem, label, found in disagreements:
        print(
            f"\n{stem} [{label}]: findings {[f.evidence for f in found.findings][:3]} "
            f"unjudged {[u.detail for u in found.unjudged][:3]}"
        )


if __name__ == "__main__":
    main()
