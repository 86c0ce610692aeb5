"""The researcher's screens at the sizes people open them in: usable at 100×30, readable at 80×24.

Each snapshot settles on conditions (the poll's log lines are in, the worker that fills the panes has
delivered its rollout, the report is computed), never on time. The stores are fixed (ids, times), so
the pictures only change when the layout does.
"""

from __future__ import annotations

import pytest
from textual.widgets import Log

from redagent.console.app import RedAgentApp
from redagent.console.screens.rollout import RolloutScreen
from redagent.console.screens.rollouts import RolloutsScreen
from redagent.console.screens.statistics import StatisticsScreen
from tests.console.test_app import wait_until
from tests.console.test_rollouts import BrowserApp, detail_ready, fixed_store, made, settle  # noqa: F401 (fixtures)
from tests.console.test_runs_screen import deterministic_store, open_runs

SIZES = [pytest.param((100, 30), id="100x30"), pytest.param((80, 24), id="80x24")]


@pytest.mark.parametrize("size", SIZES)
def test_runs_layout(tmp_path, snap_compare, size):
    url = f"sqlite:///{tmp_path / 'snap.db'}"
    deterministic_store(url)

    async def ready(pilot) -> None:
        screen = await open_runs(pilot, pilot.app)
        await wait_until(pilot, lambda: screen.query_one("#run-log", Log).line_count > 0)
        await settle(pilot)

    assert snap_compare(RedAgentApp(url), terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", SIZES)
def test_rollouts_layout(fixed_store, snap_compare, size):  # noqa: F811 (the fixture imported above)
    async def ready(pilot) -> None:
        await wait_until(pilot, lambda: pilot.app.screen.loaded)
        await settle(pilot)

    assert snap_compare(BrowserApp(fixed_store, RolloutsScreen(run_id="run-fixed")), terminal_size=size,
                        run_before=ready)


@pytest.mark.parametrize("size", SIZES)
def test_rollout_detail_layout(fixed_store, snap_compare, size):  # noqa: F811
    async def ready(pilot) -> None:
        await detail_ready(pilot, "rollout-fixed")

    assert snap_compare(BrowserApp(fixed_store, RolloutScreen("rollout-fixed")), terminal_size=size,
                        run_before=ready)


@pytest.mark.parametrize("size", SIZES)
def test_statistics_layout(fixed_store, snap_compare, size):  # noqa: F811
    async def ready(pilot) -> None:
        await wait_until(pilot, lambda: pilot.app.screen.report is not None)
        await settle(pilot)

    assert snap_compare(BrowserApp(fixed_store, StatisticsScreen("run-fixed", reps=200)), terminal_size=size,
                        run_before=ready)
