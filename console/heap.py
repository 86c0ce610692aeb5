"""Keeping the cycle collector's full passes short while the console is in use.

A full (generation 2) collection walks every tracked object. Once the console is up that is ~130,000
objects of modules, classes, Textual's machinery and the opened store — none of which ever becomes
garbage — and each full pass over them stalled the UI loop for 100–250 ms while a reviewer moved
between rollouts or scrolled a long trajectory. `settle()` collects once and moves what is alive into
the permanent generation (`gc.freeze`), so later full passes walk only what the console allocated since.

What it costs: an object frozen now that later becomes part of a reference cycle is never reclaimed
by the collector (plain reference counting still frees everything else). That is the start-up
screen's widgets at most — a bounded, one-off amount.
"""

from __future__ import annotations

import gc


def settle() -> int:
    """Collect, then freeze everything alive; returns how many objects are now frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
