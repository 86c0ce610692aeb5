"""The three evidence panes side by side — trajectory | receipts | state diff — and how they point at each other.

Selecting a trajectory event highlights the receipts it produced (its `receipts`, or receipts whose
`step` is its index) and the diff entries those receipts changed. Which receipt changed which diff
entry is evidence logic, decided in `redagent.judges.evidence` (`diff_owners`); the panes only draw it.

With `judge_hints` (the researcher's rollout screen), claimed-versus-observed mismatches from
`redagent.judges.evidence.mismatches` are listed above the panes and flagged (⚠) on the events and
receipts they name, and evidence cited by judge labels is marked ◆. Without them (the reviewer and
adjudicator screens) nothing computed by judges/ is drawn or even computed: a mismatch line written
by the same rules the audited judge uses would anchor the human towards the judge and inflate its
measured precision and recall.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static, Tab, Tabs

from redagent.console.widgets.detail_view import DetailView
from redagent.console.widgets.trajectory import EntryList, EventSource, TrajectoryView, json_text
from redagent.console.widgets.transcript import CONVERSATION_CHARS, PREVIEW_CHARS, conversation, pretty, shown
from redagent.judges.evidence import (
    Mismatch,
    cited,
    cited_events,
    diff_for_receipts,
    diff_owners,
    flagged,
    receipts_for_event,
)
from redagent.judges.evidence import mismatches as find_mismatches
from redagent.store.readmodel import RolloutEvidence, StoredDiffEntry, StoredEvent, StoredLabel, StoredReceipt

# ---------------------------------------------------------------- rendering

DETAIL_CHARS = CONVERSATION_CHARS  # of one value in the detail view: what a reviewer can still read through


def _json(value: Any, limit: int = 300) -> str:
    text = json_text(value)
    return text if len(text) <= limit else text[:limit] + "…"


def receipt_lines(receipt: StoredReceipt, mark: str) -> list[Text]:
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append(mark or " ", style="bold red" if mark == "⚠" else "bold yellow")
    head.append(f"{receipt.id} ", style="bold")
    head.append(f"{receipt.service}.{receipt.action} ")
    outcome_style = "green" if receipt.outcome == "ok" else "red"
    head.append(receipt.outcome, style=outcome_style)
    head.append(
        f"  {receipt.actor}  step e{receipt.step}" if receipt.step is not None else f"  {receipt.actor}", style="dim"
    )
    if receipt.via:
        head.append(f"  via {receipt.via}", style="yellow")
    lines = [head, Text(f"   args   {_json(receipt.args)}", no_wrap=True, overflow="ellipsis")]
    if receipt.effect:
        lines.append(Text(f"   effect {_json(receipt.effect)}", no_wrap=True, overflow="ellipsis"))
    if receipt.error:
        lines.append(Text(f"   error  {receipt.error}", style="red", no_wrap=True, overflow="ellipsis"))
    return lines


def receipt_line_count(receipt: StoredReceipt) -> int:
    """How many lines `receipt_lines` draws for a receipt (the pane is laid out before it is drawn)."""
    return 2 + bool(receipt.effect) + bool(receipt.error)


def diff_lines(entry: StoredDiffEntry, mark: str) -> list[Text]:
    op_style = {"added": "green", "removed": "red", "changed": "yellow"}.get(entry.op, "")
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append(mark or " ", style="bold yellow")
    head.append(f"{entry.op:<8}", style=op_style)
    head.append(entry.path, style="bold")
    lines = [head]
    if entry.op != "added":
        lines.append(Text(f"   before {_json(entry.before)}", style="dim", no_wrap=True, overflow="ellipsis"))
    if entry.op != "removed":
        lines.append(Text(f"   after  {_json(entry.after)}", no_wrap=True, overflow="ellipsis"))
    return lines


def diff_line_count(entry: StoredDiffEntry) -> int:
    """How many lines `diff_lines` draws for a diff entry."""
    return 1 + (entry.op != "added") + (entry.op != "removed")


def event_detail(event: StoredEvent, limit: int = PREVIEW_CHARS) -> Text:
    """The whole of one event, wrapped (what the one-line trajectory view clips), each part cut at `limit`
    characters: the pane under the trajectory shows a preview, the detail view (`enter`) the rest."""
    text = Text()
    text.append(f"e{event.idx} {event.role}", style="bold")
    call = event.tool_call
    if event.role == "assistant" and call:
        text.append(f"  ▶ {shown(call.get('name'), 200)}\n", style="bold green")
        text.append(pretty(call.get("args", {}), limit))
    elif event.role == "tool":
        text.append(f"  ◀ {shown(call.get('name'), 200) if call else 'tool'}", style="bold magenta")
        if event.receipts:
            text.append(f"  receipts {', '.join(event.receipts)}", style="dim")
        text.append("\n")
        if event.tampered and event.original != event.observation:
            text.append("tampered — the agent saw a different output than the service returned\n", style="bold red")
            text.append("original: ", style="dim")
            text.append(f"{shown(event.original or '', limit)}\nshown:    ", style="dim")
        text.append(shown(event.observation or "", limit))
    elif event.role == "transcript":
        # A real CLI's own transcript (and the prompts and tool list it really sent), kept as an artifact.
        text.append("  the agent CLI's own record of the rollout, as a conversation\n", style="bold yellow")
        text.append_text(conversation(event.text or "", limit))
        if limit < CONVERSATION_CHARS:
            text.append("\n\nenter opens the whole conversation", style="dim")
        return text
    if event.text:
        text.append("\n" + shown(event.text, limit))
    return text


def receipt_detail(receipt: StoredReceipt) -> Text:
    """A receipt in full: the service call with every argument, the effect it had and its error."""
    text = Text()
    text.append(f"{receipt.id} ", style="bold")
    text.append(shown(f"{receipt.service}.{receipt.action} ", 400))
    text.append(receipt.outcome, style="green" if receipt.outcome == "ok" else "red")
    text.append(f"  {shown(receipt.actor, 200)}" + (f"  step e{receipt.step}" if receipt.step is not None else ""))
    if receipt.via:
        text.append(f"  via {shown(receipt.via, 400)}", style="yellow")
    text.append("\n\nargs\n", style="bold")
    text.append(pretty(receipt.args, DETAIL_CHARS))
    if receipt.effect:
        text.append("\n\neffect\n", style="bold")
        text.append(pretty(receipt.effect, DETAIL_CHARS))
    if receipt.error:
        text.append("\n\nerror\n", style="bold red")
        text.append(shown(receipt.error, DETAIL_CHARS), style="red")
    return text


def diff_detail(entry: StoredDiffEntry) -> Text:
    """A state change in full: the path, and the value before and after."""
    text = Text()
    text.append(f"{entry.op} ", style={"added": "green", "removed": "red", "changed": "yellow"}.get(entry.op, ""))
    text.append(shown(entry.path, 2000), style="bold")
    if entry.op != "added":
        text.append("\n\nbefore\n", style="bold")
        text.append(pretty(entry.before, DETAIL_CHARS))
    if entry.op != "removed":
        text.append("\n\nafter\n", style="bold")
        text.append(pretty(entry.after, DETAIL_CHARS))
    return text


class Pane(Vertical):
    """One of the three panes; the unit the maximise binding fills the screen with."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    /* The title in the text colour: in the border's own colour ($panel) it was dark grey on dark. */
    Pane { width: 1fr; height: 1fr; border: round $panel; border-title-color: $text; }
    Pane:focus-within { border: round $accent; border-title-color: $text; }
    Pane.-maximized { width: 1fr; }
    """


TABS_BELOW = 120  # narrower than this, the three panes (under 40 columns each) become tabs of the full width
LOW_BELOW = 18  # lower than this (or tabbed), the event's detail gives rows to the trajectory above it
PANES = ("trajectory", "receipts", "diff")


class EvidencePanes(Widget):
    """Trajectory | receipts | state diff, with selection highlighting; mismatch flags only with judge_hints.

    Narrower than TABS_BELOW columns the panes collapse into tabs (one pane at a time, the whole width;
    `t` / `T` or ←/→ on the tab bar switch), and come back side by side when the terminal is widened.
    The panes are never remounted, so the trajectory's cursor, its loaded windows and the highlights stay.
    """

    DEFAULT_CSS = """
    EvidencePanes { height: 1fr; }
    EvidencePanes > Horizontal { height: 1fr; }
    EvidencePanes #event-detail-scroll { height: 8; border-top: solid $panel; }
    EvidencePanes #mismatches { height: 2; color: $error; padding: 0 1; }
    EvidencePanes > Tabs { display: none; }
    EvidencePanes.-tabbed > Tabs { display: block; }
    EvidencePanes.-tabbed Pane { display: none; }
    EvidencePanes.-tabbed Pane.-shown-tab { display: block; }
    EvidencePanes.-low #event-detail-scroll, EvidencePanes.-tabbed #event-detail-scroll { height: 40%; }
    """

    BINDINGS = [
        Binding(
            "enter",
            "open_detail",
            "Detail",
            id="evidence-detail",
            tooltip="The entry under the cursor in full: every argument, the whole result, a CLI's conversation",
        ),
        Binding(
            "m",
            "maximise",
            "Maximise",
            id="maximise",
            tooltip="Fill the screen with the focused pane (again to restore)",
        ),
        Binding(
            "t",
            "switch_tab(1)",
            "Next tab",
            id="evidence-next-tab",
            tooltip="Show the next evidence pane (the panes are tabs on a narrow terminal)",
        ),
        Binding(
            "T",
            "switch_tab(-1)",
            "Prev tab",
            id="evidence-previous-tab",
            show=False,
            tooltip="Show the previous evidence pane (the panes are tabs on a narrow terminal)",
        ),
    ]

    def __init__(
        self, *, judge_hints: bool = False, details: bool = False, id: str | None = None, classes: str | None = None
    ) -> None:
        """Off by default — every screen a reviewer or adjudicator sees must show no mismatch line, no ⚠ or ◆;
        only the researcher's rollout screen asks for `judge_hints=True`. `details` turns on `enter` for the
        detail view; off on the labelling screens, where `enter` saves the label the reviewer chose and a stray
        one must do nothing at all."""
        super().__init__(id=id, classes=classes)
        self.judge_hints = judge_hints
        self.details = details
        self.receipts: list[StoredReceipt] = []
        self.diff: list[StoredDiffEntry] = []
        self.mismatches: list[Mismatch] = []
        self._receipt_marks: dict[str, str] = {}
        self._event_marks: dict[int, str] = {}
        self._cited: set[str] = set()
        self.selected_receipts: list[str] = []
        self.selected_diff: set[int] = set()
        self._owners: list[set[str]] = []

    def compose(self) -> ComposeResult:
        if self.judge_hints:
            yield Static("", id="mismatches")
        # The tab bar is always there, shown only when collapsed (see on_resize): switching is a class, not a remount.
        yield Tabs(
            Tab("Trajectory", id="tab-trajectory"),
            Tab("Receipts", id="tab-receipts"),
            Tab("State diff", id="tab-diff"),
            id="evidence-tabs",
        )
        with Horizontal():
            with Pane(id="trajectory-pane") as pane:
                pane.border_title = "Trajectory"
                yield TrajectoryView(id="trajectory")
                with VerticalScroll(id="event-detail-scroll"):
                    yield Static("", id="event-detail")
            with Pane(id="receipts-pane") as pane:
                pane.border_title = "Receipts"
                yield EntryList(id="receipts")
            with Pane(id="diff-pane") as pane:
                pane.border_title = "State diff"
                yield EntryList(id="diff")

    # ------------------------------------------------------------ loading

    def load(
        self,
        events: Sequence[StoredEvent],
        receipts: Sequence[StoredReceipt],
        diff: Sequence[StoredDiffEntry],
        labels: Sequence[StoredLabel] | None = None,
        *,
        mismatches: list[Mismatch] | None = None,
        event_count: int | None = None,
        source: EventSource | None = None,
    ) -> None:
        """Show one rollout's evidence. `labels` None shows no judge marks at all (blinded views).

        For a huge trajectory pass its first events, `event_count` and a `source(start, stop)` that
        reads further windows (called in a thread). With judge_hints, `mismatches` defaults to
        computing them from `events` (then they must be all of them). Without judge_hints, passing
        labels or mismatches is a programming error: it would put judge-derived marks on a blinded screen.
        """
        if not self.judge_hints and (labels is not None or mismatches is not None):
            raise ValueError("these evidence panes show no judge hints: pass neither labels nor mismatches")
        self.receipts, self.diff = list(receipts), list(diff)
        self._owners = diff_owners(self.receipts, self.diff)
        if mismatches is None and self.judge_hints:
            mismatches = find_mismatches(RolloutEvidence(tuple(events), tuple(self.receipts), tuple(self.diff)))
        self._cited = cited(labels)
        trajectory = self.query_one("#trajectory", TrajectoryView)
        total = event_count if event_count is not None else len(events)
        trajectory.load(events, total, source)
        self.query_one("#trajectory-pane", Pane).border_title = f"Trajectory ({total} events)"
        self.query_one("#receipts-pane", Pane).border_title = f"Receipts ({len(self.receipts)})"
        self.query_one("#diff-pane", Pane).border_title = f"State diff ({len(self.diff)})"
        self._draw(mismatches or [])

    def set_mismatches(self, found: list[Mismatch]) -> None:
        """Flag claimed-versus-observed mismatches (they may arrive after the panes, for a huge trajectory)."""
        if not self.judge_hints:
            raise ValueError("these evidence panes show no judge hints")
        self._draw(found)

    def _draw(self, found: list[Mismatch]) -> None:
        """Lay the entries out with their marks (none at all without judge_hints: `found` is empty, nothing cited)."""
        self.mismatches = list(found)
        bad_events, bad_receipts = flagged(found)
        self._event_marks = {idx: "⚠" for idx in bad_events}
        for idx in cited_events(self._cited):
            self._event_marks.setdefault(idx, "◆")
        self._receipt_marks = {
            r.id: "⚠" if r.id in bad_receipts else "◆" if r.id in self._cited else "" for r in self.receipts
        }
        if self.judge_hints:
            text = Text(no_wrap=True, overflow="ellipsis")
            for mismatch in found:
                text.append(f"⚠ {mismatch.text}\n")
            text.rstrip()
            if not found:
                text = Text("claimed vs observed: no mismatch found", style="dim")
            # Fixed height, no layout pass: a mismatch line never moves the panes.
            self.query_one("#mismatches", Static).update(text, layout=False)
        marks, cited = self._receipt_marks, self._cited
        self.query_one("#receipts", EntryList).load(
            self.receipts, lambda r: receipt_lines(r, marks[r.id]), receipt_line_count, "(no receipts)"
        )
        self.query_one("#diff", EntryList).load(
            self.diff, lambda d: diff_lines(d, "◆" if d.id in cited else ""), diff_line_count, "(no state change)"
        )
        trajectory = self.query_one("#trajectory", TrajectoryView)
        trajectory.set_marks(self._event_marks, set())
        self._select(trajectory.event_at(trajectory.cursor))

    # ------------------------------------------------------------ selection

    def on_trajectory_view_selected(self, message: TrajectoryView.Selected) -> None:
        message.stop()
        self._select(message.event)

    def _select(self, event: StoredEvent | None) -> None:
        if event is None:
            return
        self.query_one("#event-detail", Static).update(event_detail(event))
        self.selected_receipts = receipts_for_event(event, self.receipts)
        self.selected_diff = diff_for_receipts(self.selected_receipts, self.receipts, self.diff, self._owners)
        chosen = set(self.selected_receipts)
        self.query_one("#receipts", EntryList).highlight(
            {number for number, r in enumerate(self.receipts) if r.id in chosen}
        )
        self.query_one("#diff", EntryList).highlight(self.selected_diff)
        # The call and its result are one step: highlight both lines in the trajectory.
        steps = {r.step for r in self.receipts if r.id in chosen and r.step is not None}
        trajectory = self.query_one("#trajectory", TrajectoryView)
        trajectory.set_marks(self._event_marks, steps | trajectory.listing(chosen))

    # ------------------------------------------------------------ tabs on a narrow terminal

    @property
    def tabbed(self) -> bool:
        """True while the panes are collapsed into tabs."""
        return self.has_class("-tabbed")

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.height < LOW_BELOW, "-low")
        tabbed = event.size.width < TABS_BELOW
        if tabbed == self.tabbed:
            return
        if tabbed:
            # The pane holding the focus stays in view (a hidden pane cannot keep it).
            focused = self.screen.focused
            holder = next(
                (node for node in (focused.ancestors_with_self if focused else ()) if isinstance(node, Pane)), None
            )
            name = holder.id.removesuffix("-pane") if holder is not None and holder.id else self._shown_tab()
            self._show_tab(name)
        self.set_class(tabbed, "-tabbed")
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "switch_tab":
            return self.tabbed  # side by side there is nothing to switch: the key leaves the footer
        if action == "open_detail":
            return self.details  # off, the key goes on to the screen (the labelling screens' Enter)
        return True

    def _shown_tab(self) -> str:
        active = self.query_one("#evidence-tabs", Tabs).active
        return active.removeprefix("tab-") if active else PANES[0]

    def _show_tab(self, name: str) -> None:
        self.query_one("#evidence-tabs", Tabs).active = f"tab-{name}"
        for pane in PANES:
            self.query_one(f"#{pane}-pane", Pane).set_class(pane == name, "-shown-tab")

    @on(Tabs.TabActivated, "#evidence-tabs")
    def _tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        if event.tab.id:
            self._show_tab(event.tab.id.removeprefix("tab-"))

    def action_switch_tab(self, delta: int) -> None:
        name = PANES[(PANES.index(self._shown_tab()) + delta) % len(PANES)]
        self._show_tab(name)
        self.query_one(f"#{name}").focus()  # j / k move in the pane now shown

    # ------------------------------------------------------------ the detail view

    def focused_entry(self) -> tuple[str, Text] | None:
        """The entry under the focused pane's cursor as (title, full text); None when there is none."""
        focused = self.screen.focused
        if isinstance(focused, TrajectoryView):
            event = focused.event_at(focused.cursor)
            if event is None:
                return None
            return f"e{event.idx} {event.role}", event_detail(event, CONVERSATION_CHARS)
        if isinstance(focused, EntryList) and focused.line_count:
            number = focused.entry_of(focused.cursor)
            if focused.id == "receipts" and 0 <= number < len(self.receipts):
                receipt = self.receipts[number]
                return f"receipt {receipt.id}", receipt_detail(receipt)
            if focused.id == "diff" and 0 <= number < len(self.diff):
                return "state change", diff_detail(self.diff[number])
        return None

    def action_open_detail(self) -> None:
        entry = self.focused_entry()
        if entry is None:
            self.notify("nothing under the cursor to show", timeout=2)
            return
        title, text = entry
        self.app.push_screen(DetailView(title, text))

    # ------------------------------------------------------------ maximise

    def action_maximise(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        focused = screen.focused
        pane = next(
            (node for node in (focused.ancestors_with_self if focused else ()) if isinstance(node, Pane)),
            self.query_one("#trajectory-pane", Pane),
        )
        screen.maximize(pane, container=False)
