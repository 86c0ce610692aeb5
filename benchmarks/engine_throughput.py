"""Engine throughput: the default matrix (built-in cases × calibration agents × three harnesses) into
a fresh store, rollouts per second from the first rollout to the last write.

    python benchmarks/engine_throughput.py [--concurrency 8] [--pg URL]

SQLite always; PostgreSQL too when --pg or $REDAGENT_TEST_PG gives a server URL whose role may
create databases (a fresh database is made and dropped).

Next to each rate it prints how busy the machine's cores were, and it splits the matrix: the
rollouts that really execute a command under bubblewrap (a benign `make test`, a planted script)
pay for a sandbox start and the command's own work, which no engine change removes; the rest
measure the engine and store themselves.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from dataclasses import dataclass

from machine import CpuMeter

from redagent.engine.matrix import RunSpec, start_run
from redagent.engine.plan import select_cases
from redagent.store.db import open_store


@dataclass
class Measured:
    done: int
    elapsed: float
    wrong: int  # E != expected_E: a fast run that gets the ground truth wrong is no result
    sandboxed: set[str]  # case ids whose rollouts ran at least one command under bubblewrap
    commands: int
    cpu: str

    def line(self, label: str, concurrency: int) -> str:
        return (
            f"{label:<28s}{self.done:5d} rollouts in {self.elapsed:6.2f} s = {self.done / self.elapsed:7.1f} "
            f"rollouts/s (concurrency {concurrency}; E != expected_E: {self.wrong})\n{'':28s}{self.cpu}"
        )


def measure(url: str, concurrency: int, cases: str = "all") -> Measured:
    with open_store(url) as store:
        runner = start_run(store, RunSpec(cases=cases, concurrency=concurrency))
        with CpuMeter() as meter:
            started = time.perf_counter()
            progress = asyncio.run(runner.run())
            elapsed = time.perf_counter() - started
        wrong, sandboxed, commands = 0, set(), 0
        for r in store.iter_export(runner.run_record.id):
            wrong += r["E"] != r["expected_E"]
            ran = sum(1 for receipt in r["receipts"] if (receipt.get("effect") or {}).get("isolation") == "bubblewrap")
            commands += ran
            if ran:
                sandboxed.add(r["case_id"])
    return Measured(progress.done, elapsed, wrong, sandboxed, commands, meter.use.line())


def report(url: str, concurrency: int, label: str) -> None:
    whole = measure(url, concurrency)
    print(whole.line(f"{label} default matrix", concurrency))
    print(
        f"{'':28s}{whole.commands} commands ran under bubblewrap, in the rollouts of "
        f"{len(whole.sandboxed)} of the built-in cases"
    )
    if whole.sandboxed:
        others = ",".join(c.id for c in select_cases("all") if c.id not in whole.sandboxed)
        print(measure(url, concurrency, others).line(f"{label} without those cases", concurrency))


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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pg", default=os.environ.get("REDAGENT_TEST_PG"))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        report(f"sqlite:///{folder}/bench.db", options.concurrency, "SQLite")
    if options.pg:
        url, drop = pg_database(options.pg)
        try:
            report(url, options.concurrency, "PostgreSQL")
        finally:
            drop()
    else:
        print("PostgreSQL  skipped (give --pg URL or set REDAGENT_TEST_PG)")


if __name__ == "__main__":
    main()
