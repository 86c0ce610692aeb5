"""Concurrent use: several openers migrating one fresh database, several writers sending overlapping batches."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from redagent.store import open_store
from redagent.store.migrate import current_revisions, head_revision
from tests.store.factory import make_rollout, make_run


def test_concurrent_openers_migrate_once(store_url):
    with ThreadPoolExecutor(max_workers=4) as pool:
        stores = list(pool.map(lambda _: open_store(store_url), range(4)))
    try:
        with stores[0].engine.connect() as conn:
            assert current_revisions(conn) == (head_revision(),)
    finally:
        for opened in stores:
            opened.close()


def test_overlapping_batches_from_concurrent_writers_store_each_rollout_once(store):
    store.create_run(make_run())
    rollouts = [make_rollout(case_id=f"banking/c{i:02d}", model=f"sim/m{i % 3}") for i in range(30)]

    def writer(offset: int) -> int:
        # Each writer sends every rollout, starting at a different place, in batches of 7.
        mine = rollouts[offset:] + rollouts[:offset]
        return sum(store.write_rollouts(mine[k : k + 7]) for k in range(0, len(mine), 7))

    with ThreadPoolExecutor(max_workers=4) as pool:
        inserted = list(pool.map(writer, [0, 8, 15, 22]))
    assert sum(inserted) == 30
    assert store.counts("run-1").completed == 30
    exported = list(store.iter_export("run-1"))
    assert all(len(item["events"]) == 12 and len(item["receipts"]) == 2 for item in exported)
