"""The driver of a multi-worker run: shards out the pending rollouts, resubmits failed shards, owns the run row.

`DistributedRunner` stands where a `MatrixRunner` stands (the CLI's progress bar, the console's run
control): `pending()`, `run()`, `request_stop()`, `on_progress`. It marks the run running with this
host and pid, keeps its heartbeat, and sets its final status; workers only store rollouts and report
their shard's progress. A shard whose attempt fails (an exception, a killed worker, a lost Ray node) is
submitted again, up to SHARD_ATTEMPTS times, and the new attempt runs only the rollouts still missing.
A stop is written to the run row ("stopped"); workers read it within a second, schedule nothing more and
let their in-flight rollouts finish, and the driver waits for them before it returns.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import deque
from datetime import UTC, datetime
from typing import Any

from redagent.engine.executors.backends import ExecutorError
from redagent.engine.executors.resources import Resources, shard_resources, slots_that_fit
from redagent.engine.executors.shards import ShardJob, cut
from redagent.engine.runner import MatrixRunner, Progress
from redagent.store.db import HEARTBEAT_SECONDS, this_host
from redagent.store.records import RunCounts

SHARD_ATTEMPTS = 3
POLL_SECONDS = 0.5  # how often the driver looks for finished shards
PROGRESS_SECONDS = 1.0  # how often it reads the stored counts for the progress bar


class DistributedRunner:
    def __init__(self, base: MatrixRunner, backend: Any, *, store_url: str, spec: Any, slot_server: Any = None) -> None:
        self.base = base
        self.backend = backend
        self.store = base.store
        self.store_url = store_url  # handed to workers; never printed (it may hold a password)
        self.spec = spec
        self.slot_server = slot_server
        self.run_record = base.run_record
        self.cases = base.cases
        self.keys = base.keys
        self.on_progress = base.on_progress
        self._stop = threading.Event()
        self.worker_cpu_s = 0.0  # CPU the workers spent on this run's shards (what benchmarks report)
        self.shard_failures: list[tuple[int, int, str]] = []

    def pending(self):
        return self.base.pending()

    def request_stop(self) -> None:
        self._stop.set()

    async def run(self) -> Progress:
        loop = asyncio.get_running_loop()
        work = loop.run_in_executor(None, self._drive)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            self._stop.set()  # the caller gave up waiting: stop the workers, the thread ends the run as stopped
            raise

    # ------------------------------------------------------------------ the driving thread

    def _drive(self) -> Progress:
        store, run_id = self.store, self.run_record.id
        todo = self.pending()
        progress = Progress(planned=len(self.keys), done_before=len(self.keys) - len(todo))
        before = store.counts(run_id)
        store.update_run(
            run_id,
            status="running",
            started_at=self.run_record.started_at or datetime.now(UTC),
            host=this_host(),
            pid=os.getpid(),
            heartbeat_at=datetime.now(UTC),
        )
        try:
            failed = self._schedule(todo, progress, before)
        except BaseException:
            store.update_run(
                run_id,
                status="stopped" if self._stop.is_set() else "failed",
                finished_at=None if self._stop.is_set() else datetime.now(UTC),
            )
            raise
        finally:
            if self.slot_server is not None:
                self.slot_server.stop()
        self._read_progress(progress, before)
        missing = len(self.pending())
        if missing and failed and not self._stop.is_set():
            shard, attempts, error = failed[0]
            store.update_run(run_id, status="failed", finished_at=datetime.now(UTC))
            raise ExecutorError(
                f"run {run_id}: shard {shard} failed {attempts} times ({error}); {missing} rollouts "
                f"missing, resume with `redagent run --resume {run_id}`"
            )
        store.update_run(
            run_id, status="stopped" if missing else "finished", finished_at=None if missing else datetime.now(UTC)
        )
        return progress

    def _schedule(self, todo, progress: Progress, before: RunCounts) -> list[tuple[int, int, str]]:
        store, run_id = self.store, self.run_record.id
        nodes = self.backend.nodes()
        first = store.next_shard(run_id)  # shard numbers stay unique across resumes of the same run
        jobs: dict[int, tuple[list, int, Resources]] = {}
        for i, keys in enumerate(cut(todo, self.backend.slots()), start=first):
            harness = keys[0].harness
            slots = slots_that_fit(harness, min(self.spec.concurrency, len(keys)), nodes)
            if slots < 1:
                raise ExecutorError(
                    f"no node can hold one {harness} rollout ({shard_resources(harness, 1)}; nodes: "
                    f"{', '.join(f'{n.cpu:g} CPU {n.memory_mb} MB' for n in nodes) or 'none'})"
                )
            jobs[i] = (keys, slots, shard_resources(harness, slots))
        queue = deque((shard, 1) for shard in jobs)
        inflight: dict[Any, tuple[int, int]] = {}
        failed: list[tuple[int, int, str]] = []
        next_beat = time.monotonic() + HEARTBEAT_SECONDS
        next_read = 0.0
        stop_written = False
        while queue or inflight:
            while queue and not self._stop.is_set():
                shard, attempt = queue.popleft()
                keys, slots, resources = jobs[shard]
                job = ShardJob(
                    store_url=self.store_url,
                    run_id=run_id,
                    shard=shard,
                    attempt=attempt,
                    keys=keys,
                    cases={k.case_id: self.cases[k.case_id] for k in keys},
                    spec=self.spec,
                    concurrency=slots,
                    baselines={k: self.base.baselines[k] for k in keys if k in self.base.baselines},
                    retry_invalid=self.base.retry_invalid,
                    slots=self.slot_server.address if self.slot_server is not None else None,
                )
                inflight[self.backend.submit(job, resources)] = (shard, attempt)
            if self._stop.is_set():
                queue.clear()
                if not stop_written:
                    # Workers read this within a second: nothing new is scheduled, in-flight rollouts finish.
                    store.update_run(run_id, status="stopped")
                    stop_written = True
            for handle in self.backend.wait(list(inflight), POLL_SECONDS) if inflight else []:
                shard, attempt = inflight.pop(handle)
                try:
                    result = self.backend.result(handle)
                except Exception as exc:  # the shard's exception, a dead worker process, a lost node
                    error = _one_line(exc)
                    store.shard_failed(run_id, shard, attempt, error, planned=len(jobs[shard][0]))
                    self.shard_failures.append((shard, attempt, error))
                    if attempt < SHARD_ATTEMPTS:
                        queue.append((shard, attempt + 1))
                    else:
                        failed.append((shard, attempt, error))
                    continue
                self.worker_cpu_s += float(result.get("cpu_s") or 0.0)
            now = time.monotonic()
            if now >= next_beat:
                next_beat = now + HEARTBEAT_SECONDS
                store.heartbeat(run_id)
            if now >= next_read:
                next_read = now + PROGRESS_SECONDS
                self._read_progress(progress, before)
        return failed

    def _read_progress(self, progress: Progress, before: RunCounts) -> None:
        """The progress bar's figures, from what is stored (workers' own counts may be in unwritten batches)."""
        counts = self.store.counts(self.run_record.id)
        progress.done = max(0, counts.completed - before.completed)
        progress.invalid = max(0, counts.invalid - before.invalid)
        progress.invalid_reasons.clear()
        progress.invalid_reasons.update(counts.invalid_reasons)
        cells = self.store.execution_asr(self.run_record.id)
        progress.harmful = sum(c.harmful for c in cells)
        progress.attacked = sum(c.valid for c in cells)
        if self.on_progress is not None:
            self.on_progress(progress)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    # Ray wraps a task's exception in a traceback; its last line names the cause.
    line = next((t for t in reversed(text) if t.strip() and not t.startswith(" ")), "") if text else ""
    return f"{type(exc).__name__}: {line}"[:300] if line else type(exc).__name__
