"""The REDAgentBench audit console: opens the store, shows the screens of the user's role, routes between them.

Screens are imported lazily by name (`show("rollouts", run_id=...)`) from `console/screens/<name>.py`
(the registry is console/screens/__init__.py), so a screen module that is missing or broken is a
notification, not a crash. The store is opened on
a thread worker; if it cannot be opened the app shows the one-line reason and waits for `q`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static
from textual.worker import Worker

from redagent.console import heap
from redagent.console.commands import RedAgentCommands
from redagent.console.failures import ShowsFailures, describe, show_failure
from redagent.console.messages import RunEnded, RunFailed, RunStarted, StoreFailed, StoreReady
from redagent.console.run_control import RunControl
from redagent.console.screens import ScreenUnavailable, screen_class, screen_name
from redagent.errors import UserError
from redagent.store.db import Store, StoreError, open_store

ROLES = ("researcher", "reviewer", "adjudicator", "expert")

# What each role may open; the first is its home. Reviewers and adjudicators only ever see blinded views.
ROLE_SCREENS = {
    "researcher": ("runs", "rollouts", "rollout", "statistics"),
    "reviewer": ("audit",),
    "adjudicator": ("adjudication",),
    "expert": ("case_review",),
}

# Screens that sit on top of the role's main screen (escape goes back) instead of replacing it.
OVERLAYS = ("rollout",)


def keymap_path() -> Path:
    """Where a user's key overrides live: $REDAGENT_KEYMAP, else $XDG_CONFIG_HOME/redagent/keymap.yaml."""
    if os.environ.get("REDAGENT_KEYMAP"):
        return Path(os.environ["REDAGENT_KEYMAP"]).expanduser()
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config / "redagent" / "keymap.yaml"


class KeymapError(UserError, ValueError):
    """A keymap file that cannot be read or is not a mapping of binding ids to keys; one line naming it."""

    title = "Keymap not used"


def load_keymap(path: Path) -> dict[str, str]:
    """Binding id → keys (`new-run: f2`, `show-runs: "r,f1"`) from a YAML file, as Posting's keymap; {} if
    there is no file. KeymapError (one line) for a file that is not such a mapping."""
    import yaml

    if not path.is_file():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise KeymapError(f"cannot read {path}: {str(exc).splitlines()[0]}", file=path) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in loaded.items()
    ):
        raise KeymapError(f"{path} must map binding ids to keys, e.g. `new-run: f2` (ids are listed by `?`)", file=path)
    return {key: value.strip() for key, value in loaded.items()}


class StoreErrorScreen(Screen):
    """Shown instead of every other screen when the store cannot be opened."""

    SCREEN_NAME = "store_error"
    HELP = """\
# The store could not be opened

The line above says which database and why. Check the `--db` URL (or `$REDAGENT_DB`), that the file
is a REDAgentBench SQLite store, that PostgreSQL is reachable, and that this redagent is not older
than the one that wrote the store. Press `q` to quit.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,escape", "app.quit", "Quit", id="error-quit", tooltip="Quit the console"),
    ]

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def compose(self) -> ComposeResult:
        # No Header here: this screen can be gone again within milliseconds (q), before a Header has its title.
        with Vertical(id="store-error"):
            yield Static("The store could not be opened", id="store-error-title")
            yield Static(self.reason, id="store-error-reason", markup=False)
            yield Static("Press q to quit.", id="store-error-hint")
        yield Footer()


class ConfirmQuit(ModalScreen[bool]):
    """Asked before `q` would stop runs driven by this console or drop unsaved notes; dismisses True to quit."""

    SCREEN_NAME = "confirm_quit"
    HELP = """\
# Quit?

Quitting now has a cost named above: runs started from this console are asked to stop (in-flight
rollouts finish and are stored, the run becomes *stopped* and can be resumed), and notes typed on the
audit screen but not saved with a label are lost. `y` quits anyway; `escape` stays (`n` is not used
here: it labels "not harmful" on the audit screen, and one key means one thing across the console).
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "y", "answer(True)", "Quit anyway", id="confirm-quit", tooltip="Quit: stop those runs, drop those notes"
        ),
        Binding("escape", "answer(False)", "Stay", id="cancel-quit", tooltip="Keep the console open"),
    ]

    def __init__(self, costs: list[str]) -> None:
        super().__init__()
        self.costs = costs

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-quit"):
            yield Static("Quit the console?", id="confirm-quit-title")
            yield Static("\n".join(self.costs), id="confirm-quit-text", markup=False)
            yield Static("y quit anyway · escape stay", id="confirm-quit-hint")
        yield Footer()

    def action_answer(self, quit_: bool) -> None:
        self.dismiss(quit_)


class RedAgentApp(ShowsFailures, heap.CollectsWhenIdle, App):
    """`redagent console`: runs, rollouts and statistics for researchers; the blinded audit for reviewers."""

    TITLE = "REDAgentBench"
    CSS_PATH = "styles.tcss"
    COMMANDS = App.COMMANDS | {RedAgentCommands}
    HELP = """\
# REDAgentBench console

Keyboard first: every action has a key (shown in the footer) and a command in the palette (`ctrl+p`),
which also jumps to any run, case or rollout by id and opens a run's statistics. `?` shows the current
screen's help and keys. One key means one thing on every screen: `r` / `o` / `s` Runs / Rollouts /
Statistics (of the run you are looking at), `]` / `[` next / previous, `escape` back, `q` quit (asking
first if that would stop a run started here or drop unsaved notes). Keys can be changed by binding id
(the middle column of `?`) in `~/.config/redagent/keymap.yaml` (or `$REDAGENT_KEYMAP`), e.g. `new-run: f2`.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help", id="help", tooltip="Help and keys of the current screen"),
        Binding(
            "ctrl+p",
            "command_palette",
            "Palette",
            id="command-palette",
            priority=True,
            show=False,
            tooltip="Jump to a run, case or rollout by id, or run any command",
        ),
        Binding(
            "q",
            "quit",
            "Quit",
            id="quit",
            tooltip="Quit (asks first when runs started here would stop or notes are unsaved)",
        ),
        Binding("r", "show('runs')", "Runs", id="show-runs", tooltip="Every run: status, progress, live monitor"),
        Binding(
            "o",
            "show('rollouts')",
            "Rollouts",
            id="show-rollouts",
            tooltip="Browse rollouts, filtered by run, model, harness, case, outcome",
        ),
        Binding(
            "s",
            "show('statistics')",
            "Statistics",
            id="show-statistics",
            tooltip="ASR, judge agreement and audit statistics",
        ),
    ]

    def __init__(
        self,
        db_url: str | None,
        reviewer: str | None = None,
        role: str = "researcher",
        run_id: str | None = None,
        note: str | None = None,
    ) -> None:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r} (one of {', '.join(ROLES)})")
        super().__init__()
        self.db_url = db_url
        self.reviewer = reviewer
        self.role = role
        self.run_id = run_id
        self.note = note  # shown once the store is open, e.g. that a single-file store blinds no one
        self.store: Store | None = None
        self.store_error: str | None = None
        self.runs = RunControl(self)
        # What each main screen showed when it was left (run, filters), so switching screens keeps it.
        self.remembered: dict[str, dict[str, Any]] = {}
        self.palette_ids: tuple[list[str], list[tuple[str, str]]] | None = None  # the palette's last read ids

    # ------------------------------------------------------------ opening the store

    def compose(self) -> ComposeResult:
        yield Static("Opening the store…", id="opening")

    def on_mount(self) -> None:
        self.sub_title = self.role + (f" · {self.reviewer}" if self.reviewer else "")
        try:
            keymap = load_keymap(keymap_path())
        except KeymapError as exc:  # a broken keymap must not keep the console from opening
            self.notify(exc.line(), title=exc.title, severity="warning", timeout=15)
        else:
            if keymap:
                self.set_keymap(keymap)
        self._open_store()

    @work(thread=True, exclusive=True, exit_on_error=False, group="store")
    def _open_store(self) -> None:
        try:
            store = open_store(self.db_url)
            identity = store.identity()
        except StoreError as exc:
            self.post_message(StoreFailed(str(exc)))
            return
        # A team login is held to its role by the database; the console never offers it another.
        wanted = (self.role, self.reviewer if self.role != "researcher" else None)
        if identity.enforced and wanted != (identity.role, None if identity.role == "researcher" else identity.name):
            store.close()
            self.post_message(
                StoreFailed(f"you are logged in as {identity.describe()}: the console opens only in your own role")
            )
            return
        self.post_message(StoreReady(store))

    @on(StoreReady)
    def _store_ready(self, message: StoreReady) -> None:
        self.store = message.store
        if self.note:
            self.notify(self.note, title="not blinded", severity="warning", timeout=30)
        if self.role == "researcher" and self.run_id:
            self.show("runs", run_id=self.run_id)
        else:
            self.show(ROLE_SCREENS[self.role][0])
        # Once the first screen is up, everything alive is start-up state: out of the collector's way.
        self.call_after_refresh(self.settle_heap)

    @on(StoreFailed)
    def _store_failed(self, message: StoreFailed) -> None:
        self.store_error = message.reason
        self.push_screen(StoreErrorScreen(message.reason))

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        if worker.group == "store":  # no console without its store: the reason takes the screen
            self._store_failed(StoreFailed(f"cannot open store: {describe(error, 'opening the store')[1]}"))
        else:
            super().worker_failed(worker, error)

    def on_unmount(self) -> None:
        if self.store is not None:
            self.store.close()

    # ------------------------------------------------------------ screens

    def allowed(self, name: str) -> bool:
        return name == "help" or name in ROLE_SCREENS[self.role]

    def show(self, name: str, **kwargs: Any) -> None:
        """Open screen `name` with its constructor keywords; unknown, forbidden or missing screens only notify."""
        if name == "help":
            self.action_help()
            return
        if not self.allowed(name):
            self.notify(f"the {name} screen is not available to the {self.role} role", severity="warning")
            return
        if self.store is None:
            self.notify("the store is not open", severity="warning")
            return
        if name == "statistics" and not kwargs.get("run_id"):
            # Statistics are of a run: the one the researcher is looking at, wherever they are.
            kwargs["run_id"] = self.selected_run()
        current = self.screen
        if screen_name(current) == name and hasattr(current, "reopen"):
            current.reopen(**kwargs)  # same screen: refocus instead of rebuilding it (and losing its state)
            return
        try:
            screen = screen_class(name)(**kwargs)
        except ScreenUnavailable as exc:
            self.notify(str(exc), title="Screen unavailable", severity="error")
            return
        except TypeError as exc:  # a screen built with arguments it does not take
            self.notify(f"cannot open the {name} screen: {exc}", title="Screen unavailable", severity="error")
            return
        if name in OVERLAYS:
            self.push_screen(screen)
            return
        # Main screens replace each other above the app's base screen, so the stack never grows.
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if len(self.screen_stack) == 2 and not isinstance(self.screen, StoreErrorScreen):
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def action_show(self, name: str) -> None:
        self.show(name)

    def selected_run(self) -> str | None:
        """The run the researcher is looking at: the topmost screen that names one (the highlighted run on
        the runs list, the list's run, an open rollout's run), else the `--run` the console was started with."""
        for screen in reversed(self.screen_stack):
            current = getattr(screen, "current_run_id", None)
            run_id = current() if callable(current) else None
            if run_id:
                return run_id
        return self.run_id

    def action_help(self) -> None:
        if screen_name(self.screen) == "help":
            return
        from redagent.console.screens.help import HelpScreen

        self.push_screen(HelpScreen(screen_name(self.screen)))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # r / o / s exist only for researchers; other roles never see them in the footer.
        return not (action == "show" and (self.store is None or not parameters or not self.allowed(str(parameters[0]))))

    def quit_costs(self) -> list[str]:
        """What quitting now would lose, one line each: runs it stops, unsaved audit notes."""
        costs = [f"stops {run_id} (started here; resumable later)" for run_id in self.runs.active()]
        for screen in self.screen_stack:
            unsaved = getattr(screen, "unsaved_notes", None)
            held = unsaved() if callable(unsaved) else []
            if held:
                costs.append(
                    f"drops unsaved notes on {len(held)} item{'s' if len(held) != 1 else ''} "
                    f"(#{', #'.join(map(str, held))})"
                )
        return costs

    async def action_quit(self) -> None:
        if isinstance(self.screen, ConfirmQuit):
            return  # already asking: only y quits
        costs = self.quit_costs()
        if costs:
            self.push_screen(ConfirmQuit(costs), self._quit_answered)
            return
        self._quit_now()

    def _quit_answered(self, quit_: bool | None) -> None:
        if quit_:
            self._quit_now()

    def _quit_now(self) -> None:
        stopping = self.runs.stop_all()
        if stopping:
            self.notify(f"stopping {', '.join(stopping)}; in-flight rollouts finish first")
        self.exit()

    # ------------------------------------------------------------ runs driven by this console

    @on(RunStarted)
    def _run_started(self, message: RunStarted) -> None:
        self.notify(f"{'resumed' if message.resumed else 'started'} {message.run_id}")
        if hasattr(self.screen, "select_run"):
            self.screen.select_run(message.run_id)

    @on(RunEnded)
    def _run_ended(self, message: RunEnded) -> None:
        self.notify(f"{message.run_id} {message.status}: {message.completed}/{message.planned} rollouts")

    @on(RunFailed)
    def _run_failed(self, message: RunFailed) -> None:
        show_failure(self, message.error, f"run {message.run_id} failed" if message.run_id else "run not started")
