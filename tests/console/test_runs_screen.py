"""The Runs screen under the pilot: start, watch, stop and resume runs from the console, and watch one from outside."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import DataTable, Input, Log, ProgressBar, Static

from redagent.console.app import RedAgentApp
from redagent.console.messages import RunsPolled, RunStarted
from redagent.console.screens.runs import NewRunScreen, RunsScreen
from redagent.engine.matrix import ModelPool, RunSpec
from redagent.engine.plan import case_set_hash, matrix, select_cases
from redagent.engine.runner import MatrixRunner
from redagent.store.db import open_store
from redagent.store.records import RunRecord
from tests.console.test_app import SIZE, notifications, table_rows, wait_until

pytestmark = pytest.mark.anyio

BIG = {"cases": "all", "models": "sim/comply,sim/ignore", "harnesses": "native,react", "concurrency": "1"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'console.db'}"


def stored(url: str, run_id: str) -> tuple[str, int, int]:
    """(status, completed, planned) as the store has them — not as the screen shows them."""
    with open_store(url) as store:
        run = store.get_run(run_id)
        counts = store.counts(run_id)
    return run.status, counts.completed, counts.planned


def text_of(renderable: object) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


async def open_runs(pilot, app: RedAgentApp) -> RunsScreen:
    await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.query("#run-log"))
    return app.screen


async def submit_form(pilot, app: RedAgentApp, **fields: str) -> None:
    await pilot.press("ctrl+n")
    await wait_until(pilot, lambda: isinstance(app.screen, NewRunScreen) and app.screen.query("#run-cases"))
    for field, value in fields.items():
        app.screen.query_one(f"#run-{field}", Input).value = value
    await pilot.press("ctrl+s")


async def test_a_run_started_from_the_form_progresses_and_finishes(url):
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_runs(pilot, app)
        await submit_form(
            pilot,
            app,
            cases="banking-e2-invoice-bank-details-change",
            models="sim/comply",
            harnesses="native",
            cues="clean",
            defenses="none",
            attempts="1",
        )
        await wait_until(pilot, lambda: screen.selected_run_id is not None)
        run_id = screen.selected_run_id
        await wait_until(pilot, lambda: getattr(screen.runs.get(run_id), "status", None) == "finished")
        # As `redagent run` does, a run from the form has its benign arm: the case and its `-benign` twin.
        await wait_until(pilot, lambda: screen.query_one("#run-log", Log).line_count == 2)
        assert stored(url, run_id) == ("finished", 2, 2)
        assert table_rows(screen.query_one("#runs-table", DataTable))[0][:3] == [run_id, "finished", "2/2"]
        bar = screen.query_one("#run-progress", ProgressBar)
        assert (bar.progress, bar.total) == (2, 2)
        lines = screen.query_one("#run-log", Log).lines
        attacked = next(line for line in lines if "details-change-benign" not in line)
        assert "banking-e2-invoice-bank-details-change" in attacked and "sim/comply" in attacked and "E=1" in attacked
        assert any("details-change-benign" in line and "E=0" in line for line in lines)
        asr = text_of(screen.query_one("#run-asr", Static).content)
        assert "sim/comply" in asr and "1/1" in asr and "100.0%" in asr  # over attacked rollouts only
        assert any(f"{run_id} finished: 2/2" in n for n in notifications(app))


async def test_stop_then_resume_from_the_console(url):
    # The resume is asserted on the message the app received, not on its notification, which expires on
    # its own clock (5 s) and was gone by the end of the test on a loaded machine.
    started: list[RunStarted] = []
    app = RedAgentApp(url)
    hook = lambda message: started.append(message) if isinstance(message, RunStarted) else None  # noqa: E731
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        screen = await open_runs(pilot, app)
        await submit_form(pilot, app, **BIG)
        await wait_until(pilot, lambda: screen.selected_run_id is not None and app.runs.drives(screen.selected_run_id))
        run_id = screen.selected_run_id
        await pilot.press("ctrl+x")
        await wait_until(pilot, lambda: not app.runs.drives(run_id))
        status, completed, planned = stored(url, run_id)
        assert status == "stopped" and completed < planned == 496  # 248 and their benign arm
        await wait_until(pilot, lambda: screen.runs[run_id].status == "stopped")
        await pilot.press("ctrl+u")
        # Hang catchers, far above the normal time (the 496 rollouts take a few seconds on an idle machine).
        await wait_until(pilot, lambda: screen.runs[run_id].status == "finished", timeout=300)
        assert stored(url, run_id) == ("finished", 496, 496)
        assert screen.runs[run_id].completed == 496
        # The log shows each stored rollout once, across the stop and the resume.
        await wait_until(pilot, lambda: screen.query_one("#run-log", Log).line_count == 496)
        assert [(m.run_id, m.resumed) for m in started] == [(run_id, False), (run_id, True)]


async def test_a_run_started_in_another_process_appears_and_is_monitored(url):
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_runs(pilot, app)  # the store exists and is migrated before the other process opens it
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "redagent",
                "run",
                "--cases",
                "all",
                "--models",
                "sim/comply,sim/ignore",
                "--harnesses",
                "native,react",
                "--concurrency",
                "1",
                "--no-benign-arm",
                "--db",
                url,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            await wait_until(pilot, lambda: screen.runs, timeout=120)
            run_id = next(iter(screen.runs))
            assert screen.selected_run_id == run_id and not app.runs.drives(run_id)
            seen = set()

            def finished() -> bool:
                seen.add(screen.runs[run_id].completed)
                return screen.runs[run_id].status == "finished"

            await wait_until(pilot, finished, timeout=300)
            assert process.wait(timeout=120) == 0, process.stderr.read()
        finally:
            if process.poll() is None:
                process.kill()
        assert len(seen) >= 2 and max(seen) == 248  # watched it move, not only its end
        await wait_until(pilot, lambda: screen.query_one("#run-log", Log).line_count == 248)
        assert screen.query_one("#run-progress", ProgressBar).progress == 248
        await pilot.press("ctrl+x")  # not driven here: says so, changes nothing
        assert any("not running" in n or "another process" in n for n in notifications(app))


async def test_a_bad_form_is_one_line_and_creates_no_run(url):
    polls: list[RunsPolled] = []
    app = RedAgentApp(url)
    hook = lambda message: polls.append(message) if isinstance(message, RunsPolled) else None  # noqa: E731
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        screen = await open_runs(pilot, app)
        await submit_form(pilot, app, cases="banking-*", models="sim/comply", harnesses="bogus")
        await wait_until(pilot, lambda: any("run not started" in n for n in notifications(app)))
        assert any("bogus" in n for n in notifications(app))
        with open_store(url) as store:  # refused while planning, before anything is written
            assert store.list_runs() == []
        # Two more polls: the first of them has been handled by the screen once the second arrives.
        seen = len(polls)
        await wait_until(pilot, lambda: len(polls) >= seen + 2)
        assert not screen.runs and isinstance(app.screen, RunsScreen)


async def test_a_run_failing_mid_way_fake_rollout_error_is_reported_and_stored_failed(url, monkeypatch):
    # The engine catches model and sandbox failures itself; this fake stands for a bug it does not catch.
    async def broken(*_args, **_kwargs):
        raise RuntimeError("rollout exploded")

    monkeypatch.setattr("redagent.engine.runner.execute_rollout", broken)
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_runs(pilot, app)
        await submit_form(
            pilot, app, cases="banking-e2-invoice-bank-details-change", models="sim/comply", harnesses="native"
        )
        await wait_until(pilot, lambda: any("RuntimeError: rollout exploded" in n for n in notifications(app)))
        run_id = screen.selected_run_id
        await wait_until(pilot, lambda: getattr(screen.runs.get(run_id), "status", None) == "failed")
        assert stored(url, run_id)[0] == "failed" and isinstance(app.screen, RunsScreen)


def deterministic_store(url: str) -> None:
    """Two runs with fixed ids and creation times (rollout ids derive from them), so the screen is stable."""
    with open_store(url) as store:
        for run_id, created, models, stop in (
            ("run-20260101-090000-aaaa", datetime(2026, 1, 1, 9, tzinfo=UTC), ["sim/comply"], True),
            ("run-20260102-090000-bbbb", datetime(2026, 1, 2, 9, tzinfo=UTC), ["sim/comply", "sim/ignore"], False),
        ):
            spec = RunSpec(cases="banking-e*", models=models, harnesses=["native"])
            cases = select_cases(spec.cases)
            keys = matrix(cases, spec.models, spec.harnesses, spec.cues, spec.defenses, spec.attempts)
            protocol = {
                "cases": spec.cases,
                "models": spec.models,
                "harnesses": spec.harnesses,
                "cues": spec.cues,
                "defenses": spec.defenses,
                "attempts": 1,
                "concurrency": 1,
                "case_ids": {c.id: c.content_hash for c in cases},
            }
            run = RunRecord(
                id=run_id,
                status="planned",
                protocol=protocol,
                case_set_hash=case_set_hash(cases),
                code_version="snapshot",
                planned=len(keys),
                created_at=created,
            )
            store.create_run(run)
            runner = MatrixRunner(store, run, {c.id: c for c in cases}, keys, ModelPool(spec), concurrency=1)
            if stop:
                runner.request_stop()  # stored as stopped with nothing run
            with ThreadPoolExecutor(1) as pool:
                pool.submit(asyncio.run, runner.run()).result()


def test_runs_screen_snapshot(tmp_path, snap_compare):
    url = f"sqlite:///{tmp_path / 'snap.db'}"
    deterministic_store(url)

    async def settle(pilot) -> None:
        screen = await open_runs(pilot, pilot.app)
        await wait_until(pilot, lambda: screen.query_one("#run-log", Log).line_count > 0)
        await pilot.app.workers.wait_for_complete()
        # The selected run's detail is drawn: its rollouts in the log and on the progress bar.
        await wait_until(
            pilot,
            lambda: (
                screen.selected_run_id in screen.runs
                and screen.query_one("#run-log", Log).line_count
                == screen.runs[screen.selected_run_id].completed
                == screen.query_one("#run-progress", ProgressBar).progress
            ),
        )
        await pilot.pause()

    assert snap_compare(RedAgentApp(url), terminal_size=SIZE, run_before=settle)


def _words(renderable: object) -> str:
    return " ".join(text_of(renderable).split())


async def test_the_run_panel_shows_the_health_warnings_runs_show_prints(url, monkeypatch):
    # A server that drops `tools`: the model only answers in words, so no valid rollout makes a tool call and
    # the attack (in data the agent must read) never reaches it. `runs show` warns twice; so must the panel.
    from redagent.engine.matrix import start_run
    from redagent.judges.health import run_health
    from tests.engine.openai_stub import ChatServer, text

    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test")
    with ChatServer() as server, open_store(url) as store:
        server.default = text("I have paid the invoice as requested.")
        broken = start_run(
            store,
            RunSpec(
                cases="banking-e2-invoice-bank-details-change",
                models=["openai/stub-model"],
                harnesses=["native"],
                api_base=server.url,
                timeout=10,
                retries=0,
            ),
        )
        await broken.run()
        healthy = start_run(
            store, RunSpec(cases="banking-e2-invoice-bank-details-change", models=["sim/comply"], harnesses=["native"])
        )
        await healthy.run()
        expected = run_health(store, broken.run_record.id)["warnings"]
        assert run_health(store, healthy.run_record.id)["warnings"] == []
    assert any("no tool call in any of" in line for line in expected)  # the run is what the test is about

    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_runs(pilot, app)
        health = screen.query_one("#run-health", Static)
        # The newest run (the healthy one) is selected first: its panel is drawn, with no warning.
        await wait_until(pilot, lambda: screen.query_one("#run-log", Log).line_count == 1)
        assert screen.selected_run_id == healthy.run_record.id and not health.display
        screen.select_run(broken.run_record.id)
        await wait_until(pilot, lambda: health.display and "no tool call" in _words(health.content))
        for line in expected:  # every warning, in runs show's words
            assert f"warning: {line}" in _words(health.content)
        screen.select_run(healthy.run_record.id)
        await wait_until(pilot, lambda: not health.display)
    # At 80 columns the list is over the panel and each warning wraps inside it: none is cut.
    app = RedAgentApp(url, run_id=broken.run_record.id)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_runs(pilot, app)
        health = screen.query_one("#run-health", Static)
        await wait_until(pilot, lambda: health.display and health.size.height >= 2 * len(expected))
        assert health.size.width <= 80
        assert _words(health.render()).count("warning:") == len(expected)
