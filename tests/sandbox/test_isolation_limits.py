"""What a command can cost the host: output, /tmp and workspace storage, the root and /dev, /proc."""

from __future__ import annotations

import gc
import os
import re
import threading
import time
from pathlib import Path

import orjson
import pytest

from redagent.sandbox import isolation
from redagent.sandbox.diff import diff
from redagent.sandbox.environment import Environment
from redagent.sandbox.isolation import OUTPUT_LIMIT, Bubblewrap, SandboxFailure, quota_problem
from redagent.sandbox.services import workspace as workspace_module
from redagent.sandbox.services.workspace import remove_tree
from tests.ci import in_ci
from tests.conftest import SEED, needs_bwrap

pytestmark = needs_bwrap
needs_quota = pytest.mark.skipif(
    quota_problem() is not None and not in_ci(), reason=f"no quota mounts here: {quota_problem()}"
)


def run(env, command, timeout=20):
    outcome = env.gateway.call("run_command", {"command": command, "timeout": timeout}, step=1)
    assert outcome.ok, outcome.error
    return orjson.loads(outcome.observation)


def peak_rss_kb() -> int:
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))


def test_200_mb_of_output_costs_the_host_almost_nothing(env):
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak to what is resident now
    before = peak_rss_kb()
    result = run(env, "yes 0123456789 | head -c 200000000; echo done >&2")
    grown_mb = (peak_rss_kb() - before) / 1024
    assert grown_mb < 8, f"peak RSS grew by {grown_mb:.1f} MB"
    assert result["exit_code"] == 0 and result["stderr"] == "done\n"
    assert len(result["stdout"]) < OUTPUT_LIMIT + 100
    stream = "0123456789\n" * (200_000_000 // 11 + 1)
    assert result["stdout"].startswith(stream[:1000]) and result["stdout"].endswith(stream[:200_000_000][-1000:])
    assert f"[... {200_000_000 - OUTPUT_LIMIT} bytes of output omitted ...]" in result["stdout"]


def test_endless_output_is_killed_at_the_read_limit(env, monkeypatch):
    monkeypatch.setattr(isolation, "OUTPUT_READ_LIMIT", 8 << 20)
    started = time.monotonic()
    result = run(env, "yes", timeout=60)
    assert time.monotonic() - started < 30 and not result["timed_out"]
    assert result["exit_code"] == 137 and result["stderr"].endswith("[killed: output limit]")


def test_tmp_is_size_limited(env):
    # Three files under the 64 MiB file-size limit, 180 MiB together: past the 128 MiB of /tmp.
    result = run(env, "for i in 1 2 3; do dd if=/dev/zero of=/tmp/f$i bs=1M count=60 2>&1; done; du -sm /tmp | cut -f1")
    assert "No space left on device" in result["stdout"]
    assert int(result["stdout"].split()[-1]) <= isolation.TMP_MB


@needs_quota
def test_tmp_inode_count_is_limited(env):
    # `true`, not `:`: a failed redirection of a special built-in would end the shell itself.
    result = run(
        env,
        f"i=0; while [ $i -lt {isolation.TMP_INODES + 100} ]; do true > /tmp/f$i 2>/dev/null || break; "
        "i=$((i+1)); done; echo made $i",
    )
    made = int(result["stdout"].split()[-1])
    assert isolation.TMP_INODES - 100 < made <= isolation.TMP_INODES + 16  # the mount's few own entries aside


@needs_quota
def test_workspace_has_a_quota_and_it_leaves_with_the_rollout():
    env = Environment(SEED, ["workspace"])
    root = env.workspace_dir
    try:
        assert not env.services["workspace"].quota  # a rollout that never runs a command pays for no mount
        run(env, "true")
        assert env.services["workspace"].quota
        # Five files under the 64 MiB file-size limit, 300 MiB together: past the 256 MiB quota.
        result = run(env, "for i in 1 2 3 4 5; do dd if=/dev/zero of=f$i bs=1M count=60 2>&1; done")
        assert "No space left on device" in result["stdout"]
        used = sum(p.stat().st_size for p in root.glob("f*"))
        assert used <= isolation.WORKSPACE_MB << 20
        # The host's own tools write into the same quota.
        big = "x" * (60 << 20)
        assert not env.gateway.call("write_file", {"path": "g", "content": big}, step=2).ok
    finally:
        env.close()
    assert not root.exists()
    assert str(root) not in Path("/proc/self/mountinfo").read_text()


@needs_quota
def test_moving_onto_the_quota_keeps_the_workspace_as_it_was():
    env = Environment(SEED, ["workspace"])
    try:
        env.gateway.call("write_file", {"path": "deep/er/file.txt", "content": "made by a tool"}, step=1)
        os.symlink("notes/todo.md", env.workspace_dir / "link")
        os.chmod(env.workspace_dir / ".env", 0o600)
        before = env.snapshot()
        inside = run(env, "cat deep/er/file.txt link; stat -c %a .env")
        assert env.services["workspace"].quota and diff(before, env.snapshot()) == []
        assert inside["stdout"] == "made by a toolbuy milk\n600\n"
    finally:
        env.close()


@needs_quota
@pytest.mark.parametrize("stage", ["the move", "the mount"])
def test_a_stop_inside_the_move_onto_the_quota_leaves_nothing_beside_the_workspace(monkeypatch, stage):
    """A check worker's SIGTERM is a SystemExit at the next Python instruction, wherever that is: inside the move
    onto the quota it skipped the staging folder's removal, and `.redagent-move-*` stayed in the workspaces
    folder. The staging folder is named after the workspace, so the environment's close removes it."""
    from redagent.sandbox.beneath import Beneath

    def stop(*_args, **_kwargs):
        raise SystemExit(128 + 15)

    target = (Beneath, "move_all") if stage == "the move" else (workspace_module, "mount_tmpfs")
    env = Environment(SEED, ["workspace"])
    parent, name = env.workspace_dir.parent, env.workspace_dir.name
    monkeypatch.setattr(*target, stop)
    monkeypatch.setattr(workspace_module, "remove_tree", lambda path, **_: None)  # as if the stop hit it too
    try:
        with pytest.raises(SystemExit):
            run(env, "true")
        assert (parent / f".redagent-move-{name}").exists()
    finally:
        monkeypatch.undo()
        env.close()
    assert not (parent / f".redagent-move-{name}").exists() and not env.workspace_dir.exists()


def test_without_mount_rights_tmp_is_still_size_limited(monkeypatch):
    """The documented fallback: bwrap's own size-limited /tmp, and a workspace without a quota."""
    monkeypatch.setattr(isolation, "quota_problem", lambda: "not root")
    monkeypatch.setattr(workspace_module, "quota_problem", lambda: "not root")
    env = Environment(SEED, ["workspace"])
    try:
        result = run(
            env,
            "for i in 1 2 3; do dd if=/dev/zero of=/tmp/f$i bs=1M count=60 2>&1; done; "
            "du -sm /tmp | cut -f1; grep -c ' /tmp ' /proc/self/mountinfo",
        )
        size, mounts = result["stdout"].split()[-2:]
        assert "No space left on device" in result["stdout"] and int(size) <= isolation.TMP_MB and mounts == "1"
        assert not env.services["workspace"].quota
    finally:
        env.close()
    assert not env.workspace_dir.exists()


def test_root_and_dev_are_read_only(env):
    result = run(
        env,
        "for p in /x /run/x /opt/x /dev/x /dev/shm/x; do echo z > $p 2>/dev/null && echo wrote $p; "
        "done; echo ok > /tmp/t && echo ok > /workspace/t && echo writable",
    )
    assert "wrote" not in result["stdout"] and result["stdout"].strip() == "writable"


def test_proc_shows_nothing_of_the_host(env):
    result = run(
        env,
        "tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/self/mountinfo; ls /proc | grep -c '^[0-9]'; "
        "tr '\\0' '\\n' < /proc/1/environ",
    )
    shown = result["stdout"]
    assert str(env.workspace_dir) not in shown and "redagent-cmd-" not in shown and "redagent-shims" not in shown
    assert shown.startswith("bwrap --args ")
    processes = int(shown.strip().splitlines()[-5])  # before the four environment lines
    assert processes < 10  # bwrap, sh and the pipeline: no host process
    if quota_problem() is None:  # mounts of their own: the mount table names no host directory at all
        assert "redagent-ws-" not in shown and "/tmp/" not in shown


def test_a_closing_rollout_kills_its_running_command():
    env = Environment(SEED, ["workspace"])
    box = {}
    worker = threading.Thread(
        target=lambda: box.update(
            outcome=env.gateway.call("run_command", {"command": "touch started; sleep 50", "timeout": 60}, step=1)
        )
    )
    worker.start()
    while not (env.workspace_dir / "started").exists():  # wait until the command really runs
        assert worker.is_alive()
        time.sleep(0.01)
    started = time.monotonic()
    env.close()
    assert time.monotonic() - started < 10
    worker.join(10)
    assert not worker.is_alive()
    result = orjson.loads(box["outcome"].observation)
    assert result["exit_code"] == 137 and "[killed: rollout closed]" in result["stderr"]
    assert not env.workspace_dir.exists()
    with pytest.raises(SandboxFailure, match="closing"):  # and nothing starts afterwards
        stop = threading.Event()
        stop.set()
        Bubblewrap().run(Path("/nonexistent"), "true", timeout=1, stop=stop)


@needs_quota
def test_mounts_of_a_dead_process_are_reaped_and_live_ones_kept(tmp_path):
    dead, live = tmp_path / "dead", tmp_path / "live"
    dead.mkdir()
    live.mkdir()
    # The source names the owner: our pid with a start time that is not ours is a process gone.
    options = b"size=1m,nr_inodes=16"
    assert isolation._libc.mount(f"redagent-{os.getpid()}-1".encode(), os.fsencode(dead), b"tmpfs", 0, options) == 0
    assert isolation.mount_tmpfs(live, 1, 16)
    try:
        reaped = isolation.reap_stale_mounts()
        assert str(dead) in reaped and str(live) not in reaped
        table = Path("/proc/self/mountinfo").read_text()
        assert f" {dead} " not in table and f" {live} " in table and not dead.exists()
    finally:
        isolation.unmount(live)


@needs_quota
def test_an_environment_dropped_without_close_unmounts():
    env = Environment(SEED, ["workspace"])
    run(env, "true")
    root = env.workspace_dir
    assert f" {root} " in Path("/proc/self/mountinfo").read_text()
    del env
    gc.collect()
    assert f" {root} " not in Path("/proc/self/mountinfo").read_text()
    remove_tree(root)
