"""The rollout list: one page of rollouts at a time from the store, filtered by run, model, harness, cue,
defense, surface, strategy, constraint, E and judge label.

Only the current page (PAGE rows) is ever in the table: the store pages by keyset
(`Store.rollout_page`), so a store of 100,000 rollouts opens as fast as one of 100. The screen
remembers where each visited page started, so going back is a query for that page, not a scan.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Input, Label, Static

from redagent.console import host
from redagent.console.failures import ShowsFailures
from redagent.console.widgets.footer import KeyFooter
from redagent.console.widgets.header import ConsoleHeader
from redagent.errors import UserError
from redagent.store.browse import BrowsedRollout, page_key

PAGE = 100
# The list's columns and widths (cells longer than their column are cut; the detail shows them whole).
COLUMNS = (
    ("run", 8),
    ("case", 34),
    ("E", 9),
    ("U", 2),
    ("model", 16),
    ("harness", 8),
    ("cue", 9),
    ("defense", 15),
    ("att", 3),
    ("IVC", 12),
    ("surfaces", 24),
)

# Filter inputs in the order the filter form shows them: key, label, placeholder.
FILTER_FIELDS = (
    ("run", "run", "run id (empty: every run)"),
    ("model", "model", "sim/comply"),
    ("harness", "harness", "native | react | shell"),
    ("cue", "cue", "clean | disclosed"),
    ("defense", "defense", "none | self-reminder | policy-reminder | placebo"),
    ("surface", "surface", "workspace | email | browser | banking | files"),
    ("strategy", "strategy", "U1 … T5"),
    ("constraint", "constraint", "C1 … C28"),
    ("E", "E", "0 | 1 | invalid"),
    ("label", "label", "CONFIG[@BACKBONE]=0|1, e.g. hybrid/rule=1"),
)


class FilterError(UserError, ValueError):
    """A filter the user typed that cannot be applied; the message says which field and why."""

    title = "Filter error"


def parse_label_filter(text: str) -> dict[str, Any]:
    """`hybrid/rule=1` or `state/rule@openai/gpt-4o=0` → the store's label filter (backbone defaults to rule)."""
    config, sep, value = text.strip().rpartition("=")
    if not sep or value.strip() not in ("0", "1") or not config.strip():
        raise FilterError(f"label: expected CONFIG[@BACKBONE]=0|1, got {text!r}")
    name, at, backbone = config.strip().partition("@")
    return {"config_name": name.strip(), "backbone": backbone.strip() if at else "rule", "label": int(value)}


def check_filters(values: dict[str, str]) -> None:
    """FilterError naming the first field whose value can never match (a typo would show an empty list).

    Fixed vocabularies are checked against the code's own lists; model, run and surface are free text
    (a model string or run id the store may or may not hold, a surface substring).
    """
    from redagent.cases.taxonomy import CONSTRAINTS, STRATEGIES
    from redagent.engine.conditions import CUES, DEFENSES
    from redagent.engine.types import HARNESSES

    if values.get("label"):
        parse_label_filter(values["label"])
    if values.get("E", "") not in ("", "0", "1", "invalid"):
        raise FilterError(f"E: expected 0, 1 or invalid, got {values['E']!r}")
    for key, allowed in (
        ("harness", HARNESSES),
        ("cue", CUES),
        ("defense", DEFENSES),
        ("strategy", tuple(STRATEGIES)),
        ("constraint", tuple(CONSTRAINTS)),
    ):
        value = values.get(key, "")
        if value and value not in allowed:
            shown = ", ".join(allowed) if len(allowed) <= 8 else f"{allowed[0]} … {allowed[-1]}"
            raise FilterError(f"{key}: no such {key} {value!r} (one of {shown})")


def label_filter_text(label: dict[str, Any]) -> str:
    name = label.get("config_name") or label.get("config_hash", "")
    backbone = label.get("backbone", "rule")
    return f"{name}{'' if backbone == 'rule' else '@' + backbone}={label.get('label')}"


def describe_filters(run_id: str | None, filters: dict[str, Any]) -> str:
    parts = [f"run={run_id}"] if run_id else []
    for key, value in filters.items():
        if value not in (None, ""):
            parts.append(f"{key}={label_filter_text(value) if key == 'label' else value}")
    return "  ".join(parts) or "no filter"


class PageLoaded(Message):
    def __init__(self, page_number: int, rows: list[BrowsedRollout]) -> None:
        super().__init__()
        self.page_number = page_number
        self.rows = rows


class CountLoaded(Message):
    def __init__(self, count: int, cap: int) -> None:
        super().__init__()
        self.count = count
        self.cap = cap


class FilterScreen(ModalScreen[dict[str, Any] | None]):
    """A form for every filter; enter applies, escape cancels."""

    DEFAULT_CSS = """
    FilterScreen { align: center middle; }
    FilterScreen > Vertical { width: 80; height: auto; border: round $accent; background: $surface; padding: 0 1; }
    FilterScreen Grid { grid-size: 2; grid-columns: 12 1fr; height: auto; grid-gutter: 0 1; }
    FilterScreen Label { padding: 1 0 0 0; }
    FilterScreen #filter-error { color: $error; height: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="filter-cancel", tooltip="Close without changing the filters"),
        Binding("ctrl+l", "clear", "Clear all", id="filter-clear", tooltip="Empty every field"),
    ]

    def __init__(self, values: dict[str, str]) -> None:
        super().__init__()
        self.values = values

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Filter rollouts (enter applies, escape cancels)")
            with Grid():
                for key, label, placeholder in FILTER_FIELDS:
                    yield Label(label)
                    yield Input(self.values.get(key, ""), placeholder=placeholder, id=f"filter-{key}")
            yield Static("", id="filter-error")
            yield Button("Apply", id="filter-apply", variant="primary")

    def collect(self) -> dict[str, Any]:
        return {key: self.query_one(f"#filter-{key}", Input).value.strip() for key, _, _ in FILTER_FIELDS}

    @on(Input.Submitted)
    @on(Button.Pressed, "#filter-apply")
    def apply(self) -> None:
        values = self.collect()
        try:
            check_filters(values)
        except FilterError as exc:
            self.query_one("#filter-error", Static).update(str(exc))
            return
        self.dismiss(values)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_clear(self) -> None:
        for key, _, _ in FILTER_FIELDS:
            self.query_one(f"#filter-{key}", Input).value = ""


class RolloutsScreen(ShowsFailures, Screen):
    """A page of rollouts at a time; enter opens one side by side with its evidence."""

    SCREEN_NAME = "rollouts"
    HELP = """\
# Rollouts

One page of rollouts at a time, straight from the store (100 rows), in run → case → cell order.

- `enter` opens the rollout: trajectory | receipts | state diff; there `]` / `[` move along this page.
- `j` / `k` or the arrows move; `]` / `[` go to the next / previous page.
- `f` opens the filter form: run, model, harness, cue, defense, surface (substring), strategy,
  constraint, E (`0`, `1`, `unresolved`, `invalid`) and judge label (`hybrid/rule=1`, or `CONFIG@BACKBONE=0`).
- `ctrl+l` clears every filter but the run (in the filter form too).
- `s` opens the statistics of the filtered run (or of the highlighted rollout's run).

The count next to the filters stops at 10,000 ("10,000+"): counting further costs a scan of the store.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "move(1)", "Down", show=False, id="rollouts-down", tooltip="Next rollout"),
        Binding("k", "move(-1)", "Up", show=False, id="rollouts-up", tooltip="Previous rollout"),
        Binding(
            "right_square_bracket",
            "next_page",
            "Next page",
            id="rollouts-next-page",
            tooltip="The next page of rollouts",
        ),
        Binding(
            "left_square_bracket",
            "previous_page",
            "Prev page",
            id="rollouts-previous-page",
            tooltip="The previous page of rollouts",
        ),
        Binding(
            "f",
            "filter",
            "Filter",
            id="rollouts-filter",
            tooltip="Filter by run, model, harness, cue, defense, surface, strategy, constraint, E, label",
        ),
        Binding(
            "ctrl+l",
            "clear_filters",
            "Clear filters",
            id="rollouts-clear-filters",
            tooltip="Remove every filter except the run",
        ),
        Binding("escape", "back", "Back", show=False, id="rollouts-back", tooltip="Back to the previous screen"),
    ]
    DEFAULT_CSS = """
    RolloutsScreen #rollouts-status { height: 1; padding: 0 1; background: $boost; }
    RolloutsScreen DataTable { height: 1fr; }
    """

    def __init__(self, run_id: str | None = None, filters: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.filters: dict[str, Any] = dict(filters or {})
        # Opened bare (`o`), the screen takes back the run and filters it had when the researcher left it.
        self._asked = run_id is not None or filters is not None
        self.rows: list[BrowsedRollout] = []
        self.page_number = 0
        self._starts: list[tuple[Any, ...] | None] = [None]  # where each visited page starts (keyset)
        self.count: int | None = None
        self.count_cap = 0
        self.loaded = False  # True once the first page is on screen

    def compose(self) -> ComposeResult:
        yield ConsoleHeader()
        yield Static("loading…", id="rollouts-status")
        table: DataTable[str] = DataTable(id="rollouts-table", cursor_type="row", zebra_stripes=True)
        # E and U right after the case: the outcome is what the list is read for, and at 100 columns the
        # last columns are off-screen (the table scrolls sideways for the rest). Fixed widths: the layout
        # does not depend on when the table last measured its cells (auto widths were sometimes the headers').
        for label, width in COLUMNS:
            table.add_column(label, width=width)
        yield table
        yield KeyFooter()

    def on_mount(self) -> None:
        remembered = getattr(self.app, "remembered", {}).get(self.SCREEN_NAME)
        if not self._asked and remembered is not None:
            self.run_id, self.filters = remembered["run_id"], dict(remembered["filters"])
        self.reload()

    def on_unmount(self) -> None:
        remembered = getattr(self.app, "remembered", None)
        if remembered is not None:
            remembered[self.SCREEN_NAME] = {"run_id": self.run_id, "filters": dict(self.filters)}

    def reopen(self, run_id: str | None = None, filters: dict[str, Any] | None = None) -> None:
        """Called by the app when the rollouts screen is asked for again: show this run and these filters."""
        self.run_id = run_id if run_id is not None else self.run_id
        if filters is not None:
            self.filters = dict(filters)
        self.reload()

    # ------------------------------------------------------------ loading

    def reload(self) -> None:
        self._starts = [None]
        self.page_number = 0
        self.count = None
        self._load_page(0, None)
        self._count()

    @work(thread=True, exclusive=True, exit_on_error=False, group="rollouts-page")
    def _load_page(self, page_number: int, after: tuple[Any, ...] | None) -> None:
        rows = host.store_of(self).rollout_page(self.run_id, self.filters, after, PAGE)
        self.post_message(PageLoaded(page_number, rows))

    @work(thread=True, exclusive=True, exit_on_error=False, group="rollouts-count")
    def _count(self) -> None:
        from redagent.store.browse import COUNT_CAP

        self.post_message(CountLoaded(host.store_of(self).count_rollouts(self.run_id, self.filters), COUNT_CAP))

    @on(PageLoaded)
    def _page_loaded(self, message: PageLoaded) -> None:
        if message.page_number > 0 and not message.rows:
            # Past the end: stay on the last page that had rows.
            self._starts = self._starts[: message.page_number]
            self.notify("no more rollouts", timeout=2)
            return
        self.page_number = message.page_number
        self.rows = message.rows
        if len(self._starts) == self.page_number + 1 and self.rows:
            self._starts.append(page_key(self.rows[-1]))
        table = self.query_one("#rollouts-table", DataTable)
        table.clear()
        for row in self.rows:
            if row.valid:
                outcome = "unresolved" if row.E is None else str(row.E)
            else:
                outcome = f"invalid:{row.invalid_reason}"
            table.add_row(
                row.run_id[-8:],
                row.case_id,
                outcome,
                "—" if row.U is None else str(row.U),
                row.model,
                row.harness,
                row.cue,
                row.defense,
                str(row.attempt),
                f"{row.strategy}/{row.vulnerability}/{row.constraint}",
                ",".join(row.surfaces),
                key=row.rollout_id,
            )
        self.loaded = True
        self._show_status()
        table.focus()

    @on(CountLoaded)
    def _count_loaded(self, message: CountLoaded) -> None:
        self.count, self.count_cap = message.count, message.cap
        self._show_status()

    def _show_status(self) -> None:
        first = self.page_number * PAGE + 1
        shown = f"{first}–{first + len(self.rows) - 1}" if self.rows else "none"
        if self.count is None:
            total = "counting…"
        elif self.count >= self.count_cap:
            total = f"{self.count_cap:,}+"
        else:
            total = f"{self.count:,}"
        where = describe_filters(self.run_id, self.filters)
        if self.loaded and not self.rows and self.page_number == 0:
            # An empty table alone reads as "still loading" or "broken"; say which filters left nothing.
            hint = "f changes the filters, ctrl+l clears them" if self.filters else "f sets filters"
            self.query_one("#rollouts-status", Static).update(f"no rollouts match: {where} · {hint}")
            return
        self.query_one("#rollouts-status", Static).update(
            f"page {self.page_number + 1} · rollouts {shown} of {total} · {where}"
        )

    # ------------------------------------------------------------ actions

    def current_run_id(self) -> str | None:
        """The filtered run, else the highlighted row's run (the list can span every run)."""
        if self.run_id:
            return self.run_id
        table = self.query_one("#rollouts-table", DataTable)
        if self.rows and 0 <= table.cursor_row < len(self.rows):
            return self.rows[table.cursor_row].run_id
        return None

    def page_ids(self) -> list[str]:
        return [row.rollout_id for row in self.rows]

    @on(DataTable.RowSelected)
    def _open(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            host.show(self, "rollout", rollout_id=event.row_key.value, ids=self.page_ids())

    def action_move(self, delta: int) -> None:
        table = self.query_one("#rollouts-table", DataTable)
        if delta > 0:
            table.action_cursor_down()
        else:
            table.action_cursor_up()

    def action_next_page(self) -> None:
        if len(self.rows) < PAGE:
            self.notify("this is the last page", timeout=2)
            return
        self._load_page(self.page_number + 1, self._starts[self.page_number + 1])

    def action_previous_page(self) -> None:
        if self.page_number == 0:
            return
        self._load_page(self.page_number - 1, self._starts[self.page_number - 1])

    def action_filter(self) -> None:
        values = {key: str(value) for key, value in self.filters.items() if key != "label" and value is not None}
        if self.filters.get("label"):
            values["label"] = label_filter_text(self.filters["label"])
        values["run"] = self.run_id or ""
        self.app.push_screen(FilterScreen(values), self._apply_filters)

    def _apply_filters(self, values: dict[str, Any] | None) -> None:
        if values is None:
            return
        self.run_id = values.pop("run") or None
        label = values.pop("label")
        self.filters = {key: value for key, value in values.items() if value}
        if label:
            self.filters["label"] = parse_label_filter(label)
        self.reload()

    def action_clear_filters(self) -> None:
        self.filters = {}
        self.reload()

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
