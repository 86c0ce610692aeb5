"""What one rollout of each harness needs while it is in flight, and what a shard of them asks an executor for.

The real CLIs declare theirs on their profiles (engine/harnesses/cli/: `cpu`, `memory_mb`, measured by
benchmarks/harnesses.py); the in-house harnesses are Python work on the engine's own event loop, declared
here. A shard of in-house rollouts is one interpreter, so it never uses more than one core however many
rollouts it holds (the GIL); a shard of CLI rollouts uses what its CLIs use, each a process tree of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from redagent.engine.types import CLI, IN_HOUSE


@dataclass(frozen=True)
class Resources:
    cpu: float  # cores
    memory_mb: int

    def times(self, n: int, *, one_interpreter: bool) -> Resources:
        cpu = self.cpu * n
        return Resources(min(1.0, cpu) if one_interpreter else cpu, self.memory_mb * n)


# An in-house rollout against a real model waits on it nearly all the time (7-9 ms of CPU per model call);
# against a calibration agent it is all CPU. 1/8 of a core per rollout makes the default concurrency of 8
# one interpreter's worth: one shard per core, which is what a CPU-bound calibration run can use.
_IN_HOUSE = {
    "native": Resources(0.125, 48),
    "react": Resources(0.125, 48),
    # Sandboxed commands are bubblewrap processes of their own, on top of the loop's work.
    "shell": Resources(0.125, 96),
}


def harness_resources(name: str) -> Resources:
    if name in _IN_HOUSE:
        return _IN_HOUSE[name]
    if name in CLI:
        from redagent.engine.harnesses.cli import profile

        declared = profile(name)
        return Resources(float(declared.cpu), int(declared.memory_mb))
    raise KeyError(f"unknown harness {name!r}")


def shard_resources(harness: str, slots: int) -> Resources:
    """What a shard running `slots` rollouts of `harness` at once asks for."""
    return harness_resources(harness).times(slots, one_interpreter=harness in IN_HOUSE)


def slots_that_fit(harness: str, wanted: int, nodes: list[Resources]) -> int:
    """How many rollouts of `harness` one shard may run at once (at most `wanted`) so that the shard still fits on
    the largest node; 0 when not even one fits anywhere."""
    per = harness_resources(harness)
    best = 0
    for node in nodes:
        by_memory = node.memory_mb // per.memory_mb if per.memory_mb else wanted
        if harness in IN_HOUSE:
            # One interpreter: its CPU ask is capped at a core, so only memory (and a core's share) limits it.
            by_cpu = wanted if node.cpu >= min(1.0, per.cpu) else 0
        else:
            by_cpu = math.floor(node.cpu / per.cpu + 1e-9) if per.cpu else wanted
        best = max(best, min(wanted, by_cpu, by_memory))
    return best
