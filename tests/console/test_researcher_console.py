"""Issue 14's researcher-facing bugs, each under the pilot on a real store: statistics of the selected run
from anywhere, every judge label and E on the rollout screen, one key map without collisions, quitting
that asks before it stops a run, and a finished run's panel that stops repainting."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from textual.widgets import DataTable, Static

from redagent.console.app import RedAgentApp
from redagent.console.messages import RunsPolled
from redagent.console.screens.rollout import RolloutScreen
from redagent.console.screens.rollouts import RolloutsScreen
from redagent.console.screens.runs import RunsScreen
from redagent.console.screens.statistics import StatisticsScreen
from redagent.judges.labelling import judge_run
from redagent.store.db import open_store
from tests.console.test_app import SIZE, build_run, wait_until
from tests.console.test_runs_screen import BIG, submit_form

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'console.db'}"


def screen_text(app: RedAgentApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def runs_screen(pilot, app: RedAgentApp) -> RunsScreen:
    await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.runs)
    return app.screen


# ---------------------------------------------------------------- statistics of the selected run


async def test_statistics_of_the_highlighted_run_from_the_runs_list(url):
    older = build_run(url)
    newer = build_run(url, models=("sim/ignore",))
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        screen = await runs_screen(pilot, app)
        await wait_until(pilot, lambda: screen.selected_run_id == newer)
        await pilot.press("down")  # the older run, second row
        await wait_until(pilot, lambda: screen.selected_run_id == older)
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StatisticsScreen))
        assert app.screen.run_id == older
        await wait_until(pilot, lambda: app.screen.report is not None)
        assert "no run selected" not in str(app.screen.query_one("#stats-message", Static).content)


async def test_statistics_of_a_rollouts_run_from_the_rollout_screen(url):
    run_id = build_run(url)
    build_run(url, models=("sim/ignore",))  # newer: the one the runs list highlights first
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await runs_screen(pilot, app)
        app.show("rollouts", run_id=run_id)
        await wait_until(pilot, lambda: isinstance(app.screen, RolloutsScreen) and app.screen.loaded)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RolloutScreen) and app.screen.detail is not None)
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StatisticsScreen) and app.screen.report is not None)
        assert app.screen.run_id == run_id


async def test_the_palette_offers_statistics_of_each_run(url):
    run_id = build_run(url)
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await runs_screen(pilot, app)
        from redagent.console.commands import RedAgentCommands

        provider = RedAgentCommands(app.screen)
        await provider.startup()
        await provider._ids_loaded()
        commands = {text: callback for text, callback, _help in provider._commands()}
        commands[f"Statistics of {run_id}"]()
        await wait_until(pilot, lambda: isinstance(app.screen, StatisticsScreen) and app.screen.report is not None)
        assert app.screen.run_id == run_id


async def test_the_palette_says_it_is_loading_instead_of_no_matches(url):
    run_id = build_run(url)
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await runs_screen(pilot, app)
        from redagent.console.commands import RedAgentCommands

        provider = RedAgentCommands(app.screen)
        await provider.startup()
        first = [hit.text async for hit in provider.search(run_id)]
        assert first[0] == "Loading runs and cases…" and f"Run {run_id}" in first
        again = RedAgentCommands(app.screen)  # the next opening: the ids read last time, at once
        await again.startup()
        assert f"Run {run_id}" in [hit.text async for hit in again.search(run_id)][:3]


# ---------------------------------------------------------------- filters


async def test_filters_survive_switching_screens_and_an_empty_list_says_why(url):
    run_id = build_run(url)
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await runs_screen(pilot, app)
        app.show("rollouts", run_id=run_id, filters={"model": "sim/nobody"})
        await wait_until(pilot, lambda: isinstance(app.screen, RolloutsScreen) and app.screen.loaded)
        status = app.screen.query_one("#rollouts-status", Static)
        await wait_until(pilot, lambda: "no rollouts match" in str(status.content))
        assert f"run={run_id}" in str(status.content) and "model=sim/nobody" in str(status.content)
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        await pilot.press("o")
        await wait_until(pilot, lambda: isinstance(app.screen, RolloutsScreen) and app.screen.loaded)
        assert (app.screen.run_id, app.screen.filters) == (run_id, {"model": "sim/nobody"})


def test_an_impossible_filter_value_is_refused_with_a_message():
    from redagent.console.screens.rollouts import FilterError, check_filters

    for values, words in (
        ({"harness": "nativ"}, "harness: no such harness 'nativ'"),
        ({"cue": "dirty"}, "cue: no such cue 'dirty'"),
        ({"strategy": "Z9"}, "strategy: no such strategy 'Z9'"),
        ({"E": "2"}, "E: expected 0, 1 or invalid"),
    ):
        with pytest.raises(FilterError, match=words):
            check_filters(values)
    check_filters({"harness": "native", "cue": "clean", "model": "anything/at-all", "surface": "bank"})


# ---------------------------------------------------------------- the rollout screen


async def test_the_rollout_screen_shows_e_and_every_judge_label(url):
    run_id = build_run(url)
    with open_store(url) as store:
        judge_run(store, run_id, ["trajectory", "state", "hybrid"])
        rollout_id = next(s.id for s in store.rollouts(run_id) if not s.case_id.endswith("-benign"))
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await runs_screen(pilot, app)
        app.show("rollout", rollout_id=rollout_id)
        await wait_until(pilot, lambda: isinstance(app.screen, RolloutScreen) and app.screen.loaded_id == rollout_id)
        await pilot.pause()
        text = screen_text(app)
        assert "E 1 (harmful)" in text
        for config in ("trajectory/rule [rule]", "state/rule [rule]", "hybrid/rule [rule]"):
            assert config in text, f"{config!r} not on screen"


# ---------------------------------------------------------------- one key map


def bindings_of(cls: type) -> list[Binding]:
    return [b for b in cls.BINDINGS if isinstance(b, Binding)]


# Keys whose one meaning is "the next / previous one of what this screen lists", "back / cancel", "help",
# "open / confirm" and "submit the form": the same idea on every screen, so they may name different actions.
SHARED = {"right_square_bracket", "left_square_bracket", "escape", "question_mark", "enter", "ctrl+s"}


def test_no_key_means_two_things_across_the_console():
    from redagent.console.app import ConfirmQuit, StoreErrorScreen
    from redagent.console.screens.adjudication import AdjudicationScreen
    from redagent.console.screens.audit import AuditScreen
    from redagent.console.screens.case_review import CaseReviewScreen
    from redagent.console.screens.runs import NewRunScreen
    from redagent.console.widgets.detail_view import DetailView
    from redagent.console.widgets.evidence import EvidencePanes

    meaning: dict[str, set[str]] = {}
    for cls in (
        RedAgentApp,
        RunsScreen,
        NewRunScreen,
        RolloutsScreen,
        RolloutScreen,
        StatisticsScreen,
        AuditScreen,
        AdjudicationScreen,
        CaseReviewScreen,
        ConfirmQuit,
        StoreErrorScreen,
        EvidencePanes,
        DetailView,
    ):
        for binding in bindings_of(cls):
            for key in binding.key.split(","):
                # h / n / u stage a label on both labelling screens: one meaning, two screens.
                meaning.setdefault(key.strip(), set()).add(binding.action.replace("app.", ""))
    clashes = {key: actions for key, actions in meaning.items() if len(actions) > 1 and key not in SHARED}
    assert not clashes, clashes


async def test_the_new_run_form_footer_shows_only_its_own_keys(url):
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        await pilot.press("ctrl+n")
        from redagent.console.screens.runs import NewRunScreen

        await wait_until(pilot, lambda: isinstance(app.screen, NewRunScreen))
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "Start" in footer and "Cancel" in footer
        assert "New run" not in footer and "Resume" not in footer


# ---------------------------------------------------------------- quitting


async def test_q_asks_before_it_stops_a_run_started_here(url):
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_until_runs(pilot, app)
        await submit_form(pilot, app, **BIG)
        await wait_until(pilot, lambda: screen.selected_run_id is not None and app.runs.drives(screen.selected_run_id))
        run_id = screen.selected_run_id
        await pilot.press("q")
        from redagent.console.app import ConfirmQuit

        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmQuit))
        assert run_id in str(app.screen.query_one("#confirm-quit-text", Static).content)
        await pilot.press("escape")  # changed my mind: nothing stops
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        assert app.runs.drives(run_id) and app.is_running
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmQuit))
        await pilot.press("y")
        await wait_until(pilot, lambda: not app.is_running)


async def wait_until_runs(pilot, app: RedAgentApp) -> RunsScreen:
    await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and app.screen.query("#run-log"))
    return app.screen


async def test_q_quits_at_once_when_nothing_would_stop(url):
    build_run(url)
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await runs_screen(pilot, app)
        await pilot.press("q")
        await wait_until(pilot, lambda: not app.is_running)


# ---------------------------------------------------------------- idle screens


async def test_a_finished_runs_panel_is_not_repainted_by_each_poll(url):
    build_run(url)
    polls: list[RunsPolled] = []
    app = RedAgentApp(url)
    async with app.run_test(
        size=SIZE, message_hook=lambda m: polls.append(m) if isinstance(m, RunsPolled) else None
    ) as pilot:
        screen = await runs_screen(pilot, app)
        await wait_until(pilot, lambda: "finished" in str(screen.query_one("#run-rate", Static).content))
        # A load of the panel started before the run finished may still land (on a busy machine it did): let one
        # more poll pass and every worker end before counting repaints.
        settled = len(polls)
        await wait_until(pilot, lambda: len(polls) >= settled + 1)
        await app.workers.wait_for_complete()
        await pilot.pause()
        updates: list[object] = []
        for widget in screen.query("#run-detail Static"):
            original = widget.update

            def counted(*args, _original=original, **kwargs):
                updates.append(args)
                return _original(*args, **kwargs)

            widget.update = counted
        seen = len(polls)
        await wait_until(pilot, lambda: len(polls) >= seen + 3)  # three more polls of the store
        await pilot.pause()
        assert updates == []
        assert screen.query_one("#runs-table", DataTable).row_count == 1


# ---------------------------------------------------------------- the user's keymap


async def test_a_keymap_file_overrides_keys_by_binding_id(url, tmp_path, monkeypatch):
    from redagent.console.screens.runs import NewRunScreen

    keymap = tmp_path / "keymap.yaml"
    keymap.write_text("new-run: f2\n", encoding="utf-8")
    monkeypatch.setenv("REDAGENT_KEYMAP", str(keymap))
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_runs(pilot, app)
        await pilot.press("f2")
        await wait_until(pilot, lambda: isinstance(app.screen, NewRunScreen))


async def test_a_broken_keymap_file_is_a_warning_not_a_crash(url, tmp_path, monkeypatch):
    from tests.console.test_app import notifications

    keymap = tmp_path / "keymap.yaml"
    keymap.write_text("- new-run\n- f2\n", encoding="utf-8")
    monkeypatch.setenv("REDAGENT_KEYMAP", str(keymap))
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_runs(pilot, app)
        assert any("must map binding ids to keys" in n for n in notifications(app))
        await pilot.press("ctrl+n")  # the built-in keys still work
        from redagent.console.screens.runs import NewRunScreen

        await wait_until(pilot, lambda: isinstance(app.screen, NewRunScreen))
