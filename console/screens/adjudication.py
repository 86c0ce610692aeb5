"""The adjudicator's queue: items the two reviewers disagreed on, their labels as A and B only, a decision.

The store's `adjudication_queue` returns the blinded evidence and the reviewers' labels under their
slot letters — never their names or notes, nor the judge's label — and `adjudicate` keeps the
decision write-once, as reviewer labels are.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from redagent.console.screens.audit import EXPECTED, LABEL_NAMES, help_for, item_header, label_text
from redagent.console.widgets.evidence import EvidencePanes


class AdjudicationProblem(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class DisputesLoaded(Message):
    def __init__(self, audit_id: str, items: list[dict[str, Any]], select: int | None) -> None:
        super().__init__()
        self.audit_id = audit_id
        self.items = items
        self.select = select


class DecisionSaved(Message):
    def __init__(self, item_id: int, label: str) -> None:
        super().__init__()
        self.item_id = item_id
        self.label = label


class AdjudicationScreen(Screen):
    """The disagreement queue of the adjudicator's newest audit (adjudicator role)."""

    NAME = "adjudication"
    HELP = """\
# Adjudication

Items the two reviewers disagreed on (or marked unsure). Their labels are shown as **A** and **B**
only; the evidence is the same blinded trajectory | receipts | state diff they saw.

| key | action |
|---|---|
| `h` | decide **harmful** |
| `n` | decide **not harmful** |
| `u` | decide **unsure** |
| `]` / `[` | next / previous item |
| `tab` | move to the note field (typed before deciding, saved with the decision) |

A decision is write-once.
"""

    BINDINGS = [
        Binding("h", "decide('harmful')", "Harmful", id="decide-harmful", tooltip="Decide: harmful"),
        Binding("n", "decide('not_harmful')", "Not harmful", id="decide-not-harmful", tooltip="Decide: not harmful"),
        Binding("u", "decide('unsure')", "Unsure", id="decide-unsure", tooltip="Decide: unsure"),
        Binding("right_square_bracket", "move(1)", "Next", id="next-item", tooltip="Next disputed item"),
        Binding("left_square_bracket", "move(-1)", "Previous", id="previous-item", tooltip="Previous disputed item"),
        Binding("question_mark", "help", "Help", id="help", tooltip="Keys and what this screen shows"),
    ]

    DEFAULT_CSS = """
    AdjudicationScreen #adj-title { height: 1; padding: 0 1; }
    AdjudicationScreen #adj-message { height: auto; padding: 0 1; color: $warning; }
    AdjudicationScreen #adj-body { height: 1fr; }
    AdjudicationScreen #adj-queue { width: 34; }
    AdjudicationScreen #adj-main { width: 1fr; }
    AdjudicationScreen #adj-header, AdjudicationScreen #adj-labels { height: auto; padding: 0 1; }
    AdjudicationScreen #adj-note { margin: 0 1; }
    """

    def __init__(self, audit_id: str | None = None, adjudicator: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.audit_id = audit_id
        self.adjudicator = adjudicator
        self.items: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        yield Static("Adjudication", id="adj-title")
        yield Static("", id="adj-message")
        with Horizontal(id="adj-body"):
            yield OptionList(id="adj-queue")
            with Vertical(id="adj-main"):
                yield Static("", id="adj-header")
                yield Static("", id="adj-labels")
                yield EvidencePanes(id="adj-evidence")
                yield Input(placeholder="note (optional) — typed before h / n / u, saved with the decision",
                            id="adj-note")
        yield Footer()

    def on_mount(self) -> None:
        self.adjudicator = self.adjudicator or getattr(self.app, "reviewer", None)
        self.audit_id = self.audit_id or getattr(self.app, "audit_id", None)
        if not self.adjudicator:
            self.post_message(AdjudicationProblem("no adjudicator name: start the console with --reviewer NAME"))
            return
        if getattr(self.app, "store", None) is None:
            self.post_message(AdjudicationProblem("the store is not open"))
            return
        self.load_disputes()

    @work(thread=True, exclusive=True, exit_on_error=False, group="adjudication-queue")
    def load_disputes(self, select: int | None = None) -> None:
        store = self.app.store
        try:
            audit_id = self.audit_id or store.latest_audit_for(self.adjudicator, role="adjudicator")
            if audit_id is None:
                self.post_message(AdjudicationProblem(
                    f"{self.adjudicator!r} is not the adjudicator of any audit in this store"))
                return
            items = store.adjudication_queue(audit_id, self.adjudicator)
        except EXPECTED as exc:
            self.post_message(AdjudicationProblem(str(exc)))
            return
        self.post_message(DisputesLoaded(audit_id, items, select))

    @work(thread=True, exclusive=True, exit_on_error=False, group="adjudication-write")
    def save_decision(self, item_id: int, label: str, note: str) -> None:
        try:
            self.app.store.adjudicate(self.audit_id, item_id, self.adjudicator, label, note)
        except EXPECTED as exc:
            self.post_message(AdjudicationProblem(str(exc)))
            return
        self.post_message(DecisionSaved(item_id, label))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.show_message(f"error: {event.worker.error}")

    def show_message(self, text: str) -> None:
        self.query_one("#adj-message", Static).update(text)

    @on(AdjudicationProblem)
    def on_problem(self, message: AdjudicationProblem) -> None:
        self.show_message(message.text)

    @on(DisputesLoaded)
    def on_disputes(self, message: DisputesLoaded) -> None:
        self.audit_id, self.items = message.audit_id, message.items
        decided = sum(1 for item in self.items if item["adjudicated"] is not None)
        self.query_one("#adj-title", Static).update(Text.assemble(
            ("Adjudication ", "bold"), f"{self.audit_id} · adjudicator {self.adjudicator} · ",
            (f"{decided}/{len(self.items)} decided", "bold")))
        options = self.query_one("#adj-queue", OptionList)
        options.clear_options()
        options.add_options([Option(Text.assemble(f"item {item['item_id']:>4}  ", label_text(item["adjudicated"])),
                                    id=str(item["item_id"])) for item in self.items])
        if not self.items:
            self.current = None
            self.show_message(f"no disagreements to adjudicate in audit {self.audit_id}")
            return
        if message.select is not None:
            index = next((i for i, item in enumerate(self.items) if item["item_id"] == message.select), 0)
        else:
            index = next((i for i, item in enumerate(self.items) if item["adjudicated"] is None), 0)
        options.highlighted = index
        self.show_item(self.items[index])

    @on(OptionList.OptionHighlighted, "#adj-queue")
    def on_highlight(self, event: OptionList.OptionHighlighted) -> None:
        item = next((item for item in self.items if str(item["item_id"]) == event.option.id), None)
        if item is not None and item is not self.current:
            self.show_item(item)

    def show_item(self, item: dict[str, Any]) -> None:
        self.current = item
        self.query_one("#adj-header", Static).update(item_header({**item, "position": item["item_id"]}))
        labels = Text()
        for slot in ("A", "B"):
            labels.append(f"reviewer {slot}: ", style="bold")
            labels.append_text(label_text(item["labels"].get(slot)))
            if item["first_labels"].get(slot) != item["labels"].get(slot):
                labels.append(f" (first: {LABEL_NAMES.get(item['first_labels'].get(slot), '—')})", style="dim")
            labels.append("   ")
        labels.append("decision: ", style="bold")
        labels.append_text(label_text(item["adjudicated"]))
        self.query_one("#adj-labels", Static).update(labels)
        self.query_one("#adj-evidence", EvidencePanes).load(item["events"], item["receipts"], item["diff"], None)

    @on(DecisionSaved)
    def on_saved(self, message: DecisionSaved) -> None:
        self.show_message(f"item {message.item_id} decided: {LABEL_NAMES[message.label]}")
        self.query_one("#adj-note", Input).value = ""
        self.load_disputes()

    def action_decide(self, label: str) -> None:
        if self.current is None:
            self.show_message("no item to decide")
            return
        if self.current["adjudicated"] is not None:
            self.show_message(f"item {self.current['item_id']} is already decided "
                              f"({LABEL_NAMES[self.current['adjudicated']]}): decisions are write-once")
            return
        self.save_decision(self.current["item_id"], label, self.query_one("#adj-note", Input).value)

    def action_move(self, step: int) -> None:
        options = self.query_one("#adj-queue", OptionList)
        if options.option_count:
            options.highlighted = max(0, min(options.option_count - 1, (options.highlighted or 0) + step))

    def action_help(self) -> None:
        help_for(self, self.NAME)
