"""Plain records the engine hands to the store and gets back: runs, rollouts and rollout summaries (no SQL)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

RUN_STATUSES = ("planned", "running", "stopped", "finished", "failed")
SNAPSHOT_KINDS = ("baseline", "final")


@dataclass
class RunRecord:
    id: str
    status: str  # planned | running | stopped | finished | failed
    protocol: dict[str, Any]  # models, harnesses, cues, defenses, attempts, cue_text, case selector, ... (opaque)
    case_set_hash: str
    code_version: str
    planned: int
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    parent_run_id: str | None = None
    manifest_hash: str | None = None
    # The process that last started driving the run, and when it last said it was alive (a heartbeat).
    host: str | None = None
    pid: int | None = None
    heartbeat_at: datetime | None = None


def rollout_id(
    run_id: str, case_id: str, case_hash: str, model: str, harness: str, cue: str, defense: str, attempt: int
) -> str:
    """A rollout's id: a hash of its run, case (and the case's content) and cell, so a resumed run or an imported
    log finds the rollout it already stored (the idempotency key). The engine and the Inspect import both use it."""
    text = "|".join([run_id, case_id, case_hash, model, harness, cue, defense, str(attempt)])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass
class RolloutRecord:
    id: str  # deterministic, computed by the engine: the idempotency key
    run_id: str
    case_id: str
    case_version: int
    case_hash: str
    strategy: str
    vulnerability: str
    constraint: str
    surfaces: list[str]
    channel: str
    model: str
    harness: str
    cue: str
    defense: str
    attempt: int
    valid: bool
    invalid_reason: str | None
    invalid_detail: str | None
    E: int | None
    evidence: dict[str, Any]
    expected_E: int | None
    reached: bool
    final_text: str
    started_at: datetime
    finished_at: datetime
    duration_ms: float
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    baseline_rollout_id: str | None
    # {"idx", "role", "text", "tool_call", "original", "observation", "receipts", "tampered"}
    events: list[dict[str, Any]] = field(default_factory=list)
    # {"id", "seq", "service", "action", "args", "outcome", "actor", "step", "effect", "error", "via"}
    receipts: list[dict[str, Any]] = field(default_factory=list)
    baseline: dict[str, Any] = field(default_factory=dict)
    final: dict[str, Any] = field(default_factory=dict)
    diff: list[dict[str, Any]] = field(default_factory=list)  # {"path", "op", "before", "after"}
    # U: the case's utility check (was the user's task done?); None when the case states none or the
    # rollout is invalid. benign: the rollout ran without its attack (a benign variant or benign arm).
    U: int | None = None
    benign: bool = False


@dataclass(frozen=True)
class RolloutSummary:
    """One rollout without its children: enough to list, filter and replay."""

    id: str
    case_id: str
    model: str
    harness: str
    cue: str
    defense: str
    attempt: int
    E: int | None
    valid: bool
    U: int | None = None
    benign: bool = False


@dataclass(frozen=True, slots=True)
class ExportCell:
    """One (model, harness, cue, defense) cell of a run: what one exported Inspect log holds."""

    model: str
    harness: str
    cue: str
    defense: str


@dataclass(frozen=True, slots=True)
class RunListing:
    """One run as a listing shows it: `status` as `shown_status` tells it ("interrupted": its process is gone)."""

    run_id: str
    status: str
    planned: int
    completed: int  # rollouts stored
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RunCounts:
    """How far one run is: rollouts planned, stored, valid and invalid, and the invalid ones by reason."""

    planned: int
    completed: int
    valid: int
    invalid: int
    invalid_reasons: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CellAsr:
    """Execution ASR of one (model, harness, cue, defense) cell over its valid attacked rollouts, as bounds: `rate`
    is the confirmed harm (E == 1) of valid, `upper` confirmed plus unresolved (E None: the verifier could not
    decide, never counted safe); both None when none is valid (an all-invalid cell has no rate, it is not "safe")."""

    model: str
    harness: str
    cue: str
    defense: str
    harmful: int
    valid: int
    rate: float | None
    unresolved: int = 0
    upper: float | None = None


@dataclass(frozen=True, slots=True)
class OutcomeRow:
    """One valid rollout as the statistics read it: its cell, its case's attack and constraint, the first surface,
    the outcome E, utility U (None where the case states no check) and whether it ran without its attack."""

    rollout_id: str
    case_id: str
    model: str
    harness: str
    cue: str
    defense: str
    attempt: int
    strategy: str
    vulnerability: str
    constraint: str
    channel: str
    surface: str | None
    E: int | None
    U: int | None
    benign: bool

    @property
    def verdict(self) -> str:
        """The verifier's verdict on this valid rollout: harm (E 1), no harm (E 0) or unresolved (E None)."""
        return "harm" if self.E == 1 else "no harm" if self.E == 0 else "unresolved"


@dataclass(frozen=True, slots=True)
class LabelledRow(OutcomeRow):
    """An outcome row with the rollout's ok label under one judging configuration and backbone."""

    label: int


@dataclass(frozen=True, slots=True)
class InvalidReason:
    """The invalid rollouts of a cell for one reason: how many, and the most frequent stored detail (and its count)."""

    n: int
    detail: str | None
    detail_n: int


@dataclass(frozen=True, slots=True)
class CellHealth:
    """Whether one (model, harness, cue, defense) cell measured anything: its rollouts, the valid ones, valid ones
    without a single tool call, valid attacked ones and those the attack reached, the invalid ones by reason, and
    harmful rollouts the attack never reached."""

    model: str
    harness: str
    cue: str
    defense: str
    rollouts: int
    valid: int
    no_tool_call: int
    attacked: int
    reached: int
    invalid: Mapping[str, InvalidReason]
    # Valid attacked rollouts judged harmful (E = 1) that the attack never reached: harm the agent did on its
    # own (a guessed external address, a misread task), which the attacked ASR counts all the same.
    harmful_unreached: int = 0


@dataclass(frozen=True, slots=True)
class RolloutCost:
    """What valid rollouts of one case version cost under one model and harness, on average (what `run --plan-only`
    estimates from): how many there were, model replies (assistant turns), prompt and completion tokens, duration."""

    case_hash: str
    model: str
    harness: str
    rollouts: int
    turns: float
    prompt_tokens: float
    completion_tokens: float
    duration_ms: float


@dataclass(frozen=True)
class UtilityCount:
    """Utility counts of one (model, harness, cue, defense) cell and one arm (benign or under attack)."""

    model: str
    harness: str
    cue: str
    defense: str
    benign: bool
    valid: int  # valid rollouts of the cell and arm
    checked: int  # ... of them with a utility outcome (U not None): the denominator of the utility rate
    done: int  # ... of them with U == 1


# ---------------------------------------------------------------- judging and human audit

JUDGE_VIEWS = ("trajectory", "state", "hybrid")
LABEL_STATUSES = ("ok", "failed")
HUMAN_LABELS = ("harmful", "not_harmful", "unsure")
AUDIT_SLOTS = ("A", "B")


@dataclass
class JudgeLabelRecord:
    """Y_i(c, b): a rollout's label under a judging configuration c (by content hash) and a backbone b."""

    rollout_id: str
    run_id: str
    config_name: str  # e.g. "state/rule"
    config_hash: str
    view: str  # trajectory | state | hybrid
    contract_hash: str
    gate: str
    backbone: str  # "rule" for deterministic judges, else the model string
    label: int | None  # 0/1; None when status is not ok
    status: str  # ok | failed
    rationale: str = ""
    evidence: list[Any] = field(default_factory=list)  # ids the judge cited
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    created_at: datetime | None = None  # None: stamped by the store when written


@dataclass
class RecognitionLabelRecord:
    """R broad / strict for a harmful rollout: did the agent state the rule or risk before the action anchor?"""

    rollout_id: str
    run_id: str
    judge: str  # "lexical" or a model string
    contract_hash: str
    anchor_idx: int | None  # trajectory event index of the action anchor; None when unresolved
    resolved: bool
    broad: int | None
    strict: int | None  # nested in broad: strict == 1 implies broad == 1
    status: str  # ok | failed
    rationale: str = ""
    evidence: list[Any] = field(default_factory=list)
    created_at: datetime | None = None


@dataclass
class AuditRecord:
    """A human audit of one run's labels under one configuration and backbone."""

    id: str
    run_id: str
    config_name: str
    config_hash: str
    backbone: str
    seed: int
    n: int
    stratify: list[str]
    reviewers: list[str]  # exactly two: slot A, slot B
    adjudicator: str
    blind_model: bool = True
    blind_attack: bool = False
    created_at: datetime | None = None
    # How the sample was drawn: {"unit": "case", "min_cases", "merges": [{strata, into, why}], "merged":
    # {stratum: merged stratum}}; None for audits drawn before cases were the unit (rollouts were).
    design: dict[str, Any] | None = None
    # Drawn before issue 34 (migration 0013): item ids and queue orders follow the seed (new audits: never).
    seeded_order: bool = False


@dataclass(frozen=True, slots=True)
class AuditItem:
    """An audit item as analysts read it back. Never for a reviewer's eyes: it names the rollout, the case, the
    stratum (which names the judge label) and the judge label; `alias` is what reviewers see instead of the case."""

    item_id: int
    rollout_id: str
    case_id: str  # the cluster for intervals
    stratum: str
    population: int
    sampled: int
    weight: float  # the design weight
    judge_label: int
    alias: str


@dataclass(frozen=True, slots=True)
class ReviewerLabel:
    """One version of a reviewer's label of an item, with who wrote it, their slot and the reason for a correction."""

    item_id: int
    reviewer: str
    slot: str  # A | B
    label: str
    note: str
    version: int
    reason: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Adjudication:
    """One version of the adjudicator's decision on an item."""

    item_id: int
    adjudicator: str
    label: str
    note: str
    version: int
    reason: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class FinalLabel:
    """An item's labels by slot (first and latest), the adjudication, and the final label with where it came from:
    "adjudicated", "agreed" (the reviewers' label), or None while "awaiting_review" / "awaiting_adjudication";
    `human` is the final label as 1 / 0, None for unsure or none."""

    item: AuditItem
    A: str | None
    B: str | None
    A_first: str | None
    B_first: str | None
    adjudication: str | None
    final: str | None
    source: str
    human: int | None


@dataclass(frozen=True, slots=True)
class AuditClosureRecord:
    """An audit closed or re-opened: "close" by "redagent" when its last item got a final label, or by the owner
    (their login, "owner" on SQLite) with a reason; "reopen" only by the owner, with a reason."""

    action: str  # close | reopen
    made_by: str
    reason: str
    created_at: datetime


@dataclass
class AuditItemRecord:
    """One sampled rollout of an audit, with its stratum bookkeeping and each reviewer's position (1-based).

    The judge label is not carried here: the store copies it from the stored label of the audited
    configuration, so an audit cannot be created against a label that does not exist.
    """

    rollout_id: str
    stratum: str
    population: int  # rollouts of this stratum in the population
    sampled: int  # rollouts of this stratum in the sample
    weight: float  # design weight: 1 / the item's inclusion probability (population / sampled for equal ones)
    positions: dict[str, int] = field(default_factory=dict)  # reviewer → position in that reviewer's queue
