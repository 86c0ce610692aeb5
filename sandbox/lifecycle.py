"""Stops that leave nothing behind: what a signal may interrupt, and what it must wait for.

`redagent cases check` (and each of its worker processes) ends on SIGTERM or Ctrl-C by raising an exception from the
signal handler, at the next Python instruction, so that every sandbox is removed on the way out through the code's
own cleanup. An exception at *any* instruction can also land between making a folder and recording it (a workspace
`mkdtemp`'d but not yet the environment's, so no cleanup knows it) or in the middle of removing one (a tree half
removed, a mount not yet detached): a SIGTERM left workspace folders behind in 4 of 20 tries. So:

- **Making and removing are critical sections** (`critical()`): a stop that arrives inside one is held and raised
  when the section ends, a few milliseconds later (a removal waits at most for a killed command to come back).
- **Every sandbox is registered with the process that made it** (sandbox/environment.py): at exit, and after a
  stop, a process closes what it made and did not close — never what its parent made before a fork —, and a check
  removes what a worker that died left behind (`remove_leftovers_of`: its folders carry its pid in their names).

Signal handlers run on the main thread only, so the sections count there; elsewhere (the engine's pool threads, which
a run stops by cancellation, not by exceptions from a handler) they cost nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from collections.abc import Iterator

_depth = 0  # critical sections the main thread is in
_held: BaseException | None = None  # a stop that arrived inside one


@contextlib.contextmanager
def critical() -> Iterator[None]:
    """Within the block, a stop raised through `interrupt` waits for the block to end."""
    global _depth, _held
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _held is not None:
            held, _held = _held, None
            raise held


def interrupt(stop: BaseException) -> None:
    """What a signal handler calls instead of `raise stop`: raised now, or — inside a critical section — as soon as
    it ends (the first stop is kept; a further one changes nothing)."""
    global _held
    if _depth > 0 and threading.current_thread() is threading.main_thread():
        if _held is None:
            _held = stop
        return
    raise stop


def stopping() -> bool:
    """Whether a stop is held until the current critical section ends."""
    return _held is not None


_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int, signum: int = signal.SIGTERM) -> None:
    """Have the kernel send `signum` to this process when its parent dies (Linux), so a worker never outlives the
    process that feeds it; if `parent` is already gone, the signal is sent now."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signum)
