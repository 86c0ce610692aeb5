"""`redagent cases check` on a frozen benchmark: cold (an empty cache), warm (nothing changed) and after one case's
rule is changed (in a copy of the benchmark), with the machine's load beside each figure.

    python benchmarks/selfcheck_incremental.py [--benchmark cases/benchmark_v3] [--cache DIR] [--no-cold] [--jobs N]

Each step runs the real command line in a process of its own (`python -m redagent cases check PATH --json`), so the
times include start-up and loading the case files; the CPU is that process's and its workers' and sandboxes' (all
reaped children). The three steps must agree: the warm check's JSON is the cold one's, and after the change every
case but the changed one comes whole from the cache (the check says so on stderr). `--no-cold` reuses the cache a
previous sitting filled (its cold figure is then not measured again).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check(path: Path, cache: Path, jobs: int | None) -> tuple[float, float, dict, str]:
    """(seconds, CPU seconds, the --json summary, the check's stderr line about the cache)."""
    argv = [sys.executable, "-m", "redagent", "cases", "check", str(path), "--json"]
    if jobs:
        argv += ["--jobs", str(jobs)]
    cpu, started = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "REDAGENT_CHECK_CACHE": str(cache)})
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode not in (0, 1):
        raise SystemExit(f"cases check failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    line = next((x for x in done.stderr.splitlines() if "from the cache" in x), "")
    return wall, cpu, orjson.loads(done.stdout), line


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", type=Path, default=ROOT / "cases" / "benchmark_v3")
    parser.add_argument("--cache", type=Path, default=None, help="the cache folder (default: a fresh one)")
    parser.add_argument("--no-cold", action="store_true", help="reuse --cache as it is: no cold run")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: the command's)")
    options = parser.parse_args()
    cache = options.cache or Path(tempfile.mkdtemp(prefix="redagent-check-cache-"))
    print(f"{options.benchmark} on {os.cpu_count()} CPUs; cache {cache}", flush=True)
    cold = None
    if not options.no_cold:
        print(f"cold   … ({load()})", flush=True)
        wall, cpu, cold, line = check(options.benchmark, cache, options.jobs)
        print(
            f"cold   {wall:7.1f} s, {cpu:7.1f} CPU-s; {line}; {cold['passed']}/{cold['cases']} pass ({load()})",
            flush=True,
        )
    wall, cpu, warm, line = check(options.benchmark, cache, options.jobs)
    print(f"warm   {wall:7.1f} s, {cpu:7.1f} CPU-s; {line} ({load()})", flush=True)
    if cold is not None and warm != cold:
        raise SystemExit("the warm check's JSON differs from the cold one's")

    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "benchmark"
        shutil.copytree(options.benchmark, copy)
        target = sorted((copy / "base").rglob("*.yaml"))[0]
        data = yaml.safe_load(target.read_text())
        data["verifier"]["rule"] = {"any": [data["verifier"]["rule"]]}  # one rule changed (to an equivalent one)
        target.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        wall, cpu, changed, line = check(copy, cache, options.jobs)
        print(f"1 rule {wall:7.1f} s, {cpu:7.1f} CPU-s; {line} — changed: {data['id']} ({load()})", flush=True)
        found = re.search(r"(\d+) case\(s\): (\d+) from the cache", line)
        if found and int(found.group(1)) - int(found.group(2)) != 1:
            raise SystemExit(f"{int(found.group(1)) - int(found.group(2))} cases were checked again, not 1")
        if changed != warm:
            differ = [a["id"] for a, b in zip(changed["per_case"], warm["per_case"], strict=True) if a != b]
            print(f"       the changed rule's verdicts differ on: {differ}")


if __name__ == "__main__":
    main()
