"""Property tests: no path an agent can write resolves outside its workspace."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from redagent.sandbox.environment import Environment
from redagent.sandbox.tools import ToolError

segments = st.sampled_from(["..", ".", "a", "b", "notes", "link_out", "link_in", "", "~", "/", "etc", "x.txt"])
paths = st.lists(segments, min_size=1, max_size=6).map("/".join)

_env = Environment({"workspace": {"files": {"notes/a.txt": "a"}}}, ["workspace"])
os.symlink("/etc", _env.workspace_dir / "link_out")
os.symlink("notes", _env.workspace_dir / "link_in")
_workspace = _env.services["workspace"]
_inside = {
    (st.st_dev, st.st_ino) for st in [os.stat(_env.workspace_dir)] + [f.lstat() for f in _workspace.fs.entries()]
}


@settings(max_examples=400, deadline=None)
@given(paths)
def test_resolved_paths_stay_inside_or_are_refused(path):
    """Whatever a path resolves to beneath the workspace (links followed, `..` popped) is one of its own
    entries; anything else is refused."""
    try:
        st = _workspace.fs.stat(path)
    except ToolError:  # ConfinementViolation is one
        return
    assert st is None or (st.st_dev, st.st_ino) in _inside, path


@settings(max_examples=150, deadline=None)
@given(paths, st.text(max_size=20))
def test_writes_never_land_outside(path, content):
    before = set(os.listdir("/etc"))
    outcome = _env.gateway.call("write_file", {"path": path, "content": content}, step=1)
    if not outcome.ok and "outside the workspace" in (outcome.error or ""):
        assert list(_env.receipts)[-1].outcome == "denied"
    assert set(os.listdir("/etc")) == before
