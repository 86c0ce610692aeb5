"""The typed read model of a stored rollout: what the store's read API hands to judges, reports and the console.

A rollout read back is a `StoredRollout` (its cell, outcome E and utility U, the verifier's cited evidence, the
trajectory events, the receipts, the state diff and — for researchers — its judge labels per configuration); a
blinded reviewer's item is a `BlindedRollout` carrying the same evidence records, with what the blinded views
hide set to None and named in `hidden`; what the reviewer's and adjudicator's queries return wraps it
(`QueueEntry`, `ReviewerItem`, `OwnLabel`, `AdjudicationItem`, `AdjudicatorOverview`) and holds nothing else.
Values the agent or a service produced (tool arguments, receipt effects, diff values, snapshots) stay JSON
documents; everything around them is typed. Nothing here speaks
SQL or knows a judge: mismatches and diff ownership are derived from these records in `judges/evidence.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# The ids judges cite: `e<idx>` for an event, the receipt's own id (`r3`), the path of a diff entry.
EVENT_PREFIX = "e"


def event_id(idx: int) -> str:
    return f"{EVENT_PREFIX}{idx}"


def event_index(evidence_id: str) -> int | None:
    """The event index an evidence id names (`e12` → 12), or None when it names a receipt or a diff entry."""
    digits = evidence_id[len(EVENT_PREFIX) :]
    if evidence_id.startswith(EVENT_PREFIX) and digits.isdigit() and digits.isascii():
        return int(digits)
    return None


@dataclass(frozen=True)
class StoredEvent:
    """One trajectory event. `original` and `tampered` are None where a blinded view hides them."""

    idx: int
    role: str  # system | user | assistant | tool | attacker | transcript
    text: str = ""
    tool_call: Mapping[str, Any] | None = None  # {"name", "args", ...}; an attacker move's fields for "attacker"
    original: str | None = None  # what the service returned (differs from `observation` when tampered)
    observation: str | None = None  # what the agent was shown
    receipts: tuple[str, ...] = ()
    tampered: bool | None = False

    @property
    def id(self) -> str:
        return event_id(self.idx)

    @property
    def call_name(self) -> str | None:
        return str(self.tool_call["name"]) if self.tool_call and "name" in self.tool_call else None

    @property
    def call_args(self) -> Mapping[str, Any]:
        args = (self.tool_call or {}).get("args")
        return args if isinstance(args, Mapping) else {}

    @property
    def is_call(self) -> bool:
        """An assistant turn that calls a tool."""
        return self.role == "assistant" and bool(self.tool_call)

    def to_dict(self, hidden: Iterable[str] = ()) -> dict[str, Any]:
        """The event as the export writes it; `hidden` fields are left out (never written as none)."""
        out = {
            "idx": self.idx,
            "role": self.role,
            "text": self.text,
            "tool_call": dict(self.tool_call) if self.tool_call is not None else None,
            "original": self.original,
            "observation": self.observation,
            "receipts": list(self.receipts),
            "tampered": self.tampered,
        }
        for name in hidden:
            out.pop(name, None)
        return out


@dataclass(frozen=True)
class StoredReceipt:
    """A service receipt: what the sandbox recorded of one call (an attempt too: `outcome` failed or denied)."""

    id: str
    seq: int
    service: str
    action: str
    args: Mapping[str, Any]
    outcome: str  # ok | failed | denied
    actor: str  # agent | setup | system
    step: int | None  # the trajectory step whose call caused it
    effect: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    via: str | None = None  # the route when not a direct call: "run_command", a look-alike tool name

    @property
    def is_effect(self) -> bool:
        """A consequential effect the agent made: a successful receipt of the agent's own call."""
        return self.outcome == "ok" and self.actor == "agent"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "seq": self.seq,
            "service": self.service,
            "action": self.action,
            "args": dict(self.args),
            "outcome": self.outcome,
            "actor": self.actor,
            "step": self.step,
            "effect": dict(self.effect),
            "error": self.error,
            "via": self.via,
        }


@dataclass(frozen=True)
class StoredDiffEntry:
    """One entry of the state diff (baseline → final); its path is the id judges cite."""

    path: str
    op: str  # added | removed | changed
    before: Any = None
    after: Any = None

    @property
    def id(self) -> str:
        return self.path

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "op": self.op, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class UnresolvedReason:
    """Why the verifier could not decide: a short kind (`flow`, `isolation`, `unread`, `split` …), one line for a
    person, and the receipts and diff paths it concerns."""

    reason: str
    detail: str
    receipts: tuple[str, ...] = ()
    diff: tuple[str, ...] = ()


@dataclass(frozen=True)
class VerdictEvidence:
    """What the verifier cited for E: receipt ids and diff paths, how consequences it needed were judged
    (`judged_by`: persistence or a protection by `replay`, or `unresolved`), its verdict (`outcome`: harm, no harm
    or unresolved; "" for a rollout stored before verdicts had three values) and, when unresolved, why."""

    receipts: tuple[str, ...] = ()
    diff: tuple[str, ...] = ()
    judged_by: tuple[tuple[str, str], ...] = ()
    outcome: str = ""
    unresolved: tuple[UnresolvedReason, ...] = ()

    @classmethod
    def of(cls, value: Mapping[str, Any] | None) -> VerdictEvidence:
        value = value or {}
        raw = value.get("judged_by")
        judged: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        reasons = value.get("unresolved")
        return cls(
            tuple(str(r) for r in value.get("receipts") or ()),
            tuple(str(d) for d in value.get("diff") or ()),
            tuple(sorted((str(k), str(v)) for k, v in judged.items())),
            str(value.get("outcome") or ""),
            tuple(
                UnresolvedReason(
                    str(u.get("reason", "")),
                    str(u.get("detail", "")),
                    tuple(str(r) for r in u.get("receipts") or ()),
                    tuple(str(d) for d in u.get("diff") or ()),
                )
                for u in (reasons if isinstance(reasons, list) else [])
                if isinstance(u, Mapping)
            ),
        )


@dataclass(frozen=True)
class StoredLabel:
    """A judge label Y(c, b) as a researcher reads it beside the rollout."""

    config_name: str
    config_hash: str
    view: str
    backbone: str
    label: int | None  # None unless status is ok
    status: str  # ok | failed
    rationale: str = ""
    evidence: tuple[str, ...] = ()  # the ids the judge cited

    @property
    def key(self) -> tuple[str, str]:
        """The judging configuration the label was made under: (configuration hash, backbone)."""
        return (self.config_hash, self.backbone)


@dataclass(frozen=True)
class RolloutEvidence:
    """What every evidence pane shows: the trajectory, the receipts and the state diff.

    `event_count` is the trajectory's full length; `events` may be only its first events (a huge trajectory is
    read further in windows), so `complete` says whether they are all of them.
    """

    events: tuple[StoredEvent, ...] = ()
    receipts: tuple[StoredReceipt, ...] = ()
    diff: tuple[StoredDiffEntry, ...] = ()
    event_count: int = -1  # -1: `events` are all of them

    def __post_init__(self) -> None:
        if self.event_count < 0:
            object.__setattr__(self, "event_count", len(self.events))

    @property
    def complete(self) -> bool:
        return self.event_count <= len(self.events)

    @property
    def effects(self) -> tuple[StoredReceipt, ...]:
        """The receipts that are the agent's consequential effects (ok, by the agent), in order."""
        return tuple(r for r in self.receipts if r.is_effect)

    @property
    def transcript(self) -> StoredEvent | None:
        """A real agent CLI's own transcript, kept beside the trajectory as an artifact (None for in-house ones)."""
        return next((e for e in self.events if e.role == "transcript"), None)

    def receipt(self, receipt_id: str) -> StoredReceipt | None:
        return next((r for r in self.receipts if r.id == receipt_id), None)


@dataclass(frozen=True, kw_only=True)
class StoredRollout(RolloutEvidence):
    """One stored rollout as researchers, judges and reports read it.

    `labels` is None when they were not read (a caller that must not see them), else every judge label of
    the rollout by configuration name and backbone. `baseline` and `final` are the snapshots, None unless
    the read asked for them (judging does; the console does not).
    """

    rollout_id: str
    run_id: str
    case_id: str
    case_version: int
    case_hash: str
    strategy: str
    vulnerability: str
    constraint: str
    surfaces: tuple[str, ...]
    channel: str
    model: str
    harness: str
    cue: str
    defense: str
    attempt: int
    valid: bool
    invalid_reason: str | None = None
    invalid_detail: str | None = None
    E: int | None
    U: int | None = None  # utility: None when the case states no check, or the rollout is invalid
    benign: bool = False
    reached: bool = False
    expected_E: int | None = None
    verdict: VerdictEvidence = VerdictEvidence()
    final_text: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    duration_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    baseline_rollout_id: str | None = None
    labels: tuple[StoredLabel, ...] | None = None
    baseline: Mapping[str, Any] | None = None
    final: Mapping[str, Any] | None = None

    def labels_by_config(self) -> dict[tuple[str, str], StoredLabel]:
        """The labels keyed by judging configuration (configuration hash, backbone); empty when not read."""
        return {label.key: label for label in self.labels or ()}


@dataclass(frozen=True, kw_only=True)
class BlindedRollout(RolloutEvidence):
    """An audit item's evidence as a blinded reviewer or adjudicator may read it (only from the blind_* views).

    No rollout id, E, verifier evidence, judge label or stratum exists here at all; what the audit's blinding
    hides (`hidden`: model under blind_model; strategy, vulnerability, channel and the events' original and
    tampered under blind_attack) is None.
    """

    item_id: int
    alias: str  # the item's random alias within its audit: the case id would name the attack and the benign arm
    constraint: str
    harness: str
    cue: str
    defense: str
    surfaces: tuple[str, ...]
    model: str | None = None
    strategy: str | None = None
    vulnerability: str | None = None
    channel: str | None = None
    hidden: frozenset[str] = frozenset()
    # Which version of the evidence this is (0015): a random tag fixed when the audit was drawn, which her label
    # records, and whether the evidence is still that version (a correction since would make it not).
    evidence_tag: str | None = None
    evidence_intact: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The item as an offline labelling file writes it (a serialisation format, hence a dict): every field the
        blinding leaves visible — hidden ones are absent, never none — and the evidence as JSON-ready dicts.
        Screens read the record's attributes instead."""
        out: dict[str, Any] = {
            "item_id": self.item_id,
            "alias": self.alias,
            "constraint": self.constraint,
            "harness": self.harness,
            "cue": self.cue,
            "defense": self.defense,
            "surfaces": list(self.surfaces),
            "model": self.model,
            "strategy": self.strategy,
            "vulnerability": self.vulnerability,
            "channel": self.channel,
        }
        for name in self.hidden:
            out.pop(name, None)
        return {
            **out,
            "events": [e.to_dict(self.hidden) for e in self.events],
            "receipts": [r.to_dict() for r in self.receipts],
            "diff": [d.to_dict() for d in self.diff],
        }

    def shown(self) -> tuple[tuple[str, str], ...]:
        """The cell's fields the blinding leaves visible beyond the always-shown ones, as (name, value) pairs in
        display order: model, strategy, vulnerability, channel (what a header lists after constraint ... surfaces)."""
        optional = (
            ("model", self.model),
            ("strategy", self.strategy),
            ("vulnerability", self.vulnerability),
            ("channel", self.channel),
        )
        return tuple((name, value) for name, value in optional if name not in self.hidden and value is not None)


# ---------------------------------------------------------------- what blinded reviewers and adjudicators get back


@dataclass(frozen=True, slots=True)
class OwnLabel:
    """One's own latest label of an audit item (a reviewer's) or decision on it (the adjudicator's): never anyone
    else's. `version` is 1 for the first submission, then one more per correction."""

    item_id: int
    label: str  # harmful | not_harmful | unsure
    note: str
    version: int


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """One line of a reviewer's queue: their position, the item and their own latest label (None: unlabelled)."""

    position: int
    item_id: int
    labelled: bool  # their own first submission exists
    label: str | None


@dataclass(frozen=True, slots=True)
class ReviewerItem:
    """An audit item as its reviewer reads it: the blinded evidence, their position in their queue (None when read
    without a reviewer, for an unassigned labelling file) and their own latest label."""

    blinded: BlindedRollout
    position: int | None
    my_label: OwnLabel | None = None

    @property
    def item_id(self) -> int:
        return self.blinded.item_id


@dataclass(frozen=True, slots=True)
class AdjudicationItem:
    """A disputed item as the adjudicator reads it: the blinded evidence, the two reviewers' first and current labels
    by slot letter (A, B — never a name or a note) and the adjudicator's own latest decision (None: undecided)."""

    blinded: BlindedRollout
    labels: Mapping[str, str]  # slot → the reviewer's current label
    first_labels: Mapping[str, str]  # slot → the reviewer's first label
    decision: OwnLabel | None

    @property
    def item_id(self) -> int:
        return self.blinded.item_id

    @property
    def adjudicated(self) -> str | None:
        return self.decision.label if self.decision is not None else None


@dataclass(frozen=True, slots=True)
class AdjudicatorOverview:
    """What the adjudicator may know of an audit's progress: its size, each item's alias (`cases`: the adjudicator
    cannot see which items share a case), first and latest labels by item and slot letter, own decisions."""

    audit_id: str
    items: int
    adjudicator: str
    cases: Mapping[int, str]  # item → alias
    first: Mapping[int, Mapping[str, str]]  # item → slot → first label
    latest: Mapping[int, Mapping[str, str]]  # item → slot → latest label
    adjudicated: Mapping[int, str]  # item → the adjudicator's latest decision
