"""The reviewer's blinded audit: their own queue in their own order, the three evidence panes, one-key labels.

Everything shown comes from the store's blinded reviewer queries (`reviewer_queue`, `reviewer_item`),
which never read judge labels, rationales, other reviewers' labels or names; the screen adds nothing
to them. Labels are write-once: a second label on the same item is refused with a message, and the
explicit correction action asks for the new label and a required reason (`store.correct_label`).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input, Label, OptionList, ProgressBar, Select, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from redagent.console.widgets.evidence import EvidencePanes
from redagent.store.errors import AuditError, StoreError

LABEL_NAMES = {"harmful": "harmful", "not_harmful": "not harmful", "unsure": "unsure"}
LABEL_STYLE = {"harmful": "bold red", "not_harmful": "bold green", "unsure": "bold yellow"}
# Errors a reviewer can cause or meet (unknown audit or name, write-once, a database that went away):
# they become one line on screen; anything else is a bug and is reported by on_worker_state_changed.
EXPECTED = (AuditError, StoreError, LookupError, ValueError)


def label_text(label: str | None) -> Text:
    if label is None:
        return Text("unlabelled", style="dim")
    return Text(LABEL_NAMES.get(label, label), style=LABEL_STYLE.get(label, ""))


def item_header(item: dict[str, Any]) -> Text:
    """The blinded case header: only fields the blinded query returned (model / attack only when not blinded)."""
    text = Text()
    text.append(f"#{item['position']}  ", style="bold")
    text.append(f"{item['case_id']}  ", style="bold cyan")
    parts = [f"constraint {item['constraint']}", f"harness {item['harness']}", f"cue {item['cue']}",
             f"defense {item['defense']}", f"surfaces {', '.join(item['surfaces'])}"]
    for field in ("model", "strategy", "vulnerability", "channel"):
        if field in item:
            parts.append(f"{field} {item[field]}")
    text.append(" · ".join(parts), style="dim")
    return text


def help_for(screen: Screen, name: str) -> None:
    """Show the screen's help through the app's help screen (or as a notification in a bare test app)."""
    show = getattr(screen.app, "show", None)
    if callable(show):
        show("help", screen_name=name)
    else:
        screen.notify(getattr(screen, "HELP", ""), title="Help", timeout=10)


class AuditProblem(Message):
    """Something the reviewer must read (unknown name, empty queue, write-once refusal): one line."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class QueueLoaded(Message):
    def __init__(self, audit_id: str, queue: list[dict[str, Any]], select: int | None) -> None:
        super().__init__()
        self.audit_id = audit_id
        self.queue = queue
        self.select = select


class ItemLoaded(Message):
    def __init__(self, item: dict[str, Any]) -> None:
        super().__init__()
        self.item = item


class LabelSaved(Message):
    def __init__(self, item_id: int, saved: dict[str, Any], corrected: bool) -> None:
        super().__init__()
        self.item_id = item_id
        self.saved = saved
        self.corrected = corrected


class CorrectionDialog(ModalScreen[dict[str, str] | None]):
    """Asks for the corrected label and the reason (required); dismisses with {label, reason, note} or None."""

    DEFAULT_CSS = """
    CorrectionDialog { align: center middle; }
    CorrectionDialog > Vertical { width: 70; height: auto; border: thick $accent; padding: 1 2; background: $surface; }
    CorrectionDialog Input, CorrectionDialog Select { margin-bottom: 1; }
    CorrectionDialog #correction-error { color: $error; height: auto; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="cancel-correction", tooltip="Close without correcting")]

    def __init__(self, title: str, current: str | None, choices: dict[str, str]) -> None:
        super().__init__()
        self.title_text = title
        self.current = current
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text)
            yield Select([(name, value) for value, name in self.choices.items()], id="correction-label",
                         prompt="new label", value=self.current if self.current in self.choices else Select.BLANK)
            yield Input(placeholder="reason for the correction (required)", id="correction-reason")
            yield Input(placeholder="note (optional)", id="correction-note")
            yield Static("", id="correction-error")
            with Horizontal():
                yield Button("Save correction", variant="primary", id="correction-save")
                yield Button("Cancel", id="correction-cancel")

    def on_mount(self) -> None:
        self.query_one("#correction-reason", Input).focus()

    @on(Button.Pressed, "#correction-save")
    @on(Input.Submitted)
    def save(self) -> None:
        value = self.query_one("#correction-label", Select).value
        reason = self.query_one("#correction-reason", Input).value.strip()
        if value is Select.BLANK or not isinstance(value, str):
            self.query_one("#correction-error", Static).update("choose the corrected label")
            return
        if not reason:
            self.query_one("#correction-error", Static).update("a correction needs a reason")
            return
        self.dismiss({"label": value, "reason": reason, "note": self.query_one("#correction-note", Input).value})

    @on(Button.Pressed, "#correction-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class AuditScreen(Screen):
    """A reviewer's blinded audit queue (reviewer role)."""

    NAME = "audit"
    HELP = """\
# Audit (blinded)

Your own queue, in your own random order. You see the rollout's trajectory, the service
receipts and the state diff — never the judge's label, its rationale, or the other reviewer.

| key | action |
|---|---|
| `h` | label **harmful** |
| `n` | label **not harmful** |
| `u` | label **unsure** |
| `c` | correct your label (new label and a required reason) |
| `]` / `[` | next / previous item |
| `tab` | move to the note field (typed before labelling, saved with the label) |
| `m` | maximise the focused evidence pane |

Labels are write-once: a second label on the same item is refused; use `c` to correct it.
"""

    BINDINGS = [
        Binding("h", "label('harmful')", "Harmful", id="label-harmful", tooltip="Label this rollout harmful"),
        Binding("n", "label('not_harmful')", "Not harmful", id="label-not-harmful",
                tooltip="Label this rollout not harmful"),
        Binding("u", "label('unsure')", "Unsure", id="label-unsure", tooltip="Label this rollout unsure"),
        Binding("c", "correct", "Correct", id="correct",
                tooltip="Correct your label: a new version with the reason for the change"),
        Binding("right_square_bracket", "move(1)", "Next", id="next-item", tooltip="Next item of your queue"),
        Binding("left_square_bracket", "move(-1)", "Previous", id="previous-item",
                tooltip="Previous item of your queue"),
        Binding("question_mark", "help", "Help", id="help", tooltip="Keys and what this screen shows"),
    ]

    DEFAULT_CSS = """
    AuditScreen #audit-top { height: 1; }
    AuditScreen #audit-title { width: 1fr; padding: 0 1; }
    AuditScreen #audit-progress { width: 40; }
    AuditScreen #audit-body { height: 1fr; }
    AuditScreen #audit-queue { width: 26; }
    AuditScreen #audit-main { width: 1fr; }
    AuditScreen #audit-header { height: auto; padding: 0 1; }
    AuditScreen #audit-mine { height: 1; padding: 0 1; }
    AuditScreen #audit-note { margin: 0 1; }
    AuditScreen #audit-message { height: auto; padding: 0 1; color: $warning; }
    """

    def __init__(self, audit_id: str | None = None, reviewer: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.audit_id = audit_id
        self.reviewer = reviewer
        self.queue: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None  # the item on screen, as reviewer_item returned it

    def compose(self) -> ComposeResult:
        with Horizontal(id="audit-top"):
            yield Static("Audit", id="audit-title")
            yield ProgressBar(id="audit-progress", show_eta=False)
        yield Static("", id="audit-message")
        with Horizontal(id="audit-body"):
            yield OptionList(id="audit-queue")
            with Vertical(id="audit-main"):
                yield Static("", id="audit-header")
                yield Static("", id="audit-mine")
                yield EvidencePanes(id="audit-evidence")
                yield Input(placeholder="note (optional) — typed before h / n / u, saved with the label",
                            id="audit-note")
        yield Footer()

    def on_mount(self) -> None:
        self.reviewer = self.reviewer or getattr(self.app, "reviewer", None)
        self.audit_id = self.audit_id or getattr(self.app, "audit_id", None)
        if not self.reviewer:
            self.post_message(AuditProblem("no reviewer name: start the console with --reviewer NAME"))
            return
        if getattr(self.app, "store", None) is None:
            self.post_message(AuditProblem("the store is not open"))
            return
        self.load_queue()

    # ------------------------------------------------------------ workers (the store is never read on the UI loop)

    @work(thread=True, exclusive=True, exit_on_error=False, group="audit-queue")
    def load_queue(self, select: int | None = None) -> None:
        store = self.app.store
        try:
            audit_id = self.audit_id or store.latest_audit_for(self.reviewer)
            if audit_id is None:
                self.post_message(AuditProblem(f"{self.reviewer!r} is not a reviewer of any audit in this store"))
                return
            queue = store.reviewer_queue(audit_id, self.reviewer)
        except EXPECTED as exc:
            self.post_message(AuditProblem(str(exc)))
            return
        self.post_message(QueueLoaded(audit_id, queue, select))

    @work(thread=True, exclusive=True, exit_on_error=False, group="audit-item")
    def load_item(self, item_id: int) -> None:
        try:
            item = self.app.store.reviewer_item(self.audit_id, item_id, self.reviewer)
        except EXPECTED as exc:
            self.post_message(AuditProblem(str(exc)))
            return
        self.post_message(ItemLoaded(item))

    @work(thread=True, exclusive=True, exit_on_error=False, group="audit-write")
    def save_label(self, item_id: int, label: str, note: str, reason: str | None = None) -> None:
        store = self.app.store
        try:
            if reason is None:
                saved = store.submit_label(self.audit_id, item_id, self.reviewer, label, note)
            else:
                saved = store.correct_label(self.audit_id, item_id, self.reviewer, label, reason, note)
        except EXPECTED as exc:
            self.post_message(AuditProblem(str(exc)))
            return
        self.post_message(LabelSaved(item_id, saved, corrected=reason is not None))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.show_message(f"error: {event.worker.error}")

    # ------------------------------------------------------------ results

    def show_message(self, text: str) -> None:
        self.query_one("#audit-message", Static).update(text)

    @on(AuditProblem)
    def on_problem(self, message: AuditProblem) -> None:
        self.show_message(message.text)

    @on(QueueLoaded)
    def on_queue(self, message: QueueLoaded) -> None:
        self.audit_id = message.audit_id
        self.queue = message.queue
        done = sum(1 for entry in self.queue if entry["labelled"])
        self.query_one("#audit-title", Static).update(
            Text.assemble(("Audit ", "bold"), f"{self.audit_id} · reviewer {self.reviewer} · ",
                          (f"{done}/{len(self.queue)} labelled", "bold")))
        self.query_one("#audit-progress", ProgressBar).update(total=max(len(self.queue), 1), progress=done)
        options = self.query_one("#audit-queue", OptionList)
        options.clear_options()
        options.add_options([Option(Text.assemble(f"{entry['position']:>3}  ", label_text(entry["label"])),
                                    id=str(entry["item_id"])) for entry in self.queue])
        if not self.queue:
            self.show_message(f"the queue of {self.reviewer} in audit {self.audit_id} is empty")
            return
        if message.select is not None:
            index = next(i for i, e in enumerate(self.queue) if e["item_id"] == message.select)
        else:
            index = next((i for i, e in enumerate(self.queue) if not e["labelled"]), 0)
        options.highlighted = index
        if done == len(self.queue) and message.select is None:
            self.show_message("every item of your queue is labelled (c corrects a label)")

    @on(OptionList.OptionHighlighted, "#audit-queue")
    def on_highlight(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None and (self.current is None or str(self.current["item_id"]) != event.option.id):
            self.load_item(int(event.option.id))

    @on(ItemLoaded)
    def on_item(self, message: ItemLoaded) -> None:
        highlighted = self.query_one("#audit-queue", OptionList).highlighted_option
        if highlighted is not None and highlighted.id != str(message.item["item_id"]):
            return  # a slower read for an item the reviewer already moved away from
        self.current = message.item
        self.query_one("#audit-header", Static).update(item_header(message.item))
        self.show_mine()
        # labels=None: the panes draw no judge marks (nothing about judges was read anyway).
        self.query_one("#audit-evidence", EvidencePanes).load(
            message.item["events"], message.item["receipts"], message.item["diff"], None)

    def show_mine(self) -> None:
        mine = self.current["my_label"] if self.current else None
        text = Text.assemble(("your label: ", "bold"), label_text(mine["label"] if mine else None))
        if mine and mine["version"] > 1:
            text.append(f"  (corrected, version {mine['version']})", style="dim")
        if mine and mine["note"]:
            text.append(f"  note: {mine['note']}", style="italic")
        self.query_one("#audit-mine", Static).update(text)

    @on(LabelSaved)
    def on_saved(self, message: LabelSaved) -> None:
        saved = {k: message.saved[k] for k in ("label", "note", "version")}
        if self.current is not None and self.current["item_id"] == message.item_id:
            self.current["my_label"] = saved
            self.show_mine()
        what = "corrected" if message.corrected else "labelled"
        self.show_message(f"item #{self.current['position'] if self.current else '?'} {what}: "
                          f"{LABEL_NAMES[saved['label']]}")
        self.query_one("#audit-note", Input).value = ""
        # A first label moves on to the next unlabelled item; a correction stays on the item.
        self.load_queue(select=message.item_id if message.corrected else None)

    # ------------------------------------------------------------ actions

    def action_label(self, label: str) -> None:
        if self.current is None:
            self.show_message("no item to label")
            return
        if self.current["my_label"] is not None:
            self.show_message(f"item #{self.current['position']} is already labelled "
                              f"({LABEL_NAMES[self.current['my_label']['label']]}): labels are write-once — "
                              "press c to correct it with a reason")
            return
        self.save_label(self.current["item_id"], label, self.query_one("#audit-note", Input).value)

    def action_correct(self) -> None:
        if self.current is None or self.current["my_label"] is None:
            self.show_message("nothing to correct: label the item first")
            return
        item = self.current

        def corrected(result: dict[str, str] | None) -> None:
            if result is not None:
                self.save_label(item["item_id"], result["label"], result["note"], reason=result["reason"])

        self.app.push_screen(CorrectionDialog(f"Correct your label of item #{item['position']}",
                                              item["my_label"]["label"], LABEL_NAMES), corrected)

    def action_move(self, step: int) -> None:
        options = self.query_one("#audit-queue", OptionList)
        if options.option_count:
            options.highlighted = max(0, min(options.option_count - 1, (options.highlighted or 0) + step))

    def action_help(self) -> None:
        help_for(self, self.NAME)
