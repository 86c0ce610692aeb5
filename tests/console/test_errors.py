"""The one error path (redagent/errors.py): a user's mistake is one line with exit code 2 from every command
family, and in the console a notification titled by its kind; a bug is one line (or notification) naming
the log file that holds its traceback, never a traceback on the terminal. Bugs are forced by replacing a
function the command really calls with one that raises."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from redagent.console.app import RedAgentApp
from redagent.console.cli import main
from redagent.errors import KEEP_LOGS, MAX_LOG_BYTES, UserError, log_dir, record_bug
from redagent.store.db import Store, open_store
from redagent.store.errors import StoreError
from tests.console.test_app import SIZE, notifications, wait_until

LOG = re.compile(r"traceback in (\S+\.log)")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state" / "redagent" / "logs"


@pytest.fixture
def url(tmp_path: Path) -> str:
    """An empty store (migrated, no runs)."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    open_store(url).close()
    return url


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as ended:
        main(list(argv))
    return ended.value.code, capsys.readouterr().err.splitlines()


def test_a_user_error_names_its_file_and_field_once():
    class BadThing(UserError):
        title = "Thing error"

    assert BadThing("no such colour", file="a.yaml", field="colour").line() == "a.yaml: colour: no such colour"
    assert (
        BadThing("a.yaml: colour: no such colour", file="a.yaml", field="colour").line()
        == "a.yaml: colour: no such colour"
    )
    assert BadThing("cannot read a.yaml: denied", file="a.yaml").line() == "cannot read a.yaml: denied"
    assert BadThing("not a word", field="colour").line() == "colour: not a word"
    assert BadThing("colour: not a word", field="colour").line() == "colour: not a word"
    assert BadThing("first\nsecond").line() == "first" and BadThing().line() == "thing error"
    assert BadThing("x").file is None and BadThing("x", file=Path("b.yaml")).file == "b.yaml"


def test_bug_logs_are_bounded_in_number_and_size(state: Path):
    for number in range(KEEP_LOGS + 5):
        assert record_bug(RuntimeError(f"bug {number}")) is not None
    assert len(list(state.glob("bug-*.log"))) == KEEP_LOGS
    huge = record_bug(RuntimeError("x" * (MAX_LOG_BYTES * 2) + " the end"))
    assert huge is not None and huge.parent == log_dir() == state
    text = huge.read_text()
    assert text.startswith("[cut: the start of the traceback]") and text.rstrip().endswith("the end")
    assert len(text.encode()) <= MAX_LOG_BYTES + 64


@pytest.mark.parametrize("family", ["cases", "run", "runs", "judge", "audit", "round", "refine", "sandbox", "console"])
def test_a_user_error_from_each_command_family_is_one_line_and_exit_2(family, url, tmp_path, capsys, state):
    bad_case = tmp_path / "bad.yaml"
    bad_case.write_text("id: [\n")
    argv, expected = {
        "cases": (("cases", "list", "--path", str(bad_case)), f"1 problem(s) in case files; first: {bad_case}:"),
        "run": (("run", "--models", "sim/nonsense", "--db", url), "unknown calibration agent 'sim/nonsense'"),
        "runs": (("runs", "show", "run-missing", "--db", url), "no run 'run-missing'"),
        "judge": (("judge", "run-missing", "--db", url), "run-missing"),
        "audit": (("audit", "status", "audit-nope", "--db", url), "no audit 'audit-nope' in the store"),
        "round": (("cases", "round", "status", "round-nope", "--db", url), "round-nope"),
        "refine": (
            ("cases", "refine", "run-x", "--queue", str(tmp_path / "q"), "--db", url),
            "no run 'run-x' in the store",
        ),
        "sandbox": (("sandbox", "image", "build", "--with", "cobol"), "unknown --with cobol"),
        "console": (("console", "--db", str(tmp_path / "missing.db")), "no store at"),
    }[family]
    code, lines = run_main(capsys, *argv)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: ") and expected in lines[0] and "internal error" not in lines[0], lines
    assert not state.exists()  # a user's mistake is no bug: nothing logged


def _bug_message(lines: list[str], kind: str, text: str) -> Path:
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: internal error ({kind}: {text}); traceback in "), lines
    log = Path(LOG.search(lines[0]).group(1))
    logged = log.read_text()
    assert "Traceback (most recent call last)" in logged and f"{kind}: {text}" in logged
    return log


def test_a_bug_in_a_command_is_one_line_naming_the_log_with_its_traceback(url, tmp_path, capsys, state, monkeypatch):
    def broken(*_args: object, **_kwargs: object) -> None:
        raise ValueError("refine's own bug")

    # `cases refine` used to show every ValueError as the user's mistake (exit 2).
    monkeypatch.setattr("redagent.judges.refine.refine", broken)
    code, lines = run_main(capsys, "cases", "refine", "run-1", "--queue", str(tmp_path / "q"), "--db", url)
    assert code == 1
    log = _bug_message(lines, "ValueError", "refine's own bug")
    assert log.parent == state and "redagent cases refine run-1" in log.read_text()


def test_a_bug_log_does_not_keep_a_password_from_the_command_line(capsys, state, monkeypatch):
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("executor check exploded")

    monkeypatch.setattr("redagent.engine.executors.check_execution", broken)
    code, lines = run_main(capsys, "run", "--db", "postgresql+psycopg://ann:hunter2@127.0.0.1:9/x")
    assert code == 1
    logged = _bug_message(lines, "RuntimeError", "executor check exploded").read_text()
    assert "postgresql+psycopg://ann:***@127.0.0.1:9/x" in logged and "hunter2" not in logged


def _failing(error: BaseException) -> Callable[..., object]:
    def list_runs(*_args: object, **_kwargs: object) -> object:
        raise error

    return list_runs


@pytest.mark.anyio
async def test_the_console_shows_a_user_error_with_its_title(url, state, monkeypatch):
    # The Runs screen polls the store on a worker; the store failing there is the user's (a disk, a server).
    monkeypatch.setattr(Store, "list_runs", _failing(StoreError(url, "disk I/O error", doing="read")))
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: notifications(app))
        shown = notifications(app)[0]
        assert shown == f"Store error cannot read store {url}: disk I/O error", shown
        assert not state.exists()


@pytest.mark.anyio
async def test_the_console_shows_a_bug_naming_the_log_with_its_traceback(url, state, monkeypatch):
    monkeypatch.setattr(Store, "list_runs", _failing(RuntimeError("poll exploded")))
    app = RedAgentApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: notifications(app))
        shown = notifications(app)[0]
        assert shown.startswith("Internal error internal error (RuntimeError: poll exploded); traceback in "), shown
        log = Path(LOG.search(shown).group(1))
        assert log.parent == state and "Traceback (most recent call last)" in log.read_text()
        assert "poll exploded" in log.read_text() and "redagent console" in log.read_text()
