"""The console app under the pilot: opening a real store (or failing to, clearly), roles, routing, palette, keys."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.command import Command, CommandList, CommandPalette
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable

import redagent.console.screens as screens_package
from redagent.console.app import RedAgentApp, StoreErrorScreen
from redagent.console.screens import screen_name
from redagent.console.screens.help import HelpScreen
from redagent.console.screens.runs import RunsScreen
from redagent.engine.matrix import RunSpec, start_run
from redagent.store.db import open_store

SIZE = (120, 34)

# pytest-asyncio is switched off for the project (addopts); anyio's plugin runs the pilot tests on asyncio.
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def build_run(
    url: str,
    cases: str = "banking-e2-invoice-bank-details-change",
    models: tuple[str, ...] = ("sim/comply",),
    harnesses: tuple[str, ...] = ("native",),
) -> str:
    """A finished run made by the real engine in the store at `url`; returns its id.

    The engine gets a thread of its own: the test body already runs on an event loop.
    """
    with open_store(url) as store:
        runner = start_run(store, RunSpec(cases=cases, models=list(models), harnesses=list(harnesses)))
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, runner.run()).result()
        return runner.run_record.id


async def wait_until(pilot: Pilot, condition: Callable[[], object], timeout: float = 300.0) -> None:
    """Poll `condition` between the app's turns. The timeout only catches a hang: what a test waits for takes
    well under a second on an idle machine, and the suite must pass on one several times over-committed."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {condition}")
        await pilot.pause(0.05)


def table_rows(table: DataTable) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row(key)] for key in table.rows]


def cursor_run(screen: Screen) -> str | None:
    """The run id in the row under the runs table's cursor."""
    table = screen.query_one("#runs-table", DataTable)
    if not table.row_count:
        return None
    return table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value


def palette_choice(app: RedAgentApp) -> str | None:
    """The text of the command palette's highlighted hit (what enter would run), if the palette shows one."""
    if not isinstance(app.screen, CommandPalette):
        return None
    option = app.screen.query_one(CommandList).highlighted_option
    return option.hit.text if isinstance(option, Command) else None


def notifications(app: RedAgentApp) -> list[str]:
    return [f"{n.title} {n.message}" for n in app._notifications]


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'console.db'}"


async def test_opens_a_real_sqlite_store_and_lists_its_runs(url):
    first = build_run(url)
    second = build_run(url, models=("sim/ignore",))
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.runs)
        await wait_until(pilot, lambda: app.screen.query_one("#runs-table", DataTable).row_count == 2)
        rows = table_rows(app.screen.query_one("#runs-table", DataTable))
        assert [row[0] for row in rows] == [second, first]  # newest first
        assert all(row[1] == "finished" and row[2] == "1/1" for row in rows)
        assert app.store is not None


async def test_run_id_opens_on_that_run_and_enter_opens_its_rollouts(url):
    older = build_run(url)
    build_run(url, models=("sim/ignore",))
    app = RedAgentApp(url, run_id=older)  # `redagent console --run RUN_ID`
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.runs)
        await wait_until(pilot, lambda: cursor_run(app.screen) == older)  # the table's cursor is on it too
        assert app.screen.selected_run_id == older
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: (
                screen_name(app.screen) == "rollouts"
                or any("rollouts screen is not available" in n for n in notifications(app))
            ),
        )
        if screen_name(app.screen) == "rollouts":
            assert len(app.screen_stack) == 2  # main screens replace each other
            await pilot.press("r")
            await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))


@pytest.mark.parametrize("kind", ["not-a-database", "bad-url", "newer-schema"])
async def test_an_unopenable_store_shows_the_one_line_reason_and_quits_on_q(tmp_path, kind):
    if kind == "not-a-database":
        bad = tmp_path / "notes.db"
        bad.write_text("these are my notes, not a database\n")
        url, expected = f"sqlite:///{bad}", "is not a SQLite database"
    elif kind == "bad-url":
        url, expected = "mysql://nobody@nowhere/db", "unknown database driver"
    else:
        url = f"sqlite:///{tmp_path / 'newer.db'}"
        with open_store(url) as store, store.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = 'ffffffffffff'")
        expected = "is newer than this redagent"
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(
            pilot, lambda: isinstance(app.screen, StoreErrorScreen) and app.screen.query("#store-error-reason")
        )
        reason = str(app.screen.query_one("#store-error-reason").render())
        assert expected in reason and "\n" not in app.store_error and "Traceback" not in reason
        assert app.store is None
        await pilot.press("r")  # researcher keys do nothing without a store
        assert isinstance(app.screen, StoreErrorScreen)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_palette_jumps_to_a_run_by_id(url):
    older = build_run(url)
    newer = build_run(url, models=("sim/ignore",))
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.selected_run_id == newer)
        await pilot.press("ctrl+p")
        await pilot.press(*f"Run {older}")
        await wait_until(pilot, lambda: palette_choice(app) == f"Run {older}")  # the hits come in batches
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.selected_run_id == older)
        assert cursor_run(app.screen) == older


async def test_palette_offers_no_run_case_or_rollout_to_a_reviewer(url):
    build_run(url)
    app = RedAgentApp(url, reviewer="alice", role="reviewer")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.store is not None)
        from redagent.console.commands import RedAgentCommands

        provider = RedAgentCommands(app.screen)
        await provider.startup()
        texts = [text for text, _callback, _help in provider._commands()]
        assert not [t for t in texts if t.startswith(("Run ", "Rollouts", "Case "))]
        assert not app.allowed("runs") and not app.allowed("rollout") and app.allowed("audit")
        for action in ("show('runs')", "show('rollouts')", "show('statistics')"):
            assert app.check_action("show", (action[6:-2],)) is False


async def test_a_rollout_id_in_the_palette_without_a_store_finds_nothing_and_fails_nothing(tmp_path):
    # The lookup read `app.store.get_rollout` with no store open: its worker failed with an AttributeError,
    # which the app showed as "rollout lookup failed".
    bad = tmp_path / "notes.db"
    bad.write_text("these are my notes, not a database\n")
    app = RedAgentApp(f"sqlite:///{bad}")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, StoreErrorScreen))
        from redagent.console.commands import RedAgentCommands

        provider = RedAgentCommands(app.screen)
        await provider.startup()
        hits = [hit async for hit in provider.search("0123456789abcdef01234567")]
        await pilot.pause()
        assert not [hit for hit in hits if str(hit.text).startswith("Rollout ")]
        assert not [n for n in notifications(app) if "failed" in n], notifications(app)


async def test_a_missing_screen_module_is_a_notification_not_a_crash(url, monkeypatch):
    monkeypatch.setitem(screens_package.SCREENS, "statistics", "NoSuchScreen")
    build_run(url)
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        # The store open and the run listed: before that, `s` only says "the store is not open" (a busy machine
        # pressed it there, and the notification waited for never came).
        # `query`, not `query_one`: the screen may be current before its table is mounted.
        await wait_until(
            pilot,
            lambda: (
                isinstance(app.screen, RunsScreen)
                and app.store is not None
                and any(t.row_count == 1 for t in app.screen.query("#runs-table").results(DataTable))
            ),
        )
        await pilot.press("s")
        await wait_until(pilot, lambda: any("statistics screen is not available" in n for n in notifications(app)))
        assert isinstance(app.screen, RunsScreen)


def console_screen_classes() -> list[type[Screen]]:
    """Every Screen class defined in console/screens/*.py (whoever wrote it) and the app's own."""
    found: list[type[Screen]] = [StoreErrorScreen]
    for module_info in pkgutil.iter_modules(screens_package.__path__):
        module = importlib.import_module(f"redagent.console.screens.{module_info.name}")
        found += [
            cls
            for _name, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, Screen) and cls.__module__ == module.__name__
        ]
    return found


def test_every_binding_has_an_id_and_a_tooltip():
    owners = [RedAgentApp, *console_screen_classes()]
    assert RunsScreen in owners and HelpScreen in owners
    missing = []
    for owner in owners:
        for binding in owner.__dict__.get("BINDINGS", []):
            if not isinstance(binding, Binding) or not binding.id or not binding.tooltip:
                missing.append(f"{owner.__name__}: {binding}")
    assert not missing, missing
    ids = [b.id for b in RedAgentApp.BINDINGS]
    assert {"help", "command-palette", "quit", "show-runs", "show-rollouts", "show-statistics"} <= set(ids)
    assert {"new-run", "stop-run", "resume-run"} <= {b.id for b in RunsScreen.BINDINGS}


async def test_help_screen_shows_the_screen_help_and_its_bindings(url):
    build_run(url)
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        rows = table_rows(app.screen.query_one("#help-keys", DataTable))
        ids = {row[1] for row in rows}
        assert {"new-run", "stop-run", "resume-run", "open-run", "help", "quit", "show-runs"} <= ids
        stop = next(row for row in rows if row[1] == "stop-run")
        assert stop[0] == "^x" and "in-flight rollouts finish" in stop[2]
        assert "# Runs" in app.screen.query_one("#help-text").source
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))


async def test_palette_finds_a_rollout_by_exact_id_and_a_case_by_id(url):
    run_id = build_run(url)
    with open_store(url) as store:
        rollout_id = store.rollouts(run_id)[0].id
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        from redagent.console.commands import RedAgentCommands

        provider = RedAgentCommands(app.screen)
        await provider.startup()
        hits = [hit.text async for hit in provider.search(rollout_id)]
        assert f"Rollout {rollout_id}" in hits
        assert not [h for h in [hit.text async for hit in provider.search("0" * 24)] if h.startswith("Rollout ")]
        cases = [hit.text async for hit in provider.search("banking-e2-invoice-bank-details-change")]
        assert "Case banking-e2-invoice-bank-details-change" in cases
