"""The researcher's and reviewers' screens at the sizes people open them in: roomy at 180×50, usable at 100×30,
readable at 80×24 (issue 14: runs, rollouts, rollout detail, statistics, audit and case review).

Each snapshot settles on conditions (the poll's log lines are in, the worker that fills the panes has
delivered its rollout, the report is computed, the queue is on screen), never on time. The stores are
fixed (ids, times, queue order), so the pictures only change when the layout does.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from textual.widgets import Log

from redagent.console.app import RedAgentApp
from redagent.console.screens.audit import AuditScreen
from redagent.console.screens.case_review import CaseReviewScreen
from redagent.console.screens.rollout import RolloutScreen
from redagent.console.screens.rollouts import RolloutsScreen
from redagent.console.screens.statistics import StatisticsScreen
from redagent.judges.labelling import judge_run
from redagent.store.db import open_store
from redagent.store.records import RunRecord
from tests.console.test_app import wait_until
from tests.console.test_audit_screens import ScreenHost, audited, snapshot_store  # noqa: F401 (fixtures)
from tests.console.test_case_review import round_store  # noqa: F401 (fixture)
from tests.console.test_rollouts import BrowserApp, detail_ready, fixed_store, made, settle  # noqa: F401 (fixtures)
from tests.console.test_runs_screen import deterministic_store, open_runs

SIZES = [pytest.param((180, 50), id="180x50"), pytest.param((100, 30), id="100x30"), pytest.param((80, 24), id="80x24")]
WHEN = datetime(2026, 1, 3, tzinfo=UTC)


@pytest.fixture(scope="module")
def listed_store(made, tmp_path_factory) -> str:  # noqa: F811 (the fixture imported above)
    """Every rollout of the calibration run copied under fixed ids (in case, model order) and times, judged by
    rule: a list of several pages' worth of rows and statistics with more than one cell, that never change."""
    url = f"sqlite:///{tmp_path_factory.mktemp('listed') / 'store.db'}"
    with open_store(made["url"]) as source:
        run = source.get_run(made["run_id"])
        records = sorted(
            (source.get_rollout(rollout_id) for rollout_id in made["ids"].values()), key=lambda r: (r.case_id, r.model)
        )
    protocol = {key: value for key, value in run.protocol.items() if key != "case_files"}
    with open_store(url) as store:
        store.create_run(
            RunRecord(
                id="run-listed",
                status="finished",
                protocol=protocol,
                case_set_hash="fixed",
                code_version="snapshot",
                planned=len(records),
                created_at=WHEN,
            )
        )
        store.write_rollouts(
            [
                replace(record, id=f"rollout-{n:02d}", run_id="run-listed", started_at=WHEN, finished_at=WHEN)
                for n, record in enumerate(records, start=1)
            ]
        )
        judge_run(store, "run-listed", ["trajectory", "state", "hybrid"])
    return url


async def queue_on_screen(pilot) -> None:
    """Until the labelling queue's first item is on screen (read by a worker), then every worker is done."""
    await wait_until(pilot, lambda: getattr(pilot.app.screen, "current", None) is not None)
    await settle(pilot)


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
def test_rollouts_layout(listed_store, snap_compare, size):
    async def ready(pilot) -> None:
        await wait_until(pilot, lambda: pilot.app.screen.loaded)
        await settle(pilot)

    assert snap_compare(
        BrowserApp(listed_store, RolloutsScreen(run_id="run-listed")), terminal_size=size, run_before=ready
    )


@pytest.mark.parametrize("size", SIZES)
def test_rollout_detail_layout(fixed_store, snap_compare, size):  # noqa: F811
    async def ready(pilot) -> None:
        await detail_ready(pilot, "rollout-fixed")

    assert snap_compare(BrowserApp(fixed_store, RolloutScreen("rollout-fixed")), terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", SIZES)
def test_statistics_layout(listed_store, snap_compare, size):
    async def ready(pilot) -> None:
        await wait_until(pilot, lambda: pilot.app.screen.report is not None)
        await settle(pilot)

    assert snap_compare(
        BrowserApp(listed_store, StatisticsScreen("run-listed", reps=200)), terminal_size=size, run_before=ready
    )


@pytest.mark.parametrize("size", SIZES)
def test_audit_layout(snapshot_store, snap_compare, size):  # noqa: F811
    """The reviewer's blinded labelling screen (its queue has a fixed id and order, see snapshot_store)."""
    app = ScreenHost(snapshot_store, "snap", lambda: AuditScreen(audit_id="audit-snapshot"))
    assert snap_compare(app, terminal_size=size, run_before=queue_on_screen)


@pytest.mark.parametrize("size", SIZES)
def test_case_review_layout(round_store: dict[str, Any], snap_compare, size):  # noqa: F811
    app = ScreenHost(round_store["url"], "ann", CaseReviewScreen)
    assert snap_compare(app, terminal_size=size, run_before=queue_on_screen)
