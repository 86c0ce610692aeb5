"""Local worker processes: `--workers 2` on SQLite and PostgreSQL ends with exactly the planned rollouts, even when a
worker process is killed mid-run; shards, resources and the global per-model slots behave as documented; a missing
Ray is one line naming the extra."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from redagent.engine.executors import Execution, ExecutorError, check_execution
from redagent.engine.executors import slots as slots_module
from redagent.engine.executors.resources import Resources, shard_resources, slots_that_fit
from redagent.engine.executors.shards import MAX_SHARD, cut
from redagent.engine.executors.slots import SlotClient, SlotServer, SlotServerGone
from redagent.engine.types import RolloutKey
from tests.dbs import store_url  # noqa: F401 - the fixture
from tests.engine.executor_checks import Watch, wait_until

CASES = "banking-*"
ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "200"}


def run_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "redagent", "run", "--cases", CASES, *args, "--json"]


@pytest.mark.slow  # about 2,000 rollouts, so that the kill lands mid-run: the full suite's (make test-all, CI)
def test_two_local_workers_lose_one_and_still_store_exactly_the_plan(store_url):  # noqa: F811
    watch = Watch(store_url)
    # Three attempts per cell: long enough (about 2,000 rollouts) that the kill lands mid-run on two cores.
    proc = subprocess.Popen(
        run_cmd("--workers", "2", "--concurrency", "4", "--attempts", "3", "--db", store_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:

        def alive() -> None:
            assert proc.poll() is None, proc.stderr.read()

        def busy_worker() -> str | None:
            running = [s for s in watch.shards() if s["status"] == "running"]
            return running[0]["worker"] if running else None

        # Mid-run: some rollouts stored, and a worker with a shard under way.
        wait_until(lambda: watch.stored() >= 40 and busy_worker() is not None, "a worker mid-shard", alive)
        victim = int(busy_worker().rsplit(":", 1)[1])
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        summary = json.loads(out)
        run_id, planned = watch.exact()
        assert summary["run_id"] == run_id and summary["completed"] == planned
        shards = watch.shards()
        # The killed worker's shard failed once and was run again; every shard ended done.
        assert any(s["status"] == "failed" and "BrokenProcessPool" in (s["error"] or "") for s in shards)
        last = {}
        for s in shards:
            last[s["shard"]] = s
        assert all(s["status"] == "done" for s in last.values())
        assert len({s["worker"] for s in shards if s["worker"]}) >= 3  # two first workers and a replacement
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        watch.close()


def test_runs_show_lists_the_workers(tmp_path: Path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    # A small matrix (two calibration agents, one harness) still cuts into several shards for the two workers.
    done = subprocess.run(
        run_cmd("--workers", "2", "--models", "sim/ignore,sim/comply", "--harnesses", "native", "--db", db),
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "redagent", "runs", "show", json.loads(done.stdout)["run_id"], "--db", db, "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    workers = json.loads(shown.stdout)["workers"]
    # Both processes start, but a worker is listed once it claims a shard, and on a busy machine the first one
    # up may claim them all before the second is: one or two are listed, and together they did every shard.
    assert workers["shards"] >= 2 and 1 <= len(workers["workers"]) <= 2
    assert sum(w["done_shards"] for w in workers["workers"]) == workers["shards"]
    assert sum(w["rollouts"] for w in workers["workers"]) == json.loads(done.stdout)["planned"]
    assert all(w["failed"] == 0 and w["lost"] == 0 and w["running"] == 0 for w in workers["workers"])
    text = subprocess.run(
        [sys.executable, "-m", "redagent", "runs", "show", json.loads(done.stdout)["run_id"], "--db", db],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    ).stdout
    assert "workers (" in text


def test_missing_ray_is_one_line_naming_the_extra(tmp_path: Path):
    # A `ray` that cannot be imported, whether or not the real one is installed.
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "__init__.py").write_text("raise ImportError('no ray here')\n")
    db = tmp_path / "s.db"
    result = subprocess.run(
        run_cmd("--executor", "ray", "--db", f"sqlite:///{db}"),
        capture_output=True,
        text=True,
        env={**ENV, "PYTHONPATH": str(tmp_path)},
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "pip install 'redagent[ray]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_executor_options_are_checked():
    for execution, words in (
        (Execution(executor="dask"), "unknown executor"),
        (Execution(workers=0), "at least 1"),
        (Execution(executor="ray", workers=2), "--workers is for the local executor"),
        (Execution(ray_address="h:1"), "needs --executor ray"),
    ):
        try:
            check_execution(execution)
        except ExecutorError as exc:
            assert words in str(exc)
        else:
            raise AssertionError(f"{execution} was accepted")


def key(case: str, harness: str, attempt: int = 1) -> RolloutKey:
    return RolloutKey(case, "sim/comply", harness, "clean", "none", attempt)


def test_shards_are_one_harness_each_and_bounded():
    keys = [key(f"c{i}", h) for i in range(50) for h in ("native", "shell")]
    shards = cut(keys, slots=2)
    flat = [k for s in shards for k in s]
    assert len(flat) == len(keys) and set(flat) == set(keys)
    assert all(len({k.harness for k in s}) == 1 for s in shards)
    assert len({len(s) for s in shards}) <= 2 and max(len(s) for s in shards) <= MAX_SHARD
    many = [key(f"c{i}", "native", a) for i in range(MAX_SHARD) for a in (1, 2, 3)]
    assert max(len(s) for s in cut(many, slots=1)) == MAX_SHARD


def test_shards_share_out_the_costly_cases():
    # Plan order keeps a case's cells together; a case whose agents run commands costs far more than the rest,
    # so its cells must land in every shard, not fill one that a single worker then runs alone.
    keys = [key(f"c{i:02d}", "native", a) for i in range(40) for a in range(1, 11)]
    costly = {k for k in keys if k.case_id in ("c00", "c01")}
    shards = cut(keys, slots=2)
    assert len(shards) == 4
    assert all(len(costly & set(s)) == len(costly) // len(shards) for s in shards)


def test_resources_schedule_by_what_a_harness_declares():
    # An in-house shard is one interpreter: at most a core, however many rollouts it holds.
    assert shard_resources("native", 32).cpu == 1.0
    # OpenClaw (~1 GB per rollout): a 2-CPU, 2.5 GB node holds two at once, a 1 GB node none.
    assert shard_resources("openclaw", 2) == Resources(2.0, 2400)
    assert slots_that_fit("openclaw", 8, [Resources(2.0, 2500)]) == 2
    assert slots_that_fit("openclaw", 8, [Resources(4.0, 1000)]) == 0
    assert slots_that_fit("native", 8, [Resources(1.0, 4096)]) == 8


def test_model_slots_are_global_and_a_dead_holder_gives_its_slot_back():
    server = SlotServer(2, ["openai/m"])
    address = server.start()
    try:

        async def scenario() -> int:
            clients = [SlotClient(address) for _ in range(3)]  # three "workers"
            inside = peak = 0
            gate = asyncio.Event()

            async def call(client: SlotClient) -> None:
                nonlocal inside, peak
                async with client.slot("openai/m"):
                    inside += 1
                    peak = max(peak, inside)
                    if inside == 2:
                        gate.set()
                    await gate.wait()
                    inside -= 1

            await asyncio.gather(*(call(clients[i % 3]) for i in range(9)))
            # A holder that dies mid-call: its connection closes, and the slot is free again.
            reader, writer = await asyncio.open_connection(*address[:2])
            writer.write(f"{address[2]} openai/m\n".encode())
            await writer.drain()
            assert await reader.readline() == b"ok\n"
            writer.transport.abort()
            async with clients[0].slot("openai/m"), clients[1].slot("openai/m"):
                pass
            return peak

        assert asyncio.run(scenario()) == 2
    finally:
        server.stop()

    async def gone() -> None:
        async with SlotClient(address).slot("openai/m"):
            pass

    try:
        asyncio.run(gone())
    except SlotServerGone as exc:
        assert "the driver is gone" in str(exc)
    else:
        raise AssertionError("a slot was granted with no server")


def test_model_slots_are_only_for_the_run(monkeypatch):
    # Anyone on the host (or the cluster's network) can connect: without the run's secret, for a model the run
    # does not use, too slowly or with too long a line, the connection is closed and no slot is held.
    monkeypatch.setattr(slots_module, "REQUEST_SECONDS", 0.2)
    server = SlotServer(1, ["openai/m"])
    host, port, secret = server.start()
    try:

        async def answer(request: bytes | None) -> bytes:
            reader, writer = await asyncio.open_connection(host, port)
            if request is not None:
                writer.write(request)
                await writer.drain()
            reply = await reader.read()  # until the server closes
            writer.close()
            return reply

        async def scenario() -> list[bytes]:
            replies = [
                await answer(r)
                for r in (b"not-the-secret openai/m\n", f"{secret} openai/other\n".encode(), b"x" * 5000 + b"\n", None)
            ]
            # The run's own request still gets the one slot: nothing above held it.
            async with SlotClient((host, port, secret)).slot("openai/m"):
                pass
            return replies

        assert asyncio.run(scenario()) == [b"", b"", b"", b""]
        assert server.refused == 4 and server.granted == 1
        assert set(server._semaphores) == {"openai/m"}
    finally:
        server.stop()
