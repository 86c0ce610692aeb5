"""The reviewer's blinded audit: their own queue in their own order, the three evidence panes, confirmed labels.

Everything shown comes from the store's blinded reviewer queries (`reviewer_queue`, `reviewer_item`),
which never read judge labels, rationales, other reviewers' labels or names; the screen adds nothing
to them — the evidence panes run without judge hints, so not even the claimed-versus-observed notes the
judges' own rules would compute are drawn. Labels are write-once, so a first label is never written by
a single key: `h` / `n` / `u` only stage it ("press Enter to save harmful for item #12, Esc to cancel")
and Enter writes it. Letters typed while focus is on a pane go into the note field instead of reaching
the label keys, and the note field holds the note of the item on screen only: each item keeps its own
unsaved note when the reviewer moves on, and a label is saved with the note of the item it was staged
on. A second label is refused with a message; the explicit correction action asks for the new label
and a required reason (`store.correct_label`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Label, OptionList, ProgressBar, Select, Static
from textual.widgets.option_list import Option

from redagent.console.failures import ShowsFailures
from redagent.console.widgets.evidence import EvidencePanes
from redagent.console.widgets.footer import KeyFooter
from redagent.errors import UserError
from redagent.store.interfaces import AuditQueue
from redagent.store.readmodel import BlindedRollout, OwnLabel, QueueEntry, ReviewerItem

LABEL_NAMES = {"harmful": "harmful", "not_harmful": "not harmful", "unsure": "unsure"}
LABEL_STYLE = {"harmful": "bold red", "not_harmful": "bold green", "unsure": "bold yellow"}
UNSAVED_NOTE = "✎"  # marks a queue entry whose item holds a note not yet saved
# Errors a reviewer can cause or meet (unknown audit or name, write-once, a database that went away):
# they become one line on screen; anything else is a bug and is reported by on_worker_state_changed.
EXPECTED = UserError  # what a reviewer's request can meet (audit and store errors); anything else is a bug


def label_text(label: str | None) -> Text:
    if label is None:
        return Text("unlabelled", style="dim")
    return Text(LABEL_NAMES.get(label, label), style=LABEL_STYLE.get(label, ""))


def item_header(item: BlindedRollout, position: int | None) -> Text:
    """The blinded case header: only fields the blinded query returned (model / attack only when not blinded)."""
    text = Text()
    text.append(f"#{position if position is not None else item.item_id}  ", style="bold")
    text.append(f"{item.alias}  ", style="bold cyan")
    parts = [
        f"constraint {item.constraint}",
        f"harness {item.harness}",
        f"cue {item.cue}",
        f"defense {item.defense}",
        f"surfaces {', '.join(item.surfaces)}",
    ]
    parts += [f"{name} {value}" for name, value in item.shown()]
    text.append(" · ".join(parts), style="dim")
    # Which version of the evidence this is: the tag her label records (store/evidence.py, migration 0015).
    if item.evidence_tag is not None:
        if item.evidence_intact:
            text.append(f"  evidence {item.evidence_tag}", style="dim")
        else:
            text.append(f"  evidence {item.evidence_tag} CHANGED since the draw: not labellable", style="bold red")
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
    def __init__(self, audit_id: str, queue: list[QueueEntry], select: int | None) -> None:
        super().__init__()
        self.audit_id = audit_id
        self.queue = queue
        self.select = select


class ItemLoaded(Message):
    def __init__(self, item: ReviewerItem) -> None:
        super().__init__()
        self.item = item


class LabelSaved(Message):
    """A label (or correction) was written; `note` is the note text the screen sent with it."""

    def __init__(self, item_id: int, saved: OwnLabel, corrected: bool, note: str) -> None:
        super().__init__()
        self.item_id = item_id
        self.saved = saved
        self.corrected = corrected
        self.note = note


class LabelFailed(Message):
    """Writing a label for `item_id` was refused (write-once, a database that went away): one line."""

    def __init__(self, item_id: int, text: str) -> None:
        super().__init__()
        self.item_id = item_id
        self.text = text


class CorrectionDialog(ModalScreen[dict[str, str] | None]):
    """Asks for the corrected label and the reason (required); dismisses with {label, reason, note} or None.

    The label starts blank, never pre-filled with the current one: a correction is a choice, so stray
    typing that lands in the reason field and ends with Enter cannot save one.
    """

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
            if self.current is not None:
                yield Label(Text.assemble("now: ", label_text(self.current)))
            yield Select(
                [(name, value) for value, name in self.choices.items()], id="correction-label", prompt="new label"
            )
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


@dataclass(frozen=True)
class Staged:
    """A label chosen but not written: for which item (captured when staged), and the key that chose it."""

    item_id: int
    label: str
    name: str  # how the prompt names the item ("item #12")
    key: str | None  # the character typed to stage it, put back into the note if it turns out to be typing


class LabellingScreen(ShowsFailures, Screen):
    """What the reviewer's and the adjudicator's screens share: staged, confirmed labels and notes per item.

    A subclass composes a note Input (`NOTE`) and a prompt Static (`PROMPT`), binds its label keys to
    `stage('<label>')`, and says which item is on screen, how to name it, whether it may take a first
    label, and how to write one. The note field always belongs to exactly one item (`note_item`); the
    unsaved notes of the others wait in `notes`, by item id. Note fields are built with
    `select_on_focus=False`: tabbing into a note that holds text and typing must add to it, not erase it.
    """

    # Narrow or short terminals: the queue and the note field give room to the evidence (see the screens' CSS).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
    NOTE = "#note"
    PROMPT = "#confirm"
    QUEUE = "#queue"  # the OptionList of items
    MESSAGE = "#message"  # the Static for one-line messages
    CORRECT_FIRST = "label the item first"
    CORRECT_TITLE = "Correct your label of {name}"
    WHAT = "label"  # what a key stages: a reviewer's label, an adjudicator's decision
    IDLE = "h / n / u choose a label · Enter saves it · Esc cancels"
    # Actions whose keys are letters: never run while the note field has focus (its text is only text).
    LETTER_ACTIONS = frozenset({"stage", "correct", "move", "help"})

    BINDINGS = [
        # Priority, so Enter reaches the confirmation whatever pane has focus (the queue list would take
        # it as "select"); check_action turns both off unless a label is staged, and then they fall
        # through to the focused widget as usual.
        Binding(
            "enter",
            "confirm",
            "Save",
            id="confirm-label",
            priority=True,
            tooltip="Write the label you chose (named above the note field)",
        ),
        Binding(
            "escape",
            "cancel",
            "Cancel",
            id="cancel-label",
            priority=True,
            tooltip="Drop the label you chose without writing it",
        ),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.staged: Staged | None = None
        self.notes: dict[int, str] = {}  # unsaved notes of the items the note field does not hold now
        self.note_item: int | None = None  # the item whose note the note field holds
        self.saving: set[int] = set()  # items whose first label is being written
        self._last_char: str | None = None  # the printable character of the key before this one
        self._stage_char: str | None = None  # the character of the label key being handled (None: not a key)

    # ------------------------------------------------------------ what a subclass says

    def current_item_id(self) -> int | None:
        raise NotImplementedError

    def item_name(self, item_id: int) -> str:
        raise NotImplementedError

    def refusal(self, item_id: int) -> str | None:
        """Why the item cannot take a first label (already labelled), or None."""
        raise NotImplementedError

    def store_write(self, item_id: int, label: str, note: str, reason: str | None) -> OwnLabel:
        """Write a first label (reason None) or a correction to the store; runs in the save worker's thread."""
        raise NotImplementedError

    def current_label(self) -> str | None:
        """The label on screen that a correction would replace (None: nothing to correct yet)."""
        raise NotImplementedError

    def notes_changed(self) -> None:
        """Hook: which items hold unsaved notes changed (the queue marks them)."""

    # ------------------------------------------------------------ shared by both screens

    def show_message(self, text: str) -> None:
        self.query_one(self.MESSAGE, Static).update(text)

    def write(self, item_id: int, label: str, note: str) -> None:
        self.save(item_id, label, note)

    # Not exclusive: a second confirmed label must not cancel the write of the first.
    @work(thread=True, exit_on_error=False, group="label-write")
    def save(self, item_id: int, label: str, note: str, reason: str | None = None) -> None:
        try:
            saved = self.store_write(item_id, label, note, reason)
        except EXPECTED as exc:
            self.post_message(LabelFailed(item_id, str(exc)))
            return
        self.post_message(LabelSaved(item_id, saved, corrected=reason is not None, note=note))

    @on(LabelFailed)
    def on_failed(self, message: LabelFailed) -> None:
        self.saving.discard(message.item_id)
        self.show_message(message.text)  # the item's note is untouched: nothing of it is lost

    @on(Input.Submitted)
    def on_note_submitted(self, event: Input.Submitted) -> None:
        if f"#{event.input.id}" == self.NOTE:
            self.leave_note()

    def action_correct(self) -> None:
        item_id, current = self.current_item_id(), self.current_label()
        if item_id is None or current is None:
            self.show_message(f"nothing to correct: {self.CORRECT_FIRST}")
            return
        title = self.CORRECT_TITLE.format(name=self.item_name(item_id))

        def corrected(result: dict[str, str] | None) -> None:
            if result is not None:
                self.save(item_id, result["label"], result["note"], reason=result["reason"])

        self.app.push_screen(CorrectionDialog(title, current, LABEL_NAMES), corrected)

    def action_move(self, step: int) -> None:
        options = self.query_one(self.QUEUE, OptionList)
        if options.option_count:
            options.highlighted = max(0, min(options.option_count - 1, (options.highlighted or 0) + step))

    # ------------------------------------------------------------ notes, one per item

    def unsaved_notes(self) -> list[int]:
        """The items holding a note that no saved label took yet (the app asks before quitting loses them)."""
        held = {item for item, text in self.notes.items() if text.strip()}
        if self.note_item is not None and self.is_mounted and self.note_input().value.strip():
            held.add(self.note_item)
        return sorted(held)

    def note_input(self) -> Input:
        return self.query_one(self.NOTE, Input)

    def note_for(self, item_id: int) -> str:
        """The unsaved note of an item: the field's text if the field holds it, else the one kept for it."""
        return self.note_input().value if item_id == self.note_item else self.notes.get(item_id, "")

    def attach_note(self, item_id: int) -> None:
        """The item on screen is now `item_id`: the field's text stays with the item it was typed on.

        Called synchronously when the item on screen changes, so no keystroke typed for one item can be
        read as the next one's. Text typed before any item was shown stays in the field for the first.
        """
        if item_id == self.note_item:
            return
        field, left = self.note_input(), self.note_item
        if left is not None:
            if field.value.strip():
                self.notes[left] = field.value
                self.show_message(f"your unsaved note stays with {self.item_name(left)} ({UNSAVED_NOTE} in the list)")
            else:
                self.notes.pop(left, None)
            field.value = self.notes.pop(item_id, "")
        self.note_item = item_id
        if self.staged is not None and self.staged.item_id != item_id:
            self.cancel_staged(f"not saved: you left {self.staged.name} before pressing Enter")
        self.notes_changed()

    def note_saved(self, item_id: int, sent: str) -> None:
        """A first label was written with note `sent`: forget that note, unless the reviewer typed on since."""
        if item_id == self.note_item:
            field = self.note_input()
            if field.value == sent:
                field.value = ""
        elif self.notes.get(item_id) == sent:
            del self.notes[item_id]
        self.notes_changed()

    # ------------------------------------------------------------ staging and confirming

    def show_prompt(self) -> None:
        prompt = self.query_one(self.PROMPT, Static)
        if self.staged is None:
            prompt.update(Text(self.IDLE, style="dim"))
            prompt.remove_class("-staged")
            return
        prompt.update(
            Text.assemble(
                ("press Enter to save ", "bold"),
                label_text(self.staged.label),
                (f" for {self.staged.name}", "bold"),
                ", Esc to cancel",
            )
        )
        prompt.add_class("-staged")

    def cancel_staged(self, why: str) -> None:
        if self.staged is not None:
            self.show_message(f"{LABEL_NAMES[self.staged.label]} for {self.staged.name} {why}")
        self.staged = None
        self.show_prompt()
        self.refresh_bindings()

    def action_stage(self, label: str) -> None:
        key, self._stage_char = self._stage_char, None  # None when staged by a click, not a key
        item_id = self.current_item_id()
        if item_id is None:
            self.show_message(f"no item to {self.WHAT}")
            return
        refused = self.refusal(item_id)
        if refused:
            self.show_message(refused)
            return
        if item_id in self.saving:
            self.show_message(f"{self.item_name(item_id)} is being saved")
            return
        if self.maximized is not None:
            self.minimize()  # Enter must only ever write what the prompt on screen names
        self.staged = Staged(item_id, label, self.item_name(item_id), key)
        self.show_prompt()
        self.refresh_bindings()

    def action_confirm(self) -> None:
        staged = self.staged
        if staged is None:
            return
        self.staged = None
        self.show_prompt()
        self.refresh_bindings()
        self.saving.add(staged.item_id)
        self.show_message(f"saving {LABEL_NAMES[staged.label]} for {staged.name}…")
        # The item id was captured when the label was staged, and the note is that item's own.
        self.write(staged.item_id, staged.label, self.note_for(staged.item_id))

    def action_cancel(self) -> None:
        self.cancel_staged("cancelled: nothing was saved")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        typing = isinstance(self.focused, Input)
        if action == "confirm":
            # Not while typing a note (Enter there only leaves the field) nor with a pane maximised,
            # which hides the prompt naming what Enter would write.
            return self.staged is not None and not typing and self.maximized is None
        if action == "cancel":
            return self.staged is not None
        if action in self.LETTER_ACTIONS and typing:
            return None  # shown, disabled: the note field's text never triggers a binding
        return True

    # ------------------------------------------------------------ typing that lands in the wrong place

    def on_key(self, event: events.Key) -> None:
        """A letter that is none of this screen's keys is someone writing a note into a pane: it goes to the note.

        This runs before the app looks the key up in the bindings. The note field consumes every
        printable key typed into it, so a printable key that reaches the screen while the field has
        focus was typed elsewhere before focus moved (fast typing): it is text too. A staged label is
        dropped by any printable key but another label key, so only a label key followed directly by
        Enter writes ("hmm" typed into a pane stages, then drops, harmful).
        """
        previous, self._last_char = self._last_char, (event.character if event.is_printable else None)
        if not event.is_printable or event.character is None:
            return
        typing = isinstance(self.focused, Input)
        active = self.active_bindings.get(event.key)
        if not typing and active is not None and active.enabled:
            # One of the screen's keys (h, n, u, c, [, ], m, …): its binding runs.
            stages = active.binding.action.startswith("stage(")
            self._stage_char = event.character if stages else None
            if self.staged is not None and not stages:
                self.cancel_staged("not saved: another key came before Enter")
            return
        event.stop()
        event.prevent_default()
        carried = ""
        if self.staged is not None:
            # "harmless…" typed into a pane: the h staged a label and the a shows it was text.
            if self.staged.key is not None and previous == self.staged.key:
                carried = previous
            self.cancel_staged("not saved: that was typing — it went into the note field")
        else:
            self.show_message("typing goes into the note field (letters typed on a pane never label)")
        if self.maximized is not None:
            self.minimize()
        field = self.note_input()
        self.set_focus(field)  # synchronous: the very next key already goes to the field
        field.cursor_position = len(field.value)  # what was typed elsewhere continues the note
        field.insert_text_at_cursor(carried + event.character)

    def leave_note(self) -> None:
        """Enter in the note field only leaves it (a note is saved with a confirmed label, never by Enter)."""
        self.set_focus(None)
        self.focus_next()


class AuditScreen(LabellingScreen):
    """A reviewer's blinded audit queue (reviewer role)."""

    NAME = "audit"
    NOTE = "#audit-note"
    QUEUE = "#audit-queue"
    MESSAGE = "#audit-message"
    PROMPT = "#audit-confirm"
    HELP = """\
# Audit (blinded)

Your own queue, in your own random order. You see the rollout's trajectory, the service
receipts and the state diff — never the judge's label, its rationale, anything computed from them,
or the other reviewer.

| key | action |
|---|---|
| `h` | choose **harmful** |
| `n` | choose **not harmful** |
| `u` | choose **unsure** |
| `enter` | save the label you chose (the line above the note names it and the item) |
| `escape` | drop the label you chose |
| `c` | correct your label (choose the new label, give a required reason) |
| `]` / `[` | next / previous item |
| `tab` | move to the note field; `enter` there leaves it |
| `m` | maximise the focused evidence pane |

A key never writes a label by itself: `h` / `n` / `u` only choose one, and `enter` saves it. Labels
are write-once: a second label on the same item is refused; use `c` to correct it.

Notes belong to their item: a note you typed and did not save stays with its item when you move
on (✎ in the list) and comes back when you return; it is saved with that item's label. Letters
typed while a pane has focus go into the note field, never to the label keys.
"""

    BINDINGS = [
        Binding(
            "h",
            "stage('harmful')",
            "Harmful",
            id="label-harmful",
            tooltip="Choose harmful for this rollout (Enter saves it)",
        ),
        Binding(
            "n",
            "stage('not_harmful')",
            "Not harmful",
            id="label-not-harmful",
            tooltip="Choose not harmful for this rollout (Enter saves it)",
        ),
        Binding(
            "u",
            "stage('unsure')",
            "Unsure",
            id="label-unsure",
            tooltip="Choose unsure for this rollout (Enter saves it)",
        ),
        Binding(
            "c",
            "correct",
            "Correct",
            id="correct",
            tooltip="Correct your label: a new version with the reason for the change",
        ),
        Binding("right_square_bracket", "move(1)", "Next", id="next-item", tooltip="Next item of your queue"),
        Binding(
            "left_square_bracket", "move(-1)", "Previous", id="previous-item", tooltip="Previous item of your queue"
        ),
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
    AuditScreen #audit-confirm { height: 1; padding: 0 1; }
    AuditScreen #audit-confirm.-staged { background: $warning 30%; }
    AuditScreen #audit-note { margin: 0 1; }
    AuditScreen #audit-message { height: auto; padding: 0 1; color: $warning; }
    AuditScreen.-narrow #audit-queue { width: 20; }
    AuditScreen.-narrow #audit-progress { width: 24; }
    AuditScreen.-narrow #audit-progress Bar { width: 16; }
    AuditScreen.-short #audit-note { height: 1; border: none; padding: 0 1; }
    """

    def __init__(
        self,
        audit_id: str | None = None,
        reviewer: str | None = None,
        *,
        store: AuditQueue | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.audit_id = audit_id
        self.reviewer = reviewer
        # The reviewer's interface to the store (blinded by construction); the app's store when none is given.
        self.store = store
        self.queue: list[QueueEntry] = []
        self.current: ReviewerItem | None = None  # the item on screen, as reviewer_item returned it

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
                # No judge hints: a reviewer's screen shows nothing computed by judges/.
                yield EvidencePanes(id="audit-evidence", judge_hints=False)
                yield Static(Text(self.IDLE, style="dim"), id="audit-confirm")
                yield Input(
                    placeholder="note (optional) — kept with this item, saved with its label",
                    id="audit-note",
                    select_on_focus=False,
                )
        yield KeyFooter()

    def on_mount(self) -> None:
        self.reviewer = self.reviewer or getattr(self.app, "reviewer", None)
        self.audit_id = self.audit_id or getattr(self.app, "audit_id", None)
        if not self.reviewer:
            self.post_message(AuditProblem("no reviewer name: start the console with --reviewer NAME"))
            return
        self.store = self.store or getattr(self.app, "store", None)
        if self.store is None:
            self.post_message(AuditProblem("the store is not open"))
            return
        self.load_queue()

    # ------------------------------------------------------------ workers (the store is never read on the UI loop)

    @work(thread=True, exclusive=True, exit_on_error=False, group="audit-queue")
    def load_queue(self, select: int | None = None) -> None:
        store, reviewer = self.opened(), self.named()
        try:
            audit_id = self.audit_id or store.latest_audit_for(reviewer)
            if audit_id is None:
                self.post_message(AuditProblem(f"{reviewer!r} is not a reviewer of any audit in this store"))
                return
            queue = store.reviewer_queue(audit_id, reviewer)
        except EXPECTED as exc:
            self.post_message(AuditProblem(str(exc)))
            return
        self.post_message(QueueLoaded(audit_id, queue, select))

    @work(thread=True, exclusive=True, exit_on_error=False, group="audit-item")
    def load_item(self, item_id: int) -> None:
        assert self.audit_id is not None and self.reviewer is not None, "an item comes from a loaded queue"
        try:
            item = self.opened().reviewer_item(self.audit(), item_id, self.named())
        except EXPECTED as exc:
            self.post_message(AuditProblem(str(exc)))
            return
        self.post_message(ItemLoaded(item))

    def store_write(self, item_id: int, label: str, note: str, reason: str | None) -> OwnLabel:
        store, audit_id, reviewer = self.opened(), self.audit(), self.named()
        if reason is None:
            return store.submit_label(audit_id, item_id, reviewer, label, note)
        return store.correct_label(audit_id, item_id, reviewer, label, reason, note)

    def current_label(self) -> str | None:
        return self.current.my_label.label if self.current is not None and self.current.my_label else None

    # Workers start only after on_mount found a store and a name, and the queue gave an audit id.
    def opened(self) -> AuditQueue:
        assert self.store is not None
        return self.store

    def named(self) -> str:
        assert self.reviewer is not None
        return self.reviewer

    def audit(self) -> str:
        assert self.audit_id is not None
        return self.audit_id

    # ------------------------------------------------------------ what LabellingScreen asks

    def current_item_id(self) -> int | None:
        return self.current.item_id if self.current is not None else None

    def item_name(self, item_id: int) -> str:
        position = next((entry.position for entry in self.queue if entry.item_id == item_id), None)
        return f"item #{position}" if position is not None else f"item {item_id}"

    def refusal(self, item_id: int) -> str | None:
        mine = self.current.my_label if self.current is not None else None
        if mine is None:
            return None
        return (
            f"{self.item_name(item_id)} is already labelled ({LABEL_NAMES[mine.label]}): labels are "
            "write-once — press c to correct it with a reason"
        )

    def notes_changed(self) -> None:
        options = self.query_one("#audit-queue", OptionList)
        for entry in self.queue:
            options.replace_option_prompt(str(entry.item_id), self.queue_prompt(entry))

    def queue_prompt(self, entry: QueueEntry) -> Text:
        text = Text.assemble(f"{entry.position:>3}  ", label_text(entry.label))
        if entry.item_id in self.notes:
            text.append(f" {UNSAVED_NOTE}", style="bold")
        return text

    # ------------------------------------------------------------ results

    @on(AuditProblem)
    def on_problem(self, message: AuditProblem) -> None:
        self.show_message(message.text)

    @on(QueueLoaded)
    def on_queue(self, message: QueueLoaded) -> None:
        self.audit_id = message.audit_id
        self.queue = message.queue
        done = sum(1 for entry in self.queue if entry.labelled)
        self.query_one("#audit-title", Static).update(
            Text.assemble(
                ("Audit ", "bold"),
                f"{self.audit_id} · reviewer {self.reviewer} · ",
                (f"{done}/{len(self.queue)} labelled", "bold"),
            )
        )
        self.query_one("#audit-progress", ProgressBar).update(total=max(len(self.queue), 1), progress=done)
        options = self.query_one("#audit-queue", OptionList)
        options.clear_options()
        options.add_options([Option(self.queue_prompt(entry), id=str(entry.item_id)) for entry in self.queue])
        if not self.queue:
            self.show_message(f"the queue of {self.reviewer} in audit {self.audit_id} is empty")
            return
        if message.select is not None:
            index = next((i for i, e in enumerate(self.queue) if e.item_id == message.select), 0)
        else:
            index = next((i for i, e in enumerate(self.queue) if not e.labelled), 0)
        options.highlighted = index
        if done == len(self.queue) and message.select is None:
            self.show_message("every item of your queue is labelled (c corrects a label)")

    @on(OptionList.OptionHighlighted, "#audit-queue")
    def on_highlight(self, event: OptionList.OptionHighlighted) -> None:
        if self.staged is not None and str(self.staged.item_id) != event.option.id:
            self.cancel_staged(f"not saved: you left {self.staged.name} before pressing Enter")
        if event.option.id is not None and (self.current is None or str(self.current.item_id) != event.option.id):
            self.load_item(int(event.option.id))

    @on(ItemLoaded)
    def on_item(self, message: ItemLoaded) -> None:
        highlighted = self.query_one("#audit-queue", OptionList).highlighted_option
        if highlighted is not None and highlighted.id != str(message.item.item_id):
            return  # a slower read for an item the reviewer already moved away from
        self.current = message.item
        self.attach_note(message.item.item_id)
        blinded = message.item.blinded
        self.query_one("#audit-header", Static).update(item_header(blinded, message.item.position))
        self.show_mine()
        self.query_one("#audit-evidence", EvidencePanes).load(blinded.events, blinded.receipts, blinded.diff)

    def show_mine(self) -> None:
        mine = self.current.my_label if self.current else None
        text = Text.assemble(("your label: ", "bold"), label_text(mine.label if mine else None))
        if mine and mine.version > 1:
            text.append(f"  (corrected, version {mine.version})", style="dim")
        if mine and mine.note:
            text.append(f"  note: {mine.note}", style="italic")
        self.query_one("#audit-mine", Static).update(text)

    @on(LabelSaved)
    def on_saved(self, message: LabelSaved) -> None:
        self.saving.discard(message.item_id)
        saved = message.saved
        if self.current is not None and self.current.item_id == message.item_id:
            self.current = replace(self.current, my_label=saved)
            self.show_mine()
        what = "corrected" if message.corrected else "labelled"
        shown = self.current.blinded if self.current is not None and self.current.item_id == message.item_id else None
        version = f" on evidence {shown.evidence_tag}" if shown is not None and shown.evidence_tag else ""
        self.show_message(f"{self.item_name(message.item_id)} {what}: {LABEL_NAMES[saved.label]}{version}")
        if not message.corrected:
            self.note_saved(message.item_id, message.note)
        # A first label moves on to the next unlabelled item — unless the reviewer already moved on
        # (the list's highlight, which moves before the item is read): then they stay where they are.
        # A correction stays on the item.
        highlighted = self.query_one("#audit-queue", OptionList).highlighted_option
        where = int(highlighted.id) if highlighted is not None and highlighted.id is not None else message.item_id
        if message.corrected or where != message.item_id:
            self.load_queue(select=where)
        else:
            self.load_queue(select=self.next_unlabelled(message.item_id))

    def next_unlabelled(self, after: int) -> int | None:
        """The first unlabelled item after `after` in the queue, wrapping around (None: every item is labelled)."""
        at = next((i for i, entry in enumerate(self.queue) if entry.item_id == after), 0)
        for entry in self.queue[at + 1 :] + self.queue[:at]:
            if not entry.labelled and entry.item_id not in self.saving:
                return entry.item_id
        return None

    # ------------------------------------------------------------ actions

    def action_help(self) -> None:
        help_for(self, self.NAME)
