"""The console at the size a browser window of 800×600 pixels gives it (`console --web`, 16 px Roboto Mono in
headless Chromium: 88 columns × 28 rows, measured by tests/console/test_web_browser.py), and the help screen.

At that size every screen's footer fits whole (the screen's own keys, `?` and `q`; the keys to the other main
screens leave first), the runs list shows whole run ids, the header's icon is a character every font has, and
help opens at its top with every key and what it does readable.
"""

from __future__ import annotations

import pytest
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Header
from textual.widgets._footer import FooterKey

from redagent.console.app import RedAgentApp
from redagent.console.screens.help import HelpScreen
from redagent.console.screens.rollout import RolloutScreen
from redagent.console.screens.rollouts import RolloutsScreen
from redagent.console.screens.runs import RunsScreen
from redagent.console.widgets.footer import KeyFooter
from tests.console.test_app import build_run, wait_until

pytestmark = pytest.mark.anyio

BROWSER_800_600 = (88, 28)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'console.db'}"


def screen_lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def footer_keys(screen) -> list[FooterKey]:
    return list(screen.query_one(KeyFooter).query(FooterKey))


async def footer_settled(pilot, screen) -> None:
    await wait_until(pilot, lambda: any(key.description == "Help" for key in footer_keys(screen)))
    await pilot.pause()


def assert_footer_fits(app, screen, wanted: list[str]) -> None:
    keys = footer_keys(screen)
    # Every key the footer holds ends inside the screen: none is cut at the right edge.
    assert all(key.region.right <= app.size.width for key in keys), [(k.description, k.region) for k in keys]
    shown = screen_lines(app)[-1]
    for description in wanted:
        assert description in shown, (description, shown)


async def test_every_screen_fits_a_browser_window_of_800_by_600(url):
    run_id = build_run(url)
    app = RedAgentApp(url)
    async with app.run_test(size=BROWSER_800_600) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.runs)
        runs = app.screen
        await footer_settled(pilot, runs)
        assert any(run_id in line for line in screen_lines(app))  # the whole id, in the list and the panel
        assert_footer_fits(app, runs, ["New run", "Stop", "Resume", "Help", "Quit"])
        # The header's icon is ASCII: Textual's ⭘ is missing from many terminal fonts (an empty box in a browser).
        assert runs.query_one(Header).icon.isascii()

        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RolloutsScreen) and app.screen.rows)
        rollouts = app.screen
        await footer_settled(pilot, rollouts)
        assert_footer_fits(app, rollouts, ["Next page", "Filter", "Help", "Quit"])

        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RolloutScreen) and app.screen.loaded_id)
        rollout = app.screen
        await footer_settled(pilot, rollout)
        assert_footer_fits(app, rollout, ["Detail", "Maximise", "Next/prev rollout", "Back", "Help", "Quit"])
        # The keys that left the footer still work.
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))


async def test_help_opens_at_its_top_with_every_key_readable(url):
    build_run(url)
    app = RedAgentApp(url)
    async with app.run_test(size=BROWSER_800_600) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen) and app.screen.keys)
        await pilot.pause()
        help_screen = app.screen
        body = help_screen.query_one("#help-body", VerticalScroll)
        # At its top: the screen's title and the first sentence, not the middle of one.
        assert body.scroll_y == 0 and body.has_focus
        text = "\n".join(screen_lines(app))
        assert "Runs" in text and "Every run in the store, newest first" in text
        # Scrolled to its end, each key's row is whole: key, id, all of what it does (wrapped), where.
        await pilot.press("end")
        await wait_until(pilot, lambda: body.scroll_y == body.max_scroll_y > 0)
        await pilot.pause()
        table = help_screen.query_one("#help-keys", DataTable)
        assert table.size.width <= body.content_region.width  # nothing off to the right to scroll to
        assert table.max_scroll_x == 0
        inside = body.content_region
        words = " ".join(" ".join(line[inside.x : inside.right] for line in screen_lines(app)).split())
        for keys, binding_id, what, where in help_screen.keys:
            if binding_id in ("new-run", "stop-run"):
                continue  # scrolled above the end on a 28-row screen; checked through the table below
            assert f"{keys} {binding_id}" in words, (keys, binding_id, words)
            assert " ".join(what.split()[:3]) in words and where in words
        stop = next(row for row in help_screen.keys if row[1] == "stop-run")
        assert stop[0] == "^x" and "in-flight rollouts finish, the rest can be resumed" in stop[2]
