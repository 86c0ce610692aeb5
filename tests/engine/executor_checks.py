"""What the executor tests share: a second look at the store a run writes, and the exactness every run ends with."""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

from redagent.store import tables as t
from redagent.store import tables_workers as tw
from redagent.store.connect import create_store_engine
from tests.ci import require_module


def require_ray() -> None:
    """Skip without Ray on a developer machine; fail in CI (CI=true), which installs it (`make ray`)."""
    require_module(
        "ray", "ray is not installed: the Ray executor tests need it (pip install 'redagent[ray]'; .ci/run does)"
    )


class Watch:
    """A second connection to the store a run is writing: counts and shard rows, read as the test waits."""

    def __init__(self, url: str) -> None:
        self.engine = create_store_engine(url)

    def close(self) -> None:
        self.engine.dispose()

    def stored(self) -> int:
        try:
            with self.engine.connect() as conn:
                return conn.execute(select(func.count()).select_from(t.rollout)).scalar_one()
        except DBAPIError:  # the run has not created its tables yet
            return 0

    def shards(self) -> list[dict]:
        try:
            with self.engine.connect() as conn:
                return [
                    dict(r)
                    for r in conn.execute(
                        select(tw.run_shard).order_by(tw.run_shard.c.shard, tw.run_shard.c.attempt)
                    ).mappings()
                ]
        except DBAPIError:
            return []

    def exact(self) -> tuple[str, int]:
        """Exactly the planned rollouts, each stored once and valid, every E its calibration agent's expected E.
        Returns the run id and the number of rollouts."""
        with self.engine.connect() as conn:
            ((run_id, planned, status),) = conn.execute(select(t.run.c.id, t.run.c.planned, t.run.c.status)).all()
            rows = conn.execute(
                select(
                    t.rollout.c.id,
                    t.rollout.c.case_id,
                    t.rollout.c.model,
                    t.rollout.c.harness,
                    t.rollout.c.cue,
                    t.rollout.c.defense,
                    t.rollout.c.attempt,
                    t.rollout.c.valid,
                    t.rollout.c.e,
                    t.rollout.c.expected_e,
                ).where(t.rollout.c.run_id == run_id)
            ).all()
        assert status == "finished"
        assert len(rows) == planned
        assert len({r.id for r in rows}) == planned  # no rollout id twice
        assert len({tuple(r[1:7]) for r in rows}) == planned  # no matrix cell twice
        wrong = [(r.case_id, r.model, r.harness, r.e, r.expected_e) for r in rows if not r.valid or r.e != r.expected_e]
        assert not wrong, wrong[:5]
        return run_id, planned


def wait_until(condition: Callable[[], bool], what: str, alive: Callable[[], None], seconds: float = 300) -> None:
    """Poll `condition` (never a fixed sleep); `alive` raises if the process under test ended early."""
    deadline = time.monotonic() + seconds
    while not condition():
        alive()
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
