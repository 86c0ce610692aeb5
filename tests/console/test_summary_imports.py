"""A run's summary costs no statistics library: `redagent run` and `runs show` print execution ASR, utility with
Wilson intervals and health without importing numpy, pandas or scipy (judges/rates.py, judges/summary.py). They
took ~7 % of a default run's CPU to import; `redagent stats` and `report` still use them."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

# Runs the real command line in a fresh interpreter, then says which of the libraries it loaded.
PROGRAM = """
import atexit, sys
atexit.register(lambda: print("LOADED", sorted(m for m in ("numpy", "pandas", "scipy") if m in sys.modules)))
from redagent.console.cli import main
sys.argv = ["redagent", *sys.argv[1:]]
main()
"""


def _loaded(tmp_path, *args: str) -> tuple[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, *args], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("LOADED"))
    return done.stdout, ast.literal_eval(line.removeprefix("LOADED "))


def test_a_run_and_its_summary_import_no_statistics_library(tmp_path):
    db = str(tmp_path / "store.db")
    out, loaded = _loaded(
        tmp_path, "run", "--cases", "email-t1-send-email-journal-bcc", "--models", "sim/comply", "--harnesses",
        "native", "--db", db,
    )  # fmt: skip
    assert "utility: benign 100.00% (1/1, 20.65%–100.00%)" in " ".join(out.split())  # the Wilson interval is printed
    assert loaded == []
    run_id = re.search(r"run-[0-9a-z-]+", out).group(0)
    shown, loaded = _loaded(tmp_path, "runs", "show", run_id, "--db", db)
    assert "utility" in shown and loaded == []


def test_the_plain_wilson_interval_is_the_statistics_module_s():
    """The same numbers as the vectorised bounds the report's tables use."""
    import numpy as np

    from redagent.judges import rates, stats

    for n in range(0, 40):
        for k in range(0, n + 1):
            low, high = stats._wilson_bounds(np.array(k), np.array(n), rates.Z95)
            plain = rates.wilson(k, n)
            assert (float(low), float(high)) == plain or (n == 0 and all(x != x for x in plain))
