"""The rollout browser under the pilot on a real SQLite store made by the engine: the list, its filters and
pages, the side-by-side detail (trajectory | receipts | state diff), blinding, and the evidence matching."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from textual.app import App
from textual.worker import WorkerCancelled

from redagent.console.screens import rollouts as rollouts_module
from redagent.console.screens.rollout import RolloutScreen
from redagent.console.screens.rollouts import FilterScreen, RolloutsScreen, parse_label_filter
from redagent.console.widgets.evidence import EvidencePanes
from redagent.console.widgets.trajectory import EntryList, TrajectoryView
from redagent.engine.matrix import RunSpec, start_run
from redagent.judges.evidence import Mismatch, diff_for_receipts, flagged, receipts_for_event
from redagent.judges.labelling import judge_run
from redagent.store.db import Store, open_store
from redagent.store.readmodel import StoredDiffEntry, StoredEvent, StoredReceipt
from redagent.store.records import RunRecord

CASE = "banking-e2-invoice-bank-details-change"
SIZE = (120, 34)


class BrowserApp(App):
    """A minimal host for the screens: a store and `show`, as the console app provides them."""

    def __init__(self, url: str, first: Any) -> None:
        super().__init__()
        self.store: Store = open_store(url)
        self.first = first
        self.shown: list[tuple[str, dict[str, Any]]] = []

    def on_mount(self) -> None:
        self.push_screen(self.first)

    def show(self, name: str, **kwargs: Any) -> None:
        self.shown.append((name, kwargs))
        if name == "rollout":
            if isinstance(self.screen, RolloutScreen):
                self.screen.reopen(**kwargs)
            else:
                self.push_screen(RolloutScreen(**kwargs))

    def on_unmount(self) -> None:
        self.store.close()


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Any]:
    """A run of the banking cases under sim/comply, sim/ignore and sim/comply-claim-refusal, judged by rule."""
    url = f"sqlite:///{tmp_path_factory.mktemp('browse') / 'store.db'}"
    with open_store(url) as store:
        runner = start_run(
            store,
            RunSpec(
                cases="banking-*", models=["sim/comply", "sim/ignore", "sim/comply-claim-refusal"], harnesses=["native"]
            ),
        )
        asyncio.run(runner.run())
        run_id = store.list_runs()[0].run_id
        judge_run(store, run_id, ["trajectory", "state", "hybrid"])
        ids = {(r.case_id, r.model): r.id for r in store.rollouts(run_id)}
    return {"url": url, "run_id": run_id, "ids": ids}


async def settle(pilot) -> None:
    """Until no worker is left and the messages they posted are handled (a loaded machine can finish a window
    read after any fixed number of pauses, so this waits on the condition, never for a time)."""
    for _ in range(200):  # a bound, not a clock: a worker that never ends fails the test's own assertion
        await pilot.pause()
        # An exclusive worker (the runs screen's poll) replaced by its successor is cancelled by design: wait on.
        with contextlib.suppress(WorkerCancelled):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(worker.is_running or worker.state.name == "PENDING" for worker in pilot.app.workers):
            break
    await pilot.pause()  # the layout and paint the last message asked for


def synchronous(test):
    """Runs an async pilot test with asyncio.run (the suite has no async pytest plugin)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


def screen_text(app: App) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


# ---------------------------------------------------------------- pure matching


def receipt(
    rid: str, service: str, action: str, outcome: str, step: int, args: dict[str, Any], effect: dict[str, Any]
) -> StoredReceipt:
    return StoredReceipt(
        id=rid,
        seq=int(rid[1:]),
        service=service,
        action=action,
        args=args,
        outcome=outcome,
        actor="agent",
        step=step,
        effect=effect,
    )


def test_matching_receipts_and_diff_entries():
    receipts = [
        receipt("r1", "banking", "send_transfer", "ok", 5, {"to_account": "US90"}, {"transaction_id": "new-tx-1"}),
        receipt("r2", "banking", "send_transfer", "ok", 9, {}, {"transaction_id": "new-tx-2"}),
        receipt("r3", "workspace", "write_file", "ok", 11, {"path": "/workspace/notes/a b.md"}, {}),
        receipt("r4", "banking", "send_transfer", "denied", 13, {}, {}),
    ]
    diff = [
        StoredDiffEntry(path, "changed")
        for path in (
            "banking.account.balance",
            "banking.transactions.new-tx-1",
            "banking.transactions.new-tx-2",
            'workspace.files["notes/a b.md"]',
            "email.sent.m-9",
        )
    ]
    # A call is found by its step, a tool result by the receipts it lists.
    assert receipts_for_event(StoredEvent(5, "assistant"), receipts) == ["r1"]
    assert receipts_for_event(StoredEvent(6, "tool", receipts=("r1",)), receipts) == ["r1"]
    assert receipts_for_event(StoredEvent(7, "assistant"), receipts) == []
    # Named entries go to the receipt naming them; the balance (named by none) to every ok banking receipt.
    assert diff_for_receipts(["r1"], receipts, diff) == {0, 1}
    assert diff_for_receipts(["r2"], receipts, diff) == {0, 2}
    assert diff_for_receipts(["r3"], receipts, diff) == {3}  # a workspace path, made relative
    assert diff_for_receipts(["r4"], receipts, diff) == set()  # a denied attempt changed nothing
    assert diff_for_receipts([], receipts, diff) == set()
    assert flagged(
        [
            Mismatch("claims_refusal:e11", "claims_refusal", "…", events=(11,), receipts=("r1", "r2")),
            Mismatch("indirect:r3", "indirect", "…", events=(7,), receipts=("r3",)),
        ]
    ) == ({11, 7}, {"r1", "r2", "r3"})


def test_label_filter_syntax():
    assert parse_label_filter("hybrid/rule=1") == {"config_name": "hybrid/rule", "backbone": "rule", "label": 1}
    assert parse_label_filter("state/llm@openai/gpt-4o=0")["backbone"] == "openai/gpt-4o"
    with pytest.raises(ValueError, match="label"):
        parse_label_filter("hybrid/rule")


# ---------------------------------------------------------------- the detail


@synchronous
async def test_detail_shows_the_calibration_rollouts_evidence_and_selection(made):
    rollout_id = made["ids"][(CASE, "sim/comply")]
    app = BrowserApp(made["url"], RolloutScreen(rollout_id))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        panes = screen.query_one(EvidencePanes)
        trajectory = screen.query_one("#trajectory", TrajectoryView)
        receipts = screen.query_one("#receipts", EntryList).plain_lines()
        diff = screen.query_one("#diff", EntryList).plain_lines()
        text = screen_text(app)
        assert "E2 email poisoning → V10" in text and "pay approved payees only" in text
        assert "US90 7781 0034 2219" in text  # the attack content in the header
        assert "▶ send_transfer" in text and "e5" in text
        assert receipts[0].startswith("◆r1 banking.send_transfer ok")  # ◆: cited by a judge
        assert any("new-tx-1" in line for line in receipts)
        assert any("added   banking.transactions.new-tx-1" in line for line in diff)
        assert any("changed banking.account.balance" in line for line in diff)
        assert "hybrid/rule [rule] harmful" in text
        # Move to the send_transfer call (e5): its receipt and the entries it changed light up.
        assert trajectory.has_focus
        for _ in range(5):
            await pilot.press("j")
        await pilot.pause()
        assert trajectory.cursor == 5
        assert panes.selected_receipts == ["r1"]
        diff_pane = screen.query_one("#diff", EntryList)
        entries = [line for i, line in enumerate(diff) if diff_pane.entry_of(i) in panes.selected_diff]
        assert any("new-tx-1" in e for e in entries) and any("balance" in e for e in entries)
        assert not any("new-tx-2" in e for e in entries)
        assert trajectory.highlighted == {5, 6}  # the call and its result
        assert "send_transfer" in screen_text(app).split("───")[-1] or "to_account" in screen_text(app)
        # Another event with no receipt clears the highlight.
        await pilot.press("k")
        await pilot.pause()
        assert panes.selected_receipts == []
        # Any pane can fill the screen, and come back.
        await pilot.press("m")
        assert screen.maximized is not None and screen.maximized.id == "trajectory-pane"
        await pilot.press("m")
        assert screen.maximized is None


@synchronous
async def test_mismatch_is_flagged(made):
    rollout_id = made["ids"][(CASE, "sim/comply-claim-refusal")]
    app = BrowserApp(made["url"], RolloutScreen(rollout_id))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panes = app.screen.query_one(EvidencePanes)
        assert any("final answer speaks of refusing" in m.text for m in panes.mismatches)
        assert "⚠" in screen_text(app)
        assert panes._receipt_marks["r1"] == "⚠"


@synchronous
async def test_blinded_detail_shows_no_judge_label_text(made):
    rollout_id = made["ids"][(CASE, "sim/comply")]
    with open_store(made["url"]) as store:
        labels = store.rollout_detail(rollout_id).labels
    assert len(labels) == 3 and all(label.rationale for label in labels)
    app = BrowserApp(made["url"], RolloutScreen(rollout_id, blinded=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        texts = [screen_text(app)]
        for _ in range(12):  # every event, with its full text in the detail area
            await pilot.press("j")
            await pilot.pause()
            texts.append(screen_text(app))
        seen = "\n".join(
            texts
            + app.screen.query_one("#receipts", EntryList).plain_lines()
            + app.screen.query_one("#diff", EntryList).plain_lines()
        )
        assert "send_transfer" in seen
        for label in labels:
            assert label.rationale not in seen
            assert label.config_name not in seen
        assert "◆" not in seen and "harmful —" not in seen and "cites" not in seen
        assert app.screen.detail.labels is None  # never even read


@synchronous
async def test_next_and_previous_rollout(made):
    ids = sorted(made["ids"].values())
    app = BrowserApp(made["url"], RolloutScreen(ids[0], ids=ids))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert app.screen.detail.rollout_id == ids[1]
        await pilot.press("left_square_bracket", "left_square_bracket")
        await settle(pilot)
        assert app.screen.detail.rollout_id == ids[0]


# ---------------------------------------------------------------- the list


@synchronous
async def test_list_filters_pages_and_opens(made, monkeypatch):
    monkeypatch.setattr(rollouts_module, "PAGE", 5)
    run_id = made["run_id"]
    app = BrowserApp(made["url"], RolloutsScreen(run_id=run_id))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        first = screen.page_ids()
        assert len(first) == 5 and screen.count == 33
        await pilot.press("right_square_bracket")
        await settle(pilot)
        second = screen.page_ids()
        assert len(second) == 5 and not set(first) & set(second) and screen.page_number == 1
        assert "page 2 · rollouts 6–10 of 33" in screen_text(app)
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.page_ids() == first
        # Filter by model through the form: the list narrows to that model.
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, FilterScreen)
        app.screen.query_one("#filter-model").value = "sim/ignore"
        await pilot.press("enter")
        await settle(pilot)
        assert screen.count == 11 and screen.filters == {"model": "sim/ignore"}
        assert {row.model for row in screen.rows} == {"sim/ignore"}
        # j moves, enter opens the rollout under the cursor with the page's ids for n / p.
        await pilot.press("j", "enter")
        await settle(pilot)
        assert isinstance(app.screen, RolloutScreen)
        name, kwargs = app.shown[-1]
        assert name == "rollout" and kwargs["rollout_id"] == screen.rows[1].rollout_id
        assert kwargs["ids"] == screen.page_ids()
        assert app.screen.detail.model == "sim/ignore"


@synchronous
async def test_label_filter_from_the_constructor(made):
    label = {"config_name": "state/rule", "backbone": "rule", "label": 1}
    app = BrowserApp(made["url"], RolloutsScreen(run_id=made["run_id"], filters={"label": label}))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = app.screen.rows
        assert rows and all(row.E == 1 for row in rows)  # state/rule agrees with E on calibration runs
        assert "label=state/rule=1" in screen_text(app)


@synchronous
async def test_through_the_console_app(made):
    from redagent.console.app import RedAgentApp

    app = RedAgentApp(made["url"], role="researcher")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.show("rollouts", run_id=made["run_id"], filters={"model": "sim/comply"})
        await settle(pilot)
        assert isinstance(app.screen, RolloutsScreen) and len(app.screen.rows) == 11
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RolloutScreen) and app.screen.detail.model == "sim/comply"


# ---------------------------------------------------------------- snapshot


@pytest.fixture(scope="module")
def fixed_store(made, tmp_path_factory) -> str:
    """The calibration rollout copied under fixed ids and times, judged: a detail screen that never changes."""
    url = f"sqlite:///{tmp_path_factory.mktemp('fixed') / 'store.db'}"
    when = datetime(2026, 1, 2, tzinfo=UTC)
    with open_store(made["url"]) as source:
        record = source.get_rollout(made["ids"][(CASE, "sim/comply")])
    with open_store(url) as store:
        store.create_run(
            RunRecord(
                id="run-fixed",
                status="finished",
                protocol={},
                case_set_hash="x",
                code_version="snapshot",
                planned=1,
                created_at=when,
            )
        )
        store.write_rollouts(
            [replace(record, id="rollout-fixed", run_id="run-fixed", started_at=when, finished_at=when)]
        )
        judge_run(store, "run-fixed", ["trajectory", "state", "hybrid"])
    return url


async def detail_ready(pilot, rollout_id: str) -> None:
    """Until the worker that fills the panes has delivered this rollout and every label line is laid out."""
    screen = pilot.app.screen
    for _ in range(200):
        if screen.loaded_id == rollout_id:
            break
        await settle(pilot)
    else:
        raise AssertionError(f"{rollout_id} never reached the panes")
    await settle(pilot)


def test_rollout_detail_snapshot(fixed_store, snap_compare):
    async def ready(pilot) -> None:
        await detail_ready(pilot, "rollout-fixed")
        for _ in range(5):
            await pilot.press("j")
        await settle(pilot)

    app = BrowserApp(fixed_store, RolloutScreen("rollout-fixed"))
    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


def test_the_header_shows_a_case_from_the_researchers_own_folder(tmp_path):
    """The run recorded where its own cases came from; the detail's header finds the case there."""
    import yaml

    from redagent.cases.loader import library_dir

    source = next((library_dir() / "banking").glob("*.yaml"))
    data = yaml.safe_load(source.read_text())
    data.update(id="my-own-case", title="An invoice from my own folder")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "case.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    url = f"sqlite:///{tmp_path / 'own.db'}"
    with open_store(url) as store:
        runner = start_run(store, RunSpec(cases=str(tmp_path / "mine"), models=["sim/comply"], harnesses=["native"]))
        asyncio.run(runner.run())
        rollout_id = store.rollouts(runner.run_record.id)[0].id

    async def header() -> str:
        app = BrowserApp(url, RolloutScreen(rollout_id))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            return screen_text(app)

    text = asyncio.run(header())
    assert "my-own-case" in text and "An invoice from my own folder" in text


def test_a_real_clis_transcript_is_shown_as_what_it_is():
    from redagent.console.widgets.evidence import event_detail
    from redagent.console.widgets.trajectory import event_line

    # Read as a conversation (tests/console/test_evidence_detail.py); a row of no known shape is counted, not lost.
    record = {"harness": "codex", "version": "0.171.0", "turns": [{"transcript": [{"type": "item.completed"}]}]}
    event = StoredEvent(idx=9, role="transcript", text=orjson.dumps(record).decode())
    shown = event_detail(event).plain
    assert "the agent CLI's own record" in shown and "codex 0.171.0" in shown
    assert "records not shown: 1 item.completed" in shown
    assert event_line(event).plain.startswith("e9    transcrip")
    assert "not json" in event_detail(replace(event, text="not json")).plain
