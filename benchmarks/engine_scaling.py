"""Engine scaling over processes: one process, two local worker processes (`--workers 2`) and Ray on this machine.

    python benchmarks/engine_scaling.py [--delay 0.2] [--concurrency 128] [--attempts 30] [--skip-ray]

Three settings, each run by the three executors against a fresh SQLite store:
  default, no commands   the default matrix's calibration agents on the starter cases none of whose plans
                         runs a command (50 of 62), native and react harnesses, benign arm: nothing runs
                         under bubblewrap (checked: no stored run_command call)
  default, with commands the full default matrix (every case; native, react, shell): the agents' commands
                         run in the sandbox — python3 scripts, `make test` — each a process tree of its own
  200 ms endpoint        the native harness against a loopback OpenAI-compatible model answering after
                         --delay, --concurrency rollouts in flight in total (split over the workers): how
                         far more cores carry the same load
  200 ms, per worker     the same with --concurrency per worker, as `redagent run --workers 2
                         --concurrency 128` means it: what a user gets from adding a worker
For each: rollouts/s, model calls/s (the endpoint's own count; for calibration agents the stored assistant
turns), CPU per model call in the engine (this process plus every worker's CPU on its shards), and how busy
the whole machine was (/proc/stat: the engine, the sandboxed commands, the endpoint). The ratios of two
workers and of Ray to one process are printed with the ceiling the machine allows: one process that keeps
the machine B% busy leaves room for at most 100/B times its throughput. Goals on the 2-core machines:
2 workers >= 1.7x one process; CPU per model call <= 6 ms. Rates are of the run itself: the executor is started
and the run planned before the clock starts, as `redagent run` does — local workers are spawned and import the
engine and litellm meanwhile (about 2 s of CPU each), Ray starts its own. That start-up is printed beside,
once per run; on runs of hours it is nothing, on these runs of seconds it would be most of the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from machine import cpu_s

sys.path.insert(0, str(Path(__file__).parent))


@dataclass
class Result:
    rollouts: int
    calls: int
    wall_s: float
    cpu_s: float
    invalid: int
    busy: float  # share of the machine's CPU time that was busy during the run (0..1)
    commands: int  # stored run_command calls
    start_s: float  # starting the executor (workers spawned and importing the engine) and planning the run

    @property
    def rate(self) -> float:
        return self.rollouts / self.wall_s

    @property
    def call_rate(self) -> float:
        return self.calls / self.wall_s

    @property
    def ms_per_call(self) -> float:
        return self.cpu_s / self.calls * 1000 if self.calls else float("nan")


def machine_ticks() -> tuple[int, int]:
    """(all, idle) CPU ticks of the whole machine since boot."""
    with open("/proc/stat") as stat:
        ticks = [int(v) for v in stat.readline().split()[1:]]
    return sum(ticks), ticks[3] + ticks[4]  # idle + iowait


def measure(executor: str, spec, calls_counter=None) -> Result:
    from sqlalchemy import func, select

    from redagent.engine.executors import Execution, distribute, open_executor
    from redagent.engine.matrix import start_run
    from redagent.store import tables as t
    from redagent.store.db import open_store

    execution = {"1 process": Execution(), "2 workers": Execution(workers=2), "ray": Execution(executor="ray")}[
        executor
    ]
    with tempfile.TemporaryDirectory() as folder, open_store(f"sqlite:///{folder}/bench.db") as store:
        started = time.perf_counter()
        backend = open_executor(execution, store.url)
        try:
            runner = distribute(start_run(store, spec), backend, spec)
            if hasattr(backend, "ready") and not backend.ready():
                raise SystemExit("the worker processes did not start")
            started = time.perf_counter() - started
            before = calls_counter.value if calls_counter is not None else 0
            ticks = machine_ticks()
            cpu, wall = cpu_s(), time.perf_counter()
            progress = asyncio.run(runner.run())
            wall = time.perf_counter() - wall
            after = machine_ticks()
            busy = 1 - (after[1] - ticks[1]) / max(1, after[0] - ticks[0])
            cpu = cpu_s() - cpu + getattr(runner, "worker_cpu_s", 0.0)
        finally:
            if backend is not None:
                backend.shutdown()
        if calls_counter is not None:
            calls = calls_counter.value - before
        else:
            with store.engine.connect() as conn:
                calls = conn.execute(
                    select(func.count()).select_from(t.event).where(t.event.c.role == "assistant")
                ).scalar_one()
        with store.engine.connect() as conn:
            commands = conn.execute(
                select(func.count())
                .select_from(t.event)
                .where(t.event.c.tool_call.isnot(None), t.event.c.tool_call["name"].as_string() == "run_command")
            ).scalar_one()
        return Result(progress.done, calls, wall, cpu, progress.invalid, busy, commands, started)


def no_command_cases() -> str:
    """The starter cases on which no calibration agent runs a command, as a selector: those none of whose plans
    (benign, harmful, indirect) has a run_command step, less those where an agent ran one anyway (found by
    a quick run of the default matrix in this process)."""
    from sqlalchemy import select

    from redagent.cases.loader import load_cases
    from redagent.engine.matrix import RunSpec, start_run
    from redagent.store import tables as t
    from redagent.store.db import open_store

    quiet = [
        c.id
        for c in load_cases()
        if not any(
            step.tool == "run_command" for plan in (c.plans.benign, c.plans.harmful, c.plans.indirect) for step in plan
        )
    ]
    with tempfile.TemporaryDirectory() as folder, open_store(f"sqlite:///{folder}/probe.db") as store:
        spec = RunSpec(cases=",".join(quiet), harnesses=["native", "react"], benign_arm=True)
        asyncio.run(start_run(store, spec).run())
        with store.engine.connect() as conn:
            noisy = {
                case.removesuffix("-benign")
                for case, call in conn.execute(
                    select(t.rollout.c.case_id, t.event.c.tool_call)
                    .join(t.event, t.event.c.rollout_id == t.rollout.c.id)
                    .where(t.event.c.tool_call.isnot(None))
                )
                if call.get("name") == "run_command"
            }
    return ",".join(c for c in quiet if c not in noisy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--attempts", type=int, default=30, help="attempts per case against the endpoint")
    parser.add_argument("--skip-ray", action="store_true")
    options = parser.parse_args()

    from engine_concurrency import serve

    from redagent.engine.matrix import RunSpec

    ports = multiprocessing.Queue()
    calls = multiprocessing.Value("q", 0)
    server = multiprocessing.Process(target=serve, args=(ports, options.delay, calls), daemon=True)
    server.start()
    base = f"http://127.0.0.1:{ports.get(timeout=10)}/v1"
    os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-benchmark")  # inherited by workers and a local Ray

    quiet = no_command_cases()
    executors = ["1 process", "2 workers"] + ([] if options.skip_ray else ["ray"])
    settings = {
        "default, no commands": lambda n: (
            RunSpec(cases=quiet, harnesses=["native", "react"], benign_arm=True, attempts=3),
            None,
        ),
        "default, with commands": lambda n: (RunSpec(benign_arm=True), None),
        f"{options.delay * 1000:.0f} ms endpoint": lambda n: (
            RunSpec(
                models=["openai/bench-model"],
                harnesses=["native"],
                attempts=options.attempts,
                concurrency=options.concurrency // n,
                api_base=base,
                timeout=30,
                retries=0,
            ),
            calls,
        ),
        f"{options.delay * 1000:.0f} ms, per worker": lambda n: (
            RunSpec(
                models=["openai/bench-model"],
                harnesses=["native"],
                attempts=options.attempts,
                concurrency=options.concurrency,
                api_base=base,
                timeout=30,
                retries=0,
            ),
            calls,
        ),
    }
    print(
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} before; concurrency per worker 8 (default) "
        f"for the calibration runs, {options.concurrency} for the endpoint; {len(quiet.split(','))} cases "
        f"without commands"
    )
    for name, make in settings.items():
        results: dict[str, Result] = {}
        for executor in executors:
            spec, counter = make(2 if executor != "1 process" else 1)
            r = results[executor] = measure(executor, spec, counter)
            print(
                f"{name:24s} {executor:9s}: {r.rollouts:5d} rollouts in {r.wall_s:6.2f} s = {r.rate:7.1f} "
                f"rollouts/s, {r.call_rate:7.1f} model calls/s, {r.ms_per_call:5.2f} ms CPU per model call "
                f"(invalid {r.invalid}), machine {r.busy:4.0%} busy, {r.commands} commands; "
                f"start-up {r.start_s:.1f} s",
                flush=True,
            )
        one = results["1 process"]
        ratios = ", ".join(f"{e} / 1 process = {results[e].rate / one.rate:.2f}x" for e in executors[1:])
        print(
            f"{'':24s} ratios (rollouts/s): {ratios}; ceiling on this machine {1 / max(one.busy, 1e-9):.2f}x",
            flush=True,
        )
    server.terminate()


if __name__ == "__main__":
    main()
