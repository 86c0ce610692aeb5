"""The blinded audit and adjudication screens under the pilot, on a real SQLite store made by the engine, judged
by rule and audited with `judges.audit.sample`: nothing of the judge or the peer reviewer reaches the screen,
labels are write-once with reasoned corrections, adjudication sees A and B only, and a stable snapshot."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from rich.console import Console
from sqlalchemy import update
from textual.app import App
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Select

from redagent.console.screens.adjudication import AdjudicationScreen
from redagent.console.screens.audit import AuditScreen, CorrectionDialog
from redagent.engine.matrix import RunSpec, start_run
from redagent.judges import audit
from redagent.judges.config import config_for
from redagent.judges.labelling import judge_run
from redagent.store import tables_judging as tj
from redagent.store.db import Store, open_store
from redagent.store.records import AuditItemRecord, AuditRecord

SIZE = (120, 34)
REVIEWER, PEER, ADJUDICATOR = "alice", "zebedee", "carol"
PEER_NOTE = "PEER-NOTE-SENTINEL"
RATIONALE = "JUDGE-RATIONALE-SENTINEL"


class ScreenHost(App):
    """A minimal host for one screen: `store` and `reviewer`, as the console app provides them."""

    def __init__(self, url: str, reviewer: str | None, make: Callable[[], Screen], **extra: Any) -> None:
        super().__init__()
        self.store: Store = open_store(url)
        self.reviewer = reviewer
        self.make = make
        for key, value in extra.items():
            setattr(self, key, value)

    def on_mount(self) -> None:
        self.push_screen(self.make())

    def on_unmount(self) -> None:
        self.store.close()


def build_run(url: str) -> str:
    """A calibration run of the banking cases (sim/comply, sim/ignore; native), judged under trajectory and state."""
    with open_store(url) as store:
        runner = start_run(store, RunSpec(cases="banking-*", models=["sim/comply", "sim/ignore"],
                                          harnesses=["native"]))
        asyncio.run(runner.run())
        run_id = runner.run_record.id
        judge_run(store, run_id, ["trajectory", "state"])
        # Every judge rationale carries a sentinel: if any of it reached a reviewer's screen, it would show.
        with store.engine.begin() as conn:
            conn.execute(update(tj.judge_label).values(rationale=RATIONALE + " the judge's reasoning"))
    return run_id


async def settle(pilot) -> None:
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def screen_text(app: App) -> str:
    """Everything drawn on the terminal now (all layers), as plain text."""
    console = Console(width=app.size[0], height=app.size[1], file=io.StringIO(), record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def drive(app: App, scenario: Callable[[Any], Coroutine[Any, Any, None]], size: tuple[int, int] = SIZE,
          message_hook: Callable[[Message], None] | None = None) -> None:
    async def main() -> None:
        async with app.run_test(size=size, message_hook=message_hook) as pilot:
            await settle(pilot)
            await scenario(pilot)

    asyncio.run(main())


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> dict[str, Any]:
    """The run, an audit of its state/rule labels (alice and the peer zebedee, adjudicator carol); the peer has
    labelled every item with a sentinel note, disagreeing with the truth on every third item."""
    url = f"sqlite:///{tmp_path_factory.mktemp('audit') / 'store.db'}"
    run_id = build_run(url)
    config = config_for("state")
    with open_store(url) as store:
        audit_id = audit.sample(store, run_id, 12, ["label"], 5, config.config_hash, reviewers=(REVIEWER, PEER),
                                adjudicator=ADJUDICATOR, config_name=config.name)
        truth = {r["rollout_id"]: r["E"] for r in store.outcome_rows(run_id)}
        items = store.audit_items(audit_id)
        for n, item in enumerate(items):
            right = "harmful" if truth[item["rollout_id"]] else "not_harmful"
            wrong = {"harmful": "not_harmful", "not_harmful": "harmful"}[right]
            store.submit_label(audit_id, item["item_id"], PEER, wrong if n % 3 == 0 else right, PEER_NOTE)
    return {"url": url, "run_id": run_id, "audit_id": audit_id, "truth": truth, "items": items}


# ---------------------------------------------------------------- blinding


def test_reviewer_sees_no_judge_label_rationale_peer_or_model(audited):
    """Every item of the queue is opened; neither the screen (all layers) nor any message handed to the UI
    names the judge's rationale, configuration or label fields, the peer, their note, or the model."""
    posted: list[str] = []
    app = ScreenHost(audited["url"], REVIEWER, AuditScreen)
    seen: list[str] = []

    async def scenario(pilot) -> None:
        screen = app.screen
        assert isinstance(screen, AuditScreen) and screen.audit_id == audited["audit_id"]
        for _ in range(len(screen.queue)):
            seen.append(screen_text(app))
            await pilot.press("right_square_bracket")
            await settle(pilot)
        seen.append(screen_text(app))

    drive(app, scenario, message_hook=lambda message: posted.append(repr(vars(message))))
    text = "\n".join(seen)
    assert "constraint" in text and "Trajectory" in text and "Receipts" in text and "State diff" in text
    assert any("'events'" in entry for entry in posted)  # the hook saw the evidence handed to the screen
    everything = text + "\n".join(posted)
    for forbidden in (PEER_NOTE, RATIONALE, PEER, "state/rule", "judge_label", "rationale", "stratum", "sim/comply",
                      "sim/ignore", "label=1", "label=0"):
        assert forbidden not in everything, forbidden


def test_unknown_reviewer_and_no_audit_are_messages_not_crashes(audited):
    for name, expected in (("mallory", "'mallory' is not a reviewer of any audit in this store"),
                           (None, "no reviewer name")):
        app = ScreenHost(audited["url"], name, AuditScreen)

        async def scenario(pilot, expected: str = expected) -> None:
            assert expected in screen_text(pilot.app)
            await pilot.press("h")  # nothing to label: still no crash
            await settle(pilot)
            assert "no item to label" in screen_text(pilot.app)

        drive(app, scenario)
    app = ScreenHost(audited["url"], "mallory", lambda: AuditScreen(audit_id=audited["audit_id"]))

    async def named(pilot) -> None:
        assert f"'mallory' is not a reviewer of audit {audited['audit_id']}" in screen_text(pilot.app)

    drive(app, named)


# ---------------------------------------------------------------- labelling


def test_labels_are_write_once_and_a_correction_records_its_reason(audited, tmp_path):
    url, audit_id = audited["url"], audited["audit_id"]
    app = ScreenHost(url, REVIEWER, AuditScreen)

    async def scenario(pilot) -> None:
        screen = app.screen
        first = screen.current["item_id"]
        assert screen.current["position"] == 1 and screen.current["my_label"] is None
        await pilot.click("#audit-note")
        await pilot.press(*"looks fine")
        await pilot.press("escape")
        screen.set_focus(None)
        await pilot.press("n")
        await settle(pilot)
        assert "1/12 labelled" in screen_text(app)
        assert screen.current["item_id"] != first and screen.current["position"] == 2
        # back to the labelled item: a second label is refused on screen, and nothing is written
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.current["item_id"] == first
        await pilot.press("h")
        await settle(pilot)
        assert "already labelled" in screen_text(app) and "write-once" in screen_text(app)
        # the correction asks for the label and a reason; without a reason it refuses
        await pilot.press("c")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, CorrectionDialog)
        dialog.query_one(Select).value = "unsure"
        await pilot.press("enter")
        await settle(pilot)
        assert "a correction needs a reason" in screen_text(app)
        dialog.query_one("#correction-reason", Input).value = "misread the receipt"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen
        assert screen.current["item_id"] == first and screen.current["my_label"]["version"] == 2
        assert "corrected, version 2" in screen_text(app)

    drive(app, scenario)
    with open_store(url) as store:
        mine = [row for row in store.labels(audit_id, first_only=False) if row["reviewer"] == REVIEWER]
    assert [(row["label"], row["version"], row["reason"]) for row in mine] == [
        ("not_harmful", 1, None), ("unsure", 2, "misread the receipt")]
    assert mine[0]["note"] == "looks fine"


def test_adjudicator_sees_slots_a_and_b_only_and_decides(audited):
    url, audit_id = audited["url"], audited["audit_id"]
    with open_store(url) as store:
        for entry in store.reviewer_queue(audit_id, REVIEWER):
            if not entry["labelled"]:
                store.submit_label(audit_id, entry["item_id"], REVIEWER, "harmful", "alice's own note")
        disputed = store.adjudication_queue(audit_id, ADJUDICATOR)
    assert disputed
    app = ScreenHost(url, ADJUDICATOR, AdjudicationScreen)

    async def scenario(pilot) -> None:
        screen = app.screen
        text = screen_text(app)
        assert f"0/{len(disputed)} decided" in text and "reviewer A:" in text and "reviewer B:" in text
        for forbidden in (REVIEWER, PEER, PEER_NOTE, "alice's own note", RATIONALE, "sim/comply"):
            assert forbidden not in text, forbidden
        first = screen.current["item_id"]
        await pilot.click("#adj-note")
        await pilot.press(*"receipt r2 decides")
        screen.set_focus(None)
        await pilot.press("h")
        await settle(pilot)
        assert f"item {first} decided: harmful" in screen_text(app)
        assert f"1/{len(disputed)} decided" in screen_text(app)
        # decisions are write-once too
        await pilot.press("left_square_bracket")
        await settle(pilot)
        if screen.current["item_id"] == first:
            await pilot.press("n")
            await settle(pilot)
            assert "already decided" in screen_text(app)

    drive(app, scenario)
    with open_store(url) as store:
        decided = store.adjudications(audit_id)
    assert [(d["label"], d["note"], d["adjudicator"]) for d in decided] == [("harmful", "receipt r2 decides",
                                                                             ADJUDICATOR)]


def test_someone_who_adjudicates_nothing_gets_a_message(audited):
    app = ScreenHost(audited["url"], REVIEWER, AdjudicationScreen)

    async def scenario(pilot) -> None:
        assert "'alice' is not the adjudicator of any audit" in screen_text(pilot.app)

    drive(app, scenario)


# ---------------------------------------------------------------- snapshot


@pytest.fixture(scope="module")
def snapshot_store(audited, tmp_path_factory) -> str:
    """The same run with an audit of fixed id and fixed queue order (by rollout id) in a store of its own."""
    url = audited["url"]
    config = config_for("state")
    with open_store(url) as store:
        rows = sorted(store.labelled_rows(audited["run_id"], config.config_hash, "rule"),
                      key=lambda r: (r["case_id"], r["model"]))[:4]
        items = [AuditItemRecord(rollout_id=row["rollout_id"], stratum="all", population=len(rows), sampled=len(rows),
                                 weight=1.0, positions={"snap": n, "other": len(rows) + 1 - n})
                 for n, row in enumerate(rows, start=1)]
        store.create_audit(AuditRecord(id="audit-snapshot", run_id=audited["run_id"], config_name=config.name,
                                       config_hash=config.config_hash, backbone="rule", seed=0, n=len(items),
                                       stratify=[], reviewers=["snap", "other"], adjudicator="judge-free"), items)
    return url


def test_audit_screen_snapshot(snapshot_store, snap_compare):
    async def ready(pilot) -> None:
        await settle(pilot)

    app = ScreenHost(snapshot_store, "snap", lambda: AuditScreen(audit_id="audit-snapshot"))
    assert snap_compare(app, terminal_size=SIZE, run_before=ready)
