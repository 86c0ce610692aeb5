"""Engine throughput: the default matrix (built-in cases × calibration agents × three harnesses) into
a fresh store, rollouts per second from the first rollout to the last write.

    python benchmarks/engine_throughput.py [--concurrency 8] [--pg URL]

SQLite always; PostgreSQL too when --pg or $REDAGENT_TEST_PG gives a server URL whose role may
create databases (a fresh database is made and dropped).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid

from redagent.engine.matrix import RunSpec, start_run
from redagent.store.db import open_store


def measure(url: str, concurrency: int) -> tuple[int, float, int]:
    with open_store(url) as store:
        runner = start_run(store, RunSpec(concurrency=concurrency))
        started = time.perf_counter()
        progress = asyncio.run(runner.run())
        elapsed = time.perf_counter() - started
        mismatched = sum(1 for r in store.iter_export(runner.run_record.id) if r["E"] != r["expected_E"])
    return progress.done, elapsed, mismatched


def pg_database(admin: str):
    import psycopg
    from sqlalchemy.engine import make_url

    name = f"redagent_bench_{uuid.uuid4().hex[:8]}"
    conninfo = make_url(admin).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return make_url(admin).set(database=name).render_as_string(hide_password=False), drop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pg", default=os.environ.get("REDAGENT_TEST_PG"))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        done, elapsed, wrong = measure(f"sqlite:///{folder}/bench.db", options.concurrency)
        print(f"SQLite      {done} rollouts in {elapsed:6.2f} s = {done / elapsed:7.1f} rollouts/s "
              f"(concurrency {options.concurrency}; E != expected_E: {wrong})")
    if options.pg:
        url, drop = pg_database(options.pg)
        try:
            done, elapsed, wrong = measure(url, options.concurrency)
            print(f"PostgreSQL  {done} rollouts in {elapsed:6.2f} s = {done / elapsed:7.1f} rollouts/s "
                  f"(concurrency {options.concurrency}; E != expected_E: {wrong})")
        finally:
            drop()
    else:
        print("PostgreSQL  skipped (give --pg URL or set REDAGENT_TEST_PG)")


if __name__ == "__main__":
    main()
