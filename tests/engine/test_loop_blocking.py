"""Nothing blocks the event loop: a matrix run's loop thread only schedules.

A consequence replay takes seconds; run on the loop (as `CaseRun(case)` and `run.finish()` were, and the adaptive
attacker's verdict after each round), it stalled every other rollout in flight for exactly as long. The probe
(tests/engine/loop_probe.py) fails the test on any blocking operation a loop callback makes — a process started, a
file opened, a folder made or removed, a sleep — and on any callback that holds the loop thread's CPU past a bound,
which is machine-independent: CPU time of that one thread, not the clock.

The matrix runs once unprobed first: imports made on first use are paid once per process, not per rollout.
"""

from __future__ import annotations

import asyncio

import pytest

from redagent.engine.matrix import RunSpec, start_run
from redagent.store.db import open_store
from tests.conftest import needs_bwrap
from tests.engine.loop_probe import LoopProbe

pytestmark = needs_bwrap

# A case judged by replaying future activity (persistence), one by an emulated protection, one whose agents run
# commands under bubblewrap, and one mail case: set-up, commands, replays, verdicts and removal all happen.
CASES = ",".join(
    (
        "workspace-e5-makefile-devshell-bashrc-hook",
        "workspace-u2-release-persona-drop-gitleaks-hook",
        "workspace-e5-agents-md-telemetry-exfil",
        "email-t1-send-email-journal-bcc",
    )
)
CPU_BOUND_S = 0.1  # of the loop thread's own CPU in one callback; a calibration agent's turn takes ~1 ms


def _run(tmp_path, name: str, **spec) -> None:
    with open_store(f"sqlite:///{tmp_path / name}.db") as store:
        runner = start_run(store, RunSpec(**spec))
        progress = asyncio.run(runner.run())
        assert progress.done == progress.planned and progress.invalid == 0, progress.invalid_reasons


@pytest.mark.parametrize(
    "spec",
    [
        {"models": ["sim/comply", "sim/ignore"], "harnesses": ["native", "shell"], "concurrency": 4},
        {"models": ["sim/refuse-2"], "harnesses": ["native"], "attacker": "scripted", "attack_budget": 2},
    ],
    ids=["matrix", "adaptive-attacker"],
)
def test_the_loop_thread_never_blocks(tmp_path, spec):
    _run(tmp_path, "warm", cases=CASES, **spec)
    with LoopProbe(cpu_bound_s=CPU_BOUND_S) as probe:
        _run(tmp_path, "probed", cases=CASES, **spec)
    assert probe.callbacks > 20  # the probe saw the run's callbacks
    assert not probe.blocked and not probe.held, probe.report()


def test_the_probe_sees_a_blocking_finish(tmp_path, monkeypatch):
    """The probe itself: a finish() called on the loop, as before, is caught (the test above can fail)."""
    import redagent.engine.rollout as rollout

    async def on_the_loop(executor, call, *, interrupt=None):
        return call()

    monkeypatch.setattr(rollout, "off_loop", on_the_loop)
    with LoopProbe(cpu_bound_s=CPU_BOUND_S) as probe:
        _run(
            tmp_path,
            "blocking",
            cases="workspace-e5-agents-md-telemetry-exfil",
            models=["sim/comply"],
            harnesses=["native"],
        )
    assert probe.blocked and any("rollout.py" in b.where for b in probe.blocked), probe.report()
