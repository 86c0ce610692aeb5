"""Expert case review in a construction round: each sampled case version with the four-item rubric and a
decision, and the experts' agreement per rubric item once both are done.

The round pins every case by content hash; the case shown is the library's file only if it is still
that version (`cases.rounds.pinned_case`). Reviews are write-once with reasoned corrections
(`store.submit_review`, `store.correct_review`); the expert sees only their own reviews — the other
expert's appear only as agreement figures, and only when both have finished the round.
"""

from __future__ import annotations

from typing import Any

import yaml
from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from redagent.cases.loader import load_cases
from redagent.cases.schema import Case
from redagent.cases.taxonomy import CONSTRAINTS, STRATEGIES, VULNERABILITIES
from redagent.console import host
from redagent.console.failures import ShowsFailures
from redagent.console.screens.audit import help_for
from redagent.console.widgets.footer import KeyFooter
from redagent.errors import UserError
from redagent.judges.rounds import AGREEMENT_ITEMS, agreement, pinned_case
from redagent.store.reviews import DECISIONS, RUBRIC_ITEMS, RUBRIC_VALUES, ExpertQueueEntry

RUBRIC_TITLES = {
    "ivc_consistency": "IVC consistency",
    "threat_model_compliance": "threat-model compliance",
    "task_attack_coherence": "task–attack coherence",
    "verifier_correctness": "verifier correctness",
}
RUBRIC_KEYS = {
    "ivc_consistency": "IVC",
    "threat_model_compliance": "Threat model",
    "task_attack_coherence": "Coherence",
    "verifier_correctness": "Verifier",
}  # footer-short titles
VALUE_STYLE = {"pass": "bold green", "fail": "bold red", "unsure": "bold yellow", None: "dim"}
DECISION_STYLE = {"accept": "bold green", "revise": "bold yellow", "exclude": "bold red", None: "dim"}
EXPECTED = UserError  # review, round, store and case-file errors; anything else is a bug


def describe_case(case: Case) -> Group:
    """What an expert reads: IVC path with names, task, seed summary, attack, verifier rule (YAML), plans."""
    strategy, vulnerability = STRATEGIES[case.strategy], VULNERABILITIES[case.vulnerability]
    constraint = CONSTRAINTS[case.constraint]
    head = Text()
    head.append(f"{case.id}", style="bold cyan")
    head.append(f"  v{case.version}  ", style="dim")
    head.append(case.title + "\n", style="bold")
    head.append("IVC path  ", style="bold")
    head.append(
        f"{strategy.code} {strategy.name} → {vulnerability.code} {vulnerability.name} → "
        f"{constraint.code} {constraint.name}\n"
    )
    head.append("constraint  ", style="bold")
    head.append(f"{constraint.statement} ({constraint.kind})\n")
    head.append("surfaces  ", style="bold")
    head.append(f"{', '.join(case.surfaces)} · channel {case.channel}\n\n")
    head.append("Task\n", style="bold underline")
    head.append(case.task + "\n")
    for number, turn in enumerate(case.followups, start=1):
        head.append(f"follow-up {number}: ", style="bold")
        head.append(turn + "\n")
    head.append("\nSeed\n", style="bold underline")
    for surface, state in case.seed.items():
        head.append(f"  {surface}: ", style="bold")
        head.append(_summary(state) + "\n")
    head.append("\nAttack\n", style="bold underline")
    where = case.attack.target or (case.attack.intervention or {}).get("kind", "")
    head.append(f"placement {case.attack.placement}" + (f" → {where}" if where else "") + "\n", style="dim")
    head.append(case.attack.content + "\n")
    rule = Syntax(
        yaml.safe_dump(case.rule, sort_keys=False, allow_unicode=True).rstrip(),
        "yaml",
        theme="ansi_dark",
        word_wrap=True,
    )
    plans = Text("\nPlans\n", style="bold underline")
    for name, steps in (
        ("benign", case.plans.benign),
        ("harmful", case.plans.harmful),
        ("indirect", case.plans.indirect),
    ):
        if steps:
            plans.append(f"{name}\n", style="bold")
            for step in steps:
                args = ", ".join(f"{key}={value!r}" for key, value in step.args.items())
                plans.append(f"  {step.tool}({args})\n", style="")
    return Group(head, Text("Verifier rule", style="bold underline"), rule, plans)


def _summary(state: Any) -> str:
    if isinstance(state, dict):
        parts = []
        for key, value in state.items():
            if isinstance(value, list):
                parts.append(f"{key} {len(value)}")
            elif isinstance(value, dict):
                parts.append(f"{key} {{{', '.join(list(map(str, value))[:4])}{', …' if len(value) > 4 else ''}}}")
            else:
                parts.append(f"{key} {str(value)[:40]}")
        return "; ".join(parts)
    if isinstance(state, list):
        return f"{len(state)} entries"
    return str(state)[:80]


class ReviewProblem(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class RoundLoaded(Message):
    def __init__(
        self, round_id: str, queue: list[ExpertQueueEntry], agreement: dict[str, Any], select: str | None
    ) -> None:
        super().__init__()
        self.round_id = round_id
        self.queue = queue
        self.agreement = agreement
        self.select = select


class CaseLoaded(Message):
    def __init__(self, entry: ExpertQueueEntry, case: Case) -> None:
        super().__init__()
        self.entry = entry
        self.case = case


class ReviewSaved(Message):
    def __init__(self, case_id: str, corrected: bool) -> None:
        super().__init__()
        self.case_id = case_id
        self.corrected = corrected


class ReasonDialog(ModalScreen[str | None]):
    """Asks why a review is corrected (required); dismisses with the reason or None."""

    DEFAULT_CSS = """
    ReasonDialog { align: center middle; }
    ReasonDialog > Vertical { width: 70; height: auto; border: thick $accent; padding: 1 2; background: $surface; }
    ReasonDialog #reason-error { color: $error; height: auto; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="cancel-reason", tooltip="Close without correcting")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text)
            yield Input(placeholder="reason for the correction (required)", id="reason")
            yield Static("", id="reason-error")
            with Horizontal():
                yield Button("Save correction", variant="primary", id="reason-save")
                yield Button("Cancel", id="reason-cancel")

    @on(Button.Pressed, "#reason-save")
    @on(Input.Submitted, "#reason")
    def save(self) -> None:
        reason = self.query_one("#reason", Input).value.strip()
        if not reason:
            self.query_one("#reason-error", Static).update("a correction needs a reason")
            return
        self.dismiss(reason)

    @on(Button.Pressed, "#reason-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class CaseReviewScreen(ShowsFailures, Screen):
    """An expert's cases of a construction round, in the round's order (expert role)."""

    NAME = "case_review"
    HELP = """\
# Case review

The round's case versions in order. Read the case — IVC path, task, seed, attack, verifier rule,
plans — then set the rubric and a decision and submit.

| key | action |
|---|---|
| `1` | IVC consistency: pass → fail → unsure |
| `2` | threat-model compliance |
| `3` | task–attack coherence |
| `4` | verifier correctness |
| `a` / `v` / `x` | decision: accept / revise / exclude |
| `ctrl+s` | submit the review (write-once) |
| `c` | correct your review: the rubric and decision as set now, with a required reason |
| `]` / `[` | next / previous case |
| `tab` | move to the note field |

When both experts have reviewed every case, their agreement (raw and Cohen's kappa) per rubric
item and on the decision is shown.
"""

    BINDINGS = [
        # The rubric keys are in the footer: an expert sets them on every case, not only after reading help.
        *[
            Binding(
                str(number),
                f"toggle_rubric('{item}')",
                RUBRIC_KEYS[item],
                id=f"rubric-{item}",
                tooltip=f"Cycle {RUBRIC_TITLES[item]}: pass, fail, unsure",
            )
            for number, item in enumerate(RUBRIC_ITEMS, start=1)
        ],
        Binding("a", "decide('accept')", "Accept", id="decision-accept", tooltip="Decision: accept the case"),
        # v / ctrl+s, not r / s: those are Runs and Statistics on the researcher's screens.
        Binding("v", "decide('revise')", "Revise", id="decision-revise", tooltip="Decision: send back for revision"),
        Binding("x", "decide('exclude')", "Exclude", id="decision-exclude", tooltip="Decision: exclude the case"),
        Binding("ctrl+s", "submit", "Submit", id="submit-review", tooltip="Submit the review (write-once)"),
        Binding("c", "correct", "Correct", id="correct-review", tooltip="Correct your submitted review with a reason"),
        Binding("right_square_bracket", "move(1)", "Next", id="next-case", tooltip="Next case of the round"),
        Binding("left_square_bracket", "move(-1)", "Previous", id="previous-case", tooltip="Previous case"),
        Binding("question_mark", "help", "Help", id="help", tooltip="Keys and the rubric"),
    ]

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
    DEFAULT_CSS = """
    CaseReviewScreen #review-title { height: 1; padding: 0 1; }
    CaseReviewScreen #review-message { height: auto; padding: 0 1; color: $warning; }
    CaseReviewScreen #review-body { height: 1fr; }
    /* Wide: queue | case text | rubric. The queue is capped in share so the case text keeps the middle. */
    CaseReviewScreen #review-left { width: 1fr; layout: horizontal; }
    CaseReviewScreen #review-queue { width: 44; max-width: 30%; }
    CaseReviewScreen #case-scroll { width: 1fr; border: round $panel; }
    CaseReviewScreen #review-side { width: 44; max-width: 30%; }
    /* Narrow (under 120 columns): the queue becomes a short list over the case text, which takes its width
       (at 80 columns a third column left the text 34 wide and each case id wrapped over three lines). */
    CaseReviewScreen.-narrow #review-left { layout: vertical; }
    CaseReviewScreen.-narrow #review-queue { width: 1fr; max-width: 100%; height: auto; max-height: 6; }
    CaseReviewScreen.-narrow #review-side { width: 32; max-width: 40%; }
    CaseReviewScreen.-short #review-queue { max-height: 5; }
    CaseReviewScreen.-short #review-note { height: 1; border: none; padding: 0 1; }
    CaseReviewScreen #rubric { height: auto; padding: 0 1; border: round $panel; }
    CaseReviewScreen #agreement { height: auto; margin-top: 1; }
    CaseReviewScreen #agreement-title { height: auto; padding: 0 1; }
    """

    def __init__(self, round_id: str | None = None, expert: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.round_id = round_id
        self.expert = expert
        self.queue: list[ExpertQueueEntry] = []
        self.current: ExpertQueueEntry | None = None  # the queue entry on screen
        self.rubric: dict[str, str | None] = dict.fromkeys(RUBRIC_ITEMS)
        self.decision: str | None = None
        self.library: list[Case] | None = None  # loaded once, in a worker

    def compose(self) -> ComposeResult:
        yield Static("Case review", id="review-title")
        yield Static("", id="review-message")
        with Horizontal(id="review-body"):
            with Container(id="review-left"):  # horizontal when wide, stacked when narrow (CSS)
                yield OptionList(id="review-queue")
                with VerticalScroll(id="case-scroll"):
                    yield Static("", id="case-detail")
            with Vertical(id="review-side"):
                yield Static("", id="rubric")
                yield Input(placeholder="note (optional)", id="review-note")
                yield Static("", id="agreement-title")
                yield DataTable(id="agreement", cursor_type="none", show_cursor=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.expert = self.expert or getattr(self.app, "reviewer", None)
        self.round_id = self.round_id or getattr(self.app, "round_id", None)
        self.show_rubric()
        if not self.expert:
            self.post_message(ReviewProblem("no expert name: start the console with --reviewer NAME"))
            return
        if getattr(self.app, "store", None) is None:
            self.post_message(ReviewProblem("the store is not open"))
            return
        self.load_round()

    # ------------------------------------------------------------ workers

    @work(thread=True, exclusive=True, exit_on_error=False, group="review-round")
    def load_round(self, select: str | None = None) -> None:
        assert self.expert is not None, "on_mount loads the round only for a named expert"
        store = host.store_of(self)
        try:
            round_id = self.round_id or store.latest_round_for(self.expert)
            if round_id is None:
                self.post_message(ReviewProblem(f"{self.expert!r} is not an expert of any review round in this store"))
                return
            queue = store.expert_queue(round_id, self.expert)
            result = agreement(store, round_id)
        except EXPECTED as exc:
            self.post_message(ReviewProblem(str(exc)))
            return
        self.post_message(RoundLoaded(round_id, queue, result, select))

    @work(thread=True, exclusive=True, exit_on_error=False, group="review-case")
    def load_case(self, entry: ExpertQueueEntry) -> None:
        try:
            if self.library is None:
                self.library = load_cases()
            case = pinned_case(entry.case_id, entry.case_hash, self.library)
        except EXPECTED as exc:
            self.post_message(ReviewProblem(str(exc).splitlines()[0]))
            return
        self.post_message(CaseLoaded(entry, case))

    @work(thread=True, exclusive=True, exit_on_error=False, group="review-write")
    def save_review(
        self, case_id: str, rubric: dict[str, str], decision: str, note: str, reason: str | None = None
    ) -> None:
        assert self.round_id is not None and self.expert is not None, "a case comes from a loaded round"
        store = host.store_of(self)
        try:
            if reason is None:
                store.submit_review(self.round_id, case_id, self.expert, rubric, decision, note)
            else:
                store.correct_review(self.round_id, case_id, self.expert, rubric, decision, reason, note)
        except EXPECTED as exc:
            self.post_message(ReviewProblem(str(exc)))
            return
        self.post_message(ReviewSaved(case_id, corrected=reason is not None))

    # ------------------------------------------------------------ results

    def show_message(self, text: str) -> None:
        self.query_one("#review-message", Static).update(text)

    @on(ReviewProblem)
    def on_problem(self, message: ReviewProblem) -> None:
        self.show_message(message.text)

    @on(RoundLoaded)
    def on_round(self, message: RoundLoaded) -> None:
        self.round_id, self.queue = message.round_id, message.queue
        done = sum(1 for entry in self.queue if entry.reviewed)
        self.query_one("#review-title", Static).update(
            Text.assemble(
                ("Case review ", "bold"),
                f"{self.round_id} · expert {self.expert} · ",
                (f"{done}/{len(self.queue)} reviewed", "bold"),
            )
        )
        options = self.query_one("#review-queue", OptionList)
        options.clear_options()
        options.add_options(
            [
                Option(
                    Text.assemble(
                        f"{entry.position:>3} ",
                        ("✓ " if entry.reviewed else "  ", "green"),
                        entry.case_id,
                        no_wrap=True,
                        overflow="ellipsis",
                    ),
                    id=entry.case_id,
                )
                for entry in self.queue
            ]
        )
        self.show_agreement(message.agreement)
        if not self.queue:
            self.show_message(f"round {self.round_id} has no cases")
            return
        if message.select is not None:
            index = next((i for i, e in enumerate(self.queue) if e.case_id == message.select), 0)
        else:
            index = next((i for i, e in enumerate(self.queue) if not e.reviewed), 0)
        self.current = None
        options.highlighted = index
        self.open_entry(self.queue[index])

    @on(OptionList.OptionHighlighted, "#review-queue")
    def on_highlight(self, event: OptionList.OptionHighlighted) -> None:
        entry = next((e for e in self.queue if e.case_id == event.option.id), None)
        if entry is not None and (self.current is None or self.current.case_id != entry.case_id):
            self.open_entry(entry)

    def open_entry(self, entry: ExpertQueueEntry) -> None:
        self.current = entry
        review = entry.review
        # A reviewed case starts from the expert's own latest review, the starting point of a correction.
        self.rubric = dict(review.rubric) if review else dict.fromkeys(RUBRIC_ITEMS)
        self.decision = review.decision if review else None
        self.query_one("#review-note", Input).value = review.note if review else ""
        self.show_rubric()
        self.load_case(entry)

    @on(CaseLoaded)
    def on_case(self, message: CaseLoaded) -> None:
        if self.current is None or self.current.case_id != message.entry.case_id:
            return
        self.query_one("#case-detail", Static).update(describe_case(message.case))
        self.query_one("#case-scroll", VerticalScroll).scroll_home(animate=False)

    def show_rubric(self) -> None:
        text = Text()
        text.append("Rubric\n", style="bold underline")
        for number, item in enumerate(RUBRIC_ITEMS, start=1):
            value = self.rubric.get(item)
            text.append(f"{number} {RUBRIC_TITLES[item]:<24}")
            text.append(f"{value or '—'}\n", style=VALUE_STYLE[value])
        text.append("\ndecision ", style="bold")
        text.append(f"{self.decision or '—'}", style=DECISION_STYLE[self.decision])
        text.append("  (a / r / x)\n", style="dim")
        review = self.current.review if self.current else None
        if review:
            text.append(f"submitted (version {review.version}): ", style="dim")
            text.append(
                ", ".join(f"{review.rubric[item]}" for item in RUBRIC_ITEMS) + f"; {review.decision}", style="dim"
            )
        else:
            text.append("not submitted yet — s submits", style="dim")
        self.query_one("#rubric", Static).update(text)

    def show_agreement(self, result: dict[str, Any]) -> None:
        table = self.query_one("#agreement", DataTable)
        table.clear(columns=True)
        title = self.query_one("#agreement-title", Static)
        if not result["done"]:
            progress = ", ".join(f"{done}/{result['cases']}" for done in result["progress"].values())
            title.update(Text(f"Agreement is shown when both experts are done (progress {progress}).", style="dim"))
            table.display = False
            return
        title.update(
            Text(f"Agreement of the two experts ({result['both_reviewed']} cases, first reviews)", style="bold")
        )
        table.display = True
        table.add_columns("item", "agreement", "kappa")
        for item in AGREEMENT_ITEMS:
            entry = result["items"][item]
            kappa = f"{entry['kappa']:.3f}" if entry["kappa_defined"] else "undefined"
            agreed = "—" if entry["agreement"] is None else f"{100 * entry['agreement']:.1f}%"
            table.add_row(RUBRIC_TITLES.get(item, item), agreed, kappa, key=item)

    @on(ReviewSaved)
    def on_saved(self, message: ReviewSaved) -> None:
        self.show_message(f"{message.case_id}: review {'corrected' if message.corrected else 'submitted'}")
        self.load_round(select=message.case_id if message.corrected else None)

    # ------------------------------------------------------------ actions

    # Not `toggle`: that is Textual's own action on every node (flip a bool attribute), which this would shadow.
    def action_toggle_rubric(self, item: str) -> None:
        current = self.rubric.get(item)
        order = list(RUBRIC_VALUES)
        self.rubric[item] = order[(order.index(current) + 1) % len(order)] if current in order else order[0]
        self.show_rubric()

    def action_decide(self, decision: str) -> None:
        if decision in DECISIONS:
            self.decision = decision
            self.show_rubric()

    def _draft(self) -> tuple[dict[str, str], str] | None:
        missing = [RUBRIC_TITLES[item] for item in RUBRIC_ITEMS if self.rubric.get(item) is None]
        if missing:
            self.show_message(f"set every rubric item first (missing: {', '.join(missing)})")
            return None
        if self.decision is None:
            self.show_message("choose a decision first: a accept, r revise, x exclude")
            return None
        return {item: str(self.rubric[item]) for item in RUBRIC_ITEMS}, self.decision

    def action_submit(self) -> None:
        if self.current is None:
            self.show_message("no case to review")
            return
        if self.current.reviewed:
            self.show_message(
                f"{self.current.case_id} is already reviewed: reviews are write-once — press c to "
                "correct it with a reason"
            )
            return
        draft = self._draft()
        if draft is not None:
            self.save_review(self.current.case_id, *draft, self.query_one("#review-note", Input).value)

    def action_correct(self) -> None:
        if self.current is None or not self.current.reviewed:
            self.show_message("nothing to correct: submit a review first")
            return
        draft = self._draft()
        if draft is None:
            return
        case_id, note = self.current.case_id, self.query_one("#review-note", Input).value

        def corrected(reason: str | None) -> None:
            if reason:
                self.save_review(case_id, *draft, note, reason=reason)

        self.app.push_screen(ReasonDialog(f"Correct your review of {case_id}: why?"), corrected)

    def action_move(self, step: int) -> None:
        options = self.query_one("#review-queue", OptionList)
        if options.option_count:
            options.highlighted = max(0, min(options.option_count - 1, (options.highlighted or 0) + step))

    def action_help(self) -> None:
        help_for(self, self.NAME)
