"""Executors: where a run's rollouts execute — this process, N local worker processes, or Ray.

    local, one process   engine/runner.py MatrixRunner (the default; `--executor local`)
    local, --workers N   N spawned worker processes sharing the store (SQLite WAL or PostgreSQL)
    ray                  Ray tasks, on a Ray instance of the driver's own or an existing cluster (--ray-address)

`open_executor` checks the choice and starts what it needs before anything is stored (a missing Ray, an
unreachable cluster, SQLite across nodes are one line); `distribute` turns the planned `MatrixRunner` into
a `DistributedRunner` that shards its pending rollouts over the executor. Modules: `resources` (what a
rollout of each harness needs), `shards` (cutting keys, a worker's run of one shard), `backends` (process
pool, Ray), `slots` (per-model limits shared by all workers), `driver` (the loop that owns the run row).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redagent.engine.executors.backends import RAY_EXTRA, ExecutorError, LocalBackend, RayBackend
from redagent.engine.executors.driver import DistributedRunner
from redagent.engine.runner import MatrixRunner
from redagent.store.urls import absolute_url, dialect

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class Execution:
    executor: str = "local"
    workers: int = 1  # local worker processes (local executor)
    ray_address: str | None = None

    @property
    def in_process(self) -> bool:
        return self.executor == "local" and self.workers == 1


def check_execution(execution: Execution) -> None:
    if execution.executor not in EXECUTORS:
        raise ExecutorError(f"unknown executor {execution.executor!r} (known: {', '.join(EXECUTORS)})")
    if execution.workers < 1:
        raise ExecutorError("--workers must be at least 1")
    if execution.executor == "ray" and execution.workers != 1:
        raise ExecutorError("--workers is for the local executor; a Ray run uses the cluster's CPUs")
    if execution.ray_address and execution.executor != "ray":
        raise ExecutorError("--ray-address needs --executor ray")


def open_executor(execution: Execution, store_url: str) -> Any:
    """The started backend for `execution` (None for the in-process default), checked against the store."""
    check_execution(execution)
    if execution.in_process:
        return None
    sqlite = dialect(store_url) == "sqlite"
    backend = (
        LocalBackend(execution.workers)
        if execution.executor == "local"
        else RayBackend(execution.ray_address, sqlite=sqlite)
    )
    backend.start()
    return backend


def distribute(runner: MatrixRunner, backend: Any, spec: Any) -> MatrixRunner | DistributedRunner:
    """`runner` itself when `backend` is None; else a driver that runs its pending rollouts on `backend`."""
    if backend is None:
        return runner
    slot_server = None
    if spec.per_model:
        from redagent.engine.executors.slots import SlotServer

        slot_server = SlotServer(spec.per_model, list(spec.models), host=backend.slot_host)
        slot_server.start()
    return DistributedRunner(
        runner, backend, store_url=absolute_url(runner.store.url), spec=spec, slot_server=slot_server
    )


__all__ = [
    "EXECUTORS",
    "RAY_EXTRA",
    "DistributedRunner",
    "Execution",
    "ExecutorError",
    "check_execution",
    "distribute",
    "open_executor",
]
