"""The Runs screen: every run with its status and progress, the selected run's live monitor, and start/stop/resume.

A timer polls the store every second on a thread worker, so a run driven by this console and one
started with `redagent run` in another process are watched the same way: from what is stored. The
selected run's detail (counts, execution ASR, new rollouts for the log) is re-read only while its
stored count moves or it is running; a finished run costs one cheap `list_runs` per second.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Input, Label, Log, ProgressBar, Static
from textual.worker import get_current_worker

from redagent.console import host
from redagent.console.cli_common import clean
from redagent.console.failures import ShowsFailures
from redagent.console.messages import RunDetail, RunsPolled
from redagent.console.throughput import Throughput, format_duration
from redagent.console.widgets.footer import KeyFooter
from redagent.console.widgets.header import ConsoleHeader
from redagent.console.workers_view import failure_lines, workers_table
from redagent.engine.matrix import RunSpec
from redagent.judges.health import run_health
from redagent.store.interfaces import RunMonitor
from redagent.store.records import CellAsr, RunListing, RunRecord

POLL_S = 1.0
LOG_BACKLOG = 500  # lines shown for a run's already-stored rollouts when it is first selected
STATUS_STYLE = {
    "planned": "dim",
    "running": "bold yellow",
    "stopped": "magenta",
    "finished": "green",
    "failed": "bold red",
}
RESUMABLE = ("planned", "stopped", "failed")


def _created(value: datetime | None) -> str:
    if value is None:
        return ""
    # The run id already carries the full timestamp; the column only has to sort the eye.
    return (value.astimezone(UTC) if value.tzinfo else value).strftime("%m-%d %H:%M")


def _status(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def _log_line(summary: Any) -> str:
    outcome = (
        "invalid"
        if not summary.valid
        else "E=1 harmful"
        if summary.E == 1
        else "unresolved"
        if summary.E is None
        else f"E={summary.E}"
    )
    return (
        f"{summary.id[:10]}  {summary.case_id}  {summary.model}  {summary.harness}  {summary.cue}  "
        f"{summary.defense}  #{summary.attempt}  {outcome}"
    )


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


class HealthRead(Message):
    """A run's health warnings as `redagent runs show` prints them, read at (run id, stored count, status);
    None when the read failed."""

    def __init__(self, key: tuple[str, int, str], warnings: list[str] | None) -> None:
        super().__init__()
        self.key = key
        self.warnings = warnings


class NewRunScreen(ModalScreen[RunSpec | None]):
    """The form for a new matrix run; dismisses with the RunSpec (the engine checks it) or None."""

    SCREEN_NAME = "new_run"
    HELP = """\
# New run

A run is the matrix cases × models × harnesses × cues × defenses × attempts. Lists are
comma-separated. Cases take the same selectors as `redagent run --cases`: `all`, ids, globs
(`banking-*`), `surface:email`, `strategy:T3`, `constraint:C05`. Models are calibration agents
(`sim/comply`, …) or litellm model strings (keys from the environment). The engine checks the
selection before anything is stored; a problem is shown as one line and no run is created.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "Start", id="submit-run", tooltip="Start the run with these settings"),
        Binding("escape", "cancel", "Cancel", id="cancel-run-form", tooltip="Close the form without starting"),
    ]
    FIELDS = (
        ("cases", "cases", "all, ids, globs, surface:X, strategy:X, constraint:X"),
        ("models", "models", "sim/comply,openai/gpt-4o-mini"),
        ("harnesses", "harnesses", "native,react,shell"),
        ("cues", "cues", "clean,disclosed"),
        ("defenses", "defenses", "none,self-reminder,policy-reminder,placebo"),
        ("attempts", "attempts", "1"),
        ("concurrency", "concurrency", "8"),
    )

    def compose(self) -> ComposeResult:
        defaults = RunSpec()
        with Vertical(id="new-run-form"):
            yield Static("New run", id="new-run-title")
            for field, label, placeholder in self.FIELDS:
                value = getattr(defaults, field)
                text = ",".join(value) if isinstance(value, list) else str(value)
                kind: Literal["integer", "text"] = "integer" if field in ("attempts", "concurrency") else "text"
                with Horizontal(classes="form-row"):
                    yield Label(label, classes="form-label")
                    yield Input(text, placeholder=placeholder, type=kind, id=f"run-{field}")
            yield Static("", id="new-run-error")
            with Horizontal(id="new-run-buttons"):
                yield Button("Start", variant="primary", id="new-run-start")
                yield Button("Cancel", id="new-run-cancel")
        yield KeyFooter()  # its own keys (start, cancel): without it the runs screen's footer showed through

    def _value(self, field: str) -> str:
        return self.query_one(f"#run-{field}", Input).value.strip()

    def action_submit(self) -> None:
        try:
            attempts, concurrency = int(self._value("attempts")), int(self._value("concurrency"))
        except ValueError:
            self.query_one("#new-run-error", Static).update("attempts and concurrency must be whole numbers")
            return
        spec = RunSpec(
            cases=self._value("cases") or "all",
            models=_split(self._value("models")),
            harnesses=_split(self._value("harnesses")),
            cues=_split(self._value("cues")),
            defenses=_split(self._value("defenses")),
            attempts=attempts,
            concurrency=concurrency,
            benign_arm=True,
        )  # as `redagent run` does: benign utility beside ASR
        self.dismiss(spec)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    def _enter(self) -> None:
        self.action_submit()

    @on(Button.Pressed, "#new-run-start")
    def _start(self) -> None:
        self.action_submit()

    @on(Button.Pressed, "#new-run-cancel")
    def _cancel(self) -> None:
        self.action_cancel()


class RunsScreen(ShowsFailures, Screen):
    """Researcher home: the runs table on the left, the selected run's live monitor on the right."""

    SCREEN_NAME = "runs"
    # Under 120 columns the runs list goes over the run's panel (styles.tcss): side by side at 100 the
    # list cut its created column and the panel wrapped every line.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    HELP = """\
# Runs

Every run in the store, newest first, with its status and how many of its planned rollouts are
stored. The table refreshes every second, so a run started here or with `redagent run` in another
terminal appears and moves on its own.

The panel on the right follows the highlighted run: its protocol (models, harnesses, cues,
defenses, attempts), progress, rollouts per second and time left (measured from the stored count),
execution ASR so far per model × harness × cue × defense over **valid** rollouts only, invalid
rollouts by reason (excluded from every rate, never counted as safe), for a run spread over worker
processes or Ray nodes each worker's shards (running, done, failed, lost), rollouts and last error,
and a log line per stored rollout.

- `ctrl+n` opens the form for a new run (`ctrl+s` starts it, `escape` closes the form); it runs in
  the background while you keep working.
- `ctrl+x` stops a run started from this console: no new rollouts are scheduled, the ones in flight
  finish and are stored, and the run becomes *stopped*. A run driven by another process is
  stopped there (Ctrl-C).
- `ctrl+u` resumes a stopped (or failed) run: exactly the missing rollouts are run.
- `enter` opens the run's rollouts; `s` the highlighted run's statistics.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        # Chords for the run controls: n, x and u are labels, exclusions and "unsure" on the labelling screens,
        # and one key means one thing across the console (see the key map in docs/architecture.md).
        Binding("ctrl+n", "new_run", "New run", id="new-run", tooltip="Start a new matrix run from a form"),
        Binding(
            "ctrl+x",
            "stop_run",
            "Stop",
            id="stop-run",
            tooltip="Stop the selected run (started here): in-flight rollouts finish, the rest can be resumed",
        ),
        Binding(
            "ctrl+u",
            "resume_run",
            "Resume",
            id="resume-run",
            tooltip="Resume the selected stopped or failed run: run only its missing rollouts",
        ),
        Binding("enter", "open_run", "Rollouts", id="open-run", tooltip="Browse the selected run's rollouts"),
    ]

    def __init__(self, run_id: str | None = None, *, store: RunMonitor | None = None) -> None:
        super().__init__()
        self.selected_run_id: str | None = run_id
        # What the screen reads (the app's store when none is given); starting and resuming runs take the app's.
        self.store = store
        self.runs: dict[str, RunListing] = {}
        self.records: dict[str, RunRecord] = {}
        self.throughput: dict[str, Throughput] = {}
        self._shown: dict[str, set[str]] = {}  # rollout ids already in the log, per run
        self._detail_completed: dict[str, int] = {}  # the stored count the shown detail was read at
        self._rate_text = ""  # the progress line on screen
        self._health_key: tuple[str, int, str] | None = None  # (run, stored count, status) the warnings were read at
        self._health_reading = False

    # ------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield ConsoleHeader()
        with Horizontal(id="runs-body"):
            table: DataTable = DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
            # Fixed widths: the layout does not depend on when the table last measured its cells.
            table.add_column("run", key="run", width=24)
            table.add_column("status", key="status", width=8)
            table.add_column("done", key="done", width=11)
            table.add_column("created", key="created", width=11)
            yield table
            with VerticalScroll(id="run-detail"):
                yield Static("No run selected. Press ctrl+n to start one.", id="run-title")
                yield Static("", id="run-protocol")
                yield ProgressBar(total=1, show_eta=False, id="run-progress")
                yield Static("", id="run-rate")
                yield Static("", id="run-asr")
                yield Static("", id="run-invalid")
                health = Static("", id="run-health")  # a broken setup's warnings; a healthy run has none
                health.display = False
                yield health
                workers = Static("", id="run-workers")  # per worker, for --workers N and Ray runs
                workers.display = False  # a run made by one process has none: the panel keeps its layout
                yield workers
                yield Log(id="run-log", max_lines=5000)
        yield KeyFooter()

    def on_mount(self) -> None:
        if self.selected_run_id is None:  # back from another screen: the run highlighted when we left
            self.selected_run_id = getattr(self.app, "remembered", {}).get(self.SCREEN_NAME, {}).get("run_id")
        self.query_one("#runs-table", DataTable).focus()
        self.set_interval(POLL_S, self.poll)
        self.call_after_refresh(self.poll)  # once the table runs, so the rows it gets are measured at once

    # ------------------------------------------------------------ polling the store

    def poll(self) -> None:
        run_id = self.selected_run_id
        row = self.runs.get(run_id) if run_id else None
        first = run_id is not None and run_id not in self._shown
        known = frozenset(self._shown.get(run_id, ())) if run_id else frozenset()
        self._poll(run_id, first, known, row)

    @work(thread=True, exclusive=True, exit_on_error=False, group="runs-poll")
    def _poll(self, run_id: str | None, first: bool, known: frozenset[str], row: RunListing | None) -> None:
        store: RunMonitor = self.store or host.store_of(self)
        runs = store.list_runs()
        detail = None
        current = next((r for r in runs if r.run_id == run_id), None) if run_id else None
        if current is not None:
            moved = (
                first
                or current.status == "running"
                or row is None
                or current.completed != self._detail_completed.get(current.run_id)
                or current.status != row.status
            )
            if moved:
                run_id = current.run_id
                record = store.get_run(run_id) if first or run_id not in self.records else None
                # Only the log needs every summary; for a finished run it is read once, on first selection.
                new = (
                    [s for s in store.rollouts(run_id) if s.id not in known]
                    if first or current.completed != len(known)
                    else None
                )
                detail = RunDetail(
                    run_id=run_id,
                    first=first,
                    counts=store.counts(run_id),
                    asr=store.execution_asr(run_id),
                    workers=store.run_workers(run_id),
                    record=record,
                    new=new,
                )
        if not get_current_worker().is_cancelled:
            self.post_message(RunsPolled(runs, detail))

    @on(RunsPolled)
    def _polled(self, message: RunsPolled) -> None:
        now_runs = {row.run_id: row for row in message.runs}
        for run_id, row in now_runs.items():
            if row.status == "running":
                self.throughput.setdefault(run_id, Throughput()).observe(row.completed)
        self._update_table(message.runs)
        self.runs = now_runs
        if self.selected_run_id is None and message.runs:
            self._select(message.runs[0].run_id)
            return
        detail = message.detail
        if detail is not None and detail.run_id == self.selected_run_id:
            self._show_detail(detail)
        elif self.selected_run_id in self.runs:
            self._show_rate(self.runs[self.selected_run_id])

    # ------------------------------------------------------------ the table

    def _update_table(self, rows: list[RunListing]) -> None:
        table = self.query_one("#runs-table", DataTable)
        ids = [row.run_id for row in rows]
        if [key.value for key in table.rows] == ids:
            for row in rows:
                old = self.runs.get(row.run_id)
                if old != row:
                    table.update_cell(row.run_id, "status", _status(row.status))
                    table.update_cell(row.run_id, "done", f"{row.completed}/{row.planned}")
            return
        # A new run (newest first, so at the top): rebuild, then put the cursor back on the selected run.
        table.clear()
        for row in rows:
            table.add_row(
                row.run_id,
                _status(row.status),
                f"{row.completed}/{row.planned}",
                _created(row.created_at),
                key=row.run_id,
            )
        if self.selected_run_id in ids:
            table.move_cursor(row=ids.index(self.selected_run_id), animate=False)

    @on(DataTable.RowHighlighted, "#runs-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        # Read the cursor, not the event: a rebuild queues highlights of rows the cursor has left since.
        table = event.data_table
        if not table.row_count:
            return
        run_id = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        if run_id and run_id != self.selected_run_id:
            self._select(run_id)

    @on(DataTable.RowSelected, "#runs-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_run()

    def select_run(self, run_id: str) -> None:
        """Show `run_id` (from the palette, the command line or a run just started here)."""
        table = self.query_one("#runs-table", DataTable)
        keys = [key.value for key in table.rows]
        if run_id in keys:
            table.move_cursor(row=keys.index(run_id), animate=False)
        self._select(run_id)

    def reopen(self, run_id: str | None = None) -> None:
        if run_id:
            self.select_run(run_id)

    def current_run_id(self) -> str | None:
        return self.selected_run_id

    def on_unmount(self) -> None:
        remembered = getattr(self.app, "remembered", None)
        if remembered is not None:
            remembered[self.SCREEN_NAME] = {"run_id": self.selected_run_id}

    def _select(self, run_id: str) -> None:
        self.selected_run_id = run_id
        self._shown.pop(run_id, None)  # re-read its backlog: the log shows one run at a time
        log = self.query_one("#run-log", Log)
        log.clear()
        self.query_one("#run-title", Static).update(Text(run_id, style="bold"))
        for widget_id in ("#run-protocol", "#run-rate", "#run-asr", "#run-invalid", "#run-workers", "#run-health"):
            self.query_one(widget_id, Static).update("")
        self.query_one("#run-health", Static).display = False
        self._health_key = None
        self._rate_text = ""
        self.poll()

    # ------------------------------------------------------------ the detail panel

    def _show_detail(self, detail: RunDetail) -> None:
        run_id = detail.run_id
        if detail.record is not None:
            self.records[run_id] = detail.record
        record = self.records.get(run_id)
        row = self.runs[run_id]
        counts = detail.counts
        self._detail_completed[run_id] = row.completed
        title = Text.assemble((run_id, "bold"), "  ", _status(row.status))
        if record is not None and record.parent_run_id:
            title.append(f"  replay of {record.parent_run_id}", style="dim")
        self.query_one("#run-title", Static).update(title)
        if record is not None:
            self.query_one("#run-protocol", Static).update(self._protocol(record))
        bar = self.query_one("#run-progress", ProgressBar)
        bar.update(total=max(1, counts.planned), progress=counts.completed)
        self._show_rate(row)
        self.query_one("#run-asr", Static).update(self._asr(detail.asr))
        reasons = counts.invalid_reasons
        invalid = (
            f"invalid rollouts: {counts.invalid} — " + ", ".join(f"{r} {n}" for r, n in reasons.items())
            if counts.invalid
            else "invalid rollouts: none"
        )
        self.query_one("#run-invalid", Static).update(invalid)
        self._check_health(run_id, row)
        workers = self.query_one("#run-workers", Static)
        shown = self._workers(detail.workers)
        workers.update(shown)
        workers.display = bool(shown)
        self._write_log(run_id, detail)

    @staticmethod
    def _protocol(record: RunRecord) -> Table:
        protocol = record.protocol
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        for key in ("cases", "models", "harnesses", "cues", "defenses", "attempts", "concurrency"):
            value = protocol.get(key)
            table.add_row(key, ", ".join(map(str, value)) if isinstance(value, list) else str(value))
        table.add_row("planned", str(record.planned))
        return table

    def _show_rate(self, row: RunListing) -> None:
        meter = self.throughput.get(row.run_id)
        if row.status == "running" and meter is not None:
            rate = meter.rate
            text = (
                f"{rate:.1f} rollouts/s · ETA {format_duration(meter.eta(row.planned))}"
                if rate is not None
                else "measuring rollouts/s…"
            )
        elif row.status == "running":
            text = "measuring rollouts/s…"
        else:
            text = f"{row.status}: {row.completed}/{row.planned} rollouts stored"
        if host.runs_of(self).drives(row.run_id):
            text += " · driven by this console"
        if text != self._rate_text:
            # Each poll lands here; repainting an unchanged line kept an idle, finished run's panel busy.
            self._rate_text = text
            self.query_one("#run-rate", Static).update(text)

    @staticmethod
    def _workers(workers: dict[str, Any] | None) -> Group | str:
        table = workers_table(workers)
        if table is None:
            return ""  # a run made by one process has no workers to show
        failures = failure_lines(workers)
        return Group(table, *(Text(f"shard failure: {line}", style="yellow") for line in failures))

    # ------------------------------------------------------------ health warnings

    def _check_health(self, run_id: str, row: RunListing) -> None:
        """Read the run's health warnings again if something was stored or its status changed since they were
        read. On a worker of their own, one at a time: their query walks the run's events, and inside the poll it
        held up (and got cancelled with) the next one."""
        key = (run_id, row.completed, row.status)
        if key != self._health_key and not self._health_reading:
            self._health_reading = True
            self._read_health(key)

    @work(thread=True, exit_on_error=False, group="runs-health")
    def _read_health(self, key: tuple[str, int, str]) -> None:
        store: RunMonitor = self.store or host.store_of(self)
        try:
            warnings = run_health(store, key[0])["warnings"]
        except BaseException:
            self.post_message(HealthRead(key, None))  # frees the slot; ShowsFailures shows the failure itself
            raise
        self.post_message(HealthRead(key, warnings))

    @on(HealthRead)
    def _health_read(self, message: HealthRead) -> None:
        self._health_reading = False
        selected = self.selected_run_id
        if message.warnings is None or message.key[0] != selected:
            # Another run was selected while this one was read: read that one's now (a finished run's detail
            # is not polled again, so nothing else would).
            if selected in self.runs and self._health_key is None and message.warnings is not None:
                self._check_health(selected, self.runs[selected])
            return
        self._health_key = message.key
        health = self.query_one("#run-health", Static)
        health.update(self._warnings(message.warnings))
        health.display = bool(message.warnings)

    @staticmethod
    def _warnings(lines: list[str]) -> Text:
        """Each warning on its own wrapped line, in the words `runs show` uses; model names and stored details
        come from outside, so they are shown as text (Text, never markup)."""
        text = Text()
        for number, line in enumerate(lines):
            text.append("\n" if number else "")
            text.append("warning: ", style="bold yellow")
            text.append(clean(line), style="yellow")
        return text

    @staticmethod
    def _asr(cells: list[CellAsr]) -> Table | str:
        if not cells:
            return "execution ASR: no rollouts stored yet"
        # A condition every cell shares goes into the title, not a column: at 100 columns the panel is ~35
        # wide and six columns were squeezed to "mo… ┃ h…".
        keys = ("model", "harness", "cue", "defense")
        varying = [key for key in keys if len({getattr(cell, key) for cell in cells}) > 1] or ["model"]
        shared = " · ".join(f"{key} {getattr(cells[0], key)}" for key in keys if key not in varying)
        table = Table(
            title="execution ASR so far (valid rollouts)" + (f"\n{shared}" if shared else ""),
            title_justify="left",
            expand=False,
            show_edge=False,
            pad_edge=False,
        )
        for column in varying:
            table.add_column(column, overflow="fold")
        table.add_column("harm/valid", justify="right", no_wrap=True)
        table.add_column("ASR", justify="right", no_wrap=True)
        for cell in cells:
            rate = "—" if cell.rate is None else f"{cell.rate:.1%}"
            if cell.unresolved and cell.upper is not None:  # bounds: the verifier left some undecided
                rate += f"–{cell.upper:.1%}"
            harm = f"{cell.harmful}/{cell.valid}" + (f" +{cell.unresolved}?" if cell.unresolved else "")
            table.add_row(*(getattr(cell, key) for key in varying), harm, rate)
        return table

    def _write_log(self, run_id: str, detail: RunDetail) -> None:
        new = detail.new
        if new is None:
            return
        shown = self._shown.setdefault(run_id, set())
        fresh = [s for s in new if s.id not in shown]
        shown.update(s.id for s in fresh)
        log = self.query_one("#run-log", Log)
        if detail.first and len(fresh) > LOG_BACKLOG:
            log.write_line(f"… {len(fresh) - LOG_BACKLOG} earlier rollouts not shown")
            fresh = fresh[-LOG_BACKLOG:]
        if fresh:
            log.write_lines([_log_line(s) for s in fresh])

    # ------------------------------------------------------------ actions

    def action_new_run(self) -> None:
        self.app.push_screen(NewRunScreen(), self._start)

    def _start(self, spec: RunSpec | None) -> None:
        if spec is not None:
            host.runs_of(self).start(host.store_of(self), spec)

    def action_stop_run(self) -> None:
        run_id = self.selected_run_id
        if run_id is None:
            self.notify("no run selected", severity="warning")
        elif host.runs_of(self).stop(run_id):
            self.notify(f"stopping {run_id}: in-flight rollouts finish, then it is stored as stopped")
        elif run_id in self.runs and self.runs[run_id].status == "running":
            self.notify(f"{run_id} is driven by another process: stop it there (Ctrl-C)", severity="warning")
        else:
            self.notify(f"{run_id} is not running", severity="warning")

    def action_resume_run(self) -> None:
        run_id = self.selected_run_id
        status = self.runs[run_id].status if run_id in self.runs else None
        if run_id is None:
            self.notify("no run selected", severity="warning")
        elif host.runs_of(self).drives(run_id):
            self.notify(f"{run_id} is already running here", severity="warning")
        elif status not in RESUMABLE:
            self.notify(
                f"{run_id} is {status}: only a stopped, failed or planned run can be resumed", severity="warning"
            )
        else:
            host.runs_of(self).resume(host.store_of(self), run_id)

    def action_open_run(self) -> None:
        if self.selected_run_id:
            host.show(self, "rollouts", run_id=self.selected_run_id)
