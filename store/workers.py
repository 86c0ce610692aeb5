"""Shard attempts of multi-worker and Ray runs: written by workers and the driver, read by `runs show` and the console.

Exposed as methods of `Store` (`WorkerQueries` is one of its mixins). A worker opens its attempt's row
when it starts a shard, refreshes progress and heartbeat while it runs, and closes it; the driver
closes an attempt as failed when the executor reports it lost (a killed process, a dead Ray node).
Per-worker progress is these rows grouped by worker.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, func, select, update

from redagent.store import tables_workers as tw
from redagent.store.rows import aware

# A shard attempt whose heartbeat is older than this while it is "running" was lost with its worker. Workers
# report every second or so; a generous bound keeps a busy machine's late report from looking like a loss.
SHARD_STALE_SECONDS = 30.0


class WorkerQueries:
    """Store methods for shard attempts (mixed into `Store`, which provides the plumbing)."""

    if TYPE_CHECKING:
        url: str
        _reading: Callable[[], AbstractContextManager[Connection]]
        _writing: Callable[[], AbstractContextManager[Connection]]

        @staticmethod
        def _insert(conn: Connection, table: Any) -> Any: ...

    def next_shard(self, run_id: str) -> int:
        """The first shard number free for a new session of the run (a resume numbers its shards after the last)."""
        with self._reading() as conn:
            last = conn.execute(select(func.max(tw.run_shard.c.shard)).where(tw.run_shard.c.run_id == run_id)).scalar()
        return 0 if last is None else int(last) + 1

    def shard_started(
        self, run_id: str, shard: int, attempt: int, *, worker: str, node: str | None, planned: int
    ) -> None:
        """A worker begins an attempt at a shard (a repeated call for the same attempt keeps the first row)."""
        now = datetime.now(UTC)
        row = {
            "run_id": run_id,
            "shard": shard,
            "attempt": attempt,
            "status": "running",
            "worker": worker,
            "node": node,
            "planned": planned,
            "done": 0,
            "invalid": 0,
            "started_at": now,
            "heartbeat_at": now,
        }
        with self._writing() as conn:
            conn.execute(
                self._insert(conn, tw.run_shard).on_conflict_do_nothing(index_elements=["run_id", "shard", "attempt"]),
                row,
            )

    def shard_progress(
        self,
        run_id: str,
        shard: int,
        attempt: int,
        *,
        done: int,
        invalid: int,
        status: str | None = None,
        error: str | None = None,
    ) -> None:
        """Progress of a running attempt (and its heartbeat), or with `status` its end."""
        now = datetime.now(UTC)
        values: dict[str, Any] = {"done": done, "invalid": invalid, "heartbeat_at": now}
        if status is not None:
            values.update(status=status, finished_at=now)
        if error is not None:
            values["error"] = error[:500]
        with self._writing() as conn:
            conn.execute(
                update(tw.run_shard)
                .where(
                    tw.run_shard.c.run_id == run_id, tw.run_shard.c.shard == shard, tw.run_shard.c.attempt == attempt
                )
                .values(**values)
            )

    def shard_failed(self, run_id: str, shard: int, attempt: int, error: str, *, planned: int) -> None:
        """The driver's word on an attempt the executor reports failed or lost: its row (made if the worker never
        wrote one) ends as failed with the error, whatever the worker last said."""
        now = datetime.now(UTC)
        with self._writing() as conn:
            conn.execute(
                self._insert(conn, tw.run_shard).on_conflict_do_nothing(index_elements=["run_id", "shard", "attempt"]),
                {
                    "run_id": run_id,
                    "shard": shard,
                    "attempt": attempt,
                    "status": "failed",
                    "planned": planned,
                    "done": 0,
                    "invalid": 0,
                },
            )
            conn.execute(
                update(tw.run_shard)
                .where(
                    tw.run_shard.c.run_id == run_id, tw.run_shard.c.shard == shard, tw.run_shard.c.attempt == attempt
                )
                .values(status="failed", error=error[:500], finished_at=now)
            )

    def run_workers(self, run_id: str, now: datetime | None = None) -> dict[str, Any]:
        """Per worker of the run: shards done, running, failed and lost, rollouts done and invalid, its last heartbeat
        and last error; plus the shard totals. Empty (`workers: []`) for a run made by one process."""
        s = tw.run_shard
        now = now or datetime.now(UTC)
        with self._reading() as conn:
            rows = conn.execute(select(s).where(s.c.run_id == run_id).order_by(s.c.shard, s.c.attempt)).mappings().all()
            shards = conn.execute(select(func.count(func.distinct(s.c.shard))).where(s.c.run_id == run_id)).scalar_one()
        workers: dict[str, dict[str, Any]] = {}
        failures = []
        for row in rows:
            status = row["status"]
            beat = aware(row["heartbeat_at"], "heartbeat_at") if row["heartbeat_at"] is not None else None
            if status == "running" and (beat is None or (now - beat).total_seconds() > SHARD_STALE_SECONDS):
                status = "lost"  # its worker stopped reporting: a killed process or a dead node
            name = row["worker"] or "(never started)"
            w = workers.setdefault(
                name,
                {
                    "worker": name,
                    "node": row["node"],
                    "running": 0,
                    "done_shards": 0,
                    "failed": 0,
                    "lost": 0,
                    "stopped": 0,
                    "rollouts": 0,
                    "invalid": 0,
                    "heartbeat_at": None,
                    "last_error": None,
                },
            )
            key = {
                "running": "running",
                "done": "done_shards",
                "failed": "failed",
                "lost": "lost",
                "stopped": "stopped",
            }[status]
            w[key] += 1
            w["rollouts"] += row["done"]
            w["invalid"] += row["invalid"]
            if beat is not None and (w["heartbeat_at"] is None or beat > w["heartbeat_at"]):
                w["heartbeat_at"] = beat
            if row["error"]:
                w["last_error"] = row["error"]
                failures.append(
                    {"shard": row["shard"], "attempt": row["attempt"], "worker": name, "error": row["error"]}
                )
        for w in workers.values():  # plain text, so the summary goes to JSON as it is
            w["heartbeat_at"] = w["heartbeat_at"].isoformat() if w["heartbeat_at"] is not None else None
        return {
            "shards": int(shards),
            "workers": sorted(workers.values(), key=lambda w: w["worker"]),
            "failures": failures,
        }
