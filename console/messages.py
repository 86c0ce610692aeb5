"""Small messages the console's thread workers post back to the UI loop (workers never touch widgets)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from redagent.store.db import Store
from redagent.store.records import CellAsr, RolloutSummary, RunCounts, RunListing, RunRecord


class StoreReady(Message):
    """The store opened (and migrated); screens may query it now."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store


class StoreFailed(Message):
    """The store could not be opened; `reason` is the one-line StoreError text."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class RunStarted(Message):
    """The console's engine thread created (or resumed) a run and is driving it."""

    def __init__(self, run_id: str, resumed: bool) -> None:
        super().__init__()
        self.run_id = run_id
        self.resumed = resumed


class RunEnded(Message):
    """A run driven by this console returned: status is finished or stopped (as stored)."""

    def __init__(self, run_id: str, status: str, completed: int, planned: int) -> None:
        super().__init__()
        self.run_id = run_id
        self.status = status
        self.completed = completed
        self.planned = planned


class RunFailed(Message):
    """Starting or driving a run failed; run_id is None when the run was never created (a bad form)."""

    def __init__(self, run_id: str | None, error: BaseException) -> None:
        super().__init__()
        self.run_id = run_id
        self.error = error  # shown by console/failures.py: a user error's line, or a bug with its log file


@dataclass(frozen=True, slots=True)
class RunDetail:
    """What one poll read of the selected run: its counts, execution ASR and workers; its record when first shown
    (None: unchanged), and the rollouts stored since the log last grew (None: the log needs none)."""

    run_id: str
    first: bool  # the run was just selected: its log starts from its backlog
    counts: RunCounts
    asr: list[CellAsr]
    workers: dict[str, Any]  # Store.run_workers: the run summary's JSON-ready form
    record: RunRecord | None = None
    new: list[RolloutSummary] | None = None


class RunsPolled(Message):
    """One poll of the Runs screen: every run, and the selected run's detail (None when nothing is selected)."""

    def __init__(self, runs: list[RunListing], detail: RunDetail | None) -> None:
        super().__init__()
        self.runs = runs
        self.detail = detail
