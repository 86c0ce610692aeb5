"""A single-file store cannot blind whoever reads it, so no one else may: 0600 in a 0700 folder."""

from __future__ import annotations

import os
import stat

from redagent.store import open_store
from redagent.store.access import OWNER


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_store_and_its_folders_are_private(tmp_path):
    path = tmp_path / "a" / "b" / "store.db"
    with open_store(f"sqlite:///{path}") as store:
        assert store.identity().role == OWNER and not store.identity().enforced
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700 and mode(path.parent.parent) == 0o700
    for side in ("store.db-wal", "store.db-shm"):  # SQLite gives its side files the database's mode
        if (path.parent / side).exists():
            assert mode(path.parent / side) & 0o077 == 0


def test_the_default_folder_is_tightened_but_other_folders_are_left_alone(tmp_path):
    default = tmp_path / ".redagent"
    default.mkdir(mode=0o755)
    default.chmod(0o755)
    with open_store(f"sqlite:///{default / 'redagent.db'}"):
        pass
    assert mode(default) == 0o700 and mode(default / "redagent.db") == 0o600
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    with open_store(f"sqlite:///{shared / 'x.db'}"):
        pass
    assert mode(shared) == 0o755 and mode(shared / "x.db") == 0o600
