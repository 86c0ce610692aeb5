"""The Ray executor on a real two-node cluster on this machine: a head and a second worker node (`ray start`, one CPU
each, their own temp dirs; this module owns and stops them). The default matrix against PostgreSQL with `--executor ray`
survives losing the worker node mid-run and ends with exactly the planned rollouts, none duplicated, every E its
expected E; a SQLite store is refused for the two-node cluster before anything is stored."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dbs import create_database, drop_database, require_pg
from tests.engine.executor_checks import Watch, require_ray, wait_until

RAY = str(Path(sys.executable).with_name("ray"))
ENV = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "COLUMNS": "200", "RAY_USAGE_STATS_ENABLED": "0"}
# Small object stores (shards pass keys and cases, nothing big), no dashboard: two nodes on two shared cores.
NODE = ["--num-cpus", "1", "--object-store-memory", "80000000", "--disable-usage-stats", "--block"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def session_of(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[3])  # after the state: ppid, pgrp, session


def kill_session(leader: int) -> None:
    """SIGKILL every process of the session `ray start` made (raylet, agents, the node's workers)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and session_of(int(entry.name)) == leader:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


NODES_MARK = "redagent-ray-nodes: "


def nodes(address: str, env: dict[str, str]) -> list[dict]:
    """The cluster's alive nodes as Ray's own client sees them (a subprocess: this test process stays Ray-free)."""
    probe = (
        f"import json, ray; ray.init(address={address!r}, logging_level='ERROR', log_to_driver=False); "
        f"print({NODES_MARK!r} + json.dumps([{{'id': n['NodeID'], 'head': 'node:__internal_head__' in n['Resources']}} "
        "for n in ray.nodes() if n['Alive']]), flush=True)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    # Ray's own processes share the probe's stdout and may print after it (a CI run failed parsing an indented line
    # of theirs as the last one): the answer is the one line carrying the mark, and a probe without it saw no nodes.
    marked = [line.partition(NODES_MARK)[2] for line in result.stdout.splitlines() if NODES_MARK in line]
    return json.loads(marked[-1]) if result.returncode == 0 and marked else []


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict]:
    require_ray()
    port = free_port()
    address = f"127.0.0.1:{port}"
    # Short paths under /tmp: Ray puts Unix sockets in its temp dir, and a socket path has ~100 characters.
    root = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    # Its own HOME too: Ray 2.60 keeps a cluster auth token in ~/.ray, and a token some earlier local Ray left
    # there would make this cluster demand it. Every process of the test (nodes, drivers) shares this one.
    env = {**ENV, "HOME": str(root)}
    started: list[tuple[subprocess.Popen, object]] = []

    def start(name: str, *args: str) -> subprocess.Popen:
        (root / name).mkdir()
        log = (root / f"{name}.log").open("w")
        proc = subprocess.Popen(
            [RAY, "start", *args, "--temp-dir", str(root / name), *NODE],
            start_new_session=True,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started.append((proc, log))
        return proc

    def up(n: int) -> bool:
        for proc, _ in started:
            assert proc.poll() is None, "\n".join(p.read_text()[-2000:] for p in root.glob("*.log"))
        return len(nodes(address, env)) >= n

    def joined(proc: subprocess.Popen) -> bool:
        head = started[0][0]
        assert head.poll() is None, (root / "head.log").read_text()[-2000:]
        return proc.poll() is not None or len(nodes(address, env)) >= 2

    try:
        start("head", "--head", "--port", str(port), "--include-dashboard=false")
        wait_until(lambda: up(1), "the Ray head", lambda: None, seconds=120)
        # `ray start` gives a node 30 s to register with the head (a constant in Ray's node.py) and exits when that
        # passes: on a machine busy with the rest of the suite it did. A node that gave up is cleared away and
        # started again, up to three times; that a node registers at all is what this fixture needs.
        for attempt in range(3):
            worker = start(f"worker{attempt}", "--address", address)
            wait_until(lambda proc=worker: joined(proc), "the second Ray node", lambda: None, seconds=300)
            if worker.poll() is None:
                break
            kill_session(worker.pid)
        else:
            pytest.fail(
                "the second Ray node never registered:\n"
                + "\n".join(p.read_text()[-1500:] for p in sorted(root.glob("worker*.log")))
            )
        worker_node = next(n["id"] for n in nodes(address, env) if not n["head"])
        yield {"address": address, "worker": worker, "worker_node": worker_node, "env": env}
    finally:
        for proc, log in reversed(started):
            kill_session(proc.pid)
            proc.wait(timeout=60)
            log.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url() -> Iterator[str]:
    admin = require_pg()
    url = create_database(admin)
    try:
        yield url
    finally:
        drop_database(admin, url)


def test_sqlite_is_refused_for_a_multi_node_cluster(cluster, tmp_path: Path):
    db = tmp_path / "s.db"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "redagent",
            "run",
            "--executor",
            "ray",
            "--ray-address",
            cluster["address"],
            "--db",
            f"sqlite:///{db}",
        ],
        capture_output=True,
        text=True,
        env=cluster["env"],
        timeout=300,
    )
    assert result.returncode == 2
    assert "SQLite" in result.stderr and "PostgreSQL" in result.stderr and "2 nodes" in result.stderr
    assert result.stderr.strip().count("\n") == 0
    import sqlite3

    with sqlite3.connect(db) as conn:  # the store was opened (migrated) but no run was stored
        assert conn.execute("select count(*) from run").fetchone()[0] == 0


def test_default_matrix_on_ray_survives_losing_a_node(cluster, pg_url):
    watch = Watch(pg_url)
    # The default matrix: `redagent run`'s default cases, calibration agents, harnesses and benign arm.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "redagent",
            "run",
            "--executor",
            "ray",
            "--ray-address",
            cluster["address"],
            "--db",
            pg_url,
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cluster["env"],
    )
    try:

        def alive() -> None:
            assert proc.poll() is None, proc.stderr.read()

        def on_worker_node() -> bool:
            return any(s["status"] == "running" and s["node"] == cluster["worker_node"] for s in watch.shards())

        # Mid-run: rollouts stored, and a shard under way on the worker node.
        wait_until(lambda: watch.stored() >= 100 and on_worker_node(), "a shard on the worker node", alive, seconds=600)
        kill_session(cluster["worker"].pid)
        out, err = proc.communicate(timeout=1800)
        assert proc.returncode == 0, err[-3000:]
        run_id, planned = watch.exact()
        assert json.loads(out)["completed"] == planned
        shards = watch.shards()
        lost = [s for s in shards if s["node"] == cluster["worker_node"] and s["status"] == "failed"]
        assert lost and all(s["error"] for s in lost)  # the driver recorded why
        final = {}
        for s in shards:
            final[s["shard"]] = s
        assert all(s["status"] == "done" for s in final.values())
        # Every shard the lost node held was run again elsewhere.
        assert all(final[s["shard"]]["node"] != cluster["worker_node"] for s in lost)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        watch.close()
