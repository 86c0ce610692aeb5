"""Line-rendered lists for the evidence panes: a huge trajectory read in windows, and short entry lists.

Both are `ScrollView`s that draw only the visible lines with `render_line` and keep the drawn
strips in an LRU cache (the Toolong pattern): a 5,000-event trajectory costs as much to draw as a
12-event one. The trajectory keeps at most MAX_WINDOWS windows of events in memory and asks its
source for the others in a thread worker as the user scrolls to them.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from rich.style import Style
from rich.text import Text
from textual import events, work
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from redagent.console.failures import ShowsFailures
from redagent.store.readmodel import StoredEvent

WINDOW = 200  # events per read from the store
MAX_WINDOWS = 12  # windows kept in memory (2,400 events); older ones are read again when revisited

# Drawn lines kept per pane: a few screens' worth. Every Strip carries a handful of small caches of its
# own, so a large cache is tens of thousands of live objects for the cycle collector to walk.
STRIPS = 256

EventSource = Callable[[int, int], list[StoredEvent]]

_CURSOR = Style(reverse=True)
_HIGHLIGHT = Style(bgcolor="dark_goldenrod", color="black")
_ROLE_STYLE = {
    "user": "bold cyan",
    "assistant": "bold green",
    "tool": "magenta",
    "system": "dim",
    "transcript": "bold yellow",
    "attacker": "bold red",
}
# An adaptive attacker's move (engine/attacker/): its own colour, so the adversary's hand is never mistaken
# for the user's or the agent's.
_ATTACKER = Style(color="red", bold=True)

_MOVES: list[BindingType] = [
    Binding("up,k", "cursor(-1)", "Up", show=False, id="cursor_up", tooltip="Previous line"),
    Binding("down,j", "cursor(1)", "Down", show=False, id="cursor_down", tooltip="Next line"),
    Binding("pageup", "page(-1)", "Page up", show=False, id="page_up", tooltip="One page up"),
    Binding("pagedown", "page(1)", "Page down", show=False, id="page_down", tooltip="One page down"),
    Binding("home", "cursor_to(0)", "First", show=False, id="first", tooltip="First line"),
    Binding("end", "cursor_to(-1)", "Last", show=False, id="last", tooltip="Last line"),
]


def json_text(value: Any) -> str:
    """Compact JSON of a stored value; the standard library for what orjson refuses (integers past 64 bits)."""
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:
        return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


def _compact(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json_text(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def event_line(event: StoredEvent) -> Text:
    """One event as one line: index, role, and the call, result or text it carries."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"e{event.idx:<4} ", style="dim")
    role = event.role
    line.append(f"{role[:9]:<9} ", style=_ROLE_STYLE.get(role, ""))
    call = event.tool_call
    if role == "assistant" and call:
        line.append(f"▶ {call['name']}", style="bold")
        line.append(f"({_compact(call.get('args', {}))})")
    elif role == "attacker":
        move = call or {}
        line.append(f"⚔ {move.get('move', '?')}", style=_ATTACKER)
        line.append(f" → {move.get('channel', '?')}", style="red")
        if move.get("move") != "stop" and not move.get("placed", True):
            line.append(" [not placed] ", style="bold yellow")
        if move.get("claimed_success"):
            line.append(" [claims success] ", style="bold yellow")
        line.append(f": {_compact(event.text)}" if event.text else "")
        if move.get("why"):
            line.append(f"  (why: {_compact(move['why'], 160)})", style="dim red")
    elif role == "tool":
        name = call["name"] if call else "tool"
        line.append(f"◀ {name}: ", style="bold")
        if event.tampered:
            line.append("[tampered] ", style="bold red")
        line.append(_compact(event.observation or ""))
    elif role == "transcript":
        # Not its JSON squeezed onto one line (every draw of the row split the whole artifact): what it is.
        line.append("the agent CLI's own record · enter: as a conversation", style="yellow")
    else:
        line.append(_compact(event.text))
    return line


class _LineScroll(ScrollView, can_focus=True):
    """A cursor over `line_count` lines drawn by `line_text`; subclasses say what a line is."""

    BINDINGS = _MOVES
    DEFAULT_CSS = "_LineScroll { overflow-x: hidden; }"
    cursor: reactive[int] = reactive(0, repaint=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._strips: LRUCache[tuple[Any, ...], Strip] = LRUCache(STRIPS)
        self.line_count = 0

    def _set_count(self, count: int) -> None:
        self.line_count = count
        self._strips.clear()
        size = Size(self.scrollable_content_region.width or 1, count)
        if size != self.virtual_size:  # a layout pass only when the length really changed
            self.virtual_size = size
        self.refresh()

    def line_text(self, line: int) -> tuple[Text, Any]:
        """The text of a line and a key that changes whenever its drawing would."""
        raise NotImplementedError

    def line_style(self, line: int) -> Style | None:
        return None

    def render_line(self, y: int) -> Strip:
        line = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if line >= self.line_count:
            return Strip.blank(width, self.rich_style)
        text, key = self.line_text(line)
        is_cursor = line == self.cursor and self.has_focus
        extra = self.line_style(line)
        cache_key = (line, width, key, is_cursor, extra)
        strip = self._strips.get(cache_key)
        if strip is None:
            segments = list(text.render(self.app.console))
            strip = Strip(segments).crop_extend(0, width, self.rich_style)
            if extra is not None:
                strip = strip.apply_style(extra)
            if is_cursor:
                strip = strip.apply_style(_CURSOR)
            self._strips[cache_key] = strip
        return strip

    def on_resize(self, _event: events.Resize) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width or 1, self.line_count)
        self._strips.clear()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_line(old - self.scroll_offset.y)
        self.refresh_line(new - self.scroll_offset.y)
        self.scroll_to_line(new)
        self.cursor_moved(new)

    def refresh_line(self, y: int) -> None:
        if 0 <= y < self.size.height:
            self.refresh_lines(y)

    def scroll_to_line(self, line: int) -> None:
        top, height = int(self.scroll_offset.y), max(1, self.scrollable_content_region.height)
        if line < top:
            self.scroll_to(y=line, animate=False, immediate=True)
        elif line >= top + height:
            self.scroll_to(y=line - height + 1, animate=False, immediate=True)

    def cursor_moved(self, line: int) -> None:
        """Hook: the cursor is now on `line`."""

    def action_cursor(self, delta: int) -> None:
        if self.line_count:
            self.cursor = max(0, min(self.line_count - 1, self.cursor + delta))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.scrollable_content_region.height - 1))

    def action_cursor_to(self, line: int) -> None:
        if self.line_count:
            self.cursor = line if line >= 0 else self.line_count - 1

    def on_click(self, event: events.Click) -> None:
        line = int(self.scroll_offset.y) + event.y
        if 0 <= line < self.line_count:
            self.cursor = line


class TrajectoryView(ShowsFailures, _LineScroll):
    """One line per trajectory event; events come from memory or, in windows, from a store reader."""

    DEFAULT_CSS = "TrajectoryView { height: 1fr; overflow-x: hidden; }"

    class Selected(Message):
        """The cursor rests on a loaded event."""

        def __init__(self, view: TrajectoryView, event: StoredEvent) -> None:
            super().__init__()
            self.view = view
            self.event = event

    class WindowLoaded(Message):
        def __init__(self, generation: int, window: int, events: list[StoredEvent]) -> None:
            super().__init__()
            self.generation = generation
            self.window = window
            self.events = events

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._windows: OrderedDict[int, list[StoredEvent]] = OrderedDict()
        self._pending: set[int] = set()
        self._source: EventSource | None = None
        self._generation = 0  # bumped on every load, so a late window of the previous rollout is dropped
        self.marks: dict[int, str] = {}  # idx → marker shown before the line (⚠ mismatch, ◆ cited)
        self.highlighted: set[int] = set()

    def load(self, events: Sequence[StoredEvent], count: int | None = None, source: EventSource | None = None) -> None:
        """Show a trajectory: `events` are its first events (all of them when no `source`), `count` the total."""
        self._generation += 1
        self._windows.clear()
        self._pending.clear()
        self._source = source
        for start in range(0, len(events), WINDOW):
            self._windows[start // WINDOW] = list(events[start : start + WINDOW])
        self.marks, self.highlighted = {}, set()
        self._set_count(count if count is not None else len(events))
        self.set_reactive(TrajectoryView.cursor, 0)
        self.scroll_to(y=0, animate=False, immediate=True)
        self.cursor_moved(0)

    def event_at(self, idx: int) -> StoredEvent | None:
        window = self._windows.get(idx // WINDOW)
        if window is None:
            return None
        self._windows.move_to_end(idx // WINDOW)
        offset = idx % WINDOW
        return window[offset] if offset < len(window) else None

    def listing(self, receipt_ids: set[str]) -> set[int]:
        """Indexes of the loaded events that list any of these receipts (the tool results that produced them)."""
        if not receipt_ids:
            return set()
        return {
            event.idx
            for window in self._windows.values()
            for event in window
            if receipt_ids.intersection(event.receipts)
        }

    def set_marks(self, marks: dict[int, str], highlighted: set[int]) -> None:
        self.marks, self.highlighted = marks, highlighted
        self._strips.clear()
        self.refresh()

    def line_text(self, line: int) -> tuple[Text, Any]:
        event = self.event_at(line)
        if event is None:
            self._request(line // WINDOW)
            return Text(f"e{line:<4} …", style="dim"), "loading"
        text = Text(no_wrap=True, overflow="ellipsis")
        mark = self.marks.get(line, " ")
        text.append(mark, style="bold red" if mark == "⚠" else "bold yellow")
        text.append_text(event_line(event))
        return text, ("event", mark)

    def line_style(self, line: int) -> Style | None:
        return _HIGHLIGHT if line in self.highlighted else None

    def render_line(self, y: int) -> Strip:
        line = self.scroll_offset.y + y
        # Read ahead: the window below (or above) the visible one is fetched before it is reached.
        if y == 0 and self._source is not None and line < self.line_count:
            for window in ((line + self.size.height + WINDOW // 2) // WINDOW, max(0, line - WINDOW // 2) // WINDOW):
                if window * WINDOW < self.line_count and window not in self._windows:
                    self._request(window)
        return super().render_line(y)

    def _request(self, window: int) -> None:
        if self._source is None or window in self._pending or window in self._windows:
            return
        self._pending.add(window)
        self._read_window(self._source, self._generation, window)

    @work(thread=True, exit_on_error=False, group="trajectory-window")
    def _read_window(self, source: EventSource, generation: int, window: int) -> None:
        events_ = source(window * WINDOW, (window + 1) * WINDOW)
        self.post_message(self.WindowLoaded(generation, window, events_))

    def on_trajectory_view_window_loaded(self, message: TrajectoryView.WindowLoaded) -> None:
        message.stop()
        if message.generation != self._generation:
            return
        self._pending.discard(message.window)
        self._windows[message.window] = message.events
        while len(self._windows) > MAX_WINDOWS:
            self._windows.popitem(last=False)
        self._strips.clear()
        self.refresh()
        if self.cursor // WINDOW == message.window:
            self.cursor_moved(self.cursor)

    def cursor_moved(self, line: int) -> None:
        event = self.event_at(line)
        if event is not None:
            self.post_message(self.Selected(self, event))
        elif self.line_count:
            self._request(line // WINDOW)


class EntryList(_LineScroll):
    """Entries of a few lines each (receipts, diff entries), with highlighted and marked entries.

    Entries are drawn when they scroll into view, not when loaded: a rollout with thousands of
    receipts would otherwise hold tens of thousands of Text objects that the cycle collector walks
    on every full pass — the stalls a reviewer feels while scrolling.
    """

    DEFAULT_CSS = "EntryList { height: 1fr; overflow-x: hidden; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._entries: Sequence[Any] = []
        # Not `_render`: that is Widget's own method, which Textual calls (copying a selection) with no entry.
        self._draw: Callable[[Any], list[Text]] = lambda _entry: []
        self._owner: list[int] = []  # line → the entry it belongs to (-1: the empty-list line)
        self._first_line: list[int] = []
        self._drawn: LRUCache[int, list[Text]] = LRUCache(STRIPS)
        self._empty = Text("(none)", style="dim")
        self.highlighted: set[int] = set()

    def load(
        self,
        entries: Sequence[Any],
        render: Callable[[Any], list[Text]],
        count: Callable[[Any], int],
        empty: str = "(none)",
    ) -> None:
        """Show `entries`; `render(entry)` draws one as exactly `count(entry)` lines."""
        self._entries, self._draw = entries, render
        self._owner, self._first_line = [], []
        for number, entry in enumerate(entries):
            self._first_line.append(len(self._owner))
            self._owner += [number] * count(entry)
        if not self._owner:
            self._owner = [-1]
        self._empty = Text(empty, style="dim")
        self._drawn.clear()
        self.highlighted = set()
        self._set_count(len(self._owner))
        self.set_reactive(EntryList.cursor, 0)
        self.scroll_to(y=0, animate=False, immediate=True)

    def highlight(self, entries: set[int]) -> None:
        """Highlight these entries and bring the first of them into view."""
        self.highlighted = entries
        self._strips.clear()
        self.refresh()
        if entries:
            first = self._first_line[min(entries)]
            last = first
            while last + 1 < len(self._owner) and self._owner[last + 1] == min(entries):
                last += 1
            self.scroll_to_line(last)
            self.scroll_to_line(first)

    def entry_lines(self, number: int) -> list[Text]:
        lines = self._drawn.get(number)
        if lines is None:
            lines = self._draw(self._entries[number])
            self._drawn[number] = lines
        return lines

    def entry_of(self, line: int) -> int:
        """The entry a line belongs to (-1 for the empty-list line)."""
        return self._owner[line]

    def line_text(self, line: int) -> tuple[Text, Any]:
        number = self._owner[line]
        if number < 0:
            return self._empty, None
        lines = self.entry_lines(number)
        offset = line - self._first_line[number]
        return (lines[offset] if offset < len(lines) else Text("")), None

    def line_style(self, line: int) -> Style | None:
        return _HIGHLIGHT if self._owner[line] in self.highlighted else None

    def plain_lines(self) -> list[str]:
        """Every line's text (what the pane shows, unclipped): for tests and copying."""
        return [self.line_text(line)[0].plain for line in range(len(self._owner))]
