"""The console keeps the cycle collector's full passes for pauses in the input (console/heap.py)."""

from __future__ import annotations

import gc

import pytest

from redagent.console import heap
from redagent.console.app import RedAgentApp
from redagent.console.screens.runs import RunsScreen
from tests.console.test_app import SIZE, build_run, url, wait_until  # noqa: F401

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_full_pass_waits_for_a_pause_in_the_input_or_for_too_many_young_passes():
    clock, collected, pending = Clock(), [], [0]
    collector = heap.IdleCollector(clock=clock, collect=collected.append, pending=lambda: pending[0])
    clock.now += 2 * heap.IDLE
    assert not collector.tick()  # nothing reached generation 2: nothing to do, however idle
    pending[0] = 3
    collector.input_seen()
    clock.now += heap.IDLE / 2
    assert not collector.tick()  # the reviewer is typing
    clock.now += heap.IDLE
    assert collector.tick() and collected == [2]  # a pause
    collector.input_seen()
    pending[0] = heap.FORCE_AFTER
    assert collector.tick() and collected == [2, 2]  # busy, but the young passes piled up
    assert collector.collections == 2


def test_settle_freezes_and_turns_the_automatic_full_pass_off_and_unsettle_gives_it_back():
    before = gc.get_threshold()
    try:
        frozen = heap.settle()
        assert frozen == gc.get_freeze_count() > 0
        assert gc.get_threshold()[:2] == before[:2] and gc.get_threshold()[2] > 10**6
    finally:
        heap.unsettle(before[2])
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


async def test_the_console_settles_once_up_marks_input_and_gives_the_collector_back_on_exit(url):  # noqa: F811
    build_run(url)
    before = gc.get_threshold()
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.heap_collector is not None)
        assert gc.get_threshold()[2] > 10**6 and gc.get_freeze_count() > 0
        collector = app.heap_collector
        collector.last_input = 0.0
        await pilot.press("down")
        await wait_until(pilot, lambda: collector.last_input > 0.0)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
