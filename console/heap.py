"""Keeping the cycle collector's full passes out of the reviewer's way.

A full (generation 2) collection walks every tracked object. Once the console is up that is ~125,000
objects of modules, classes, Textual's machinery and the opened store — none of which ever becomes
garbage — and each full pass over them stalled the UI loop for 100–250 ms while a reviewer moved
between rollouts or scrolled a long trajectory. `settle()` collects once and moves what is alive into
the permanent generation (`gc.freeze`), so later full passes walk only what the console allocated since.

Freezing alone was not enough: after it the collector counts almost nothing as long-lived, so its rule
for a full pass (survivors pending > a quarter of the long-lived) held after every ten young passes,
and scrolling a 5,000-event trajectory drew ~50 full passes over the rollout, its windows and the strip
caches (30–50 ms each, measured with gc.callbacks) — each one a stall on top of a page's rendering. So
`settle()` also turns the automatic full pass off, and `CollectsWhenIdle` runs it on a timer only when
no key or mouse event arrived for `IDLE` seconds, or when `FORCE_AFTER` young passes have gone by
without one (a reviewer who never pauses still gets their cycles reclaimed, at one stall per ~3.5
million allocations). Young generations are collected as before; reference counting frees everything
that is not in a cycle at once.

What it costs: an object frozen at start-up that later becomes part of a reference cycle is never
reclaimed (the start-up screen's widgets at most — a bounded, one-off amount), and cyclic garbage
made while the reviewer works waits for the next pause.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from textual import events

IDLE = 1.0  # seconds without input before a full collection may run
CHECK = 0.5  # how often the idle collector looks
FORCE_AFTER = 500  # young (generation 1) passes since the last full one after which it runs even while busy
_NEVER = 2**30  # an automatic full pass threshold no session reaches


def settle() -> int:
    """Collect, then freeze everything alive and leave full passes to `IdleCollector`; returns how many objects
    are now frozen."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, _NEVER)
    return gc.get_freeze_count()


def unsettle(full: int) -> None:
    """Undo `settle` when its app exits (a process that goes on, such as a test run, gets the collector back)."""
    gc.unfreeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, full)


class IdleCollector:
    """Runs the full collection the interpreter no longer runs by itself (`settle`), at a pause in the input."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        collect: Callable[[int], object] = gc.collect,
        pending: Callable[[], int] = lambda: gc.get_count()[2],
    ) -> None:
        self._clock, self._collect, self._pending = clock, collect, pending
        self.last_input = clock()
        self.collections = 0

    def input_seen(self) -> None:
        self.last_input = self._clock()

    def tick(self) -> bool:
        """Collect generation 2 if anything reached it and the reviewer paused (or never does); True if it ran."""
        pending = self._pending()
        if pending == 0:
            return False
        if self._clock() - self.last_input < IDLE and pending < FORCE_AFTER:
            return False
        self._collect(2)
        self.collections += 1
        return True


class CollectsWhenIdle:
    """An App mixin: `settle_heap()` once the first screen is up; input events mark the reviewer as busy."""

    heap_collector: IdleCollector | None = None
    _full_threshold: int | None = None

    def settle_heap(self) -> None:
        if self._full_threshold is None:
            self._full_threshold = gc.get_threshold()[2]
        settle()
        if self.heap_collector is None:
            self.heap_collector = IdleCollector()
            self.set_interval(CHECK, self.heap_collector.tick)  # type: ignore[attr-defined]

    def on_unmount(self) -> None:
        if self._full_threshold is not None:
            unsettle(self._full_threshold)
            self._full_threshold = None

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.InputEvent) and self.heap_collector is not None:
            self.heap_collector.input_seen()
        parent: Any = super()
        await parent.on_event(event)
