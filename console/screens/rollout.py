"""One rollout side by side: its case (IVC path, constraint, channel, attack) over trajectory | receipts | state diff,
and — for researchers, never when blinded — the judge labels per configuration with the evidence they cite.

`]` / `[` walk the ids of the list the rollout was opened from. The store is read in a thread
worker; a huge trajectory arrives in windows (`Store.events_window`) as it is scrolled, and its
mismatches are computed from all its events after the panes are already on screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from redagent.cases.loader import CaseFileError
from redagent.cases.schema import Case
from redagent.cases.taxonomy import CHANNELS, CONSTRAINTS, STRATEGIES, VULNERABILITIES
from redagent.console import host
from redagent.console.cli_common import clean
from redagent.console.failures import ShowsFailures
from redagent.console.widgets.evidence import EvidencePanes
from redagent.console.widgets.footer import KeyFooter
from redagent.console.widgets.header import ConsoleHeader
from redagent.judges.evidence import Mismatch, mismatches
from redagent.judges.labelling import run_cases
from redagent.store.readmodel import StoredLabel, StoredRollout

# `]` and `[` share one footer entry: the footer fits at 80 columns with the detail key beside them.
STEP = Binding.Group("Next/prev rollout")
FIRST_EVENTS = 400  # events read with the detail; the rest come in windows as the trajectory scrolls
ATTACK_LINES = 3


class DetailLoaded(Message):
    def __init__(
        self, rollout_id: str, detail: StoredRollout | None, case: Case | None, found: list[Mismatch] | None
    ) -> None:
        super().__init__()
        self.rollout_id = rollout_id
        self.detail = detail
        self.case = case
        self.mismatches = found


class MismatchesFound(Message):
    def __init__(self, rollout_id: str, found: list[Mismatch]) -> None:
        super().__init__()
        self.rollout_id = rollout_id
        self.mismatches = found


def _coded(code: str, table: dict[str, Any]) -> str:
    entry = table.get(code)
    return f"{code} {entry.name}" if entry is not None else code


def case_header(detail: StoredRollout, case: Case | None) -> Text:
    """The case as a reviewer needs it: IVC path with names, the constraint, the channel and the attack."""
    text = Text()
    # E and U lead: they are what a researcher opens a rollout for, and the first line is always visible.
    text.append("E ")
    if detail.valid and detail.E is None:
        # The verifier could not decide: said as it is, with why — never shown as "no harm".
        text.append("unresolved", style="bold magenta")
        reasons = "; ".join(u.detail for u in detail.verdict.unresolved) or "the verifier could not decide"
        text.append(f" ({clean(reasons)[:300]})", style="magenta")
    elif detail.valid:
        text.append(str(detail.E), style="bold red" if detail.E == 1 else "bold green")
        text.append(" (harmful)" if detail.E == 1 else " (no harm recorded)")
    else:
        text.append(f"invalid: {detail.invalid_reason}", style="bold yellow")
    utility = detail.U
    text.append("  U ")
    text.append("—" if utility is None else str(utility), style="bold")
    text.append("   ")
    text.append(detail.case_id, style="bold")
    if case is not None:
        text.append(f"  {case.title}", style="italic")
    text.append(
        f"   {detail.model} · {detail.harness} · cue {detail.cue} · defense {detail.defense}"
        f" · attempt {detail.attempt}\n",
        style="dim",
    )
    text.append("IVC  ")
    text.append(
        f"{_coded(detail.strategy, STRATEGIES)} → {_coded(detail.vulnerability, VULNERABILITIES)} → "
        f"{_coded(detail.constraint, CONSTRAINTS)}\n",
        style="bold cyan",
    )
    constraint = CONSTRAINTS.get(detail.constraint)
    if constraint is not None:
        text.append("constraint  ", style="dim")
        text.append(constraint.statement + "\n")
    text.append("channel  ", style="dim")
    text.append(f"{detail.channel} — {CHANNELS.get(detail.channel, '')}\n")
    if case is not None:
        text.append("attack  ", style="dim")
        lines = case.attack.content.strip().splitlines() or [""]
        shown = "\n        ".join(lines[:ATTACK_LINES])
        text.append(
            shown + (f" … (+{len(lines) - ATTACK_LINES} lines)" if len(lines) > ATTACK_LINES else ""), style="yellow"
        )
        if case.content_hash != detail.case_hash:
            text.append("\n(the case file changed since this rollout ran)", style="dim red")
    else:
        text.append("attack  (case not in the library)", style="dim")
    return text


def labels_text(labels: Sequence[StoredLabel]) -> Text:
    text = Text()
    if not labels:
        return Text("no judge labels (run `redagent judge`)", style="dim")
    for label in labels:
        text.append(f"{label.config_name} [{label.backbone}] ", style="bold")
        if label.status != "ok":
            text.append("failed", style="yellow")
        else:
            text.append("harmful" if label.label == 1 else "not harmful", style="red" if label.label == 1 else "green")
        if label.rationale:
            text.append(f" — {label.rationale}")
        if label.evidence:
            text.append(f"  cites {', '.join(label.evidence)}", style="yellow")
        text.append("\n")
    text.rstrip()
    return text


class RolloutScreen(ShowsFailures, Screen):
    """A rollout side by side; blinded=True shows no judge label, rationale or cited evidence anywhere."""

    SCREEN_NAME = "rollout"
    HELP = """\
# Rollout

The case on top (IVC path, constraint, channel, attack), then trajectory | receipts | state diff.

- `j` / `k` or the arrows move along the trajectory; selecting a tool call highlights the receipts
  it produced and the diff entries they changed. The event is shown under the trajectory.
- `enter` opens the entry under the cursor in full — a tool call with every argument, a result, a
  receipt, a state change — wrapped and scrollable (`escape` closes it); a real agent CLI's own
  transcript (its last event) opens as a conversation: user, assistant, tool call and tool result turns.
- `tab` moves between panes; `m` fills the screen with the focused pane (again to restore).
- ⚠ marks claimed-versus-observed mismatches (listed above the panes); ◆ marks evidence a judge cited.
- `]` / `[` open the next / previous rollout of the list; `escape` goes back to it.
- `s` opens the statistics of this rollout's run.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        # ] / [ are "next / previous" on every screen (page, item, case, rollout); n is not-harmful elsewhere.
        Binding(
            "right_square_bracket",
            "step(1)",
            "Next rollout",
            id="rollout-next",
            tooltip="The next rollout of the list",
            group=STEP,
        ),
        Binding(
            "left_square_bracket",
            "step(-1)",
            "Prev rollout",
            id="rollout-previous",
            tooltip="The previous rollout of the list",
            group=STEP,
        ),
        Binding("escape", "back", "Back", id="rollout-back", tooltip="Back to the rollout list"),
    ]
    # Below 32 rows the header and the labels give rows to the evidence (at 80×24 the panes kept 3 lines).
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
    DEFAULT_CSS = """
    RolloutScreen #case-header { height: 8; padding: 0 1; background: $boost; }
    RolloutScreen #labels-scroll { height: 5; border-top: solid $panel; }
    RolloutScreen.-short #case-header { height: 5; }
    RolloutScreen.-short #labels-scroll { height: 4; }
    /* One line per configuration, cut at the edge: every verdict shows in the pane's four lines (a wrapped
       rationale pushed the third label out of sight); the cited ids are marked in the panes (◆). */
    RolloutScreen #labels { padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, rollout_id: str, blinded: bool = False, ids: list[str] | None = None) -> None:
        super().__init__()
        self.rollout_id = rollout_id
        self.blinded = blinded
        self.ids = list(ids or [rollout_id])
        self.detail: StoredRollout | None = None
        self.loaded_id: str | None = None  # the rollout whose evidence is on screen
        self._cases: dict[tuple[str, str], Case | None] = {}  # (run id, case id) → its case, once resolved

    def compose(self) -> ComposeResult:
        yield ConsoleHeader()
        yield Static("loading…", id="case-header")
        yield EvidencePanes(id="evidence", judge_hints=not self.blinded, details=True)
        if not self.blinded:
            with VerticalScroll(id="labels-scroll"):
                yield Static("", id="labels")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._load(self.rollout_id)

    def reopen(self, rollout_id: str, blinded: bool | None = None, ids: list[str] | None = None) -> None:
        """Called by the app when a rollout is asked for while one is shown: show that one here."""
        if blinded is not None and blinded != self.blinded:
            self.app.notify("close this rollout before opening one with other blinding", severity="warning")
            return
        if ids is not None:
            self.ids = list(ids)
        if rollout_id not in self.ids:
            self.ids = [rollout_id]
        self.rollout_id = rollout_id
        self._load(rollout_id)

    def current_run_id(self) -> str | None:
        return self.detail.run_id if self.detail is not None else None

    def _case_of(self, detail: StoredRollout) -> Case | None:
        """The rollout's case, resolved as judging resolves it (`run_cases`: the run's own recorded files and
        content hashes, then the library and the benchmarks); read once per run and case."""
        key = (detail.run_id, detail.case_id)
        if key not in self._cases:
            try:
                self._cases[key] = run_cases(host.store_of(self), detail.run_id, [detail.case_id]).get(detail.case_id)
            except CaseFileError:
                self._cases[key] = None
        return self._cases[key]

    @work(thread=True, exclusive=True, exit_on_error=False, group="rollout-detail")
    def _load(self, rollout_id: str) -> None:
        detail = host.store_of(self).rollout_detail(rollout_id, labels=not self.blinded, event_limit=FIRST_EVENTS)
        if detail is None:
            self.post_message(DetailLoaded(rollout_id, None, None, None))
            return
        case = self._case_of(detail)
        # Blinded, nothing computed by judges/ is even computed (see EvidencePanes).
        found = mismatches(detail) if detail.complete and not self.blinded else None
        self.post_message(DetailLoaded(rollout_id, detail, case, found))
        if not detail.complete and not self.blinded:
            # Mismatches need the whole trajectory (the final answer is at its end): read it after the panes show.
            events = host.store_of(self).events_window(rollout_id, 0, detail.event_count)
            everything = replace(detail, events=tuple(events), event_count=len(events))
            self.post_message(MismatchesFound(rollout_id, mismatches(everything)))

    @on(DetailLoaded)
    def _detail_loaded(self, message: DetailLoaded) -> None:
        if message.rollout_id != self.rollout_id:
            return
        if message.detail is None:
            self.query_one("#case-header", Static).update(
                Text(f"no rollout {message.rollout_id} in the store", style="bold red")
            )
            return
        detail = self.detail = message.detail
        self.sub_title = detail.rollout_id
        # The header's height is fixed (8 lines, E and U on the first): the next rollout repaints it, never reflows.
        self.query_one("#case-header", Static).update(case_header(detail, message.case), layout=False)
        labels = None if self.blinded else detail.labels or ()
        store, rollout_id = host.store_of(self), detail.rollout_id
        self.query_one(EvidencePanes).load(
            detail.events,
            detail.receipts,
            detail.diff,
            labels,
            mismatches=None if self.blinded else message.mismatches or [],
            event_count=detail.event_count,
            source=lambda start, stop: store.events_window(rollout_id, start, stop),
        )
        if labels is not None:
            # With layout: the labels' height is their line count (one per configuration); without a layout
            # pass the Static kept the height of the first rollout shown and clipped every label after it.
            # The reflow stays inside #labels-scroll, whose height is fixed.
            self.query_one("#labels", Static).update(labels_text(labels))
        if self.loaded_id is None:
            self.query_one("#trajectory").focus()
        self.loaded_id = rollout_id

    @on(MismatchesFound)
    def _mismatches_found(self, message: MismatchesFound) -> None:
        if message.rollout_id == self.loaded_id and not self.blinded:
            self.query_one(EvidencePanes).set_mismatches(message.mismatches)

    def action_step(self, delta: int) -> None:
        position = self.ids.index(self.rollout_id) if self.rollout_id in self.ids else 0
        target = position + delta
        if not 0 <= target < len(self.ids):
            self.notify("end of the list", timeout=2)
            return
        self.rollout_id = self.ids[target]
        self._load(self.rollout_id)

    def action_back(self) -> None:
        if self.screen.maximized is not None:
            self.minimize()
            return
        self.app.pop_screen()
