"""`--db` names a regular file, or the command says in one line what it names instead — never a hang.

SQLite (and the header check before it) opened a FIFO and waited for a writer forever: `runs list --db FIFO`
hung. A folder was SQLite's "disk I/O error", a device the same. The store's -wal, -shm and -journal files
are opened by SQLite too, so a FIFO planted there is refused likewise. Tried through the real CLI, in a process
that must end within a hang timeout far above the milliseconds it takes.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from redagent.store.connect import create_store_engine

HANG_S = 300


def _runs_list(db: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "redagent", "runs", "list", "--db", db],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda path: os.mkfifo(path), "a FIFO"),
        (lambda path: os.mkdir(path), "a directory"),
    ],
)
def test_a_store_path_that_is_not_a_regular_file_is_one_line(tmp_path, make, what):
    path = tmp_path / "store.db"
    make(path)
    done = _runs_list(str(path), tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: cannot open store sqlite:///{path}: {path} is {what}, not a database file"
    ]


def test_a_device_is_refused(tmp_path):
    done = _runs_list("/dev/null", tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: cannot open store sqlite:////dev/null: /dev/null is a character device, not a database file"
    ]


def test_a_link_to_a_fifo_is_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "store.db").symlink_to(tmp_path / "pipe")
    done = _runs_list(str(tmp_path / "store.db"), tmp_path)
    assert done.returncode == 2 and "is a FIFO, not a database file" in done.stderr


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_fifo_beside_the_store_in_sqlites_own_files_is_refused(tmp_path, suffix):
    from redagent.store.errors import StoreError

    create_store_engine(f"sqlite:///{tmp_path / 'store.db'}").dispose()  # a real, empty store file
    os.mkfifo(tmp_path / f"store.db{suffix}")
    with pytest.raises(StoreError) as info:
        create_store_engine(f"sqlite:///{tmp_path / 'store.db'}", create=False)
    assert f"store.db{suffix} is a FIFO, not a database file" in str(info.value)
    done = _runs_list(str(tmp_path / "store.db"), tmp_path)
    assert done.returncode == 2 and f"store.db{suffix} is a FIFO" in done.stderr


def test_a_regular_store_still_opens(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "redagent", "runs", "list", "--db", str(tmp_path / "new.db")],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "no store at" in done.stderr  # a reader does not create one
    create_store_engine(f"sqlite:///{tmp_path / 'new.db'}").dispose()
    assert _runs_list(str(tmp_path / "new.db"), tmp_path).returncode == 0
