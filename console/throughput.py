"""Rollouts per second and time left for a run being watched, from its completed count sampled over time.

Presentation arithmetic only: the samples come from the store's count of stored rollouts, so the
rate is the same whether the run is driven by this console or by `redagent run` in another process.
"""

from __future__ import annotations

import time
from collections import deque

WINDOW_S = 15.0  # recent enough to follow a change of pace, long enough to smooth the writer's batches


class Throughput:
    """A sliding window of (time, completed) samples for one run."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()

    def observe(self, completed: int, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self._samples and completed < self._samples[-1][1]:
            self._samples.clear()  # a count that went down is another run's or a reset store: start again
        self._samples.append((now, completed))
        while len(self._samples) > 2 and now - self._samples[0][0] > self.window_s:
            self._samples.popleft()

    @property
    def rate(self) -> float | None:
        """Rollouts per second over the window; None until two samples span some time."""
        if len(self._samples) < 2:
            return None
        (t0, c0), (t1, c1) = self._samples[0], self._samples[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else None

    def eta(self, planned: int) -> float | None:
        """Seconds until `planned` at the current rate; None while the rate is unknown or zero."""
        rate = self.rate
        if not rate or not self._samples:
            return None
        return max(0, planned - self._samples[-1][1]) / rate


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
