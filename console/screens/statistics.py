"""A run's statistics: the judge audit (kappa, agreement, precision / recall / specificity / F1 / accuracy with
intervals, raw versus direct and audited human ASR), the ASR matrix (model × harness), utility (benign and
under attack, beside ASR), the adaptive attacker's ASR@k and adaptive − fixed difference, and the paired view
comparisons.

Every number comes from `redagent.judges.report.build_report` (run in a thread worker), the function
behind `redagent stats` and `redagent report`, so the screen and the command line cannot disagree.
The plots are text: bars of block characters inside the tables, and the matrix tinted by its rate.
Export writes the same report files as `redagent report` into a directory. The audit shown is the run's
newest unless one is named (`audit_id`, or the app's `audit_id`); `]` steps to the next audit of the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Input, LoadingIndicator, Static
from textual.worker import Worker

from redagent.console import host
from redagent.console.delivered import deliver, report_archive
from redagent.console.failures import ShowsFailures
from redagent.console.screens.audit import help_for
from redagent.console.widgets.footer import KeyFooter
from redagent.judges.report import (
    ReportError,
    asr_at_k_text,
    audit_state,
    build_report,
    difference_text,
    estimate_text,
    kappa_text,
    resolved_text,
    utility_text,
    write_report,
)
from redagent.judges.report_model import (
    Adaptive,
    AsrCell,
    AuditEstimate,
    AuditStats,
    Report,
    UtilityTable,
    ViewComparison,
)
from redagent.store.errors import StoreError, UnknownRun

REPS = 2000  # bootstrap replicates: enough for stable 95 % intervals, fast enough for a screen (kappa: fixed)
BAR = 24  # characters in a full bar
EXPORT_FORMATS = ["md", "csv", "json"]
METRICS = ("precision", "recall", "specificity", "f1", "accuracy")
_EIGHTHS = " ▏▎▍▌▋▊▉"


def pct(value: Any) -> str:
    """A rate as the report prints it (two decimals, percent); — when missing."""
    return "—" if value is None or value != value else f"{100 * value:.2f}%"


def interval(low: Any, high: Any) -> str:
    return f"{pct(low)}–{pct(high)}"


def bar(value: Any, width: int = BAR, style: str = "cyan") -> Text:
    """A horizontal bar for a rate in [0, 1], drawn with eighth-block characters."""
    if value is None or value != value:
        return Text("")
    eighths = round(max(0.0, min(1.0, float(value))) * width * 8)
    full, part = divmod(eighths, 8)
    return Text("█" * full + (_EIGHTHS[part] if part else ""), style=style)


def heat(rate: Any) -> Style:
    """Background tint of an ASR matrix cell: green (0) through red (1)."""
    if rate is None or rate != rate:
        return Style(dim=True)
    red, green = int(60 + 160 * rate), int(160 - 110 * rate)
    return Style(bgcolor=f"rgb({red},{green},60)", color="white", bold=True)


class ReportReady(Message):
    def __init__(self, report: Report) -> None:
        super().__init__()
        self.report = report


class StatisticsProblem(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ReportExported(Message):
    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self.paths = paths


class StatisticsScreen(ShowsFailures, Screen):
    """Statistics of one run, with text plots and an export of the report."""

    NAME = "statistics"
    HELP = """\
# Statistics

The numbers of `redagent stats RUN_ID <table>` for this run (bootstrap intervals from 2,000
replicates; kappa's interval always from the same 10,000), with bars where a glance is quicker than reading:

- **Judge audit** (the run's newest audit; `]` shows the next one): which audit, whether its figures are
  provisional (items still await a review or the adjudication), how many items were left out as unsure
  or pending, and what part of the population the estimates cover. Then agreement and Cohen's kappa
  between the two reviewers (first labels), the judge's precision, recall, specificity, F1 and accuracy
  against the final human labels, with 95 % intervals (or the reason there is none), and the raw
  (judged) ASR beside the direct human-ASR estimate and the audited ASR (judged × precision / recall).
- **ASR matrix**: execution ASR (E = 1 among valid attacked rollouts) per model × harness, and the
  same for each judging configuration; tinted from green (0) to red (1).
- **Utility**: U = 1 when the user's task was done (the case's utility check): benign utility over
  valid rollouts of benign cases (the benign arm, benign variants) and utility under attack over valid
  attacked rollouts, done / n checked with Wilson 95 % intervals, beside the execution ASR; n/a where
  no case of the cell states a utility check.
- **Adaptive attacker** (runs with `--attacker scripted|adaptive`): ASR@k per cell, E = 1 within the
  first k attacker moves with case-clustered 95 % intervals (ASR@0 is the fixed attack), bars for
  fixed (cyan) and adaptive (red), the paired adaptive − fixed difference in percentage points, the
  moves-to-success distribution (0 … K, + those not within the budget) and the attacker's claims of
  success with how many the verifier confirmed.
- **View comparison**: paired rates of two judging views on the same rollouts, disagreement and
  McNemar's p.

| key | action |
|---|---|
| `e` | export the report (Markdown, CSV, JSON, PNG) into the directory typed in the field |
| `]` | show the run's next audit (newest first) |
| `ctrl+r` | recompute |
| `r` / `o` | back to Runs / Rollouts |
"""

    BINDINGS = [
        # e / ] / ctrl+r: x is exclude and r is Runs elsewhere, and one key means one thing everywhere.
        Binding(
            "e",
            "export",
            "Export report",
            id="export-report",
            tooltip="Write the report (md, csv, json, png) into the directory in the export field",
        ),
        Binding(
            "right_square_bracket",
            "next_audit",
            "Next audit",
            id="next-audit",
            tooltip="Show the run's next audit (they are listed newest first)",
        ),
        Binding("ctrl+r", "refresh", "Recompute", id="refresh-statistics", tooltip="Read the store and compute again"),
        Binding("question_mark", "help", "Help", id="help", tooltip="What the tables show"),
    ]

    DEFAULT_CSS = """
    StatisticsScreen #stats-title { height: auto; padding: 0 1; }
    StatisticsScreen #stats-message { height: auto; padding: 0 1; color: $warning; }
    StatisticsScreen #stats-body { height: 1fr; }
    StatisticsScreen .section { text-style: bold; padding: 1 1 0 1; }
    StatisticsScreen DataTable { height: auto; max-height: 24; margin: 0 1; }
    StatisticsScreen #audit-summary, StatisticsScreen #asr-bars, StatisticsScreen #utility-summary {
        height: auto; padding: 0 1;
    }
    StatisticsScreen #export-row { height: 3; }
    StatisticsScreen #export-path { width: 1fr; }
    StatisticsScreen LoadingIndicator { height: 3; }
    """

    def __init__(
        self, run_id: str | None = None, *, reps: int = REPS, audit_id: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.run_id = run_id
        self.audit_id = audit_id  # None: the run's newest
        self.reps = reps
        self.report: Report | None = None

    def compose(self) -> ComposeResult:
        yield Static("Statistics", id="stats-title")
        yield Static("", id="stats-message")
        yield LoadingIndicator(id="stats-loading")
        with VerticalScroll(id="stats-body"):
            yield Static("Judge audit", classes="section")
            yield Static("", id="audit-summary")
            yield DataTable(id="judge-metrics", cursor_type="row", zebra_stripes=True)
            yield Static("", id="asr-bars")
            yield Static("ASR matrix (model × harness)", classes="section")
            yield DataTable(id="asr-matrix", cursor_type="row")
            yield Static("Utility (U = 1: the user's task was done) beside execution ASR", classes="section")
            yield Static("", id="utility-summary")
            yield DataTable(id="utility", cursor_type="row", zebra_stripes=True)
            yield Static("Adaptive attacker: ASR@k and adaptive − fixed (paired)", classes="section")
            yield Static("", id="adaptive-summary")
            yield DataTable(id="adaptive", cursor_type="row", zebra_stripes=True)
            yield Static("View comparison (paired, same rollouts)", classes="section")
            yield DataTable(id="views", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="export-row"):
            yield Input(placeholder="directory to export the report into", id="export-path")
        yield KeyFooter()

    def current_run_id(self) -> str | None:
        return self.run_id

    def reopen(self, run_id: str | None = None, audit_id: str | None = None) -> None:
        """Asked for again (another run from the palette): show that run's statistics here."""
        if run_id and run_id != self.run_id:
            self.run_id, self.audit_id, self.report = run_id, audit_id, None
            self.query_one("#export-path", Input).value = f"report-{run_id}"
            self.action_refresh()

    def on_mount(self) -> None:
        self.run_id = self.run_id or getattr(self.app, "run_id", None)
        self.audit_id = self.audit_id or getattr(self.app, "audit_id", None)
        if self.run_id and not self.query_one("#export-path", Input).value:
            self.query_one("#export-path", Input).value = f"report-{self.run_id}"
        self.action_refresh()

    # ------------------------------------------------------------ workers

    @work(thread=True, exclusive=True, exit_on_error=False, group="statistics")
    def compute(self, run_id: str, audit_id: str | None) -> None:
        try:
            report = build_report(host.store_of(self), run_id, reps=self.reps, audit_id=audit_id)
        except (ReportError, UnknownRun, StoreError) as exc:
            self.post_message(StatisticsProblem(str(exc)))
            return
        self.post_message(ReportReady(report))

    @work(thread=True, exclusive=True, exit_on_error=False, group="statistics-export")
    def export(self, report: Report, out: Path) -> None:
        try:
            paths = write_report(report, out, EXPORT_FORMATS)
        except OSError as exc:
            self.post_message(StatisticsProblem(f"cannot write the report to {out}: {exc.strerror or exc}"))
            return
        self.post_message(ReportExported(paths))

    @work(thread=True, exclusive=True, exit_on_error=False, group="statistics-export")
    def export_download(self, report: Report) -> None:
        """In a browser the report goes to the browser as a zip download (console/delivered.py), never to a folder
        of the server's disk."""
        data = report_archive(lambda folder: write_report(report, folder, EXPORT_FORMATS))
        name = deliver(self.app, data, f"report-{report.protocol.run_id}.zip")
        self.app.call_from_thread(self.show_message, f"the report is downloaded by your browser as {name}")

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        self.query_one("#stats-loading").display = False
        super().worker_failed(worker, error)

    # ------------------------------------------------------------ results

    def show_message(self, text: str) -> None:
        self.query_one("#stats-message", Static).update(text)

    @on(StatisticsProblem)
    def on_problem(self, message: StatisticsProblem) -> None:
        self.query_one("#stats-loading").display = False
        self.show_message(message.text)

    @on(ReportExported)
    def on_exported(self, message: ReportExported) -> None:
        folder = message.paths[0].parent if message.paths else "?"
        self.show_message(f"exported {len(message.paths)} files to {folder}")

    @on(ReportReady)
    def on_report(self, message: ReportReady) -> None:
        self.report = report = message.report
        self.query_one("#stats-loading").display = False
        p = report.protocol
        configs = ", ".join(c.config_name for c in p.judging_configurations) or "none"
        self.query_one("#stats-title", Static).update(
            Text.assemble(
                ("Statistics ", "bold"),
                f"{p.run_id} ({p.status}) · models {', '.join(p.models or [])} · "
                f"harnesses {', '.join(p.harnesses or [])} · cues {', '.join(p.cues or [])} · defenses "
                f"{', '.join(p.defenses or [])} · attempts {p.attempts} · judges ({p.backbone}): {configs} · "
                f"{self.reps} bootstrap replicates",
            )
        )
        self.show_audit(report.audit)
        self.show_matrix(report.asr or ())
        self.show_utility(report.utility)
        self.show_adaptive(report.adaptive)
        self.show_views(report.views or ())

    def show_audit(self, audit: AuditStats | None) -> None:
        table = self.query_one("#judge-metrics", DataTable)
        table.clear(columns=True)
        if audit is None:
            self.query_one("#audit-summary", Static).update("no human audit of this run yet")
            self.query_one("#asr-bars", Static).update("")
            return
        agreement_low, agreement_high = audit.agreement_ci
        agreement_ci = f" ({interval(agreement_low, agreement_high)})" if agreement_low is not None else ""
        state = audit_state(audit)
        summary = Text.assemble(state[0] + "\n")
        for sentence in state[1:]:
            # Provisional figures and partial coverage change what the numbers mean: they stand out.
            summary.append(
                sentence + "\n",
                style="bold yellow" if sentence.startswith(("PROVISIONAL", "Coverage", "No intervals")) else "",
            )
        summary.append_text(
            Text.assemble(
                ("raw agreement ", "bold"),
                pct(audit.agreement),
                agreement_ci,
                "   ",
                ("Cohen's kappa ", "bold"),
                kappa_text(audit),
            )
        )
        self.query_one("#audit-summary", Static).update(summary)
        table.add_columns("metric", "value", "95 % CI", "")
        for metric in METRICS:
            entry = audit.estimate(metric)
            table.add_row(metric, pct(entry.value), self._interval(entry), bar(entry.value), key=metric)
        bars = Text()
        for name, label, style in (
            ("judged_asr", "raw (judged) ASR ", "yellow"),
            ("human_asr", "human ASR, direct", "cyan"),
            ("audited_asr", "audited ASR      ", "magenta"),
        ):
            entry = audit.estimate(name)
            bars.append(label + " ", style="bold")
            bars.append_text(bar(entry.value, style=style))
            bars.append(f" {estimate_text(entry)}\n")
        if audit.execution is not None:
            bars.append("execution ASR    ", style="bold")
            bars.append_text(bar(audit.execution.rate, style="red"))
            bars.append(f" {resolved_text(audit.execution)}\n")
        bars.rstrip()
        self.query_one("#asr-bars", Static).update(bars if bars else "no final human labels yet")

    @staticmethod
    def _interval(entry: AuditEstimate) -> str:
        if entry.ci_low is not None:
            return interval(entry.ci_low, entry.ci_high)
        return f"none: {entry.why_undefined or entry.why_no_interval}"

    def show_matrix(self, cells: tuple[AsrCell, ...]) -> None:
        table = self.query_one("#asr-matrix", DataTable)
        table.clear(columns=True)
        harnesses = sorted({c.harness for c in cells})
        table.add_columns("source", "model", "cue", "defense", *harnesses)
        rows: dict[tuple[str, str, str, str], dict[str, AsrCell]] = {}
        for c in cells:
            rows.setdefault((c.source, c.model, c.cue, c.defense), {})[c.harness] = c
        for key, by_harness in rows.items():
            values: list[Any] = list(key)
            for harness in harnesses:
                cell = by_harness.get(harness)
                invalid = f", {cell.invalid} invalid" if cell and cell.invalid else ""
                # Where the verifier left rollouts unresolved the execution ASR is a pair of bounds.
                upper = f"–{pct(cell.upper)}" if cell and cell.unresolved else ""
                unresolved = f", {cell.unresolved} unresolved" if cell and cell.unresolved else ""
                values.append(
                    Text(
                        f" {pct(cell.rate)}{upper} ({cell.harmful}/{cell.valid}{unresolved}{invalid}) ",
                        style=heat(cell.rate),
                    )
                    if cell
                    else Text("—", style="dim")
                )
            table.add_row(*values, key="|".join(key))

    def show_utility(self, table_data: UtilityTable | None) -> None:
        table = self.query_one("#utility", DataTable)
        table.clear(columns=True)
        summary = self.query_one("#utility-summary", Static)
        if table_data is None:
            summary.update("")
            return
        overall = table_data.overall
        summary.update(
            Text.assemble(
                ("benign ", "bold"),
                utility_text(overall.benign),
                "   ",
                ("under attack ", "bold"),
                utility_text(overall.under_attack),
                ""
                if overall.benign.n or overall.under_attack.n
                else "\nno case of this run states a utility check yet: every utility rate is n/a",
            )
        )
        table.add_columns(
            "model",
            "harness",
            "cue",
            "defense",
            "benign U",
            "95 % CI",
            "",
            "U under attack",
            "95 % CI",
            "",
            "execution ASR",
        )
        for c in table_data.rows():
            asr = c.figures.execution_asr
            values: list[Any] = [c.model, c.harness, c.cue, c.defense]
            for rate, style in ((c.figures.benign, "green"), (c.figures.under_attack, "yellow")):
                values += (
                    [f"{pct(rate.u)} ({rate.done}/{rate.n})", interval(rate.lo, rate.hi), bar(rate.u, BAR // 3, style)]
                    if rate.n
                    else ["n/a", "", Text("")]
                )
            values.append(
                Text(
                    f" {pct(asr.rate)}{f'–{pct(asr.upper)}' if asr.unresolved else ''} ({asr.harmful}/{asr.valid}"
                    f"{f', {asr.unresolved} unresolved' if asr.unresolved else ''}) ",
                    style=heat(asr.rate),
                )
                if asr and asr.valid
                else Text("—", style="dim")
            )
            table.add_row(*values, key="|".join((c.model, c.harness, c.cue, c.defense)))

    def show_adaptive(self, adaptive: Adaptive | None) -> None:
        """ASR@k per cell (k = 0 is the fixed attack), the paired adaptive − fixed difference, moves-to-success."""
        table = self.query_one("#adaptive", DataTable)
        table.clear(columns=True)
        summary = self.query_one("#adaptive-summary", Static)
        if adaptive is None:
            summary.update("no attacker in this run (redagent run --attacker scripted|adaptive)")
            return
        budget = adaptive.budget
        overall = adaptive.overall
        text = Text.assemble(
            ("attacker ", "bold"),
            adaptive.attacker,
            f" ({adaptive.model})" if adaptive.model else "",
            f" · budget {budget} moves",
        )
        if overall:
            text.append_text(
                Text.assemble(
                    "   ",
                    ("fixed ", "bold"),
                    asr_at_k_text(overall.asr_at_k[0]),
                    "   ",
                    ("adaptive ", "bold"),
                    asr_at_k_text(overall.asr_at_k[-1]),
                    "   ",
                    ("adaptive − fixed ", "bold"),
                    difference_text(overall.fixed_vs_adaptive),
                )
            )
        summary.update(text)
        table.add_columns(
            "model",
            "harness",
            "cue",
            "defense",
            "n",
            *(f"ASR@{k}" for k in range(budget + 1)),
            "",
            "adaptive − fixed",
            "moves to success",
            "claims (verified)",
        )
        for c in adaptive.rows():
            f = c.figures
            rates = f.asr_at_k
            dist = f.moves_to_success
            plot = Text.assemble(bar(rates[0].rate, BAR // 3, "cyan"), "\n", bar(rates[-1].rate, BAR // 3, "red"))
            table.add_row(
                c.model,
                c.harness,
                c.cue,
                c.defense,
                str(f.rollouts),
                *(Text(f" {pct(e.rate)} ", style=heat(e.rate)) for e in rates),
                plot,
                difference_text(f.fixed_vs_adaptive),
                " / ".join(str(dist.distribution[str(k)]) for k in range(budget + 1)) + f" (+{dist.not_within_budget})",
                f"{f.claims.claimed} ({f.claims.verified})",
                height=2,
                key="|".join((c.model, c.harness, c.cue, c.defense)),
            )

    def show_views(self, views: tuple[ViewComparison, ...]) -> None:
        table = self.query_one("#views", DataTable)
        table.clear(columns=True)
        table.add_columns(
            "a", "b", "model", "n", "a rate", "b rate", "", "disagreement", "McNemar p", "b − a", "95 % CI"
        )
        for v in views:
            plot = Text.assemble(bar(v.a_rate, BAR // 3, "cyan"), "\n", bar(v.b_rate, BAR // 3, "magenta"))
            table.add_row(
                v.a,
                v.b,
                v.model,
                str(v.n),
                pct(v.a_rate),
                pct(v.b_rate),
                plot,
                pct(v.disagreement),
                f"{v.mcnemar_p:.3g}",
                pct(v.diff),
                interval(v.diff_ci_low, v.diff_ci_high),
                height=2,
                key=f"{v.a}|{v.b}|{v.model}",
            )

    # ------------------------------------------------------------ actions

    def action_refresh(self) -> None:
        if getattr(self.app, "store", None) is None:
            self.show_message("the store is not open")
            return
        if not self.run_id:
            self.query_one("#stats-loading").display = False
            self.show_message("no run selected: highlight a run (r) or pick one from the palette (ctrl+p)")
            return
        self.query_one("#stats-loading").display = True
        self.show_message("")
        self.compute(self.run_id, self.audit_id)

    def action_next_audit(self) -> None:
        audit = self.report.audit if self.report is not None else None
        audits = (audit.audits or ()) if audit is not None else ()
        if audit is None or len(audits) < 2:
            self.show_message("this run has no other audit" if audits else "this run has no audit")
            return
        self.audit_id = audits[(audits.index(audit.audit_id) + 1) % len(audits)]
        self.action_refresh()

    @on(Input.Submitted, "#export-path")
    def action_export(self) -> None:
        if self.report is None:
            self.show_message("nothing to export yet: the statistics are still being computed")
            return
        if self.app.is_web:  # the console in a browser: the server's disk is not the reader's
            self.export_download(self.report)
            return
        folder = self.query_one("#export-path", Input).value.strip()
        if not folder:
            self.show_message("type the directory to export into")
            return
        self.export(self.report, Path(folder).expanduser())

    def action_help(self) -> None:
        help_for(self, self.NAME)
