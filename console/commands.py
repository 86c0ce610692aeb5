"""The command palette: jump to a run, case or rollout by id, open the role's screens, run the screen's actions.

What is offered depends on the role and the current screen: researchers get runs, cases and
rollouts (looked up in the store on a thread worker); reviewers, adjudicators and experts get only
their own screen and help, so the palette can never lead a blinded reviewer to an unblinded view.
"""

from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.worker import Worker, WorkerCancelled, WorkerFailed

if TYPE_CHECKING:
    from redagent.store.db import Store

ROLLOUT_ID = re.compile(r"^[0-9a-f]{24}$")  # engine/plan.py: rollout_id is 24 hex digits

SCREEN_TITLES = {
    "runs": "Runs",
    "rollouts": "Rollouts",
    "statistics": "Statistics",
    "audit": "Audit queue",
    "adjudication": "Adjudication queue",
    "case_review": "Case review",
}


class PaletteApp(Protocol):
    """What the palette uses of the console app (console/app.py's `RedAgentApp`, which registers this provider,
    so this module does not import it): the store and role, the ids kept between openings, the role's screens."""

    store: Store | None
    role: str
    palette_ids: tuple[list[str], list[tuple[str, str]]] | None

    def allowed(self, name: str) -> bool: ...

    def show(self, name: str, **kwargs: Any) -> None: ...

    def action_help(self) -> None: ...

    def run_worker(self, *args: Any, **kwargs: Any) -> Worker[Any]: ...


class RedAgentCommands(Provider):
    """Commands for the current role and screen, plus every run and case id (researchers only)."""

    async def startup(self) -> None:
        # Not awaited here: the palette would say "No matches found" for the seconds a big library takes.
        # The ids of the last opening (kept on the app) are offered at once; a fresh read replaces them.
        self._runs: list[str] = []
        self._cases: list[tuple[str, str]] = []
        self._loading: Worker | None = None
        app = self._app
        if app.store is None or app.role != "researcher":
            return
        cached = getattr(app, "palette_ids", None)
        if cached is not None:
            self._runs, self._cases = cached
        self._loading = app.run_worker(
            self._load_ids, thread=True, exit_on_error=False, group="palette", name="palette ids"
        )

    async def _ids_loaded(self) -> None:
        """Wait for the fresh read of run and case ids (once), keeping it on the app for the next opening."""
        worker, self._loading = self._loading, None
        if worker is None:
            return
        result = await _outcome(worker)
        if result is not None:
            self._runs, self._cases = result
            self._app.palette_ids = result

    @property
    def _app(self) -> PaletteApp:
        return self.app  # type: ignore[return-value]

    def _load_ids(self) -> tuple[list[str], list[tuple[str, str]]]:
        from redagent.cases.loader import CaseFileError, load_cases

        store = self._app.store
        runs = [row.run_id for row in store.list_runs()] if store is not None else []
        try:
            cases = [(case.id, case.title) for case in load_cases()]
        except CaseFileError:
            cases = []  # a broken library must not break the palette; `redagent cases validate` says why
        return runs, cases

    def _lookup_rollout(self, rollout_id: str) -> dict[str, Any] | None:
        store = self._app.store
        if store is None:  # not open (yet, or it failed to): nothing to find
            return None
        record = store.get_rollout(rollout_id)
        return None if record is None else {"id": record.id, "run_id": record.run_id, "case_id": record.case_id}

    def _commands(self) -> list[tuple[str, Any, str]]:
        """(text, callback, help) for everything except the id lookups."""
        app = self._app
        commands: list[tuple[str, Any, str]] = []
        for name, title in SCREEN_TITLES.items():
            if app.allowed(name):
                commands.append((f"Go to {title}", partial(app.show, name), f"open the {title} screen"))
        commands.append(("Help for this screen", app.action_help, "keys and help of the current screen"))
        # The current screen's own actions (start, stop, resume, …), from its bindings.
        for binding in getattr(self.screen, "BINDINGS", []):
            if getattr(binding, "id", None) and getattr(binding, "description", ""):
                run = partial(self.screen.run_action, binding.action)
                commands.append((binding.description, run, binding.tooltip or binding.id))
        if app.role == "researcher":
            for run_id in self._runs:
                commands.append((f"Run {run_id}", partial(app.show, "runs", run_id=run_id), "select this run"))
                commands.append(
                    (
                        f"Rollouts of {run_id}",
                        partial(app.show, "rollouts", run_id=run_id),
                        "browse this run's rollouts",
                    )
                )
                commands.append(
                    (
                        f"Statistics of {run_id}",
                        partial(app.show, "statistics", run_id=run_id),
                        "this run's ASR, judge audit and utility",
                    )
                )
            for case_id, title in self._cases:
                commands.append(
                    (
                        f"Case {case_id}",
                        partial(app.show, "rollouts", filters={"case": case_id}),
                        f"rollouts of this case: {title}",
                    )
                )
        return commands

    async def discover(self) -> Hits:
        for text, callback, help_text in self._commands():
            if not text.startswith(("Run ", "Rollouts of ", "Statistics of ", "Case ")):
                yield DiscoveryHit(text, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        if self._loading is not None and not self._runs and not self._cases:
            # Nothing read yet: say so instead of "No matches found", then offer the ids once they are in.
            yield Hit(
                0.01,
                "Loading runs and cases…",
                lambda: None,
                text="Loading runs and cases…",
                help="the store and the case library are being read; matching ids appear here",
            )
            await self._ids_loaded()
        elif self._loading is not None and self._loading.is_finished:
            await self._ids_loaded()
        for text, callback, help_text in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), callback, text=text, help=help_text)
        needle = query.strip().lower()
        if self._app.role == "researcher" and ROLLOUT_ID.match(needle):
            worker = self._app.run_worker(
                partial(self._lookup_rollout, needle),
                thread=True,
                exit_on_error=False,
                group="palette",
                name="rollout lookup",
            )
            found = await _outcome(worker)
            if found is not None:
                yield Hit(
                    1.0,
                    f"Rollout {found['id']}  ({found['case_id']}, {found['run_id']})",
                    partial(self._app.show, "rollout", rollout_id=found["id"]),
                    text=f"Rollout {found['id']}",
                    help="open this rollout's evidence",
                )


async def _outcome(worker: Worker) -> Any:
    """The worker's result, or None if it failed (a store error must not take the palette down)."""
    try:
        return await worker.wait()
    except (WorkerFailed, WorkerCancelled):
        return None
