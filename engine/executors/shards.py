"""Shards: a run's pending rollout keys cut into pieces, and what a worker process does with one.

A shard is a fixed list of rollout keys of one harness (so it asks the executor for one kind of
resources). A worker runs it with the ordinary `MatrixRunner` in `owns_run=False` mode: it stores
rollouts through the same batching writer, and it skips every key already stored — so an attempt
at a shard that failed half-way, on this worker or a lost one, runs only the rollouts still missing,
and the deterministic rollout ids with insert-if-absent writes make a repeated one a no-op. The
driver owns the run row; a worker writes only its shard attempt's progress row (store/workers.py)
and reads the run's status there, which is how a stop reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from redagent.cases.schema import Case
from redagent.engine.types import RolloutKey

PROGRESS_SECONDS = 1.0  # how often a worker reports its shard's progress (and learns of a stop)
# Shards per worker slot. Every shard drains at its end (its last rollouts run with ever fewer beside them), so
# few large shards keep a worker's slots full; two per slot leave a faster worker something to take over. A lost
# shard costs nothing extra for being large: its next attempt runs only the rollouts still missing.
SHARDS_PER_SLOT = 2
MAX_SHARD = 5000  # rollout keys in one shard at most (bounds what one job carries to a worker)


@dataclass
class ShardJob:
    """Everything a worker needs for one attempt at a shard; pickled to the worker (local process or Ray task)."""

    store_url: str
    run_id: str
    shard: int
    attempt: int
    keys: list[RolloutKey]
    cases: dict[str, Case]  # only the shard's cases: a remote node needs no case files
    spec: Any  # the run's RunSpec (models are built from it as in one process)
    concurrency: int
    baselines: dict[RolloutKey, str] = field(default_factory=dict)
    retry_invalid: frozenset[str] = frozenset()
    slots: tuple[str, int, str] | None = None  # the driver's slot server (host, port, secret) for --per-model


def cut(keys: Iterable[RolloutKey], slots: int) -> list[list[RolloutKey]]:
    """Pending keys grouped by harness, dealt into shards of one size: about SHARDS_PER_SLOT shards per worker slot,
    at most MAX_SHARD keys each. Keys are dealt round-robin (shard j of n takes every n-th key), not cut in plan
    order: plan order keeps a case's cells together, and the cases whose agents run commands cost ten times
    the others — cut in order they filled one or two shards, which one worker ran while the other sat idle
    (2 workers: 1.04x one process on the default matrix)."""
    by_harness: dict[str, list[RolloutKey]] = {}
    for key in keys:
        by_harness.setdefault(key.harness, []).append(key)
    total = sum(len(v) for v in by_harness.values())
    if not total:
        return []
    size = max(1, min(MAX_SHARD, math.ceil(total / (max(1, slots) * SHARDS_PER_SLOT))))
    shards = []
    for group in by_harness.values():
        n = math.ceil(len(group) / size)
        shards += [group[j::n] for j in range(n)]
    return shards


# One store per worker process and URL: opening one migrates (a check once it is at head) and builds a pool.
_STORES: dict[str, Any] = {}


def _store(url: str):
    from redagent.store.db import open_store

    if url not in _STORES:
        _STORES[url] = open_store(url)
    return _STORES[url]


def start_worker(warm: Any = None) -> None:
    """A local worker process's initializer: Ctrl-C reaches the whole process group, but only the driver decides
    what it means (stop scheduling, let in-flight rollouts finish); it tells the workers through the store.
    It also imports what a shard needs (the engine, litellm: about 2 s of CPU), so a worker started with the
    executor is ready by the time the run is planned, instead of spending its first shard's time on imports.
    `warm`, if given, is a semaphore it then releases, which is how the driver can tell the workers are ready."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warm_up()
    if warm is not None:  # the first pool's semaphore (LocalBackend.ready); a replacement pool has none
        warm.release()


def warm_up() -> None:
    from redagent.engine import matrix, runner  # noqa: F401  (imported for their side effect: loaded modules)
    from redagent.llm.client import _litellm

    _litellm()


def run_shard(job: ShardJob) -> dict[str, Any]:
    """Run one attempt at a shard in this (worker) process; returns what it did and the CPU it took."""
    from redagent.engine.matrix import ModelPool, attacker_pool, use_sandbox
    from redagent.engine.runner import MatrixRunner
    from redagent.llm.client import LiteLLMModel
    from redagent.sandbox.isolation import cpu_spent

    cpu = cpu_spent()  # the worker's own and its sandboxes' (reaped children)
    store = _store(job.store_url)
    run = store.get_run(job.run_id)
    if run is None or run.status != "running":  # stopped (or gone) while this shard waited for a worker
        return {"done": 0, "invalid": 0, "stopped": True, "cpu_s": cpu_spent() - cpu}
    limiter = None
    if job.slots is not None:
        from redagent.engine.executors.slots import SlotClient

        limiter = SlotClient(job.slots)

    class Models(ModelPool):
        def __call__(self, name: str, case: Case):
            model = super().__call__(name, case)
            if limiter is not None and isinstance(model, LiteLLMModel):
                model.limiter = limiter  # the run's global per-model bound instead of this process's own
            return model

    spec = job.spec
    use_sandbox(spec, job.run_id)  # the run's backend in this worker process too (an older spec: bwrap)
    runner = MatrixRunner(
        store,
        run,
        job.cases,
        job.keys,
        Models(spec),
        concurrency=job.concurrency,
        max_steps=spec.max_steps,
        disclosure=spec.disclosure,
        baselines=job.baselines,
        retry_invalid=job.retry_invalid,
        owns_run=False,
        attackers=attacker_pool(spec),
    )
    store.shard_started(
        job.run_id,
        job.shard,
        job.attempt,
        worker=f"{socket.gethostname()}:{os.getpid()}",
        node=_ray_node(),
        planned=len(job.keys),
    )
    seen: dict[str, Any] = {}
    runner.on_progress = lambda progress: seen.__setitem__("progress", progress)
    finished = threading.Event()

    def counts() -> tuple[int, int]:
        progress = seen.get("progress")
        return (progress.done, progress.invalid) if progress is not None else (0, 0)

    def report(loop: asyncio.AbstractEventLoop) -> None:
        while not finished.wait(PROGRESS_SECONDS):
            try:
                done, invalid = counts()
                store.shard_progress(job.run_id, job.shard, job.attempt, done=done, invalid=invalid)
                current = store.get_run(job.run_id)
                if current is None or current.status != "running":
                    loop.call_soon_threadsafe(runner.request_stop)
            except Exception:  # a missed report is retried next second; the rollouts are what count
                continue

    async def go():
        reporter = threading.Thread(
            target=report, args=(asyncio.get_running_loop(),), daemon=True, name="shard-progress"
        )
        reporter.start()
        try:
            return await runner.run()
        finally:
            finished.set()
            reporter.join()

    try:
        progress = asyncio.run(go())
    except BaseException as exc:
        done, invalid = counts()
        # Best effort: the driver records the failure too, from the executor's report.
        with contextlib.suppress(Exception):
            store.shard_progress(
                job.run_id,
                job.shard,
                job.attempt,
                done=done,
                invalid=invalid,
                status="failed",
                error=f"{type(exc).__name__}: {exc}".splitlines()[0],
            )
        raise
    stopped = runner.stop_requested.is_set()
    store.shard_progress(
        job.run_id,
        job.shard,
        job.attempt,
        done=progress.done,
        invalid=progress.invalid,
        status="stopped" if stopped else "done",
    )
    return {"done": progress.done, "invalid": progress.invalid, "stopped": stopped, "cpu_s": cpu_spent() - cpu}


def _ray_node() -> str | None:
    ray = sys.modules.get("ray")  # only a Ray worker has it loaded; importing it elsewhere costs a second
    if ray is None or not ray.is_initialized():
        return None
    return ray.get_runtime_context().get_node_id()
