"""The workspace boundary piece by piece: the walk beneath a held fd, the rollout's own uid (leased per
host, taken per thread), the bridge socket's owner and the rollout's budgets, and the route of a look-alike
called from a command. The races themselves are in test_boundary_races.py."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shlex
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest

from redagent.sandbox import identity, isolation
from redagent.sandbox.beneath import MAX_DEPTH, Beneath, remove_tree
from redagent.sandbox.environment import Environment
from redagent.sandbox.identity import CLI_UIDS, COMMAND_UIDS, LeaseUnavailable, acting_as, lease_uid, thread_identity
from redagent.sandbox.isolation import BridgeAnswer, _BridgeServer
from redagent.sandbox.tools import ConfinementViolation, ToolError
from tests.conftest import SEED, needs_bwrap

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the engine's own uid and leases exist only as root")
FS_CAPS = 0x1F  # CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "ws"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.txt").write_text("inside")
    outside = tmp_path / "outside.txt"
    outside.write_text("host secret")
    with Beneath(root) as walked:
        yield walked, root, outside


def fds() -> set[str]:
    """This process's open descriptors (after collecting what earlier tests dropped)."""
    gc.collect()
    return set(os.listdir("/proc/self/fd"))


# -- the walk ---------------------------------------------------------------------------------------
def test_links_resolve_beneath_the_root_or_are_refused(tree):
    walked, root, outside = tree
    os.symlink("notes", root / "rel")
    os.symlink("/workspace/notes/a.txt", root / "alias")  # what /workspace means inside the sandbox
    os.symlink(str(outside), root / "abs")
    os.symlink("../outside.txt", root / "climb")
    os.symlink("notes/../../outside.txt", root / "climb2")
    os.symlink("loop", root / "loop")
    assert walked.read("rel/a.txt", 100)[0] == b"inside"
    assert walked.read("alias", 100)[0] == b"inside"
    assert walked.read("notes/../rel/./a.txt", 100)[0] == b"inside"
    for path in ("abs", "climb", "climb2", "..", "notes/../..", "rel/../../outside.txt"):
        with pytest.raises(ConfinementViolation, match="outside the workspace"):
            walked.read(path, 100)
    with pytest.raises(ToolError, match="too many levels"):
        walked.read("loop", 100)
    with pytest.raises(ConfinementViolation):
        walked.open("abs", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    assert outside.read_text() == "host secret"


def test_a_dangling_link_is_written_through_beneath_and_never_out(tree):
    walked, root, outside = tree
    os.symlink("made/by/link.txt", root / "dangling")
    os.close(walked.open("dangling", os.O_WRONLY | os.O_CREAT, parents=True))
    assert (root / "made" / "by" / "link.txt").is_file()
    os.symlink(str(outside.parent / "new.txt"), root / "out")
    with pytest.raises(ConfinementViolation):
        walked.open("out", os.O_WRONLY | os.O_CREAT)
    assert not (outside.parent / "new.txt").exists()


def test_only_regular_files_are_opened(tree):
    walked, root, _ = tree
    os.mkfifo(root / "pipe")
    for flags in (os.O_RDONLY, os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
        with pytest.raises(ToolError, match=r"not a regular file \(fifo\)"):
            walked.open("pipe", flags)
    with pytest.raises(ToolError, match="is a directory"):
        walked.open("notes")
    with pytest.raises(ToolError, match="is a symlink"):
        os.symlink("notes/a.txt", root / "link")
        walked.open("link", follow=False)


def test_rename_never_replaces_and_moves_links_themselves(tree):
    walked, root, outside = tree
    os.symlink(str(outside), root / "dangling-out")
    (root / "x.txt").write_text("x")
    with pytest.raises(ToolError, match="destination exists"):
        walked.rename("x.txt", "dangling-out")  # a link pointing anywhere is an entry that exists
    walked.rename("dangling-out", "moved/out-link")  # the link itself moves; its target is never touched
    assert os.readlink(root / "moved" / "out-link") == str(outside) and outside.read_text() == "host secret"
    with pytest.raises(ToolError, match="root"):
        walked.rename("notes/..", "elsewhere")


def test_removal_takes_the_link_not_its_target_and_never_the_root(tree):
    walked, root, outside = tree
    os.symlink(str(outside), root / "out")
    os.symlink(str(outside.parent), root / "outdir")
    assert walked.remove("out", recursive=False) == [""]
    assert walked.remove("outdir", recursive=True) == [""]
    assert outside.exists() and not (root / "out").exists() and not (root / "outdir").exists()
    with pytest.raises(ToolError, match="workspace root"):
        walked.remove("notes/..", recursive=True)
    with pytest.raises(ToolError, match="recursive"):
        walked.remove("notes", recursive=False)
    assert walked.remove("notes", recursive=True) == ["a.txt"]


def test_a_tree_past_max_depth_is_walked_to_the_cap_and_removed_whole(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(MAX_DEPTH + 40):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    before = fds()
    with Beneath(tmp_path) as walked:
        found = list(walked.entries())
    assert fds() <= before
    assert [f for f in found if f.kind == "unreadable"][0].error == f"deeper than {MAX_DEPTH} levels"
    remove_tree(tmp_path, strict=True)
    assert not tmp_path.exists()


def test_chown_tree_never_follows_a_link(tree):
    walked, root, outside = tree
    os.symlink(str(outside), root / "out")
    os.symlink(str(outside.parent), root / "outdir")
    if os.geteuid() != 0:
        pytest.skip("chown needs root")
    owner = os.lstat(outside)
    walked.chown_tree(54321, 54321)
    assert (os.lstat(outside).st_uid, os.lstat(outside.parent).st_uid) == (owner.st_uid, os.lstat(root.parent).st_uid)
    assert os.lstat(root / "out").st_uid == 54321 and os.lstat(root / "notes" / "a.txt").st_uid == 54321


def test_no_descriptor_is_left_open_by_any_outcome(tree):
    walked, root, _ = tree
    os.symlink("loop", root / "loop")
    os.symlink("/etc", root / "etc")
    os.mkfifo(root / "pipe")
    before = fds()
    for path in ("notes/a.txt", "loop", "etc/passwd", "pipe", "missing/x", "notes", "notes/a.txt/x"):
        for call in (
            lambda p: os.close(walked.open(p)),
            walked.lstat,
            walked.stat,
            walked.listdir,
            lambda p: walked.remove(p + "-no", recursive=True),
        ):
            with contextlib.suppress(ToolError, OSError):
                call(path)
    assert fds() <= before


# -- the rollout's identity -------------------------------------------------------------------------
@ROOT_ONLY
def test_acting_as_a_uid_drops_roots_file_rights_in_this_thread_only(tmp_path):
    secret = tmp_path / "root-only"
    secret.write_text("root's")
    os.chmod(secret, 0o600)
    seen = {}
    asked, answered = threading.Event(), threading.Event()

    def other() -> None:  # a thread of the engine running beside the one acting for the agent
        asked.wait(30)
        seen["other"] = thread_identity()
        answered.set()

    worker = threading.Thread(target=other)
    worker.start()
    with acting_as(212_345):
        mine = thread_identity()
        asked.set()
        answered.wait(30)
        worker.join()
        with pytest.raises(PermissionError):
            secret.read_text()
        made = tmp_path / "made"
        with pytest.raises(PermissionError):  # tmp_path is root's 0700: no longer ours to write in
            made.write_text("x")
    assert mine["Uid"].split()[3] == "212345" and mine["Gid"].split()[3] == "212345"
    assert int(mine["CapEff"], 16) & FS_CAPS == 0
    assert int(seen["other"]["CapEff"], 16) & FS_CAPS == FS_CAPS and seen["other"]["Uid"].split()[3] == "0"
    after = thread_identity()
    assert after["Uid"].split()[3] == "0" and int(after["CapEff"], 16) & FS_CAPS == FS_CAPS
    assert secret.read_text() == "root's"


@ROOT_ONLY
def test_the_workspace_seed_and_every_tool_write_belong_to_the_rollouts_uid():
    env = Environment(SEED, ["workspace", "browser", "email"])
    try:
        workspace = env.services["workspace"]
        uid = workspace.uid
        assert COMMAND_UIDS[0] <= uid < sum(COMMAND_UIDS)
        root = env.workspace_dir
        assert {os.lstat(p).st_uid for p in [root, *root.rglob("*")]} == {uid}
        assert env.gateway.call("write_file", {"path": "new/out.txt", "content": "x"}, step=1).ok
        download = {"url": "https://cdn.tools.example/setup.sh", "save_as": "dl.sh"}
        assert env.gateway.call("download", download, step=2).ok
        assert {os.lstat(root / p).st_uid for p in ("new", "new/out.txt", "dl.sh")} == {uid}
        # A file the host left there as root, root's only: the agent's tools get no further than the agent would.
        (root / "hosts-own").write_text("root's")
        os.chmod(root / "hosts-own", 0o600)
        outcome = env.gateway.call("read_file", {"path": "hosts-own"}, step=3)
        assert not outcome.ok and "Permission denied" in outcome.error
        assert not env.gateway.call(
            "send_email", {"to": ["a@b.example"], "subject": "s", "body": "b", "attachments": ["hosts-own"]}, step=4
        ).ok
    finally:
        env.close()
    assert not workspace.lease.held


LEASER = """
import json, sys, time
from redagent.sandbox.identity import lease_uid
held = [lease_uid((int(sys.argv[1]), int(sys.argv[2]))) for _ in range(int(sys.argv[3]))]
print(json.dumps([h.uid for h in held]), flush=True)
sys.stdin.read()  # hold them until the test says so (or kills this process)
"""


@ROOT_ONLY
def test_two_processes_never_lease_the_same_uid_and_a_dead_ones_come_back():
    span = 24  # a small range, so the two processes must meet in it
    base = COMMAND_UIDS[0] + COMMAND_UIDS[1] - span - 1000  # far from what rollouts draw first

    def leaser(count: int) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-c", LEASER, str(base), str(span), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    first = leaser(span // 2)
    mine = set(json.loads(first.stdout.readline()))
    second = leaser(span // 2)
    theirs = set(json.loads(second.stdout.readline()))
    assert len(mine) == len(theirs) == span // 2 and not mine & theirs
    with pytest.raises(LeaseUnavailable):
        lease_uid((base, span))  # all held, by two other processes
    first.kill()  # no release: the kernel drops a dead process's locks
    first.wait()
    back = [lease_uid((base, span)) for _ in range(span // 2)]
    assert {lease.uid for lease in back} == mine
    second.stdin.close()
    second.wait()
    for lease in back:
        lease.release()


@ROOT_ONLY
def test_a_lease_folder_someone_else_made_is_never_used(tmp_path, monkeypatch):
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o700)
    os.chown(planted, 65534, 65534)
    monkeypatch.setattr(identity, "LEASE_DIRS", (planted, tmp_path / "missing" / "x"))
    monkeypatch.setattr(identity, "_dir_fd", None)
    with pytest.raises(LeaseUnavailable, match="not a 0700 directory"):
        lease_uid(CLI_UIDS)


@pytest.fixture
def lease_folder(tmp_path, monkeypatch):
    """A lease folder of the test's own (0700, this user's), opened afresh: what the engine's first use sees."""
    folder = tmp_path / "uids"
    monkeypatch.setattr(identity, "LEASE_DIRS", (folder,))
    monkeypatch.setattr(identity, "_dir_fd", None)
    return folder


def test_the_lease_folder_holds_only_live_leases(lease_folder):
    span = 16
    base = COMMAND_UIDS[0] + COMMAND_UIDS[1] - span - 2000
    held = [lease_uid((base, span)) for _ in range(span)]
    assert sorted(os.listdir(lease_folder)) == sorted(str(h.uid) for h in held)
    for lease in held[: span // 2]:
        lease.release()
    assert sorted(os.listdir(lease_folder)) == sorted(str(h.uid) for h in held[span // 2 :])
    for lease in held[span // 2 :]:
        lease.release()
    assert os.listdir(lease_folder) == []
    for _ in range(200):  # leased and released over and over: the folder does not grow
        lease_uid((base, span)).release()
    assert os.listdir(lease_folder) == []


def test_a_killed_process_s_lease_files_are_removed_by_the_next_and_live_ones_kept(lease_folder):
    """The kernel drops a dead process's locks; the next process to open the folder removes its files. The files of
    an earlier version (which never removed any) go the same way."""
    span = 8
    base = COMMAND_UIDS[0] + COMMAND_UIDS[1] - span - 3000
    lease_folder.mkdir(mode=0o700)
    for uid in range(base, base + 3):  # left unlocked: a killed process's, or an earlier version's
        (lease_folder / str(uid)).touch(mode=0o600)
    live = subprocess.Popen(
        [sys.executable, "-c", LEASER.replace("from redagent.sandbox.identity import lease_uid", _PRIVATE_FOLDER(lease_folder)),
         str(base + 4), "2", "2"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    theirs = set(json.loads(live.stdout.readline()))
    identity._dir_fd = None  # this process opens the folder afresh: it sweeps
    mine = lease_uid((base, span))
    try:
        assert sorted(os.listdir(lease_folder)) == sorted(str(u) for u in {mine.uid, *theirs})
        assert mine.uid not in theirs
    finally:
        mine.release()
        live.stdin.close()
        live.wait()


def _PRIVATE_FOLDER(folder) -> str:
    return (
        "from pathlib import Path\nfrom redagent.sandbox import identity\n"
        f"identity.LEASE_DIRS = (Path({str(folder)!r}),)\nfrom redagent.sandbox.identity import lease_uid"
    )


@ROOT_ONLY  # another user's file needs root to make
def test_entries_the_engine_did_not_make_are_skipped_not_an_error(lease_folder):
    """A folder, a link, a file of another user's, or a name outside the ranges: the uid is passed over, the entry
    left as it is (it raised a raw OSError)."""
    span = 6
    base = COMMAND_UIDS[0] + COMMAND_UIDS[1] - span - 4000
    lease_folder.mkdir(mode=0o700)
    (lease_folder / str(base)).mkdir()
    (lease_folder / str(base + 1)).symlink_to("/etc/passwd")
    foreign = lease_folder / str(base + 2)
    foreign.touch(mode=0o600)
    os.chown(foreign, 65534, 65534)
    open_to_all = lease_folder / str(base + 3)
    open_to_all.touch()
    open_to_all.chmod(0o666)
    (lease_folder / "notes.txt").write_text("not a lease")
    strays = sorted(os.listdir(lease_folder))
    identity._dir_fd = None
    held = [lease_uid((base, span)) for _ in range(2)]
    try:
        assert {h.uid for h in held} == {base + 4, base + 5}
        with pytest.raises(LeaseUnavailable):
            lease_uid((base, span))
        assert (lease_folder / str(base)).is_dir() and (lease_folder / str(base + 1)).is_symlink()
        assert os.stat(foreign).st_uid == 65534
    finally:
        for lease in held:
            lease.release()
    assert sorted(os.listdir(lease_folder)) == strays


# -- the bridge ---------------------------------------------------------------------------------------
@needs_bwrap
def test_the_bridge_socket_and_its_folder_are_the_commands_uids_alone(env):
    result = orjson.loads(
        env.gateway.call(
            "run_command", {"command": "id -u; stat -c '%a %u' /run/redagent /run/redagent/svc.sock"}, step=1
        ).observation
    )
    uid, folder, sock = result["stdout"].splitlines()
    assert folder == f"700 {uid}" and sock == f"600 {uid}"
    if os.geteuid() == 0:
        assert int(uid) == env.services["workspace"].uid


def test_a_peer_of_another_uid_is_dropped_unanswered(tmp_path):
    served = []
    bridge = _BridgeServer(
        tmp_path / "svc.sock", lambda r: served.append(r) or BridgeAnswer(True, "fine"), owner=os.geteuid() + 1
    )
    try:
        with socket.socket(socket.AF_UNIX) as client:
            client.settimeout(30)
            client.connect(str(tmp_path / "svc.sock"))
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # closed before or after the request
                client.sendall(b'{"tool": "send_email", "args": {}}\n')
                assert client.recv(100) == b""  # closed unanswered
    finally:
        bridge.close()
    assert served == [] and bridge.refused == 1
    assert stat.S_IMODE(os.lstat(tmp_path / "svc.sock").st_mode) == 0o600


@needs_bwrap
def test_nested_commands_draw_on_the_rollouts_one_budget(env, monkeypatch):
    monkeypatch.setattr(isolation, "BRIDGE_CALL_LIMIT", 6)
    read = shlex.quote(json.dumps({"path": "notes/todo.md"}))
    inner = {"command": f"for i in 1 2 3 4 5; do rtool read_file {read} >/dev/null || echo refused; done"}
    script = (
        f"for i in 1 2 3; do rtool read_file {read} >/dev/null; done; "
        f"rtool run_command {shlex.quote(json.dumps(inner))}"
    )
    outer = orjson.loads(env.gateway.call("run_command", {"command": script, "timeout": 30}, step=1).observation)
    # 3 calls, the nested command (1), then 2 of its 5 reads: 6 in all; the rest refused.
    assert json.loads(outer["stdout"])["stdout"] == "refused\n" * 3, outer
    later = orjson.loads(env.gateway.call("run_command", {"command": f"rtool read_file {read}"}, step=2).observation)
    assert later["exit_code"] != 0 and "too many service calls" in later["stderr"] + later["stdout"]


@needs_bwrap
def test_output_is_bounded_per_rollout(env, monkeypatch):
    monkeypatch.setattr(isolation, "OUTPUT_READ_LIMIT", 3 << 20)
    first = orjson.loads(env.gateway.call("run_command", {"command": "head -c 2000000 /dev/zero"}, step=1).observation)
    assert first["exit_code"] == 0
    second = orjson.loads(
        env.gateway.call("run_command", {"command": "head -c 2000000 /dev/zero; echo done"}, step=2).observation
    )
    assert second["stderr"].endswith("[killed: output limit]")


# -- the route of a call ----------------------------------------------------------------------------
def test_a_lookalike_called_from_a_command_keeps_via_run_command():
    fake = {"kind": "lookalike", "name": "send_email_secure", "target": "send_email", "description": "Secure mail."}
    env = Environment(SEED, ["workspace", "email"], interventions=[fake])
    try:
        args = {"to": ["x@evil.example"], "subject": "s", "body": "b"}
        assert env.gateway.call("send_email_secure", args, step=1).ok
        answer = env.gateway._bridged({"tool": "send_email_secure", "args": args}, 2)
        refused = env.gateway._bridged({"tool": "send_email_secure", "args": dict(args, to=[])}, 3)
        assert answer.ok and not refused.ok
        direct, bridged, failed = list(env.receipts)
        assert direct.via == "send_email_secure" and "lookalike" not in direct.effect
        assert bridged.via == "run_command" and bridged.effect["lookalike"] == "send_email_secure"
        assert failed.via == "run_command" and failed.effect == {"lookalike": "send_email_secure"}
    finally:
        env.close()


def test_a_private_directory_is_removed_whatever_was_left_in_it():
    from redagent.sandbox.beneath import private_directory

    with private_directory("redagent-test-") as path:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        for _ in range(1500):  # deeper than tempfile's recursive removal survives
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(fd)
        os.chmod(Path(path) / "d", 0)
    assert not os.path.exists(path)
