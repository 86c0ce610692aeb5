"""Where shards run: N local worker processes, or Ray tasks (on this machine or an existing cluster).

A backend submits a shard job and later says whether it finished or failed; it knows nothing of runs.
Local workers are spawned (not forked: the driver has threads and an event loop) and ignore Ctrl-C,
which the driver turns into a stop. A worker process that dies breaks a process pool for every shard
in it, so the pool is replaced and those shards are submitted again — only their missing rollouts run.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import time
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from redagent.engine.executors.resources import Resources
from redagent.engine.executors.shards import ShardJob, run_shard, start_worker
from redagent.engine.plan import PlanError

RAY_EXTRA = "pip install 'redagent[ray]'"
# A Ray instance this driver starts for itself keeps its object store small: shards pass only keys and cases.
LOCAL_OBJECT_STORE_BYTES = 100 * 2**20


class ExecutorError(PlanError):
    """An executor that cannot be used as asked (Ray missing, a cluster out of reach, SQLite across nodes) or a
    run whose shards kept failing; one line for the user, like a plan error."""

    title = "Executor error"


def _memory_mb() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError):
        return 4096


class LocalBackend:
    name = "local"
    multi_node = False

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._warm: Any = None
        self._owner: dict[concurrent.futures.Future, concurrent.futures.ProcessPoolExecutor] = {}
        self.slot_host = "127.0.0.1"

    def start(self) -> None:
        # Spawn every worker now (a pool starts one per submit otherwise): they import the engine while the
        # driver plans the run, and each releases `_warm` once it has.
        self._warm = multiprocessing.get_context("spawn").Semaphore(0)
        self._pool = self._new_pool(self._warm)
        for _ in range(self.workers):
            self._pool.submit(os.getpid)

    def ready(self, timeout: float = 120.0) -> bool:
        """Wait until every worker has started and imported the engine (False if one did not within `timeout`).
        A run need not wait — shards queue until a worker takes them — but a benchmark does, to time the run
        and not the start-up."""
        deadline = time.monotonic() + timeout
        return all(self._warm.acquire(timeout=max(0.0, deadline - time.monotonic())) for _ in range(self.workers))

    def _new_pool(self, warm: Any = None) -> concurrent.futures.ProcessPoolExecutor:
        return concurrent.futures.ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=start_worker,
            initargs=(warm,),
        )

    def nodes(self) -> list[Resources]:
        return [Resources(float(self.workers), _memory_mb())]

    def slots(self) -> int:
        return self.workers

    def submit(self, job: ShardJob, resources: Resources) -> concurrent.futures.Future:
        assert self._pool is not None, "start() first"
        future = self._pool.submit(run_shard, job)
        self._owner[future] = self._pool
        return future

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        done, _ = concurrent.futures.wait(handles, timeout=timeout, return_when=concurrent.futures.FIRST_COMPLETED)
        return list(done)

    def result(self, handle: concurrent.futures.Future) -> dict[str, Any]:
        pool = self._owner.pop(handle, None)
        try:
            return handle.result()
        except BrokenProcessPool:
            # A worker process died (killed, out of memory): the pool is unusable. Replace it once — the other
            # shards it held fail the same way and are resubmitted to the new one.
            if self._pool is not None and pool is self._pool:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool()
            raise

    def cancel(self, handle: Any) -> None:
        handle.cancel()

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


WARM_SECONDS = 120.0  # how long starting a Ray executor waits for its workers to import the engine


def _warm_worker() -> int:
    from redagent.engine.executors.shards import warm_up

    warm_up()
    return os.getpid()


def import_ray():
    try:
        import ray
    except ImportError:
        raise ExecutorError(f"--executor ray needs Ray, which is not installed: {RAY_EXTRA}") from None
    return ray


def _cluster_news_to_stderr() -> None:
    """Ray's driver prints the cluster's error messages ("(raylet) The node with node id … has been marked dead")
    on stdout from a thread of its own, which would corrupt `redagent run --json`. They are worth seeing, on
    stderr with the progress bar: the printer (a private function of Ray 2.x, looked up by name on every
    message) is wrapped to send them there. Without that function (another Ray version) nothing changes."""
    from ray._private import worker

    printer = getattr(worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "redagent_stderr", False):
        return

    def to_stderr(data, ignore_prefix: bool):
        return printer({**data, "is_err": True}, ignore_prefix)

    wrapped: Any = to_stderr  # a marker attribute, so a second driver in this process does not wrap it twice
    wrapped.redagent_stderr = True
    worker.print_to_stdstream = wrapped


class RayBackend:
    name = "ray"

    def __init__(self, address: str | None, *, sqlite: bool) -> None:
        self.address = address
        self.sqlite = sqlite
        self.multi_node = False
        self._ray: Any = None
        self._remote: Any = None
        self._pin: Any = None
        self.slot_host = "127.0.0.1"

    def start(self) -> None:
        ray = self._ray = import_ray()
        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": "ERROR",
            "configure_logging": True,
        }
        try:
            if self.address:
                ray.init(address=self.address, **options)
            else:  # a Ray instance of this driver's own, on this machine
                ray.init(num_cpus=os.cpu_count(), object_store_memory=LOCAL_OBJECT_STORE_BYTES, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {self.address}" if self.address else "a local Ray instance"
            raise ExecutorError(f"cannot start or reach {where}: {str(exc).splitlines()[0][:200]}") from None
        _cluster_news_to_stderr()
        alive = [n for n in ray.nodes() if n.get("Alive")]
        self.multi_node = len(alive) > 1
        if self.sqlite:
            if self.multi_node:
                ray.shutdown()
                raise ExecutorError(
                    f"a SQLite store is a file on this machine, and the Ray cluster has {len(alive)} "
                    f"nodes: use a PostgreSQL store every node can reach (--db "
                    f"postgresql+psycopg://user:password@host:5432/database)"
                )
            # One node: every shard on this one, where the file is (a node joining later could not reach it).
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            self._pin = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        self.slot_host = ray.util.get_node_ip_address() if self.multi_node else "127.0.0.1"
        # Ray's own task retries are off: the driver resubmits a failed shard itself, so it can record the
        # failure and give up on a shard that keeps failing.
        self._remote = ray.remote(max_retries=0)(run_shard)
        self._warm_workers()

    def _warm_workers(self) -> None:
        """One warm-up task per CPU of the cluster, waited for: Ray keeps the worker processes that ran them for
        this job's later tasks, so the shards find the engine and litellm already imported (about 2 s of CPU
        per worker, which a shard would otherwise spend before its first rollout). A node that does not answer
        in time is not an error here: its shards import for themselves."""
        warm = self._ray.remote(num_cpus=1, max_retries=0)(_warm_worker)
        if self._pin is not None:
            warm = warm.options(scheduling_strategy=self._pin)
        pending = [warm.remote() for _ in range(self.slots())]
        self._ray.wait(pending, num_returns=len(pending), timeout=WARM_SECONDS, fetch_local=False)

    def nodes(self) -> list[Resources]:
        found = []
        for node in self._ray.nodes():
            if node.get("Alive"):
                resources = node.get("Resources") or {}
                found.append(Resources(float(resources.get("CPU", 0)), int(resources.get("memory", 0) // 2**20)))
        return found

    def slots(self) -> int:
        return max(1, round(sum(n.cpu for n in self.nodes())))

    def submit(self, job: ShardJob, resources: Resources) -> Any:
        options: dict[str, Any] = {"num_cpus": resources.cpu, "memory": int(resources.memory_mb * 2**20)}
        if self._pin is not None:
            options["scheduling_strategy"] = self._pin
        return self._remote.options(**options).remote(job)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        ready, _ = self._ray.wait(handles, num_returns=len(handles), timeout=timeout, fetch_local=False)
        return ready

    def result(self, handle: Any) -> dict[str, Any]:
        return self._ray.get(handle)

    def cancel(self, handle: Any) -> None:
        self._ray.cancel(handle)

    def shutdown(self) -> None:
        if self._ray is not None and self._ray.is_initialized():
            self._ray.shutdown()
