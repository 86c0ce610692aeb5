"""The blinded audit and adjudication screens under the pilot, on a real SQLite store made by the engine, judged
by rule and audited with `judges.audit.sample`: nothing of the judge or the peer reviewer reaches the screen —
not even the claimed-versus-observed notes the judges' rules compute —, labels are write-once with reasoned
corrections and are only written by a confirming key, notes stay with the item they were typed on,
adjudication sees A and B only and can be corrected (screen and `redagent audit adjudicate`), and a stable
snapshot."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
from collections.abc import Callable, Coroutine
from typing import Any
from unittest import mock

import pytest
from rich.console import Console
from rich.text import Text
from textual.app import App, ComposeResult
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Input, OptionList, Select, Static
from typer.testing import CliRunner

from redagent.console import widgets
from redagent.console.audit_cli import audit_app
from redagent.console.screens.adjudication import AdjudicationScreen
from redagent.console.screens.audit import AuditScreen, CorrectionDialog, LabelSaved
from redagent.console.screens.help import HelpScreen
from redagent.console.widgets.evidence import EvidencePanes
from redagent.console.widgets.trajectory import EntryList, TrajectoryView
from redagent.engine.matrix import RunSpec, start_run
from redagent.judges import audit
from redagent.judges.config import config_for
from redagent.judges.evidence import Mismatch, mismatches
from redagent.judges.labelling import judge_run
from redagent.store.db import Store, open_store
from redagent.store.readmodel import ReviewerItem, RolloutEvidence
from redagent.store.records import AuditItemRecord, AuditRecord, LabelledRow
from tests.fakes import FakeAdjudicationQueue, FakeAuditQueue, blinded_item

SIZE = (120, 34)
CLAIM_REFUSAL = "sim/comply-claim-refusal"  # complies, then tells the user it refused: a claimed-vs-observed mismatch
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
    """A calibration run of the banking cases (sim/comply, sim/ignore, sim/comply-claim-refusal; native), judged
    under trajectory and state."""
    with open_store(url) as store:
        runner = start_run(
            store, RunSpec(cases="banking-*", models=["sim/comply", "sim/ignore", CLAIM_REFUSAL], harnesses=["native"])
        )
        asyncio.run(runner.run())
        run_id = runner.run_record.id
        # Every judge rationale carries a sentinel: if any of it reached a reviewer's screen, it would show. (Written
        # so from the start: a stored label is never changed, migration 0015.)
        write = store.write_judge_labels
        store.write_judge_labels = lambda labels: write(  # type: ignore[method-assign]
            [dataclasses.replace(label, rationale=RATIONALE + " the judge's reasoning") for label in labels]
        )
        judge_run(store, run_id, ["trajectory", "state"])
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


def drive(
    app: App,
    scenario: Callable[[Any], Coroutine[Any, Any, None]],
    size: tuple[int, int] = SIZE,
    message_hook: Callable[[Message], None] | None = None,
) -> None:
    async def main() -> None:
        async with app.run_test(size=size, message_hook=message_hook) as pilot:
            await settle(pilot)
            await scenario(pilot)

    asyncio.run(main())


def rendered_text(screen: Screen) -> str:
    """The text of every widget of the screen's whole tree — drawn or scrolled out of view: each line of the
    line-rendered panes, every queue entry, inputs, statics, border titles and tooltips."""
    parts: list[str] = []
    for widget in screen.walk_children(Widget, with_self=False):
        parts += [str(title) for title in (widget.border_title, widget.border_subtitle, widget.tooltip) if title]
        if isinstance(widget, TrajectoryView | EntryList):
            parts += [widget.line_text(line)[0].plain for line in range(widget.line_count)]
        elif isinstance(widget, OptionList):
            parts += [str(widget.get_option_at_index(i).prompt) for i in range(widget.option_count)]
        elif isinstance(widget, Input):
            parts += [widget.value, widget.placeholder]
        else:
            drawn = widget.render()
            if isinstance(drawn, Text | Content):
                parts.append(drawn.plain)
            elif isinstance(drawn, str):
                parts.append(drawn)
    return "\n".join(parts)


def fresh_audit(
    url: str,
    run_id: str,
    audit_id: str,
    reviewers: tuple[str, str],
    adjudicator: str,
    pick: Callable[[LabelledRow], bool] = lambda row: True,
    limit: int = 4,
) -> list[int]:
    """An audit of its own (fixed id, both queues in rollout order) so a test's labels touch no other test;
    returns the item ids in queue order."""
    config = config_for("state")
    with open_store(url) as store:
        rows = sorted(
            (row for row in store.labelled_rows(run_id, config.config_hash, "rule") if pick(row)),
            key=lambda r: (r.case_id, r.model),
        )[:limit]
        items = [
            AuditItemRecord(
                rollout_id=row.rollout_id,
                stratum="all",
                population=len(rows),
                sampled=len(rows),
                weight=1.0,
                positions={reviewers[0]: n, reviewers[1]: n},
            )
            for n, row in enumerate(rows, start=1)
        ]
        store.create_audit(
            AuditRecord(
                id=audit_id,
                run_id=run_id,
                config_name=config.name,
                config_hash=config.config_hash,
                backbone="rule",
                seed=0,
                n=len(items),
                stratify=[],
                reviewers=list(reviewers),
                adjudicator=adjudicator,
            ),
            items,
        )
        return [entry.item_id for entry in store.reviewer_queue(audit_id, reviewers[0])]


def dispute(url: str, audit_id: str, reviewers: tuple[str, str], item_ids: list[int]) -> None:
    """Both reviewers label every item, disagreeing: every item goes to adjudication."""
    with open_store(url) as store:
        for item_id in item_ids:
            store.submit_label(audit_id, item_id, reviewers[0], "harmful", "first reviewer's note")
            store.submit_label(audit_id, item_id, reviewers[1], "not_harmful", "second reviewer's note")


def labels_by(url: str, audit_id: str, reviewer: str) -> list[tuple[int, str, str, int, str | None]]:
    """Every version the reviewer wrote: (item_id, label, note, version, reason)."""
    with open_store(url) as store:
        return [
            (row.item_id, row.label, row.note, row.version, row.reason)
            for row in store.labels(audit_id, first_only=False)
            if row.reviewer == reviewer
        ]


def decisions(url: str, audit_id: str) -> list[tuple[int, str, str, int, str | None]]:
    with open_store(url) as store:
        return [(row.item_id, row.label, row.note, row.version, row.reason) for row in store.adjudications(audit_id)]


async def type_on(pilot, widget_id: str, text: str) -> None:
    """Focus a widget and type `text` key by key (what a reviewer does, whichever widget it lands in)."""
    pilot.app.screen.set_focus(pilot.app.screen.query_one(widget_id))
    await pilot.pause()
    await pilot.press(*text)
    await settle(pilot)


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> dict[str, Any]:
    """The run, an audit of its state/rule labels (alice and the peer zebedee, adjudicator carol); the peer has
    labelled every item with a sentinel note, disagreeing with the truth on every third item."""
    url = f"sqlite:///{tmp_path_factory.mktemp('audit') / 'store.db'}"
    run_id = build_run(url)
    config = config_for("state")
    with open_store(url) as store:
        audit_id = audit.sample(
            store,
            run_id,
            12,
            ["label"],
            5,
            config.config_hash,
            reviewers=(REVIEWER, PEER),
            adjudicator=ADJUDICATOR,
            config_name=config.name,
        )
        truth = {r.rollout_id: r.E for r in store.outcome_rows(run_id)}
        items = store.audit_items(audit_id)
        for n, item in enumerate(items):
            right = "harmful" if truth[item.rollout_id] else "not_harmful"
            wrong = {"harmful": "not_harmful", "not_harmful": "harmful"}[right]
            store.submit_label(audit_id, item.item_id, PEER, wrong if n % 3 == 0 else right, PEER_NOTE)
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
    assert any("events=(StoredEvent(" in entry for entry in posted)  # the hook saw the evidence handed to the screen
    everything = text + "\n".join(posted)
    for forbidden in (
        PEER_NOTE,
        RATIONALE,
        PEER,
        "state/rule",
        "judge_label",
        "rationale",
        "stratum",
        "sim/comply",
        "sim/ignore",
        "label=1",
        "label=0",
    ):
        assert forbidden not in everything, forbidden


def test_unknown_reviewer_and_no_audit_are_messages_not_crashes(audited):
    for name, expected in (
        ("mallory", "'mallory' is not a reviewer of any audit in this store"),
        (None, "no reviewer name"),
    ):
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
        first = screen.current.item_id
        assert screen.current.position == 1 and screen.current.my_label is None
        await pilot.click("#audit-note")
        await pilot.press(*"looks fine")
        await pilot.press("escape")
        screen.set_focus(None)
        await pilot.press("n")
        await settle(pilot)
        assert "press Enter to save not harmful for item #1, Esc to cancel" in screen_text(app)
        assert "0/12 labelled" in screen_text(app)  # staged, not written
        await pilot.press("enter")
        await settle(pilot)
        assert "1/12 labelled" in screen_text(app)
        assert screen.current.item_id != first and screen.current.position == 2
        # back to the labelled item: a second label is refused on screen, and nothing is written
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.current.item_id == first
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
        assert screen.current.item_id == first and screen.current.my_label.version == 2
        assert "corrected, version 2" in screen_text(app)

    drive(app, scenario)
    with open_store(url) as store:
        mine = [row for row in store.labels(audit_id, first_only=False) if row.reviewer == REVIEWER]
    assert [(row.label, row.version, row.reason) for row in mine] == [
        ("not_harmful", 1, None),
        ("unsure", 2, "misread the receipt"),
    ]
    assert mine[0].note == "looks fine"


def test_adjudicator_sees_slots_a_and_b_only_and_decides(audited):
    url, audit_id = audited["url"], audited["audit_id"]
    with open_store(url) as store:
        for entry in store.reviewer_queue(audit_id, REVIEWER):
            if not entry.labelled:
                store.submit_label(audit_id, entry.item_id, REVIEWER, "harmful", "alice's own note")
        disputed = store.adjudication_queue(audit_id, ADJUDICATOR)
    assert disputed
    app = ScreenHost(url, ADJUDICATOR, AdjudicationScreen)

    async def scenario(pilot) -> None:
        screen = app.screen
        text = screen_text(app)
        assert f"0/{len(disputed)} decided" in text and "reviewer A:" in text and "reviewer B:" in text
        for forbidden in (REVIEWER, PEER, PEER_NOTE, "alice's own note", RATIONALE, "sim/comply"):
            assert forbidden not in text, forbidden
        first = screen.current.item_id
        await pilot.click("#adj-note")
        await pilot.press(*"receipt r2 decides")
        screen.set_focus(None)
        await pilot.press("h")
        await settle(pilot)
        assert f"press Enter to save harmful for item {first}, Esc to cancel" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert f"item {first} decided: harmful" in screen_text(app)
        assert f"1/{len(disputed)} decided" in screen_text(app)
        # decisions are write-once too
        await pilot.press("left_square_bracket")
        await settle(pilot)
        if screen.current.item_id == first:
            await pilot.press("n")
            await settle(pilot)
            assert "already decided" in screen_text(app)

    drive(app, scenario)
    with open_store(url) as store:
        decided = store.adjudications(audit_id)
    assert [(d.label, d.note, d.adjudicator) for d in decided] == [("harmful", "receipt r2 decides", ADJUDICATOR)]


def test_someone_who_adjudicates_nothing_gets_a_message(audited):
    app = ScreenHost(audited["url"], REVIEWER, AdjudicationScreen)

    async def scenario(pilot) -> None:
        assert "'alice' is not the adjudicator of any audit" in screen_text(pilot.app)

    drive(app, scenario)


# ---------------------------------------------------------------- nothing computed by a judge


class HintedPanes(App):
    """The researcher's panes (judge hints on) showing one item's evidence: the control for the walk below."""

    def __init__(self, item: ReviewerItem) -> None:
        super().__init__()
        self.item = item.blinded

    def compose(self) -> ComposeResult:
        yield EvidencePanes(judge_hints=True)

    def on_mount(self) -> None:
        self.query_one(EvidencePanes).load(self.item.events, self.item.receipts, self.item.diff)


SOMETHING = Mismatch("claims_action:e1:send_email", "claims_action", "e1: something", events=(1,))


def evidence(item: ReviewerItem) -> RolloutEvidence:
    return RolloutEvidence(item.blinded.events, item.blinded.receipts, item.blinded.diff)


JUDGE_MARKS = ("⚠", "◆", "mismatch", "claimed vs observed", "speaks of refusing", "effect receipt(s) were recorded")


def test_reviewer_and_adjudicator_screens_show_nothing_computed_by_a_judge(audited, monkeypatch):
    """On items whose rollouts have a claimed-versus-observed mismatch (the agent says it refused, receipts say
    it paid), neither the reviewer's nor the adjudicator's screen draws a mismatch line or a ⚠ / ◆ mark anywhere
    in its widget tree, and the judges' mismatch rules are never even run; the same evidence in the researcher's
    panes is flagged, so the walk would have found it."""
    url, run_id = audited["url"], audited["run_id"]
    reviewers, adjudicator = ("mira", "milo"), "ada"
    item_ids = fresh_audit(
        url, run_id, "audit-claims", reviewers, adjudicator, pick=lambda row: row.model == CLAIM_REFUSAL
    )
    with open_store(url) as store:
        shown = [store.reviewer_item("audit-claims", item_id, reviewers[0]) for item_id in item_ids]
    assert len(shown) == 4 and all(mismatches(evidence(item)) for item in shown)  # every item has one to leak

    calls: list[int] = []
    real = widgets.evidence.find_mismatches
    monkeypatch.setattr(widgets.evidence, "find_mismatches", lambda rollout: calls.append(1) or real(rollout))

    async def hinted(pilot) -> None:
        text = rendered_text(pilot.app.screen)
        assert "⚠" in text and "speaks of refusing" in text

    drive(HintedPanes(shown[0]), hinted)
    assert calls == [1]
    calls.clear()

    def walk(screen_type: type[Screen], name: str) -> list[str]:
        seen: list[str] = []
        app = ScreenHost(url, name, lambda: screen_type(audit_id="audit-claims"))

        async def scenario(pilot) -> None:
            for _ in item_ids:
                seen.extend([rendered_text(app.screen), screen_text(app)])
                await pilot.press("right_square_bracket")
                await settle(pilot)
            seen.extend([rendered_text(app.screen), screen_text(app)])

        drive(app, scenario)
        return seen

    reviewer_seen = walk(AuditScreen, reviewers[0])
    assert sum(f"#{n}  case-" in text for text in reviewer_seen for n in range(1, 5)) >= 4  # every item shown
    dispute(url, "audit-claims", reviewers, item_ids)
    adjudicator_seen = walk(AdjudicationScreen, adjudicator)
    assert all(any(f"#{item_id}  case-" in text for text in adjudicator_seen) for item_id in item_ids)
    for text in reviewer_seen + adjudicator_seen:
        assert "Trajectory" in text and "Receipts" in text
        assert "banking-" not in text and "-benign" not in text  # the alias, never the case id
        for mark in JUDGE_MARKS:
            assert mark not in text, mark
    assert calls == []  # the judges' mismatch rules never ran for these screens


def test_blinded_panes_refuse_judge_hints():
    panes = EvidencePanes(judge_hints=False)
    with pytest.raises(ValueError, match="no judge hints"):
        panes.load([], [], [], labels=[])
    with pytest.raises(ValueError, match="no judge hints"):
        panes.load([], [], [], mismatches=[SOMETHING])
    with pytest.raises(ValueError, match="no judge hints"):
        panes.set_mismatches([SOMETHING])


# ---------------------------------------------------------------- safe labelling


def test_a_stray_key_never_writes_a_label(audited):
    """h pressed on a pane only stages a label; a note typed while a pane has focus goes into the note field
    (and its h / n / u never stage, its Enter never saves); the note field's own text triggers no binding; a
    stray c on a labelled item cannot save a correction."""
    url, reviewers = audited["url"], ("sam", "sue")
    item_ids = fresh_audit(url, audited["run_id"], "audit-stray", reviewers, "ash")
    app = ScreenHost(url, reviewers[0], lambda: AuditScreen(audit_id="audit-stray"))

    async def scenario(pilot) -> None:
        screen = app.screen
        note = screen.query_one("#audit-note", Input)
        assert screen.current.item_id == item_ids[0]
        # h with focus on the trajectory pane: staged and named, not written
        screen.set_focus(screen.query_one("#trajectory"))
        await pilot.press("h")
        await settle(pilot)
        assert "press Enter to save harmful for item #1, Esc to cancel" in screen_text(app)
        assert labels_by(url, "audit-stray", reviewers[0]) == []
        await pilot.press("escape")
        await settle(pilot)
        assert screen.staged is None and "cancelled: nothing was saved" in screen_text(app)
        # a word made only of this screen's keys, then Enter: h stages, the m drops it (and maximises)
        await type_on(pilot, "#trajectory", "hmm")
        assert screen.staged is None and "not saved: another key came before Enter" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert labels_by(url, "audit-stray", reviewers[0]) == []
        # a note typed into the receipts pane, ending with Enter: every letter lands in the note field
        await type_on(pilot, "#receipts", "harmless, nothing sent to anyone")
        assert note.value == "harmless, nothing sent to anyone"
        assert screen.staged is None and screen.focused is note
        await pilot.press("enter")  # leaves the note field, saves nothing
        await settle(pilot)
        assert screen.focused is not note and screen.staged is None
        # the queue list too: it would take Enter as "select"; the note field keeps the text
        await type_on(pilot, "#audit-queue", " then un-hun")
        await pilot.press("enter")
        await settle(pilot)
        assert note.value == "harmless, nothing sent to anyone then un-hun"
        # typed into the note field itself: label, move, correct and help keys are off and only text
        await type_on(pilot, "#audit-note", " [h][n][u] c ?")
        active = screen.active_bindings
        assert all(key not in active or not active[key].enabled for key in ("h", "n", "u", "c", "right_square_bracket"))
        # off by the screen's own rule too, so a label key remapped to a non-printable key is off as well
        assert screen.check_action("stage", ("harmful",)) is None and screen.check_action("correct", ()) is None
        assert note.value.endswith(" [h][n][u] c ?") and screen.current.item_id == item_ids[0]
        assert app.screen is screen and screen.staged is None
        await pilot.press("enter")
        await settle(pilot)
        assert labels_by(url, "audit-stray", reviewers[0]) == []
        # a real label, then a stray c: the correction dialog opens with no label chosen, and typing plus
        # Enter in its reason field cannot save a correction
        await pilot.press("u", "enter")
        await settle(pilot)
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.current.item_id == item_ids[0]
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, CorrectionDialog)
        await pilot.press(*"oops wrong window", "enter")
        await settle(pilot)
        assert isinstance(app.screen, CorrectionDialog) and "choose the corrected label" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen

    drive(app, scenario)
    assert labels_by(url, "audit-stray", reviewers[0]) == [
        (item_ids[0], "unsure", "harmless, nothing sent to anyone then un-hun [h][n][u] c ?", 1, None)
    ]


class FakeHost(App):
    """A host for one screen fed by an in-memory fake of its store interface: no database, no app-wide store."""

    def __init__(self, reviewer: str, make: Callable[[], Screen]) -> None:
        super().__init__()
        self.reviewer = reviewer
        self.make = make

    def on_mount(self) -> None:
        self.push_screen(self.make())


def test_the_confirm_key_writes_exactly_one_label():
    """Keys, staging and confirmation are the screen's own: it runs on an in-memory `AuditQueue` (tests/fakes.py),
    which keeps labels write-once as the store does, instead of a judged run and a drawn audit."""
    item_ids = [11, 12, 13, 14]
    queue = FakeAuditQueue("audit-confirm", "tess", [blinded_item(item_id) for item_id in item_ids])
    saved: list[LabelSaved] = []
    app = FakeHost("tess", lambda: AuditScreen(audit_id="audit-confirm", store=queue))

    async def scenario(pilot) -> None:
        screen = app.screen
        await pilot.press("h", "n")  # a second key changes the staged label, still nothing is written
        await settle(pilot)
        assert "press Enter to save not harmful for item #1, Esc to cancel" in screen_text(app)
        assert "Save" in screen_text(app)  # the footer offers Enter now
        assert queue.written() == []
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("enter")  # nothing staged any more: a second Enter writes nothing
        await settle(pilot)
        assert queue.written() == [(item_ids[0], "not_harmful", "", 1, None)]
        assert "item #1 labelled: not harmful" in screen_text(app)
        assert screen.current.item_id == item_ids[1]  # on to the next unlabelled item
        # staged on #2, then moving away: the staging is dropped, Enter on #3 writes nothing
        await pilot.press("h", "right_square_bracket")
        await settle(pilot)
        assert screen.current.item_id == item_ids[2] and screen.staged is None
        assert "harmful for item #2 not saved" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        # staged, then another key (maximising a pane): dropped, and Enter on the maximised pane writes nothing
        await pilot.press("u")
        screen.set_focus(screen.query_one("#trajectory"))
        await pilot.press("m")
        await settle(pilot)
        assert screen.maximized is not None and screen.staged is None
        await pilot.press("enter")
        await settle(pilot)
        assert queue.written() == [(item_ids[0], "not_harmful", "", 1, None)]
        # a label chosen on a maximised pane brings the prompt back into view before Enter can write it
        await pilot.press("u")
        await settle(pilot)
        assert screen.maximized is None and "press Enter to save unsure for item #3" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)

    drive(app, scenario, message_hook=lambda m: saved.append(m) if isinstance(m, LabelSaved) else None)
    assert queue.written() == [(item_ids[0], "not_harmful", "", 1, None), (item_ids[2], "unsure", "", 1, None)]
    # Exactly one write per confirmation (the hook sees a message at each node it bubbles through).
    assert [m.item_id for m in {id(m): m for m in saved}.values()] == [item_ids[0], item_ids[2]]


def test_notes_stay_with_the_item_they_were_typed_on(audited):
    """Notes are kept per item across next / previous moves (✎ marks the items holding one), a label is saved
    with its own item's note, and confirming then moving on at once neither carries the note to the next item
    nor clears what that item holds."""
    url, reviewers = audited["url"], ("nora", "ned")
    item_ids = fresh_audit(url, audited["run_id"], "audit-notes", reviewers, "nell")
    app = ScreenHost(url, reviewers[0], lambda: AuditScreen(audit_id="audit-notes"))

    async def move(pilot, key: str) -> None:
        await pilot.press(key)
        await settle(pilot)

    async def scenario(pilot) -> None:
        screen = app.screen
        note = screen.query_one("#audit-note", Input)
        await type_on(pilot, "#audit-note", "note for one")
        await pilot.press("enter")
        await move(pilot, "right_square_bracket")
        assert screen.current.position == 2 and note.value == ""
        assert "your unsaved note stays with item #1" in screen_text(app)
        assert "✎" in str(screen.query_one("#audit-queue", OptionList).get_option_at_index(0).prompt)
        await type_on(pilot, "#audit-note", "note for two")
        await pilot.press("enter")
        await move(pilot, "left_square_bracket")
        assert screen.current.position == 1 and note.value == "note for one"
        await move(pilot, "right_square_bracket")
        assert screen.current.position == 2 and note.value == "note for two"
        await move(pilot, "right_square_bracket")
        await type_on(pilot, "#audit-note", "note for three")  # typed on #3
        await pilot.press("enter")
        await move(pilot, "right_square_bracket")
        assert screen.current.position == 4 and note.value == ""
        await move(pilot, "left_square_bracket")
        assert note.value == "note for three"
        # label #3 and move on at once: the write carries #3's note; #4 keeps its own (empty) field
        await pilot.press("h", "enter", "right_square_bracket")
        await settle(pilot)
        assert screen.current.position == 4 and note.value == ""
        await move(pilot, "left_square_bracket")
        await move(pilot, "left_square_bracket")
        assert screen.current.position == 2 and note.value == "note for two"
        await pilot.press("n", "enter")
        await settle(pilot)
        assert screen.current.position == 4  # on to the next unlabelled item (#3 is labelled)
        for _ in range(3):
            await move(pilot, "left_square_bracket")
        assert screen.current.position == 1 and note.value == "note for one"
        await pilot.press("u", "enter")
        await settle(pilot)

    drive(app, scenario)
    assert sorted(labels_by(url, "audit-notes", reviewers[0])) == sorted(
        [
            (item_ids[2], "harmful", "note for three", 1, None),
            (item_ids[1], "not_harmful", "note for two", 1, None),
            (item_ids[0], "unsure", "note for one", 1, None),
        ]
    )


# ---------------------------------------------------------------- adjudicator corrections


def test_the_adjudicator_decides_with_a_confirm_key_and_corrects_with_a_reason():
    """On an in-memory `AdjudicationQueue` (tests/fakes.py): two disputed items, decisions write-once."""
    item_ids = [21, 22]
    disputed = {item_id: {"A": "harmful", "B": "not_harmful"} for item_id in item_ids}
    queue = FakeAdjudicationQueue(
        "audit-adjudicate", "cal", [blinded_item(item_id) for item_id in item_ids], first=disputed
    )
    app = FakeHost("cal", lambda: AdjudicationScreen(audit_id="audit-adjudicate", store=queue))

    async def scenario(pilot) -> None:
        screen = app.screen
        first = screen.current.item_id
        assert first == item_ids[0]
        await pilot.press("c")  # nothing decided yet: nothing to correct
        await settle(pilot)
        assert "nothing to correct: decide the item first" in screen_text(app)
        await type_on(pilot, "#adj-evidence #trajectory", "r2 paid the attacker")  # typing on a pane: the note
        await pilot.press("enter")
        await settle(pilot)
        assert queue.written() == []
        await pilot.press("h", "enter")
        await settle(pilot)
        assert f"item {first} decided: harmful" in screen_text(app)
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.current.item_id == first
        await pilot.press("n")
        await settle(pilot)
        assert "already decided" in screen_text(app) and "press c to correct" in screen_text(app)
        await pilot.press("c")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, CorrectionDialog) and "Correct your decision on item" in screen_text(app)
        dialog.query_one(Select).value = "not_harmful"
        dialog.query_one("#correction-reason", Input).value = "r1 was the refund, not the transfer"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen and screen.current.item_id == first
        assert "corrected (version 2): not harmful" in screen_text(app)
        assert "decision: not harmful (corrected, version 2)" in rendered_text(screen)  # (wrapped on screen)

    drive(app, scenario)
    assert queue.written() == [
        (item_ids[0], "harmful", "r2 paid the attacker", 1, None),
        (item_ids[0], "not_harmful", "", 2, "r1 was the refund, not the transfer"),
    ]


def test_adjudicate_and_adjudications_commands(audited):
    url, reviewers, adjudicator = audited["url"], ("cleo", "cory"), "dora"
    item_ids = fresh_audit(url, audited["run_id"], "audit-cli", reviewers, adjudicator, limit=2)
    dispute(url, "audit-cli", reviewers, item_ids[:1])  # the second item is agreed on: not in the queue
    with open_store(url) as store:
        store.submit_label("audit-cli", item_ids[1], reviewers[0], "harmful")
        store.submit_label("audit-cli", item_ids[1], reviewers[1], "harmful")
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(audit_app, [*args, "--db", url])

    listed = run("adjudications", "audit-cli", "--adjudicator", adjudicator, "--json")
    assert listed.exit_code == 0, listed.output
    assert [(row["item_id"], row["A"], row["B"], row["decision"]) for row in json.loads(listed.stdout)["items"]] == [
        (item_ids[0], "harmful", "not_harmful", None)
    ]
    table = run("adjudications", "audit-cli", "--adjudicator", adjudicator)
    assert table.exit_code == 0 and "1 disputed items, 0 decided" in table.stdout
    for text in (listed.stdout, table.stdout):
        for forbidden in (*reviewers, "reviewer's note", RATIONALE, "sim/"):
            assert forbidden not in text, forbidden

    item = str(item_ids[0])
    decided = run(
        "adjudicate", "audit-cli", item, "harmful", "--note", "r2 moved the money", "--adjudicator", adjudicator
    )
    assert decided.exit_code == 0, decided.output
    assert decided.stdout.strip() == f"item {item} decided: harmful (version 1)"
    refusals = {
        "a second decision": (
            ("adjudicate", "audit-cli", item, "not_harmful", "--adjudicator", adjudicator),
            "write-once",
        ),
        "a correction without a reason": (
            ("adjudicate", "audit-cli", item, "unsure", "--correct", "--adjudicator", adjudicator),
            "a correction needs a reason",
        ),
        "a reason without --correct": (
            ("adjudicate", "audit-cli", item, "unsure", "--reason", "why", "--adjudicator", adjudicator),
            "add --correct",
        ),
        "no name": (("adjudicate", "audit-cli", item, "unsure"), "--adjudicator NAME"),
        "someone else": (
            ("adjudicate", "audit-cli", item, "unsure", "--adjudicator", reviewers[0]),
            "is not the adjudicator",
        ),
        "a bad label": (("adjudicate", "audit-cli", item, "maybe", "--adjudicator", adjudicator), "bad label"),
        "an agreed item": (
            ("adjudicate", "audit-cli", str(item_ids[1]), "unsure", "--adjudicator", adjudicator),
            "is not in",
        ),
        "an unknown audit": (("adjudications", "audit-none", "--adjudicator", adjudicator), "no audit"),
    }
    for what, (args, expected) in refusals.items():
        result = run(*args)
        assert result.exit_code == 2, what
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], (what, result.stderr)
    corrected = run(
        "adjudicate",
        "audit-cli",
        item,
        "not_harmful",
        "--correct",
        "--reason",
        "misread r2",
        "--adjudicator",
        adjudicator,
        "--json",
    )
    assert corrected.exit_code == 0, corrected.output
    assert {k: json.loads(corrected.stdout)[k] for k in ("label", "version", "corrected")} == {
        "label": "not_harmful",
        "version": 2,
        "corrected": True,
    }
    assert decisions(url, "audit-cli") == [
        (item_ids[0], "harmful", "r2 moved the money", 1, None),
        (item_ids[0], "not_harmful", "", 2, "misread r2"),
    ]
    listed = run("adjudications", "audit-cli", "--adjudicator", adjudicator, "--json")
    assert json.loads(listed.stdout)["items"][0]["decision"] == "not_harmful"


def test_the_help_lists_the_confirm_and_correct_keys(snapshot_store):
    """Each screen's help table lists its own keys, the shared confirm and cancel keys included."""
    for make, name, expected in (
        (
            lambda: AuditScreen(audit_id="audit-snapshot"),
            "snap",
            ("label-harmful", "confirm-label", "cancel-label", "correct"),
        ),
        (
            lambda: AdjudicationScreen(audit_id="audit-snapshot"),
            "judge-free",
            ("decide-harmful", "confirm-label", "cancel-label", "correct-decision"),
        ),
    ):
        app = ScreenHost(snapshot_store, name, make)

        async def scenario(pilot, expected: tuple[str, ...] = expected) -> None:
            screen_name = pilot.app.screen.NAME
            await pilot.app.push_screen(HelpScreen(screen_name))
            await settle(pilot)
            table = pilot.app.screen.query_one("#help-keys", DataTable)
            rows = {
                str(table.get_row_at(i)[1]): [str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)
            }
            for binding_id in expected:
                assert binding_id in rows, binding_id
            assert rows["confirm-label"][0] in ("enter", "⏎") and "Write the" in rows["confirm-label"][2]
            assert "Enter saves it" in rows[expected[0]][2]
            assert "choose" in screen_text(pilot.app).lower()

        drive(app, scenario)


# ---------------------------------------------------------------- snapshot


@pytest.fixture(scope="module")
def snapshot_store(audited, tmp_path_factory) -> str:
    """The same run with an audit of fixed id and fixed queue order (by rollout id) in a store of its own."""
    url = audited["url"]
    config = config_for("state")
    with open_store(url) as store:
        rows = sorted(
            store.labelled_rows(audited["run_id"], config.config_hash, "rule"), key=lambda r: (r.case_id, r.model)
        )[:4]
        items = [
            AuditItemRecord(
                rollout_id=row.rollout_id,
                stratum="all",
                population=len(rows),
                sampled=len(rows),
                weight=1.0,
                positions={"snap": n, "other": len(rows) + 1 - n},
            )
            for n, row in enumerate(rows, start=1)
        ]
        # Aliases, item ids and evidence tags are random; the snapshot needs fixed ones.
        fixed = iter(f"case-5a1f0c{n:02x}" for n in range(len(items)))
        tags = iter(f"ev-0c1d2e{n:02x}" for n in range(len(items)))
        with (
            mock.patch("redagent.store.audit.new_alias", lambda taken: next(fixed)),
            mock.patch("redagent.store.audit._new_item_ids", lambda conn, count: list(range(901, 901 + count))),
            mock.patch("redagent.store.audit.new_evidence_tag", lambda: next(tags)),
        ):
            store.create_audit(
                AuditRecord(
                    id="audit-snapshot",
                    run_id=audited["run_id"],
                    config_name=config.name,
                    config_hash=config.config_hash,
                    backbone="rule",
                    seed=0,
                    n=len(items),
                    stratify=[],
                    reviewers=["snap", "other"],
                    adjudicator="judge-free",
                ),
                items,
            )
    return url


def test_audit_screen_snapshot(snapshot_store, snap_compare):
    async def ready(pilot) -> None:
        await settle(pilot)

    app = ScreenHost(snapshot_store, "snap", lambda: AuditScreen(audit_id="audit-snapshot"))
    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


def test_q_asks_before_it_drops_unsaved_notes(audited):
    """Quitting with a note typed but no label saved asks first; `escape` keeps the console and the note."""
    from redagent.console.app import ConfirmQuit, RedAgentApp

    url, reviewers = audited["url"], ("quinn", "quentin")
    fresh_audit(url, audited["run_id"], "audit-quit-notes", reviewers, "queenie")
    app = RedAgentApp(url, reviewer=reviewers[0], role="reviewer")

    async def scenario(pilot) -> None:
        for _ in range(50):  # the queue is read by a worker: until its first item is on screen
            if isinstance(app.screen, AuditScreen) and app.screen.current:
                break
            await settle(pilot)
        screen = app.screen
        await type_on(pilot, "#audit-note", "half a thought")
        screen.set_focus(screen.query_one("#audit-queue"))
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmQuit)
        assert "unsaved notes on 1 item" in str(app.screen.query_one("#confirm-quit-text", Static).content)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and screen.query_one("#audit-note", Input).value == "half a thought"
        assert app.is_running

    drive(app, scenario)
