"""The evidence panes collapse into tabs on a narrow terminal and come back side by side when it is widened,
keeping what was loaded and where the cursor was; `t` / `T` switch tabs and the footer says so. Also: the
narrow footers still show the keys a reviewer needs, and the runs list goes over its panel at 80 columns."""

from __future__ import annotations

import asyncio

from textual.widgets import Tabs

from redagent.console.app import RedAgentApp
from redagent.console.screens.audit import AuditScreen
from redagent.console.screens.rollout import RolloutScreen
from redagent.console.widgets.evidence import EvidencePanes
from redagent.console.widgets.trajectory import TrajectoryView
from tests.console.test_app import wait_until
from tests.console.test_audit_screens import ScreenHost, audited, snapshot_store  # noqa: F401 (fixtures)
from tests.console.test_rollouts import BrowserApp, detail_ready, fixed_store, made, screen_text  # noqa: F401
from tests.console.test_runs_screen import deterministic_store, open_runs


def shown_panes(panes: EvidencePanes) -> list[str]:
    """The ids of the panes drawn now (a collapsed pane is not displayed at all)."""
    return [pane for pane in ("trajectory", "receipts", "diff") if panes.query_one(f"#{pane}-pane").display]


def footer(app) -> str:
    return screen_text(app).rstrip().splitlines()[-1]


def test_the_panes_are_tabs_at_80x24_and_side_by_side_at_180x50(fixed_store):  # noqa: F811
    async def scenario() -> None:
        app = BrowserApp(fixed_store, RolloutScreen("rollout-fixed"))
        async with app.run_test(size=(80, 24)) as pilot:
            await detail_ready(pilot, "rollout-fixed")
            panes = app.screen.query_one(EvidencePanes)
            assert panes.tabbed and panes.query_one("#evidence-tabs", Tabs).display
            assert shown_panes(panes) == ["trajectory"]
            assert "t Next tab" in footer(app)
            await pilot.press("t")
            await wait_until(pilot, lambda: shown_panes(panes) == ["receipts"])
            assert app.screen.focused is panes.query_one("#receipts")
            assert "banking.send_transfer" in screen_text(app)  # the receipts pane has the whole width
            await pilot.press("T", "T")
            await wait_until(pilot, lambda: shown_panes(panes) == ["diff"])

        app = BrowserApp(fixed_store, RolloutScreen("rollout-fixed"))
        async with app.run_test(size=(180, 50)) as pilot:
            await detail_ready(pilot, "rollout-fixed")
            panes = app.screen.query_one(EvidencePanes)
            assert not panes.tabbed and not panes.query_one("#evidence-tabs", Tabs).display
            assert shown_panes(panes) == ["trajectory", "receipts", "diff"]
            assert "Next tab" not in footer(app)
            await pilot.press("t")  # nothing to switch side by side: every pane stays
            await pilot.pause()
            assert shown_panes(panes) == ["trajectory", "receipts", "diff"]

    asyncio.run(scenario())


def test_resizing_collapses_and_restores_the_panes_keeping_the_cursor(fixed_store):  # noqa: F811
    async def scenario() -> None:
        app = BrowserApp(fixed_store, RolloutScreen("rollout-fixed"))
        async with app.run_test(size=(180, 50)) as pilot:
            await detail_ready(pilot, "rollout-fixed")
            panes = app.screen.query_one(EvidencePanes)
            trajectory = app.screen.query_one("#trajectory", TrajectoryView)
            for _ in range(5):
                await pilot.press("j")
            await wait_until(pilot, lambda: trajectory.cursor == 5 and panes.selected_receipts == ["r1"])
            app.screen.query_one("#diff").focus()
            await pilot.resize_terminal(100, 30)
            await wait_until(pilot, lambda: panes.tabbed)
            assert shown_panes(panes) == ["diff"]  # the pane that had the focus stays in view
            await pilot.resize_terminal(180, 50)
            await wait_until(pilot, lambda: not panes.tabbed)
            assert shown_panes(panes) == ["trajectory", "receipts", "diff"]
            # Nothing was remounted: the same cursor, selection and highlights.
            assert trajectory.cursor == 5 and panes.selected_receipts == ["r1"]
            assert app.screen.query_one("#trajectory", TrajectoryView) is trajectory

    asyncio.run(scenario())


def test_the_reviewers_panes_collapse_too_and_the_footer_keeps_help(snapshot_store):  # noqa: F811
    async def scenario() -> None:
        app = ScreenHost(snapshot_store, "snap", lambda: AuditScreen(audit_id="audit-snapshot"))
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.screen.current is not None)
            panes = app.screen.query_one(EvidencePanes)
            await wait_until(pilot, lambda: panes.tabbed)
            assert shown_panes(panes) == ["trajectory"]
            assert app.screen.query_one("#audit-queue").size.width <= 20
            # compact at 80 columns: the last key is not cut off (waited for: the footer is drawn after the panes)
            await wait_until(pilot, lambda: "? Help" in footer(app))
            app.screen.query_one("#trajectory").focus()
            await pilot.press("t")
            await wait_until(pilot, lambda: shown_panes(panes) == ["receipts"])
            assert app.screen.staged is None  # t switched a tab; it neither staged a label nor went to the note

    asyncio.run(scenario())


def test_the_runs_list_goes_over_its_panel_when_narrow(tmp_path):
    url = f"sqlite:///{tmp_path / 'narrow.db'}"
    deterministic_store(url)

    async def scenario() -> None:
        app = RedAgentApp(url)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_runs(pilot, app)
            table, detail = screen.query_one("#runs-table"), screen.query_one("#run-detail")
            await wait_until(pilot, lambda: table.row_count == 2)
            await pilot.pause()
            assert table.region.width == detail.region.width == 80
            assert detail.region.y >= table.region.bottom  # under the list, not beside it
            await pilot.resize_terminal(180, 50)
            await wait_until(pilot, lambda: detail.region.x > 0)
            assert detail.region.y == table.region.y  # side by side again

    asyncio.run(scenario())


def test_help_lists_the_panes_keys(fixed_store):  # noqa: F811
    """`t`/`T` (tabs) and `m` (maximise) belong to the evidence panes, not the screen: help listed only the screen's
    own keys, so the keys the narrow footer shows were missing from help."""
    from textual.widgets import DataTable

    from redagent.console.screens import screen_name
    from redagent.console.screens.help import HelpScreen
    from tests.console.test_app import table_rows

    async def scenario() -> None:
        app = BrowserApp(fixed_store, RolloutScreen("rollout-fixed"))
        async with app.run_test(size=(80, 24)) as pilot:
            await detail_ready(pilot, "rollout-fixed")
            app.push_screen(HelpScreen(screen_name(app.screen)))  # what `?` does in the console
            await wait_until(
                pilot,
                lambda: (
                    isinstance(app.screen, HelpScreen)
                    and app.screen.query("#help-keys")
                    and app.screen.query_one("#help-keys", DataTable).row_count > 0
                ),
            )
            rows = table_rows(app.screen.query_one("#help-keys", DataTable))
            ids = {row[1]: row[3] for row in rows}
            assert ids.get("evidence-next-tab") == "on its panes", rows
            assert ids.get("evidence-previous-tab") == "on its panes" and ids.get("maximise") == "on its panes", rows

    asyncio.run(scenario())
