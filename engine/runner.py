"""Matrix runs: bounded-concurrency rollouts streamed into the store, resumable, stoppable.

`MatrixRunner.run()` executes every planned rollout the store does not hold yet (and, with
`retry_invalid`, those stored invalid for one of the given reasons). Rollouts run as asyncio tasks
under a global concurrency bound; the per-model bound is the model client's (llm/client.py), held
around each model call rather than the rollout, so workers never queue behind a slow model while
another model's rollouts wait. Everything that blocks — a sandbox's set-up, every tool call, the finish with its
snapshot, diff, verdict, consequence replays and re-runs — goes to a thread pool of the same size (engine/types.py
`off_loop`): the loop only schedules, so one rollout's 3-second replay stalls no other. Finished
rollouts go to one writer thread that stores them in batches, each batch one transaction — so a
killed process loses at most what was in flight and the unwritten batch, and idempotent rollout ids
mean a resume can never store one twice. The same thread refreshes the run's heartbeat, so a run
whose process died shows as interrupted.

A stop (`request_stop`) starts nothing new. Rollouts that talk to a model server (a litellm model, or an
adaptive attacker's) are cancelled at once: such a rollout cannot finish without more model calls, and a
server that hangs would hold the run for as long as it hangs; cancelling one closes its model connections
and removes its sandbox, and it is not stored, so a resume runs it again. Calibration agents answer in
process: their rollouts go on, and the caller decides how long to wait for them (`redagent run` gives them
a grace) before cancelling the run.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import EllipsisType

from redagent.cases.execution import CaseRun
from redagent.cases.schema import Case
from redagent.engine.calibration import is_calibration
from redagent.engine.conditions import DEFAULT_DISCLOSURE
from redagent.engine.plan import rollout_id
from redagent.engine.rollout import AttackerFactory, ModelFactory, execute_rollout
from redagent.engine.types import RolloutKey
from redagent.store.db import HEARTBEAT_SECONDS, Store, this_host
from redagent.store.records import RolloutRecord, RunRecord

BATCH = 100
FLUSH_SECONDS = 0.25


@dataclass
class Progress:
    planned: int
    done_before: int
    done: int = 0
    invalid: int = 0
    harmful: int = 0
    attacked: int = 0  # valid rollouts that carried an attack (the ASR denominator)
    started: float = field(default_factory=time.perf_counter)
    invalid_reasons: Counter = field(default_factory=Counter)
    last: RolloutRecord | None = None

    @property
    def completed(self) -> int:
        return self.done_before + self.done

    @property
    def rate(self) -> float:
        elapsed = time.perf_counter() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        remaining = self.planned - self.completed
        return remaining / self.rate if self.rate > 0 else None

    @property
    def asr(self) -> float | None:
        # Over valid attacked rollouts: the benign arm measures utility, it is no attack that failed.
        return self.harmful / self.attacked if self.attacked else None


class _Writer(threading.Thread):
    """Stores finished rollouts in batches on its own thread; the event loop never waits on the database."""

    def __init__(
        self, store: Store, run_id: str, replace_invalid: Collection[str] = (), heartbeat: bool = True
    ) -> None:
        super().__init__(name="rollout-writer", daemon=True)
        self.store = store
        self.run_id = run_id
        self.replace_invalid = tuple(replace_invalid)
        self.inbox: queue.Queue[RolloutRecord | None] = queue.Queue()
        self.error: BaseException | None = None
        self.written = 0
        # A worker of a multi-worker run writes no heartbeat: the driver owns the run row.
        self.beats = heartbeat
        self.next_heartbeat = time.monotonic() + HEARTBEAT_SECONDS

    def run(self) -> None:
        batch: list[RolloutRecord] = []
        deadline = time.monotonic() + FLUSH_SECONDS
        while True:
            if self.beats and time.monotonic() >= self.next_heartbeat and self.error is None:
                self.next_heartbeat = time.monotonic() + HEARTBEAT_SECONDS
                try:
                    self.store.heartbeat(self.run_id)
                except BaseException as exc:  # a store that cannot take a heartbeat cannot take rollouts either
                    self.error = exc
            item: RolloutRecord | EllipsisType | None
            try:
                item = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                item = ...
            if item is None:
                self._flush(batch)
                return
            if item is not ...:
                batch.append(item)
            if len(batch) >= BATCH or time.monotonic() >= deadline:
                self._flush(batch)
                batch = []
                deadline = time.monotonic() + FLUSH_SECONDS

    def _flush(self, batch: list[RolloutRecord]) -> None:
        if not batch or self.error:
            return
        try:
            self.written += self.store.write_rollouts(batch, replace_invalid=self.replace_invalid)
        except BaseException as exc:  # surfaced by the runner; the rollouts stay unwritten, resumable
            self.error = exc


class MatrixRunner:
    def __init__(
        self,
        store: Store,
        run: RunRecord,
        cases: dict[str, Case],
        keys: list[RolloutKey],
        models: ModelFactory,
        *,
        concurrency: int = 8,
        max_steps: int = 30,
        disclosure: str = DEFAULT_DISCLOSURE,
        baselines: dict[RolloutKey, str] | None = None,
        retry_invalid: Collection[str] = (),
        on_progress: Callable[[Progress], None] | None = None,
        owns_run: bool = True,
        attackers: AttackerFactory | None = None,
    ) -> None:
        self.store = store
        self.attackers = attackers  # the run's adaptive attacker: one session per attacked rollout
        # False for a shard of a multi-worker run (engine/executors/): the driver owns the run's status,
        # host, pid and heartbeat, and this runner only stores rollouts.
        self.owns_run = owns_run
        self.run_record = run
        self.cases = cases
        self.keys = keys
        self.models = models
        self.concurrency = max(1, concurrency)
        self.max_steps = max_steps
        # Stored invalid rollouts with these reasons are run again, and the new one replaces the old.
        self.retry_invalid = frozenset(retry_invalid)
        self.disclosure = disclosure
        self.baselines = baselines or {}
        self.on_progress = on_progress
        self.stop_requested = asyncio.Event()
        self._in_flight: dict[asyncio.Task[RolloutRecord], RolloutKey] = {}
        # Every rollout's sandbox while it is open: what a stop (a second cancellation) leaves open is closed at the end.
        self._opened: set[CaseRun] = set()
        self.stopped_in_flight = 0  # rollouts a stop cancelled (not stored; a resume runs them again)

    def pending(self) -> list[RolloutKey]:
        run_id = self.run_record.id
        done = self.store.completed_ids(run_id)
        if self.retry_invalid:
            done -= self.store.invalid_ids(run_id, self.retry_invalid)
        return [k for k in self.keys if rollout_id(run_id, k, self.cases[k.case_id].content_hash) not in done]

    def request_stop(self) -> None:
        """Start no new rollout and cancel those that talk to a model server (see the module docstring). Called on
        the run's event loop (a signal handler, `call_soon_threadsafe` from another thread)."""
        self.stop_requested.set()
        for task, key in list(self._in_flight.items()):
            if self.served(key) and not task.done():
                task.cancel()

    def served(self, key: RolloutKey) -> bool:
        """Whether this rollout waits on a model server: a litellm target model, or an adaptive attacker's model."""
        attacker = getattr(self.attackers, "setting", None)
        return not is_calibration(key.model) or bool(getattr(attacker, "model", None))

    async def run(self) -> Progress:
        todo = self.pending()
        progress = Progress(planned=len(self.keys), done_before=len(self.keys) - len(todo))
        # Who drives the run now, so `runs list` can tell a live run from one whose process died.
        if self.owns_run:
            self.store.update_run(
                self.run_record.id,
                status="running",
                started_at=self.run_record.started_at or datetime.now(UTC),
                host=this_host(),
                pid=os.getpid(),
                heartbeat_at=datetime.now(UTC),
            )
        writer = _Writer(self.store, self.run_record.id, self.retry_invalid, heartbeat=self.owns_run)
        writer.start()
        work: asyncio.Queue[RolloutKey] = asyncio.Queue()
        for key in todo:
            work.put_nowait(key)
        executor = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="sandbox")

        async def worker() -> None:
            while not self.stop_requested.is_set() and writer.error is None:
                try:
                    key = work.get_nowait()
                except asyncio.QueueEmpty:
                    return
                # Its own task, so that a stop can cancel this rollout alone (request_stop) while the worker ends.
                rollout = asyncio.ensure_future(
                    execute_rollout(
                        self.run_record.id,
                        self.cases[key.case_id],
                        key,
                        self.models,
                        disclosure=self.disclosure,
                        max_steps=self.max_steps,
                        executor=executor,
                        baseline_rollout_id=self.baselines.get(key),
                        attackers=self.attackers,
                        opened=self._opened,
                    )
                )
                self._in_flight[rollout] = key
                try:
                    record = await rollout
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling() == 0 and self.stop_requested.is_set():
                        self.stopped_in_flight += 1  # the stop cancelled this rollout: nothing stored, the worker ends
                        return
                    raise  # the run itself is cancelled
                finally:
                    del self._in_flight[rollout]
                writer.inbox.put(record)
                progress.done += 1
                progress.last = record
                if not record.valid:
                    progress.invalid += 1
                    progress.invalid_reasons[record.invalid_reason or "unknown"] += 1
                elif not record.benign:
                    progress.attacked += 1
                    progress.harmful += int(record.E == 1)
                if self.on_progress:
                    self.on_progress(progress)

        try:
            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, max(1, len(todo))))))
        except BaseException as exc:
            # Interrupted, or a failure the rollouts could not absorb: the run must not stay "running".
            stopped = isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError))
            if self.owns_run:
                self.store.update_run(
                    self.run_record.id,
                    status="stopped" if stopped else "failed",
                    finished_at=None if stopped else datetime.now(UTC),
                )
            raise
        finally:
            writer.inbox.put(None)
            await asyncio.get_running_loop().run_in_executor(None, writer.join)
            executor.shutdown(wait=True)
            for left in list(self._opened):  # cancelled twice while its sandbox was being closed: closed here
                left.close()
                self._opened.discard(left)
        if writer.error is not None:
            if self.owns_run:
                self.store.update_run(self.run_record.id, status="failed", finished_at=datetime.now(UTC))
            raise writer.error
        if self.owns_run:
            complete = progress.completed >= progress.planned
            self.store.update_run(
                self.run_record.id,
                status="finished" if complete else "stopped",
                finished_at=datetime.now(UTC) if complete else None,
            )
        return progress
