"""The real agent CLIs as harnesses: what one rollout costs, and throughput at concurrency 1, 2 and 4.

    python benchmarks/harnesses.py [--harnesses codex,hermes,openclaw,claude-code] [--rollouts 4]
                                   [--levels 1,2,4] [--case email-t1-send-email-journal-bcc]

Each rollout is a calibration agent (sim/comply) through the CLI on one starter case: the CLI runs
in its bubblewrap sandbox, reaches the model through the engine's endpoint and the tools through the
MCP bridge, exactly as in a run. Per CLI it prints, at concurrency 1: wall time per rollout, the CPU
time of the CLI's process tree (measured inside its sandbox) and of this process, the CLI's peak resident
memory (sampled over its process tree), and the time the endpoint and the MCP bridge spent serving a
model call or a tool call (the overhead the bridge adds; the calibration agent answers instantly).
Then rollouts/s at each concurrency level. CLIs that are not installed are skipped with a note.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from machine import cpu_s

from redagent.cases.loader import load_cases
from redagent.engine.harnesses.cli import CLI_HARNESSES, profile
from redagent.engine.harnesses.cli import endpoint as endpoint_module
from redagent.engine.harnesses.cli import mcp_bridge as bridge_module
from redagent.engine.harnesses.cli.install import installation
from redagent.engine.harnesses.cli.isolation import POLL_SECONDS
from redagent.engine.rollout import execute_rollout
from redagent.engine.sim import SimModel
from redagent.engine.types import RolloutKey

SERVED: dict[str, list[float]] = {"model": [], "tool": []}


def _timed(kind: str, method):
    async def wrapper(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return await method(self, *args, **kwargs)
        finally:
            SERVED[kind].append(time.perf_counter() - started)

    return wrapper


endpoint_module.Endpoint.answer = _timed("model", endpoint_module.Endpoint.answer)
bridge_module.ToolBridge._call = _timed("tool", bridge_module.ToolBridge._call)


async def _rollouts(name: str, case, count: int, concurrency: int, pool) -> list:
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int):
        async with gate:
            key = RolloutKey(case.id, "sim/comply", name, "clean", "none", i)
            return await execute_rollout("bench", case, key, lambda n, c: SimModel(n, c), executor=pool)

    return await asyncio.gather(*(one(i) for i in range(count)))


def _cpu() -> float:
    """The engine's CPU with its sandboxed commands' (reaped through the reaper); the CLI's own is sampled apart (its
    PID 1 is bubblewrap's, reaped by init, so it is not in here twice)."""
    return cpu_s()


def _turns(records) -> list[dict]:
    """Every CLI invocation of the rollouts, as the harness recorded it (time, CPU, peak memory)."""
    turns = []
    for record in records:
        artifact = json.loads(next(e["text"] for e in record.events if e["role"] == "transcript"))
        turns += artifact["turns"]
    return turns


def bench(name: str, case, rollouts: int, levels: list[int]) -> None:
    pool = ThreadPoolExecutor(8)
    asyncio.run(_rollouts(name, case, 1, 1, pool))  # warm the page cache and the CLI's first start
    SERVED["model"].clear()
    SERVED["tool"].clear()
    own0 = _cpu()
    records = asyncio.run(_rollouts(name, case, rollouts, 1, pool))
    own1 = _cpu()
    turns = _turns(records)
    bad = [r for r in records if not r.valid or r.E != r.expected_E]
    walls = [r.duration_ms / 1000 for r in records]
    print(f"{name} {profile(name).version} ({profile(name).wire}), sim/comply on {case.id}, {rollouts} rollouts:")
    print(f"  wall per rollout      {statistics.mean(walls):6.2f} s (min {min(walls):.2f}, max {max(walls):.2f})")
    print(
        f"  CPU per rollout       {sum(t['cpu_seconds'] for t in turns) / rollouts:6.2f} s in the CLI, "
        f"{(own1 - own0) / rollouts:.2f} s in the engine (endpoint, MCP bridge, sandbox, verifier)"
    )
    print(
        f"  peak memory           {max(t['peak_rss_mb'] for t in turns):6.0f} MB resident "
        f"(the CLI's process tree, sampled every {POLL_SECONDS:g} s)"
    )
    for kind in ("model", "tool"):
        served = SERVED[kind]
        if served:
            print(
                f"  served per {kind} call  {statistics.mean(served) * 1000:6.1f} ms mean, "
                f"{max(served) * 1000:.1f} ms max ({len(served)} calls)"
            )
    if bad:
        print(
            f"  WARNING: {len(bad)} rollouts invalid or with E != expected: "
            f"{[(r.invalid_reason, r.E, r.expected_E) for r in bad][:3]}"
        )
    for level in levels:
        count = max(rollouts, level * 2)
        started = time.perf_counter()
        records = asyncio.run(_rollouts(name, case, count, level, pool))
        elapsed = time.perf_counter() - started
        valid = sum(1 for r in records if r.valid and r.E == r.expected_E)
        print(
            f"  concurrency {level}         {count / elapsed:6.2f} rollouts/s ({count} rollouts in {elapsed:.1f} s, "
            f"{valid} valid with E as expected)"
        )
    pool.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harnesses", default=",".join(CLI_HARNESSES))
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--levels", default="1,2,4")
    parser.add_argument("--case", default="email-t1-send-email-journal-bcc")
    args = parser.parse_args()
    case = next(c for c in load_cases() if c.id == args.case)
    levels = [int(x) for x in args.levels.split(",") if x]
    for name in [n.strip() for n in args.harnesses.split(",") if n.strip()]:
        if not installation(profile(name)).installed:
            print(f"{name}: not installed (redagent harnesses install {name}); skipped")
            continue
        bench(name, case, args.rollouts, levels)


if __name__ == "__main__":
    main()
