"""What the CLI harness's memory watch reads: the resident memory of a process tree, each process its own."""

from __future__ import annotations

import os
import subprocess
import sys

from redagent.engine.harnesses.cli.isolation import _tree_usage

HOLD = r"""
import subprocess, sys
hog = bytearray(96 << 20)
hog[::4096] = b"x" * len(hog[::4096])  # touched, so resident
child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
print("ready", child.pid, flush=True)
sys.stdin.read()
child.stdin.close()
child.wait()
"""


def pages(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1])


def test_the_tree_is_summed_over_its_own_processes():
    # The sum once added, for every process of the tree, the resident size of whichever process /proc listed
    # last: a CLI's 96 MB could read as a few pages, or a small CLI as the largest process on the machine.
    parent = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        word, child = parent.stdout.readline().split()
        assert word == "ready"
        rss, _ = _tree_usage(parent.pid)
        expected = pages(parent.pid) + pages(int(child))
        page = os.sysconf("SC_PAGE_SIZE")
        assert rss * page >= 96 << 20
        assert abs(rss - expected) <= expected // 10  # the two processes' own pages, give or take what moved
    finally:
        parent.stdin.close()
        parent.wait(timeout=60)
