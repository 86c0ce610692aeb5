"""The project's one error type for users, and where a bug's traceback goes.

`UserError` is the base of every exception a user can cause — a bad case file, an unknown model, a dead
endpoint, a store that cannot be opened, access refused, a bad plan or selection, no sandbox — and of
nothing else. Each subclass names its kind in a class-level `title` ("Case file error", "Store error", …);
`line()` is the one line the user reads, with the file and field where there is one. The command line
catches it once (`console/cli.py`: `error: <line>`, exit 2) and the console shows it once
(`console/failures.py`: a notification titled `title`). Subclasses keep their old builtin base too
(`class PlanError(UserError, ValueError)`), so code that caught them by it needs no change.

Every other exception is a bug: `record_bug` writes its traceback to a log file (under
`$XDG_STATE_HOME/redagent/logs`, default `~/.local/state/redagent/logs`; at most `KEEP_LOGS` files of at
most `MAX_LOG_BYTES` each) and the user is shown one line naming that file.

This module is a leaf: it imports nothing of the project, so every package can import it without an edge
back up the layers.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path
from typing import ClassVar

KEEP_LOGS = 20  # bug logs kept; the oldest go first
MAX_LOG_BYTES = 256 * 1024  # a traceback longer than this (a huge message) is cut, its end kept


class UserError(Exception):
    """An error the user caused and can fix; `line()` says what, in one line, and `title` what kind.

    `file` and `field` (attributes, None where there is none) say where; `line()` puts them in front of
    the message unless the message already names the file (or, without one, starts with the field).
    """

    title: ClassVar[str] = "Error"
    file: str | None = None
    field: str | None = None

    def __init__(self, *args: object, file: str | os.PathLike[str] | None = None, field: str | None = None) -> None:
        super().__init__(*args)
        if file is not None:
            self.file = os.fspath(file)
        if field is not None:
            self.field = field

    def line(self) -> str:
        """The one line the user reads: `file: field: message` (first line of the message)."""
        text = str(self)
        text = text.splitlines()[0] if text.strip() else self.title.lower()
        if (self.file and self.file in text) or (self.field and not self.file and text.startswith(self.field)):
            return text
        where = ": ".join(part for part in (self.file, self.field) if part)
        return f"{where}: {text}" if where else text


def first_line(exc: BaseException) -> str:
    """A user error's `line()`, else the first line of any exception's message (its type if it has none)."""
    if isinstance(exc, UserError):
        return exc.line()
    text = str(exc)
    return text.splitlines()[0] if text.strip() else type(exc).__name__


def log_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "redagent" / "logs"


def record_bug(exc: BaseException, context: str = "") -> Path | None:
    """Write `exc`'s traceback (and `context`, e.g. the command line) to a new log file, keeping the
    newest `KEEP_LOGS`; the file's path, or None when no file could be written anywhere."""
    text = "".join(traceback.format_exception(exc))
    if context:
        text = f"{context}\n\n{text}"
    data = text.encode("utf-8", "backslashreplace")
    if len(data) > MAX_LOG_BYTES:
        data = b"[cut: the start of the traceback]\n" + data[-MAX_LOG_BYTES:]
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    folder = log_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, name = tempfile.mkstemp(prefix=f"bug-{stamp}-", suffix=".log", dir=folder)
    except OSError:
        try:  # the state folder cannot be written (a read-only home): the temporary folder (mkstemp: 0600)
            fd, name = tempfile.mkstemp(prefix=f"redagent-bug-{stamp}-", suffix=".log")
        except OSError:
            return None
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    path = Path(name)
    _prune(path.parent, "redagent-bug-*.log" if path.name.startswith("redagent-") else "bug-*.log")
    return path


def _prune(folder: Path, pattern: str) -> None:
    try:
        logs = sorted(folder.glob(pattern), key=lambda path: path.stat().st_mtime)
        for old in logs[:-KEEP_LOGS]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # another process pruned at the same time: the next bug prunes again


def bug_line(exc: BaseException, log: Path | None) -> str:
    """The one line that reports a bug: what it was and where its traceback went."""
    where = f"traceback in {log}" if log is not None else "its traceback could not be written to a log file"
    return f"internal error ({type(exc).__name__}: {first_line(exc)}); {where} — please report it"
