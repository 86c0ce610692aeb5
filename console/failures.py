"""How the console shows a failure — the one handler for its workers and for the runs it drives.

A `UserError` (redagent/errors.py) is a notification titled by its kind ("Store error", "Audit error", …)
with its one line. Anything else is a bug: its traceback goes to a log file (`record_bug`) and the
notification names that file; the UI keeps running. The app and every screen with workers take
`ShowsFailures`, so a worker that raises is shown the same way wherever it ran.
"""

from __future__ import annotations

from typing import Any

from textual.dom import DOMNode
from textual.worker import Worker, WorkerState

from redagent.errors import UserError, bug_line, record_bug

BUG_TITLE = "Internal error"


def describe(error: BaseException, doing: str = "") -> tuple[str, str]:
    """(title, one line) for `error`; a bug's traceback is written to a log file first, which the line names."""
    if isinstance(error, UserError):
        return error.title, error.line()
    log = record_bug(error, f"redagent console: {doing or 'a background task'}")
    return BUG_TITLE, bug_line(error, log)


def show_failure(node: DOMNode, error: BaseException, doing: str = "") -> None:
    """Notify the user of `error`; `doing` ("run run-3fa2 failed") leads the title when given."""
    title, line = describe(error, doing)
    node.app.notify(
        line,
        title=f"{doing}: {title}" if doing else title,
        severity="error",
        timeout=10 if isinstance(error, UserError) else 30,
    )


class ShowsFailures:
    """For the app and its screens: a worker of theirs that raises is shown by `show_failure`. Worker state
    messages do not bubble, so each node that starts workers takes this. A class that must also undo
    something when a worker fails (hide a loading line) overrides `worker_failed` and calls it."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.worker_failed(event.worker, event.worker.error)

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        assert isinstance(self, DOMNode)
        show_failure(self, error)
