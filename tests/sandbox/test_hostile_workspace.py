"""A workspace an agent made hostile: special files, loops, huge and deep trees, names that are not UTF-8.

The snapshot and every file tool must come back (never block, never raise), open nothing but regular
files, read a bounded amount, and produce state that can be stored.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import orjson
import pytest

from redagent.sandbox import names
from redagent.sandbox.diff import diff
from redagent.sandbox.environment import Environment, canonical
from redagent.sandbox.identity import acting_as
from redagent.sandbox.services.workspace import LIST_LIMIT, READ_LIMIT, remove_tree
from tests.conftest import SEED

BOUND = 60  # seconds any single call may take here; a blocked open() would take forever


def bounded(fn, *args):
    """Run fn on a thread and wait for it at most BOUND seconds: a hang fails the test instead of the suite."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(BOUND)
    assert not worker.is_alive(), f"{getattr(fn, '__name__', fn)} did not return within {BOUND} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def call(env, tool, **args):
    return bounded(lambda: env.gateway.call(tool, args, step=1))


@pytest.fixture
def unix_socket(env):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(env.workspace_dir / "agent.sock"))
    yield server
    server.close()


def test_fifo_is_recorded_and_never_opened(env):
    os.mkfifo(env.workspace_dir / "pipe")
    files = bounded(env.snapshot)["workspace"]["files"]
    assert files["pipe"] == {"special": "fifo"}
    for tool, args in [
        ("read_file", {"path": "pipe"}),
        ("write_file", {"path": "pipe", "content": "x"}),
        ("append_file", {"path": "pipe", "content": "x"}),
        ("send_email", {"to": ["a@b.example"], "subject": "s", "body": "b", "attachments": ["pipe"]}),
    ]:
        outcome = call(env, tool, **args)
        assert not outcome.ok and "not a regular file (fifo)" in outcome.error, (tool, outcome.error)
    listing = orjson.loads(call(env, "list_dir", path=".").observation)
    assert {"name": "pipe", "type": "fifo"} in listing["entries"]
    assert stat.S_ISFIFO(os.lstat(env.workspace_dir / "pipe").st_mode)  # nothing replaced it either


def test_fifo_with_a_reader_is_still_not_written(env):
    """A FIFO someone reads from would accept an open: the check on the open descriptor refuses it."""
    fifo = env.workspace_dir / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        outcome = call(env, "write_file", path="pipe", content="secret")
        assert not outcome.ok and "not a regular file" in outcome.error
        assert os.read(reader, 100) == b""
    finally:
        os.close(reader)


def test_socket_in_the_workspace(env, unix_socket):
    snapshot = bounded(env.snapshot)
    assert snapshot["workspace"]["files"]["agent.sock"] == {"special": "socket"}
    canonical(snapshot)  # storable
    outcome = call(env, "read_file", path="agent.sock")
    assert not outcome.ok and "socket" in outcome.error
    assert not call(env, "write_file", path="agent.sock", content="x").ok


def test_device_node_is_recorded_not_opened(env):
    try:
        os.mknod(env.workspace_dir / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    assert bounded(env.snapshot)["workspace"]["files"]["null"] == {"special": "char-device"}
    outcome = call(env, "read_file", path="null")
    assert not outcome.ok and "char-device" in outcome.error


def test_symlink_loops_and_links_out(env, tmp_path):
    sentinel = tmp_path / "outside.txt"
    sentinel.write_text("outside secret")
    os.symlink("b", env.workspace_dir / "a")
    os.symlink("a", env.workspace_dir / "b")
    os.symlink("self", env.workspace_dir / "self")
    os.symlink("/", env.workspace_dir / "root")
    os.symlink(sentinel, env.workspace_dir / "out")
    files = bounded(env.snapshot)["workspace"]["files"]
    for name in ("a", "b", "self", "root", "out"):
        assert files[name]["target"] is None and "sha256" not in files[name], name
    assert files["out"]["symlink"] == str(sentinel)
    for name in ("a", "self"):
        assert not call(env, "read_file", path=name).ok
    for name in ("root", "out"):
        outcome = call(env, "read_file", path=name)
        assert not outcome.ok and "outside the workspace" in outcome.error
    assert not call(env, "list_dir", path="root").ok
    assert sentinel.read_text() == "outside secret"


def test_names_with_newlines_and_invalid_utf8(env):
    root = os.fsencode(env.workspace_dir)
    for raw in (b"bad\xff\xfename", b"new\nline", b"tab\tand \xe2\x80\xae rtl"):
        with open(root + b"/" + raw, "wb") as handle:
            handle.write(b"x")
    os.symlink(b"target\xff", root + b"/link\xff")
    before = env.snapshot()
    files = bounded(env.snapshot)["workspace"]["files"]
    # A name that is not UTF-8 is keyed by its escaped bytes and a NUL, which no valid name can hold (sandbox.names)
    assert "bad\\xff\\xfename\x00" in files and "new\nline" in files and "link\\xff\x00" in files
    assert files["link\\xff\x00"]["symlink"] == "target\\xff\x00"
    canonical(files)  # every key and value is storable text
    listing = call(env, "list_dir", path=".")
    assert listing.ok and "bad\\\\xff\\\\xfename" in listing.observation
    (env.workspace_dir / "new\nline").write_text("changed")
    assert any("new\\nline" in e.key or "new\nline" in e.key for e in diff(before, env.snapshot()))


def test_names_that_differ_only_in_bytes_a_decoder_replaces_stay_apart(env):
    """Each entry keeps a key of its own: a name that is not UTF-8, the valid name that spells its old escape
    (`bad\\xff`), one that decodes to the replacement character, and each key gives its bytes back."""
    root = os.fsencode(env.workspace_dir)
    raws = [b"bad\xff", b"bad\\xff", b"bad\xef\xbf\xbd", b"bad\xfe", b"d\xff/inner", b"d\\xff/inner", b"back\\\xff"]
    for raw in raws:
        os.makedirs(os.path.dirname(root + b"/" + raw), exist_ok=True)
        with open(root + b"/" + raw, "wb") as handle:
            handle.write(raw)
    files = {k: v for k, v in bounded(env.snapshot)["workspace"]["files"].items() if k.startswith(("bad", "d", "back"))}
    assert len(files) == len(raws)
    assert sorted(names.to_bytes(k) or b"" for k in files) == sorted(raws)
    assert "bad\\xff" in files and files["bad\\xff"]["content"] == "bad\\xff"  # a valid name: as it always was
    for key in files:  # what the verifier reads by key is that entry's own content
        assert env.services["workspace"].read_large(key) == names.to_bytes(key).decode("utf-8", "replace")


def test_a_directory_with_100k_files(tmp_path):
    # A directory of the test's own, so no inode quota stops the 100k files (the quota'd workspace would).
    env = Environment(SEED, ["workspace"], workspace_dir=tmp_path / "ws")
    many = tmp_path / "ws" / "many"
    many.mkdir()
    for i in range(100_000):
        with open(many / f"f{i}", "wb"):
            pass
    files = bounded(env.snapshot)["workspace"]["files"]
    assert sum(1 for k in files if k.startswith("many/")) == 100_000
    listing = orjson.loads(call(env, "list_dir", path="many").observation)
    assert len(listing["entries"]) == LIST_LIMIT and listing["more"] == 100_000 - LIST_LIMIT


def test_a_2gb_sparse_file_is_read_in_bounded_size(env):
    big = env.workspace_dir / "sparse.bin"
    with open(big, "wb") as handle:
        handle.truncate(2 << 30)
        handle.seek((2 << 30) - 5)
        handle.write(b"tail!")
    record = bounded(env.snapshot)["workspace"]["files"]["sparse.bin"]
    assert record["size"] == 2 << 30 and record["partial"] is True and "content" not in record
    other = dict(record)
    with open(big, "r+b") as handle:  # a change in the hashed tail is a change
        handle.seek((2 << 30) - 5)
        handle.write(b"TAIL!")
    assert bounded(env.snapshot)["workspace"]["files"]["sparse.bin"]["sha256"] != other["sha256"]
    content = orjson.loads(call(env, "read_file", path="sparse.bin").observation)["content"]
    assert len(content) < READ_LIMIT + 200 and "[truncated: the file has 2147483648 bytes" in content
    outcome = call(env, "send_email", to=["a@b.example"], subject="s", body="b", attachments=["sparse.bin"])
    assert not outcome.ok and "too large to send" in outcome.error


def _deep(root: Path, depth: int) -> None:
    """A chain of `depth` directories made through descriptors, so the path can pass PATH_MAX."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("dd", dir_fd=fd)
            inner = os.open("dd", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as handle:
            handle.write("deep")
    finally:
        os.close(fd)


def test_a_tree_deeper_than_the_recursion_limit_and_path_max(tmp_path):
    env = Environment(SEED, ["workspace"])  # owned: closing removes it
    agent = acting_as(env.services["workspace"].uid)  # the tree is the agent's, as a command would make it
    with agent:
        _deep(env.workspace_dir, 2500)  # 3 characters a level: 7500 characters, past PATH_MAX (4096)
    files = bounded(env.snapshot)["workspace"]["files"]
    deep_keys = [k for k in files if k.startswith("dd/")]
    assert deep_keys and all(files[k].get("special") == "unreadable" or "sha256" in files[k] for k in deep_keys)
    canonical(files)
    outcome = call(env, "delete_path", path="dd", recursive=True)
    assert outcome.ok, outcome.error
    assert not (env.workspace_dir / "dd").exists() and sorted(os.listdir(env.workspace_dir)) == [
        ".env",
        "notes",
        "run.sh",
    ]
    with acting_as(env.services["workspace"].uid):
        _deep(env.workspace_dir, 2500)
    bounded(env.close)
    assert not env.workspace_dir.exists()


def test_remove_tree_handles_depth_and_locked_directories(tmp_path):
    _deep(tmp_path, 1500)
    locked = tmp_path / "locked"
    (locked / "inner").mkdir(parents=True)
    os.chmod(locked, 0)
    remove_tree(tmp_path)
    assert not tmp_path.exists()


def test_nul_bytes_are_refused(env):
    assert "NUL" in call(env, "read_file", path="a\0b").error
    assert "NUL" in call(env, "run_command", command="echo a\0b").error


def test_everything_at_once_snapshots_and_closes():
    env = Environment(SEED, ["workspace"])
    root = env.workspace_dir
    os.mkfifo(root / "pipe")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(root / "sock"))
    os.symlink("loop", root / "loop")
    os.symlink("/etc/passwd", root / "passwd")
    (root / "d").mkdir()
    os.symlink("../d", root / "d" / "up")
    baseline = bounded(env.snapshot)
    final = bounded(env.snapshot)
    assert diff(baseline, final) == []
    server.close()
    bounded(env.close)
    assert not root.exists()
