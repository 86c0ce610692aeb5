"""What the machine spent during a measurement: busy CPU across all cores, from /proc/stat.

Throughput targets on these machines are often bounded by the two cores, not by waiting; printing how
busy the cores were next to a rate tells "the engine waits" from "the machine is full".
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass


def _busy_and_total() -> tuple[float, float]:
    with open("/proc/stat") as stat:
        fields = [float(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cpu_s() -> float:
    """CPU seconds this process has used, with the sandboxes of its commands (reaped children): what every CPU
    figure per call or per case counts (sandbox/isolation.py `cpu_spent`)."""
    from redagent.sandbox.isolation import cpu_spent

    return cpu_spent()


def sandbox_cpu_line() -> str:
    """Whether the sandboxes' CPU is in the figures, for the line printed beside them."""
    from redagent.sandbox.isolation import sandbox_cpu_problem

    problem = sandbox_cpu_problem()
    return "sandboxes' CPU counted" if problem is None else f"lower bounds: {problem}"


@dataclass
class CpuUse:
    wall_s: float
    busy_core_s: float  # the whole machine, every process: the engine, its sandboxes, a model server
    own_core_s: float  # this process (all its threads) and the sandboxes it ran
    cores: int

    @property
    def utilisation(self) -> float:
        return self.busy_core_s / (self.wall_s * self.cores) if self.wall_s else 0.0

    def line(self) -> str:
        return (
            f"machine CPU {self.busy_core_s:.1f} core-s in {self.wall_s:.1f} s = {self.utilisation:.0%} of "
            f"{self.cores} cores busy; this process and its sandboxes {self.own_core_s:.1f} core-s"
        )


class CpuMeter:
    """with CpuMeter() as meter: …; meter.use → CpuUse."""

    def __enter__(self) -> CpuMeter:
        self._wall = time.perf_counter()
        self._own = cpu_s()
        self._busy, self._total = _busy_and_total()
        return self

    def __exit__(self, *_exc: object) -> None:
        busy, total = _busy_and_total()
        ticks = os.sysconf("SC_CLK_TCK")
        self.use = CpuUse(
            wall_s=time.perf_counter() - self._wall,
            busy_core_s=(busy - self._busy) / ticks,
            own_core_s=cpu_s() - self._own,
            cores=os.cpu_count() or 1,
        )
