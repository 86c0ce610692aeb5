"""The hostile case corpus (tests/cases/hostile/corpus.py) through the real command line.

For every file: `cases validate` and `cases check` end with exit code 2 and one line naming the file,
the line and the field, in well under 2 s; and, run as separate processes from a fresh working
directory, nothing is written anywhere but the temporary workspaces, memory stays bounded.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redagent.console.cli import main
from tests.cases.hostile.corpus import CORPUS, SENTINEL, write

BUDGET = 2.0  # seconds per file and command (it takes milliseconds)
PEAK_RSS_MB = 400  # the whole corpus in one process: an unbounded bomb would take gigabytes
ESCAPE_TARGETS = [Path(SENTINEL), Path(SENTINEL + "-tag"), Path("/etc/cron.d/redagent-hostile")]


def test_the_corpus_covers_every_kind_of_hostility():
    assert len(CORPUS) >= 40
    prefixes = {name.split("-", 1)[0] for name in CORPUS}
    assert prefixes >= {"path", "symlink", "yaml", "type", "ref", "quant"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    write(folder)
    return folder


def _cli(args: list[str], capsys) -> tuple[int, list[str], float]:
    started = time.monotonic()
    with pytest.raises(SystemExit) as info:
        main(args)
    elapsed = time.monotonic() - started
    captured = capsys.readouterr()
    return info.value.code, [line for line in captured.err.splitlines() if line.strip()], elapsed


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_validate_names_file_line_and_field(corpus, name, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    path = corpus / name
    code, lines, elapsed = _cli(["cases", "validate", str(path)], capsys)
    field = CORPUS[name][1]
    assert code == 2
    assert len(lines) == 1, lines
    assert re.match(rf"^{re.escape(str(path))}:\d+: {re.escape(field)}", lines[0]), (lines[0], field)
    assert elapsed < BUDGET
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_check_refuses_with_one_line(corpus, name, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    path = corpus / name
    code, lines, elapsed = _cli(["cases", "check", str(path)], capsys)
    assert code == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: 1 problem(s) in case files; first: {path}:"), lines[0]
    assert f": {CORPUS[name][1]}" in lines[0]
    assert elapsed < BUDGET
    assert not list(tmp_path.iterdir())


# The peak is VmHWM, this process's own high-water mark: ru_maxrss would carry over the peak of the
# process that forked it (Linux keeps it across exec), i.e. pytest's, which is large late in a full run.
_MEASURED = """
import json, sys, time
from redagent.console.cli import main
started = time.monotonic()
try:
    main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
with open("/proc/self/status") as status:
    peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "seconds": time.monotonic() - started, "peak_mb": peak_kb / 1024}, out)
"""


@pytest.mark.parametrize("command", ["validate", "check"])
def test_the_whole_corpus_in_a_fresh_process_writes_nothing_outside(corpus, command, tmp_path):
    """One process per command over the whole corpus, from an empty working directory, with HOME, TMPDIR
    and the workspaces in a scratch tree: afterwards the scratch tree holds only the result file, and no
    escape target exists."""
    for name in ("cwd", "home", "tmp", "ws"):
        (tmp_path / name).mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"),
           "REDAGENT_WORKSPACES": str(tmp_path / "ws"), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = tmp_path / "result.json"
    done = subprocess.run([sys.executable, "-c", _MEASURED, str(result), "cases", command, str(corpus)],
                          cwd=tmp_path / "cwd", env=env, capture_output=True, text=True, timeout=120)
    measured = json.loads(result.read_text())
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert measured["code"] == 2
    if command == "validate":
        assert len(lines) == len(CORPUS), lines[:5]
        assert {Path(line.split(":", 1)[0]).name for line in lines} == set(CORPUS)
    else:
        assert len(lines) == 1 and lines[0].startswith(f"error: {len(CORPUS)} problem(s) in case files; first:")
    assert measured["seconds"] < BUDGET * 10  # all files together
    assert measured["peak_mb"] < PEAK_RSS_MB, measured
    leftovers = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert leftovers == ["cwd", "home", "result.json", "tmp", "ws"], leftovers
    for target in ESCAPE_TARGETS:
        assert not target.exists(), target
