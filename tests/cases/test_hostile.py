"""The hostile case corpus (tests/cases/hostile/corpus.py) through the real command line.

For every file: `cases validate` and `cases check` end with exit code 2 and one line naming the file,
the line and the field; and, run as separate processes from a fresh working directory, nothing is
written anywhere but the temporary workspaces, memory stays bounded. The hostile files that are valid
cases (`CHECKED`) are checked to the end. Nothing here times a command: a command that does not end
within HANG_S (far above the milliseconds they take) fails as a hang; benchmarks/case_bounds.py prints
how long each takes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from redagent.console.cli import main
from tests.cases.hostile.corpus import CHECKED, CORPUS, SENTINEL, write

HANG_S = 120  # a command still running after this long hangs (each takes milliseconds, a check seconds)
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


def _cli(args: list[str], capsys) -> tuple[int, list[str]]:
    """The CLI in this process, on a thread that must end within HANG_S: its exit code and stderr lines."""
    ended: list[BaseException] = []

    def call() -> None:
        try:
            main(args)
        except BaseException as exc:  # SystemExit, or what the test reports
            ended.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(HANG_S)
    assert not thread.is_alive(), f"redagent {' '.join(args)} still running after {HANG_S} s"
    assert ended and isinstance(ended[0], SystemExit), ended
    captured = capsys.readouterr()
    return ended[0].code, [line for line in captured.err.splitlines() if line.strip()]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_validate_names_file_line_and_field(corpus, name, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    path = corpus / name
    code, lines = _cli(["cases", "validate", str(path)], capsys)
    field = CORPUS[name][1]
    assert code == 2
    assert len(lines) == 1, lines
    assert re.match(rf"^{re.escape(str(path))}:\d+: {re.escape(field)}", lines[0]), (lines[0], field)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_check_refuses_with_one_line(corpus, name, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    path = corpus / name
    code, lines = _cli(["cases", "check", str(path)], capsys)
    assert code == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: 1 problem(s) in case files; first: {path}:"), lines[0]
    assert f": {CORPUS[name][1]}" in lines[0]
    assert not list(tmp_path.iterdir())


# The peak is VmHWM, this process's own high-water mark: ru_maxrss would carry over the peak of the
# process that forked it (Linux keeps it across exec), i.e. pytest's, which is large late in a full run.
_MEASURED = """
import json, sys
from redagent.console.cli import main
try:
    main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
with open("/proc/self/status") as status:
    peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "peak_mb": peak_kb / 1024}, out)
"""


@pytest.mark.parametrize("command", ["validate", "check"])
def test_the_whole_corpus_in_a_fresh_process_writes_nothing_outside(corpus, command, tmp_path):
    """One process per command over the whole corpus, from an empty working directory, with HOME, TMPDIR
    and the workspaces in a scratch tree: afterwards the scratch tree holds only the result file, and no
    escape target exists."""
    for name in ("cwd", "home", "tmp", "ws"):
        (tmp_path / name).mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "REDAGENT_WORKSPACES": str(tmp_path / "ws"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    result = tmp_path / "result.json"
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, str(result), "cases", command, str(corpus)],
        cwd=tmp_path / "cwd",
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    measured = json.loads(result.read_text())
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert measured["code"] == 2
    if command == "validate":
        assert len(lines) == len(CORPUS), lines[:5]
        assert {Path(line.split(":", 1)[0]).name for line in lines} == set(CORPUS)
    else:
        assert len(lines) == 1 and lines[0].startswith(f"error: {len(CORPUS)} problem(s) in case files; first:")
    assert measured["peak_mb"] < PEAK_RSS_MB, measured
    # The check keeps what it parsed and proved in its own cache (cases/checkcache.py, under $HOME/.cache): that, and
    # nothing else, may be left.
    cache = ("home/.cache", "home/.cache/redagent", "home/.cache/redagent/check")
    leftovers = sorted(
        name
        for name in (str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
        if not (name in cache or name.startswith("home/.cache/redagent/check/"))
    )
    assert leftovers == ["cwd", "home", "result.json", "tmp", "ws"], leftovers
    for target in ESCAPE_TARGETS:
        assert not target.exists(), target


def test_valid_hostile_cases_are_checked_to_the_end(tmp_path):
    """A dozen `.*` in a verifier regex on a 4,000-character memo (hours for a backtracking matcher, and no
    signal reached it) and plans at every limit: the check runs every plan and ends with its verdicts, and
    leaves no workspace behind."""
    folder = tmp_path / "checked"
    write(folder, CHECKED)
    (tmp_path / "ws").mkdir()
    env = {**os.environ, "REDAGENT_WORKSPACES": str(tmp_path / "ws")}
    done = subprocess.run(
        [sys.executable, "-m", "redagent", "cases", "check", str(folder), "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert done.returncode in (0, 1), done.stderr  # verdicts, not a refusal (2) or a crash
    summary = json.loads(done.stdout)
    assert {case["id"] for case in summary["per_case"]} == {"hostile-regex-dotstar", "hostile-plan-at-every-limit"}
    assert not list((tmp_path / "ws").iterdir())
