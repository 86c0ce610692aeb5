"""Engine throughput: the default matrix (built-in cases × calibration agents × three harnesses) into
a fresh store, rollouts per second from the first rollout to the last write.

    python benchmarks/engine_throughput.py [--concurrency 8] [--pg URL]
    python benchmarks/engine_throughput.py --replays [--rounds 3] [--concurrency 8]

`--replays` measures what judging by consequence costs the run, in one sitting: the default matrix as it is, and the
same matrix with the consequence replays stubbed (persistence and protections answer "nothing found" at once), in
rounds that alternate which goes first, each in a fresh process (so no replay is cached from an earlier round); it
prints both rates per round with the load average, the medians, and their ratio (the target: ≥ 0.9, replays off
the event loop). The stubbed arm's verdicts on C04/C05 cases are wrong by construction: it is a speed reference.

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
import json
import os
import statistics
import subprocess
import sys
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


def stub_replays() -> None:
    """Persistence and protections answer "nothing found" at once (the package's functions, which the verifier
    looks up when it calls them)."""
    import redagent.sandbox.consequences as consequences

    def nothing(*_args: object, **_kwargs: object) -> object:
        return consequences.Judgement()

    consequences.persistence = nothing  # type: ignore[assignment]
    consequences.protections = nothing  # type: ignore[assignment]


def one_arm(arm: str, concurrency: int) -> None:
    """One measurement in this process, printed as JSON (a child of `replays`)."""
    if arm == "stubbed":
        stub_replays()
    with tempfile.TemporaryDirectory() as folder:
        m = measure(f"sqlite:///{folder}/bench.db", concurrency)
    print(json.dumps({"done": m.done, "elapsed": m.elapsed, "wrong": m.wrong, "cpu": m.cpu}))


def replays(rounds: int, concurrency: int) -> None:
    rates: dict[str, list[float]] = {"default": [], "stubbed": []}
    for number in range(rounds):
        order = ["default", "stubbed"] if number % 2 == 0 else ["stubbed", "default"]
        for arm in order:
            before = os.getloadavg()[0]
            done = subprocess.run(
                [sys.executable, __file__, "--arm", arm, "--concurrency", str(concurrency)],
                capture_output=True,
                text=True,
                check=True,
            )
            m = json.loads(done.stdout.strip().splitlines()[-1])
            rate = m["done"] / m["elapsed"]
            rates[arm].append(rate)
            print(
                f"round {number + 1} {arm:8s} {m['done']} rollouts in {m['elapsed']:6.2f} s = {rate:6.1f} rollouts/s "
                f"(E != expected_E: {m['wrong']}); load {before:.2f} → {os.getloadavg()[0]:.2f}; {m['cpu']}",
                flush=True,
            )
    medians = {arm: statistics.median(v) for arm, v in rates.items()}
    print(
        f"medians: default {medians['default']:.1f}, replays stubbed {medians['stubbed']:.1f} rollouts/s; "
        f"default / stubbed = {medians['default'] / medians['stubbed']:.2f} (target ≥ 0.90); "
        f"per-round ratios {[round(a / b, 2) for a, b in zip(rates['default'], rates['stubbed'], strict=True)]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pg", default=os.environ.get("REDAGENT_TEST_PG"))
    parser.add_argument("--replays", action="store_true", help="default against replays stubbed, interleaved")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--arm", choices=("default", "stubbed"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.arm:
        one_arm(options.arm, options.concurrency)
        return
    if options.replays:
        replays(options.rounds, options.concurrency)
        return
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
