"""Driving matrix runs from the console: each run on its own thread and asyncio loop, stoppable from the UI.

The engine (`engine/matrix.py`) does the work; this only gives it a thread, keeps each runner with
the loop it runs on so that a stop can be delivered thread-safely (`loop.call_soon_threadsafe`),
and reports the outcome as messages. It belongs to the app, not to the Runs screen, so a run keeps
going (and stays stoppable) while the user browses other screens.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from redagent.console.messages import RunEnded, RunFailed, RunStarted
from redagent.engine.matrix import RunSpec, resume_run, start_run
from redagent.engine.runner import MatrixRunner
from redagent.errors import UserError
from redagent.store.db import Store, StoreError

if TYPE_CHECKING:
    from textual.app import App


@dataclass
class ActiveRun:
    runner: MatrixRunner
    loop: asyncio.AbstractEventLoop


class RunControl:
    """The runs this console process is driving, by run id."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._active: dict[str, ActiveRun] = {}
        self._lock = threading.Lock()

    def start(self, store: Store, spec: RunSpec) -> None:
        self._launch(lambda: start_run(store, spec), store, resumed=False, name="start run")

    def resume(self, store: Store, run_id: str) -> None:
        self._launch(lambda: resume_run(store, run_id), store, resumed=True, name=f"resume {run_id}")

    def drives(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._active

    def stop(self, run_id: str) -> bool:
        """Ask a run driven here to stop scheduling: rollouts waiting on a model server are cancelled (a resume runs
        them again), calibration rollouts in flight finish; False if it is not driven here."""
        with self._lock:
            active = self._active.get(run_id)
        if active is None:
            return False
        try:
            active.loop.call_soon_threadsafe(active.runner.request_stop)
        except RuntimeError:  # the loop closed meanwhile: the run has already returned
            return False
        return True

    def active(self) -> list[str]:
        """The runs this console is driving now (quitting would stop them)."""
        with self._lock:
            return list(self._active)

    def stop_all(self) -> list[str]:
        with self._lock:
            run_ids = list(self._active)
        return [run_id for run_id in run_ids if self.stop(run_id)]

    def _launch(self, make_runner: Callable[[], MatrixRunner], store: Store, *, resumed: bool, name: str) -> None:
        self.app.run_worker(
            lambda: self._drive(make_runner, store, resumed),
            thread=True,
            exit_on_error=False,
            group="engine",
            name=name,
        )

    def _drive(self, make_runner: Callable[[], MatrixRunner], store: Store, resumed: bool) -> None:
        """Runs in a worker thread: plan (writes the run), then run the engine on a loop of this thread."""
        try:
            runner = make_runner()
        except UserError as exc:  # from the form or by resuming: shown as one line, the run is not created
            self.app.post_message(RunFailed(None, exc))
            return
        run_id = runner.run_record.id
        loop = asyncio.new_event_loop()
        with self._lock:
            self._active[run_id] = ActiveRun(runner, loop)
        self.app.post_message(RunStarted(run_id, resumed))
        try:
            progress = loop.run_until_complete(runner.run())
        except Exception as exc:  # any failure of a monitored run becomes a message and a stored status
            self._mark_failed(store, run_id)
            self.app.post_message(RunFailed(run_id, exc))
        else:
            run = store.get_run(run_id)
            self.app.post_message(
                RunEnded(run_id, run.status if run else "unknown", progress.completed, progress.planned)
            )
        finally:
            with self._lock:
                self._active.pop(run_id, None)
            loop.close()

    @staticmethod
    def _mark_failed(store: Store, run_id: str) -> None:
        # The runner marks writer failures itself; anything else would leave the run "running" forever.
        try:
            run = store.get_run(run_id)
            if run is not None and run.status == "running":
                store.update_run(run_id, status="failed", finished_at=datetime.now(UTC))
        except StoreError:
            pass  # the store itself is what failed; the message already says so
