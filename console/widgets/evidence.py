"""The three evidence panes side by side — trajectory | receipts | state diff — and how they point at each other.

Selecting a trajectory event highlights the receipts it produced (its `receipts`, or receipts whose
`step` is its index) and the diff entries those receipts changed. Which diff entry a receipt changed
is not recorded by the sandbox, so `diff_for_receipts` infers it from the ids and paths the receipt
names; it is a pure function, kept here so it can be tested without a screen.

With `judge_hints` (the researcher's rollout screen), claimed-versus-observed mismatches from
`redagent.judges.evidence.mismatches` are listed above the panes and flagged (⚠) on the events and
receipts they name, and evidence cited by judge labels is marked ◆. Without them (the reviewer and
adjudicator screens) nothing computed by judges/ is drawn or even computed: a mismatch line written
by the same rules the audited judge uses would anchor the human towards the judge and inflate its
measured precision and recall.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from redagent.console.widgets.trajectory import EntryList, EventSource, TrajectoryView, json_text
from redagent.judges.evidence import mismatches as find_mismatches
from redagent.sandbox.diff import PathSyntaxError, parse_path

_EVENT_ID = re.compile(r"\be(\d+)\b")
_RECEIPT_ID = re.compile(r"\b(r\d+)\b")


# ---------------------------------------------------------------- pure matching


def receipts_for_event(event: dict[str, Any], receipts: Sequence[dict[str, Any]]) -> list[str]:
    """Ids of the receipts an event produced: those it lists (a tool result) or whose step is its index (a call)."""
    ids = set(event.get("receipts") or [])
    return [r["id"] for r in receipts if r["id"] in ids or r.get("step") == event["idx"]]


def _tokens(value: Any) -> Iterable[str]:
    """The strings a receipt names (ids, paths, addresses), with workspace paths also made relative."""
    if isinstance(value, str):
        if value:
            yield value
            for prefix in ("/workspace/", "./", "workspace:", "drive:"):
                if value.startswith(prefix) and len(value) > len(prefix):
                    yield value[len(prefix):]
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tokens(item)
    elif isinstance(value, list):
        for item in value:
            yield from _tokens(item)


def _segments(path: str) -> tuple[str, ...]:
    try:
        return parse_path(path)
    except PathSyntaxError:
        return tuple(path.split("."))


def diff_owners(receipts: Sequence[dict[str, Any]], diff: Sequence[dict[str, Any]]) -> list[set[str]]:
    """For each diff entry, the ids of the receipts that changed it.

    A diff entry belongs to a receipt when it lies under the receipt's service and one of its path
    segments below the service is a string the receipt's effect or arguments name (a transaction,
    payee, document or message id, a workspace path). An entry of a service that no receipt names
    (an account balance, a counter) belongs to every successful receipt of that service: it was
    changed by one of them and the diff cannot say which. Indexed by (service, segment), so a
    rollout with thousands of receipts and entries costs one pass over each.
    """
    segments = [_segments(d["path"]) for d in diff]
    index: dict[tuple[str, str], list[int]] = {}
    for number, path in enumerate(segments):
        for segment in path[1:]:
            index.setdefault((path[0], segment), []).append(number)
    owners: list[set[str]] = [set() for _ in diff]
    by_service: dict[str, set[str]] = {}
    for receipt in receipts:
        if receipt.get("outcome") == "ok":
            by_service.setdefault(receipt["service"], set()).add(receipt["id"])
        tokens = set(_tokens(receipt.get("effect") or {})) | set(_tokens(receipt.get("args") or {}))
        for token in tokens:
            for number in index.get((receipt["service"], token), ()):
                owners[number].add(receipt["id"])
    for number, path in enumerate(segments):
        if not owners[number] and path:
            owners[number] = set(by_service.get(path[0], ()))
    return owners


def diff_for_receipts(selected: Iterable[str], receipts: Sequence[dict[str, Any]],
                      diff: Sequence[dict[str, Any]], owners: list[set[str]] | None = None) -> set[int]:
    """Indexes of the diff entries the `selected` receipts (by id) changed (see diff_owners).

    Pass `owners` (diff_owners of the same rollout) to skip recomputing it on every selection.
    """
    wanted = set(selected)
    if not wanted:
        return set()
    owners = diff_owners(receipts, diff) if owners is None else owners
    return {number for number, ids in enumerate(owners) if ids & wanted}


def flagged(mismatch_lines: Iterable[str]) -> tuple[set[int], set[str]]:
    """The event indexes (e<idx>) and receipt ids (r<n>) that mismatch lines name."""
    events, receipts = set(), set()
    for line in mismatch_lines:
        events |= {int(n) for n in _EVENT_ID.findall(line)}
        receipts |= set(_RECEIPT_ID.findall(line))
    return events, receipts


def cited(labels: Sequence[dict[str, Any]] | None) -> set[str]:
    """Every evidence id any label cites (e<idx>, receipt ids, diff paths)."""
    return {str(item) for label in labels or () for item in label.get("evidence") or ()}


# ---------------------------------------------------------------- rendering


def _json(value: Any, limit: int = 300) -> str:
    text = json_text(value)
    return text if len(text) <= limit else text[:limit] + "…"


def receipt_lines(receipt: dict[str, Any], mark: str) -> list[Text]:
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append(mark or " ", style="bold red" if mark == "⚠" else "bold yellow")
    head.append(f"{receipt['id']} ", style="bold")
    head.append(f"{receipt['service']}.{receipt['action']} ")
    outcome_style = "green" if receipt["outcome"] == "ok" else "red"
    head.append(receipt["outcome"], style=outcome_style)
    head.append(f"  {receipt['actor']}  step e{receipt['step']}" if receipt.get("step") is not None
                else f"  {receipt['actor']}", style="dim")
    if receipt.get("via"):
        head.append(f"  via {receipt['via']}", style="yellow")
    lines = [head, Text(f"   args   {_json(receipt.get('args'))}", no_wrap=True, overflow="ellipsis")]
    if receipt.get("effect"):
        lines.append(Text(f"   effect {_json(receipt['effect'])}", no_wrap=True, overflow="ellipsis"))
    if receipt.get("error"):
        lines.append(Text(f"   error  {receipt['error']}", style="red", no_wrap=True, overflow="ellipsis"))
    return lines


def receipt_line_count(receipt: dict[str, Any]) -> int:
    """How many lines `receipt_lines` draws for a receipt (the pane is laid out before it is drawn)."""
    return 2 + bool(receipt.get("effect")) + bool(receipt.get("error"))


def diff_lines(entry: dict[str, Any], mark: str) -> list[Text]:
    op_style = {"added": "green", "removed": "red", "changed": "yellow"}.get(entry["op"], "")
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append(mark or " ", style="bold yellow")
    head.append(f"{entry['op']:<8}", style=op_style)
    head.append(entry["path"], style="bold")
    lines = [head]
    if entry["op"] != "added":
        lines.append(Text(f"   before {_json(entry.get('before'))}", style="dim", no_wrap=True, overflow="ellipsis"))
    if entry["op"] != "removed":
        lines.append(Text(f"   after  {_json(entry.get('after'))}", no_wrap=True, overflow="ellipsis"))
    return lines


def diff_line_count(entry: dict[str, Any]) -> int:
    """How many lines `diff_lines` draws for a diff entry."""
    return 1 + (entry["op"] != "added") + (entry["op"] != "removed")


def event_detail(event: dict[str, Any]) -> Text:
    """The whole of one event, wrapped: what the one-line trajectory view clips."""
    text = Text()
    text.append(f"e{event['idx']} {event['role']}", style="bold")
    call = event.get("tool_call")
    if event["role"] == "assistant" and call:
        text.append(f"  ▶ {call['name']}\n", style="bold green")
        text.append(orjson.dumps(call.get("args", {}), option=orjson.OPT_INDENT_2).decode())
    elif event["role"] == "tool":
        text.append(f"  ◀ {call['name'] if call else 'tool'}", style="bold magenta")
        if event.get("receipts"):
            text.append(f"  receipts {', '.join(event['receipts'])}", style="dim")
        text.append("\n")
        if event.get("tampered") and event.get("original") != event.get("observation"):
            text.append("tampered — the agent saw a different output than the service returned\n", style="bold red")
            text.append("original: ", style="dim")
            text.append(f"{event.get('original') or ''}\nshown:    ", style="dim")
        text.append(event.get("observation") or "")
    elif event["role"] == "transcript":
        # A real CLI's own transcript (and the prompts and tool list it really sent), kept as an artifact.
        text.append("  the agent CLI's own record of the rollout\n", style="bold yellow")
        try:
            text.append(orjson.dumps(orjson.loads(event.get("text") or ""), option=orjson.OPT_INDENT_2).decode())
        except orjson.JSONDecodeError:
            text.append(event.get("text") or "")
        return text
    if event.get("text"):
        text.append("\n" + event["text"])
    return text


class Pane(Vertical):
    """One of the three panes; the unit the maximise binding fills the screen with."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    Pane { width: 1fr; height: 1fr; border: round $panel; }
    Pane:focus-within { border: round $accent; }
    Pane.-maximized { width: 1fr; }
    """


class EvidencePanes(Widget):
    """Trajectory | receipts | state diff, with selection highlighting; mismatch flags only with judge_hints."""

    DEFAULT_CSS = """
    EvidencePanes { height: 1fr; }
    EvidencePanes > Horizontal { height: 1fr; }
    EvidencePanes #event-detail-scroll { height: 8; border-top: solid $panel; }
    EvidencePanes #mismatches { height: 2; color: $error; padding: 0 1; }
    """

    BINDINGS = [
        Binding("m", "maximise", "Maximise pane", id="maximise",
                tooltip="Fill the screen with the focused pane (again to restore)"),
    ]

    def __init__(self, *, judge_hints: bool = False, id: str | None = None, classes: str | None = None) -> None:
        """Off by default — every screen a reviewer or adjudicator sees must show no mismatch line, no ⚠ or ◆;
        only the researcher's rollout screen asks for `judge_hints=True`."""
        super().__init__(id=id, classes=classes)
        self.judge_hints = judge_hints
        self.receipts: list[dict[str, Any]] = []
        self.diff: list[dict[str, Any]] = []
        self.mismatch_lines: list[str] = []
        self._receipt_marks: dict[str, str] = {}
        self._event_marks: dict[int, str] = {}
        self._cited: set[str] = set()
        self.selected_receipts: list[str] = []
        self.selected_diff: set[int] = set()
        self._owners: list[set[str]] = []

    def compose(self) -> ComposeResult:
        if self.judge_hints:
            yield Static("", id="mismatches")
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

    def load(self, events: Sequence[dict[str, Any]], receipts: Sequence[dict[str, Any]],
             diff: Sequence[dict[str, Any]], labels: list[dict[str, Any]] | None = None, *,
             mismatches: list[str] | None = None, event_count: int | None = None,
             source: EventSource | None = None) -> None:
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
            mismatches = find_mismatches({"events": list(events), "receipts": self.receipts, "diff": self.diff})
        self._cited = cited(labels)
        trajectory = self.query_one("#trajectory", TrajectoryView)
        total = event_count if event_count is not None else len(events)
        trajectory.load(events, total, source)
        self.query_one("#trajectory-pane", Pane).border_title = f"Trajectory ({total} events)"
        self.query_one("#receipts-pane", Pane).border_title = f"Receipts ({len(self.receipts)})"
        self.query_one("#diff-pane", Pane).border_title = f"State diff ({len(self.diff)})"
        self._draw(mismatches or [])

    def set_mismatches(self, lines: list[str]) -> None:
        """Flag claimed-versus-observed mismatches (they may arrive after the panes, for a huge trajectory)."""
        if not self.judge_hints:
            raise ValueError("these evidence panes show no judge hints")
        self._draw(lines)

    def _draw(self, lines: list[str]) -> None:
        """Lay the entries out with their marks (none at all without judge_hints: `lines` is empty, nothing cited)."""
        self.mismatch_lines = list(lines)
        bad_events, bad_receipts = flagged(lines)
        self._event_marks = {idx: "⚠" for idx in bad_events}
        for item in self._cited:
            match = _EVENT_ID.fullmatch(item)
            if match and int(match.group(1)) not in self._event_marks:
                self._event_marks[int(match.group(1))] = "◆"
        self._receipt_marks = {r["id"]: "⚠" if r["id"] in bad_receipts else "◆" if r["id"] in self._cited else ""
                               for r in self.receipts}
        if self.judge_hints:
            text = Text(no_wrap=True, overflow="ellipsis")
            for line in lines:
                text.append(f"⚠ {line}\n")
            text.rstrip()
            if not lines:
                text = Text("claimed vs observed: no mismatch found", style="dim")
            # Fixed height, no layout pass: a mismatch line never moves the panes.
            self.query_one("#mismatches", Static).update(text, layout=False)
        marks, cited = self._receipt_marks, self._cited
        self.query_one("#receipts", EntryList).load(
            self.receipts, lambda r: receipt_lines(r, marks[r["id"]]), receipt_line_count, "(no receipts)")
        self.query_one("#diff", EntryList).load(
            self.diff, lambda d: diff_lines(d, "◆" if d["path"] in cited else ""), diff_line_count,
            "(no state change)")
        trajectory = self.query_one("#trajectory", TrajectoryView)
        trajectory.set_marks(self._event_marks, set())
        self._select(trajectory.event_at(trajectory.cursor))

    # ------------------------------------------------------------ selection

    def on_trajectory_view_selected(self, message: TrajectoryView.Selected) -> None:
        message.stop()
        self._select(message.event)

    def _select(self, event: dict[str, Any] | None) -> None:
        if event is None:
            return
        self.query_one("#event-detail", Static).update(event_detail(event))
        self.selected_receipts = receipts_for_event(event, self.receipts)
        self.selected_diff = diff_for_receipts(self.selected_receipts, self.receipts, self.diff, self._owners)
        chosen = set(self.selected_receipts)
        self.query_one("#receipts", EntryList).highlight(
            {number for number, r in enumerate(self.receipts) if r["id"] in chosen})
        self.query_one("#diff", EntryList).highlight(self.selected_diff)
        # The call and its result are one step: highlight both lines in the trajectory.
        steps = {r["step"] for r in self.receipts if r["id"] in chosen and r.get("step") is not None}
        trajectory = self.query_one("#trajectory", TrajectoryView)
        trajectory.set_marks(self._event_marks, steps | trajectory.listing(chosen))

    # ------------------------------------------------------------ maximise

    def action_maximise(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        focused = screen.focused
        pane = next((node for node in (focused.ancestors_with_self if focused else ()) if isinstance(node, Pane)),
                    self.query_one("#trajectory-pane", Pane))
        screen.maximize(pane, container=False)
