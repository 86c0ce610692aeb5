"""Per-worker progress and failures of a multi-worker or Ray run, as `runs show`, the run summary and the Runs
screen print it (from `Store.run_workers`; nothing for a run made by one process)."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def workers_table(workers: dict[str, Any] | None) -> Table | None:
    if not workers or not workers.get("workers"):
        return None
    table = Table(
        title=f"workers ({workers['shards']} shards; a lost shard's worker stopped reporting)",
        title_justify="left",
        expand=False,
    )
    for column in (
        "worker",
        "node",
        "running",
        "done",
        "failed",
        "lost",
        "rollouts",
        "invalid",
        "last heartbeat",
        "last error",
    ):
        table.add_column(
            column,
            justify="right" if column in ("running", "done", "failed", "lost", "rollouts", "invalid") else "left",
        )
    for w in workers["workers"]:
        table.add_row(
            w["worker"],
            (w["node"] or "")[:12],
            str(w["running"]),
            str(w["done_shards"]),
            str(w["failed"]),
            str(w["lost"]),
            str(w["rollouts"]),
            str(w["invalid"]),
            (w["heartbeat_at"] or "")[11:19],
            (w["last_error"] or "")[:80],
        )
    return table


def failure_lines(workers: dict[str, Any] | None, limit: int = 5) -> list[str]:
    failures = (workers or {}).get("failures") or []
    lines = [f"shard {f['shard']} attempt {f['attempt']} on {f['worker']}: {f['error']}" for f in failures[-limit:]]
    if len(failures) > limit:
        lines.insert(0, f"… {len(failures) - limit} earlier shard failures")
    return lines
