"""The store as each of its consumers sees it: one narrow, typed interface per consumer (typing.Protocol).

`Store` is one class of many methods (store/db.py and its mixins); a consumer is typed against the interface
below that names only what it uses, so what it may read is visible in its signature, and a test can hand it a
small in-memory fake of that one interface instead of a database. `Store` satisfies every one of them
structurally (mypy checks this at the end of this module).

- `RolloutReader` and `LabelWriter` — judging a stored run (judges/labelling.py).
- `RunMonitor` — how far runs are: the engine's progress and summary, the console's runs screen, `runs list`.
- `AuditQueue` — a blinded reviewer (the audit screen, labelling files). Blinded by construction: every method
  returns a blinded record (`QueueEntry`, `ReviewerItem` around a `BlindedRollout`, `OwnLabel`) or an id/count;
  nothing here can return a rollout id, an unblinded rollout, a case id, a judge label or another reviewer's label.
- `AdjudicationQueue` — the third reviewer: the same blinded records, plus the two reviewers' labels by slot letter.
- `ReviewRounds` — an expert's construction-round queue and write-once reviews (the case review screen).
- `ReportSource` — the rows the statistics and the report read from a run.
- `ExportSource`, `ImportSink` — a run read out whole (rollouts with their evidence, labels) and written back
  whole, as the Inspect log export and import do (judges/inspect_export.py, judges/inspect_import.py).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from redagent.store.readmodel import (
    AdjudicationItem,
    AdjudicatorOverview,
    OwnLabel,
    QueueEntry,
    ReviewerItem,
    StoredRollout,
)
from redagent.store.records import (
    AuditRecord,
    CellAsr,
    CellHealth,
    ExportCell,
    JudgeLabelRecord,
    LabelledRow,
    OutcomeRow,
    RecognitionLabelRecord,
    RolloutRecord,
    RolloutSummary,
    RunCounts,
    RunListing,
    RunRecord,
    UtilityCount,
)
from redagent.store.reviews import ExpertQueueEntry, OwnReview


class RunCaseSource(Protocol):
    """What resolving a run's cases reads (judges.labelling.run_cases): the run's record and its case ids."""

    def get_run(self, run_id: str) -> RunRecord | None: ...

    def case_ids(self, run_id: str) -> list[str]: ...


class RolloutReader(RunCaseSource, Protocol):
    """What a judge reads of a stored run: the run, its case ids, its rollouts as the read model, cached labels."""

    def iter_rollouts(self, run_id: str, *, snapshots: bool = True) -> Iterator[StoredRollout]: ...

    def cached_judge_labels(
        self, rollout_ids: Iterable[str], config_hash: str, backbone: str, *, include_failed: bool = False
    ) -> dict[str, JudgeLabelRecord]: ...

    def recognition_labels(self, run_id: str, judge: str, contract_hash: str) -> list[RecognitionLabelRecord]: ...


class LabelWriter(Protocol):
    """Where a judge writes its labels (write-once per rollout, configuration and backbone)."""

    def write_judge_labels(self, labels: Iterable[JudgeLabelRecord]) -> int: ...

    def write_recognition_labels(self, labels: Iterable[RecognitionLabelRecord]) -> int: ...


class JudgingStore(RolloutReader, LabelWriter, Protocol):
    """Judging a run reads rollouts and writes labels."""


class RunMonitor(Protocol):
    """How far runs are: listings, counts, per-cell execution ASR and health (judges/health.py), workers."""

    def get_run(self, run_id: str) -> RunRecord | None: ...

    def list_runs(self) -> list[RunListing]: ...

    def counts(self, run_id: str) -> RunCounts: ...

    def execution_asr(self, run_id: str) -> list[CellAsr]: ...

    def cell_health(self, run_id: str) -> list[CellHealth]: ...

    def run_workers(self, run_id: str, now: datetime | None = None) -> dict[str, Any]: ...

    def rollouts(self, run_id: str, *, harmful_only: bool = False) -> list[RolloutSummary]: ...


class AuditQueue(Protocol):
    """A blinded reviewer's side of an audit. Every read returns a blinded record; see the module docstring."""

    def latest_audit_for(self, name: str, role: str = "reviewer") -> str | None: ...

    def reviewer_queue(self, audit_id: str, reviewer: str) -> list[QueueEntry]: ...

    def reviewer_item(self, audit_id: str, item_id: int, reviewer: str) -> ReviewerItem: ...

    def blinded_items(self, audit_id: str, reviewer: str | None = None) -> list[ReviewerItem]: ...

    def submit_label(self, audit_id: str, item_id: int, reviewer: str, label: str, note: str = "") -> OwnLabel: ...

    def submit_labels(
        self, audit_id: str, reviewer: str, entries: Iterable[tuple[int, str, str]], *, skip_identical: bool = False
    ) -> int: ...

    def correct_label(
        self, audit_id: str, item_id: int, reviewer: str, label: str, reason: str, note: str = ""
    ) -> OwnLabel: ...


class AdjudicationQueue(Protocol):
    """The adjudicator's side of an audit: disputed items, blinded, with the reviewers' labels by slot letter."""

    def latest_audit_for(self, name: str, role: str = "reviewer") -> str | None: ...

    def adjudication_queue(self, audit_id: str, adjudicator: str) -> list[AdjudicationItem]: ...

    def adjudicator_overview(self, audit_id: str, adjudicator: str) -> AdjudicatorOverview: ...

    def adjudicate(self, audit_id: str, item_id: int, adjudicator: str, label: str, note: str = "") -> OwnLabel: ...

    def correct_adjudication(
        self, audit_id: str, item_id: int, adjudicator: str, label: str, reason: str, note: str = ""
    ) -> OwnLabel: ...


class ReviewRounds(Protocol):
    """An expert's side of a construction round: their queue and their write-once reviews."""

    def latest_round_for(self, expert: str) -> str | None: ...

    def expert_queue(self, round_id: str, expert: str) -> list[ExpertQueueEntry]: ...

    def submit_review(
        self, round_id: str, case_id: str, expert: str, rubric: Mapping[str, Any], decision: str, note: str = ""
    ) -> OwnReview: ...

    def correct_review(
        self,
        round_id: str,
        case_id: str,
        expert: str,
        rubric: Mapping[str, Any],
        decision: str,
        reason: str,
        note: str = "",
    ) -> OwnReview: ...


class ReportSource(RunCaseSource, Protocol):
    """The rows the statistics and the report read of a run (judges/report.py), and its cases."""

    def iter_rollouts(self, run_id: str, *, snapshots: bool = True) -> Iterator[StoredRollout]: ...

    def rollouts(self, run_id: str, *, harmful_only: bool = False) -> list[RolloutSummary]: ...

    def outcome_rows(self, run_id: str) -> list[OutcomeRow]: ...

    def labelled_rows(self, run_id: str, config_hash: str, backbone: str) -> list[LabelledRow]: ...

    def judged_configs(self, run_id: str) -> list[dict[str, Any]]: ...

    def execution_asr(self, run_id: str) -> list[CellAsr]: ...

    def utility_counts(self, run_id: str) -> list[UtilityCount]: ...

    def recognition_labels(self, run_id: str, judge: str, contract_hash: str) -> list[RecognitionLabelRecord]: ...

    def attacker_moves(self, run_id: str) -> dict[str, list[dict[str, Any]]]: ...

    def audits(self, run_id: str | None = None) -> list[AuditRecord]: ...


class ExportSource(Protocol):
    """What exporting a run reads: its record, its cells, every rollout with all its evidence (the export dicts
    `rows.rollout_record` reads back), every judge and recognition label with its configuration, and the run's
    evidence chain (its head, and each record's place and digest in it)."""

    def get_run(self, run_id: str) -> RunRecord | None: ...

    def export_cells(self, run_id: str) -> list[ExportCell]: ...

    def iter_export(self, run_id: str, cell: ExportCell | None = None) -> Iterator[dict[str, Any]]: ...

    def judged_configs(self, run_id: str) -> list[dict[str, Any]]: ...

    def judge_labels(self, run_id: str, config_hash: str, backbone: str) -> list[JudgeLabelRecord]: ...

    def recognition_judges(self, run_id: str) -> list[tuple[str, str]]: ...

    def recognition_labels(self, run_id: str, judge: str, contract_hash: str) -> list[RecognitionLabelRecord]: ...

    def evidence_links(self, run_id: str) -> tuple[str | None, int, dict[tuple[str, str], tuple[int, str]]]: ...


class ImportSink(LabelWriter, Protocol):
    """What importing a run writes: the run's record, its rollouts in batches (the engine's bulk write), labels."""

    def get_run(self, run_id: str) -> RunRecord | None: ...

    def create_run(self, run: RunRecord) -> None: ...

    def write_rollouts(self, rollouts: Iterable[RolloutRecord], *, replace_invalid: Collection[str] = ()) -> int: ...


if TYPE_CHECKING:  # mypy proves here that the real store satisfies every interface (no runtime cost, no import cycle)
    from redagent.store.db import Store

    def _store_satisfies_every_interface(store: Store) -> None:
        judging: JudgingStore = store
        monitor: RunMonitor = store
        queue: AuditQueue = store
        adjudication: AdjudicationQueue = store
        rounds: ReviewRounds = store
        report: ReportSource = store
        export: ExportSource = store
        sink: ImportSink = store
        del judging, monitor, queue, adjudication, rounds, report, export, sink
