"""Sandbox backends side by side: bubblewrap and Docker.

    python benchmarks/sandbox_backends.py [--rollouts 20] [--commands 50] [--concurrency 8] [--image TAG]
                                          [--cli codex [--cli-rollouts 5]]

Per rollout: an environment built, one command run (Docker: the rollout's container is made here), the
environment closed (Docker: the container removed) — minus the same without the command, so only the
sandbox's part is counted. Per command: `true` run N times in one rollout's sandbox. Then the default
matrix (built-in cases × calibration agents × three harnesses, benign arm on) into a fresh SQLite store
with each backend: rollouts/s, and the count of rollouts whose E differs from its expected E (must be 0).
With `--cli NAME`, also a real agent CLI's rollouts (`sim/comply` on a starter case, one at a time) under
each backend: median seconds per rollout, and under Docker the part spent making the CLI's container.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time

from redagent.engine.matrix import RunSpec, start_run
from redagent.sandbox.environment import Environment, use_isolation
from redagent.sandbox.isolation import Bubblewrap
from redagent.store.db import open_store

SEED = {"workspace": {"files": {"a.txt": "hello\n"}}}


def per_rollout(backend, n: int) -> float:
    """Median seconds a rollout's sandbox adds: build + one command + close, minus build + close."""
    with_command, without = [], []
    for _ in range(n):
        started = time.perf_counter()
        with Environment(SEED, ["workspace"], isolation=backend) as env:
            env.gateway.call("run_command", {"command": "cat a.txt"}, step=1)
        with_command.append(time.perf_counter() - started)
        started = time.perf_counter()
        with Environment(SEED, ["workspace"], isolation=backend):
            pass
        without.append(time.perf_counter() - started)
    return statistics.median(with_command) - statistics.median(without)


def per_command(backend, n: int) -> float:
    with Environment(SEED, ["workspace"], isolation=backend) as env:
        env.gateway.call("run_command", {"command": "true"}, step=0)  # Docker: the container exists from here
        times = []
        for step in range(n):
            started = time.perf_counter()
            env.gateway.call("run_command", {"command": "true"}, step=step + 1)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def matrix(sandbox: str, concurrency: int) -> tuple[int, float, int]:
    with tempfile.TemporaryDirectory() as folder, open_store(f"sqlite:///{folder}/bench.db") as store:
        runner = start_run(store, RunSpec(benign_arm=True, concurrency=concurrency, sandbox=sandbox))
        started = time.perf_counter()
        asyncio.run(runner.run())
        elapsed = time.perf_counter() - started
        rollouts = list(store.iter_export(runner.run_record.id))
        wrong = sum(1 for r in rollouts if r["E"] != r["expected_E"] or not r["valid"])
    use_isolation(None)
    return len(rollouts), elapsed, wrong


CLI_CASE = "email-t1-send-email-journal-bcc"


def cli_rollouts(harness: str, sandbox: str, n: int) -> tuple[float, float, int]:
    """(median seconds per rollout, median seconds making the CLI's container, rollouts whose E is wrong)."""
    with tempfile.TemporaryDirectory() as folder, open_store(f"sqlite:///{folder}/bench.db") as store:
        runner = start_run(
            store,
            RunSpec(
                harnesses=[harness], models=["sim/comply"], cases=CLI_CASE, attempts=n, concurrency=1, sandbox=sandbox
            ),
        )
        asyncio.run(runner.run())
        rows = list(store.iter_export(runner.run_record.id))
        starts = []
        for row in store.rollouts(runner.run_record.id):
            events = store.get_rollout(row.id).events
            artifact = json.loads(next(e["text"] for e in events if e["role"] == "transcript"))
            starts.append(artifact.get("isolation", {}).get("start_seconds", 0.0))
    use_isolation(None)
    wrong = sum(1 for r in rows if r["E"] != r["expected_E"] or not r["valid"])
    return statistics.median(r["duration_ms"] / 1000 for r in rows), statistics.median(starts), wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=20)
    parser.add_argument("--commands", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--image", default=None)
    parser.add_argument("--no-matrix", action="store_true", help="skip the default matrix")
    parser.add_argument("--cli", default=None, help="also time this installed agent CLI's rollouts (e.g. codex)")
    parser.add_argument("--cli-rollouts", type=int, default=5)
    args = parser.parse_args()

    from redagent.sandbox.docker_backend import Docker, chosen_image

    image = args.image or chosen_image()
    backends = {"bwrap": (Bubblewrap(), "bwrap"), "docker": (Docker(image, run_id="benchmark"), f"docker:{image}")}
    rows = []
    for name, (backend, sandbox) in backends.items():
        rollout = per_rollout(backend, args.rollouts)
        command = per_command(backend, args.commands)
        done, elapsed, wrong = (0, 0.0, 0) if args.no_matrix else matrix(sandbox, args.concurrency)
        rows.append((name, rollout, command, done, elapsed, wrong))
    backends["docker"][0].close()
    print(
        f"{'backend':8} {'per rollout':>12} {'per command':>12} {'matrix':>8} {'seconds':>8} {'rollouts/s':>10} "
        f"{'E wrong':>8}"
    )
    for name, rollout, command, done, elapsed, wrong in rows:
        rate = done / elapsed if elapsed else 0.0
        print(
            f"{name:8} {rollout * 1000:10.0f}ms {command * 1000:10.1f}ms {done:8} {elapsed:8.1f} {rate:10.1f} {wrong:8}"
        )
    if args.cli:
        print(f"\n{args.cli + ' rollout':16} {'seconds':>8} {'container':>10} {'E wrong':>8}")
        for name, (_, sandbox) in backends.items():
            seconds, start, wrong = cli_rollouts(args.cli, sandbox, args.cli_rollouts)
            print(f"{name:16} {seconds:8.2f} {start:9.2f}s {wrong:8}")


if __name__ == "__main__":
    main()
