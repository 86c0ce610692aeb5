"""Where a run's work went: one row per shard attempt of a multi-worker or Ray run (migration 0007).

A run executed by `--workers N` or `--executor ray` is split into shards of rollout keys; each attempt
at a shard is a row, written by the worker that runs it (host, pid, Ray node, progress, heartbeat) and
by the driver when the attempt fails (the error). Rows are progress reports, not the truth about what
is stored: the rollout table is. `runs show` and the console read them to show per-worker progress and
failures; a row still "running" whose heartbeat went stale belongs to a worker that was lost.
"""

from datetime import datetime

from sqlalchemy import CheckConstraint, Column, ForeignKey, Integer, Text
from sqlmodel import Field

from redagent.store.tables_base import StoreModel, UTCDateTime, table_of

SHARD_STATUSES = ("running", "done", "stopped", "failed")


class RunShard(StoreModel, table=True):
    __tablename__ = "run_shard"
    __table_args__ = (
        CheckConstraint("status IN ('running', 'done', 'stopped', 'failed')", name="ck_run_shard_status"),
    )

    run_id: str = Field(sa_column=Column(Text, ForeignKey("run.id", ondelete="CASCADE"), primary_key=True))
    shard: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    attempt: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    status: str = Field(sa_type=Text, nullable=False)
    worker: str | None = Field(default=None, sa_type=Text, nullable=True)  # host:pid of the process
    node: str | None = Field(default=None, sa_type=Text, nullable=True)  # the Ray node id, if any
    planned: int = Field(default=0, sa_type=Integer, nullable=False)  # rollout keys in the shard
    done: int = Field(default=0, sa_type=Integer, nullable=False)  # rollouts this attempt finished
    invalid: int = Field(default=0, sa_type=Integer, nullable=False)
    error: str | None = Field(default=None, sa_type=Text, nullable=True)
    started_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    heartbeat_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)


run_shard = table_of(RunShard)
