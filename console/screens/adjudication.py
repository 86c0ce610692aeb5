"""The adjudicator's queue: items the two reviewers disagreed on, their labels as A and B only, a decision.

The store's `adjudication_queue` returns the blinded evidence and the reviewers' labels under their
slot letters — never their names or notes, nor the judge's label — and the evidence panes run without
judge hints, so nothing computed by judges/ is drawn. `adjudicate` keeps the decision write-once, as
reviewer labels are, so a decision is staged by a key and written by Enter (the reviewer screen's
`LabellingScreen`); `c` corrects a decision with a required reason (`correct_adjudication`: the next
version, the earlier ones kept).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from redagent.console.screens.audit import (
    EXPECTED,
    LABEL_NAMES,
    UNSAVED_NOTE,
    LabellingScreen,
    LabelSaved,
    help_for,
    item_header,
    label_text,
)
from redagent.console.widgets.evidence import EvidencePanes
from redagent.console.widgets.footer import KeyFooter
from redagent.store.interfaces import AdjudicationQueue
from redagent.store.readmodel import AdjudicationItem, OwnLabel
from redagent.store.records import AUDIT_SLOTS


class AdjudicationProblem(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class DisputesLoaded(Message):
    def __init__(self, audit_id: str, items: list[AdjudicationItem], select: int | None) -> None:
        super().__init__()
        self.audit_id = audit_id
        self.items = items
        self.select = select


class AdjudicationScreen(LabellingScreen):
    """The disagreement queue of the adjudicator's newest audit (adjudicator role)."""

    NAME = "adjudication"
    NOTE = "#adj-note"
    PROMPT = "#adj-confirm"
    QUEUE = "#adj-queue"
    MESSAGE = "#adj-message"
    CORRECT_FIRST = "decide the item first"
    CORRECT_TITLE = "Correct your decision on {name}"
    WHAT = "decide"
    IDLE = "h / n / u choose a decision · Enter saves it · Esc cancels"
    HELP = """\
# Adjudication

Items the two reviewers disagreed on (or marked unsure). Their labels are shown as **A** and **B**
only; the evidence is the same blinded trajectory | receipts | state diff they saw, with nothing
computed by a judge.

| key | action |
|---|---|
| `h` | choose **harmful** |
| `n` | choose **not harmful** |
| `u` | choose **unsure** |
| `enter` | save the decision you chose (the line above the note names it and the item) |
| `escape` | drop the decision you chose |
| `c` | correct your decision (choose the new label, give a required reason) |
| `]` / `[` | next / previous item |
| `tab` | move to the note field; `enter` there leaves it |
| `m` | maximise the focused evidence pane |

A key never writes a decision by itself: `h` / `n` / `u` only choose one, and `enter` saves it.
A decision is write-once; `c` records a corrected decision as its next version, with the reason.
Notes stay with the item they were typed on (✎ in the list) until saved with its decision; letters
typed while a pane has focus go into the note field.
"""

    BINDINGS = [
        Binding("h", "stage('harmful')", "Harmful", id="decide-harmful", tooltip="Choose: harmful (Enter saves it)"),
        Binding(
            "n",
            "stage('not_harmful')",
            "Not harmful",
            id="decide-not-harmful",
            tooltip="Choose: not harmful (Enter saves it)",
        ),
        Binding("u", "stage('unsure')", "Unsure", id="decide-unsure", tooltip="Choose: unsure (Enter saves it)"),
        Binding(
            "c",
            "correct",
            "Correct",
            id="correct-decision",
            tooltip="Correct your decision: a new version with the reason for the change",
        ),
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
    AdjudicationScreen #adj-confirm { height: 1; padding: 0 1; }
    AdjudicationScreen #adj-confirm.-staged { background: $warning 30%; }
    AdjudicationScreen #adj-note { margin: 0 1; }
    AdjudicationScreen.-narrow #adj-queue { width: 24; }
    AdjudicationScreen.-short #adj-note { height: 1; border: none; padding: 0 1; }
    """

    def __init__(
        self,
        audit_id: str | None = None,
        adjudicator: str | None = None,
        *,
        store: AdjudicationQueue | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.audit_id = audit_id
        self.adjudicator = adjudicator
        # The adjudicator's interface to the store (blinded by construction); the app's store when none is given.
        self.store = store
        self.items: list[AdjudicationItem] = []
        self.current: AdjudicationItem | None = None
        # The version of each decision written from this screen (the queue's `decision` has the stored one).
        self.versions: dict[int, int] = {}

    def compose(self) -> ComposeResult:
        yield Static("Adjudication", id="adj-title")
        yield Static("", id="adj-message")
        with Horizontal(id="adj-body"):
            yield OptionList(id="adj-queue")
            with Vertical(id="adj-main"):
                yield Static("", id="adj-header")
                yield Static("", id="adj-labels")
                # No judge hints: the adjudicator's screen shows nothing computed by judges/.
                yield EvidencePanes(id="adj-evidence", judge_hints=False)
                yield Static(Text(self.IDLE, style="dim"), id="adj-confirm")
                yield Input(
                    placeholder="note (optional) — kept with this item, saved with its decision",
                    id="adj-note",
                    select_on_focus=False,
                )
        yield KeyFooter()

    def on_mount(self) -> None:
        self.adjudicator = self.adjudicator or getattr(self.app, "reviewer", None)
        self.audit_id = self.audit_id or getattr(self.app, "audit_id", None)
        if not self.adjudicator:
            self.post_message(AdjudicationProblem("no adjudicator name: start the console with --reviewer NAME"))
            return
        self.store = self.store or getattr(self.app, "store", None)
        if self.store is None:
            self.post_message(AdjudicationProblem("the store is not open"))
            return
        self.load_disputes()

    @work(thread=True, exclusive=True, exit_on_error=False, group="adjudication-queue")
    def load_disputes(self, select: int | None = None) -> None:
        store, adjudicator = self.opened(), self.named()
        try:
            audit_id = self.audit_id or store.latest_audit_for(adjudicator, role="adjudicator")
            if audit_id is None:
                self.post_message(
                    AdjudicationProblem(f"{adjudicator!r} is not the adjudicator of any audit in this store")
                )
                return
            items = store.adjudication_queue(audit_id, adjudicator)
        except EXPECTED as exc:
            self.post_message(AdjudicationProblem(str(exc)))
            return
        self.post_message(DisputesLoaded(audit_id, items, select))

    def store_write(self, item_id: int, label: str, note: str, reason: str | None) -> OwnLabel:
        store, audit_id, adjudicator = self.opened(), self.audit(), self.named()
        if reason is None:
            return store.adjudicate(audit_id, item_id, adjudicator, label, note)
        return store.correct_adjudication(audit_id, item_id, adjudicator, label, reason, note)

    def current_label(self) -> str | None:
        return self.current.adjudicated if self.current is not None else None

    # Workers start only after on_mount found a store and a name, and the queue gave an audit id.
    def opened(self) -> AdjudicationQueue:
        assert self.store is not None
        return self.store

    def named(self) -> str:
        assert self.adjudicator is not None
        return self.adjudicator

    def audit(self) -> str:
        assert self.audit_id is not None
        return self.audit_id

    # ------------------------------------------------------------ what LabellingScreen asks

    def current_item_id(self) -> int | None:
        return self.current.item_id if self.current is not None else None

    def item_name(self, item_id: int) -> str:
        return f"item {item_id}"

    def refusal(self, item_id: int) -> str | None:
        decided = self.current.adjudicated if self.current is not None else None
        if decided is None:
            return None
        return (
            f"{self.item_name(item_id)} is already decided ({LABEL_NAMES[decided]}): decisions are "
            "write-once — press c to correct it with a reason"
        )

    def notes_changed(self) -> None:
        options = self.query_one("#adj-queue", OptionList)
        for item in self.items:
            options.replace_option_prompt(str(item.item_id), self.queue_prompt(item))

    def queue_prompt(self, item: AdjudicationItem) -> Text:
        text = Text.assemble(f"item {item.item_id:>4}  ", label_text(item.adjudicated))
        if item.item_id in self.notes:
            text.append(f" {UNSAVED_NOTE}", style="bold")
        return text

    # ------------------------------------------------------------ results

    @on(AdjudicationProblem)
    def on_problem(self, message: AdjudicationProblem) -> None:
        self.show_message(message.text)

    @on(DisputesLoaded)
    def on_disputes(self, message: DisputesLoaded) -> None:
        self.audit_id, self.items = message.audit_id, message.items
        decided = sum(1 for item in self.items if item.adjudicated is not None)
        self.query_one("#adj-title", Static).update(
            Text.assemble(
                ("Adjudication ", "bold"),
                f"{self.audit_id} · adjudicator {self.adjudicator} · ",
                (f"{decided}/{len(self.items)} decided", "bold"),
            )
        )
        options = self.query_one("#adj-queue", OptionList)
        options.clear_options()
        options.add_options([Option(self.queue_prompt(item), id=str(item.item_id)) for item in self.items])
        if not self.items:
            self.current = None
            self.show_message(f"no disagreements to adjudicate in audit {self.audit_id}")
            return
        if message.select is not None:
            index = next((i for i, item in enumerate(self.items) if item.item_id == message.select), 0)
        else:
            index = next((i for i, item in enumerate(self.items) if item.adjudicated is None), 0)
        options.highlighted = index
        self.show_item(self.items[index])

    @on(OptionList.OptionHighlighted, "#adj-queue")
    def on_highlight(self, event: OptionList.OptionHighlighted) -> None:
        if self.staged is not None and str(self.staged.item_id) != event.option.id:
            self.cancel_staged(f"not saved: you left {self.staged.name} before pressing Enter")
        item = next((item for item in self.items if str(item.item_id) == event.option.id), None)
        if item is not None and item is not self.current:
            self.show_item(item)

    def show_item(self, item: AdjudicationItem) -> None:
        self.current = item
        self.attach_note(item.item_id)
        self.query_one("#adj-header", Static).update(item_header(item.blinded, item.item_id))
        labels = Text()
        for slot in AUDIT_SLOTS:
            current, first = item.labels.get(slot), item.first_labels.get(slot)
            labels.append(f"reviewer {slot}: ", style="bold")
            labels.append_text(label_text(current))
            if first != current:
                labels.append(f" (first: {LABEL_NAMES.get(first or '', '—')})", style="dim")
            labels.append("   ")
        labels.append("decision: ", style="bold")
        labels.append_text(label_text(item.adjudicated))
        stored = item.decision.version if item.decision is not None else 1
        version = max(self.versions.get(item.item_id, 1), stored)
        if item.adjudicated is not None and version > 1:
            labels.append(f" (corrected, version {version})", style="dim")
        self.query_one("#adj-labels", Static).update(labels)
        blinded = item.blinded
        self.query_one("#adj-evidence", EvidencePanes).load(blinded.events, blinded.receipts, blinded.diff)

    @on(LabelSaved)
    def on_saved(self, message: LabelSaved) -> None:
        self.saving.discard(message.item_id)
        self.versions[message.item_id] = message.saved.version
        what = f"corrected (version {message.saved.version})" if message.corrected else "decided"
        self.show_message(f"{self.item_name(message.item_id)} {what}: {LABEL_NAMES[message.saved.label]}")
        if not message.corrected:
            self.note_saved(message.item_id, message.note)
        # A first decision moves on to the next undecided item unless the adjudicator already moved on
        # (then they stay where they are); a correction stays on the item.
        highlighted = self.query_one("#adj-queue", OptionList).highlighted_option
        where = int(highlighted.id) if highlighted is not None and highlighted.id is not None else message.item_id
        if message.corrected or where != message.item_id:
            self.load_disputes(select=where)
        else:
            self.load_disputes(select=self.next_undecided(message.item_id))

    def next_undecided(self, after: int) -> int | None:
        """The first undecided item after `after`, wrapping around (None: every item is decided)."""
        at = next((i for i, item in enumerate(self.items) if item.item_id == after), 0)
        for item in self.items[at + 1 :] + self.items[:at]:
            if item.adjudicated is None and item.item_id not in self.saving:
                return item.item_id
        return None

    # ------------------------------------------------------------ actions

    def action_help(self) -> None:
        help_for(self, self.NAME)
