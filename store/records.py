"""Plain records the engine hands to the store and gets back: runs, rollouts and rollout summaries (no SQL)."""

from __future__ import annotations

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
