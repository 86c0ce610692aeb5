"""The help screen: the current screen's HELP (markdown) and a table of its keys and the app's (ids, tooltips)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Markdown, Static

from redagent.console.screens import ScreenUnavailable, screen_class, screen_name


def own_bindings(cls: type) -> list[Binding]:
    """The Binding objects declared by the project's classes in `cls`'s MRO (not Textual's built-ins)."""
    found: list[Binding] = []
    for klass in cls.__mro__:
        if not klass.__module__.startswith("redagent."):
            continue
        for binding in klass.__dict__.get("BINDINGS", []):
            if isinstance(binding, Binding):
                found.append(binding)
    return found


class HelpScreen(ModalScreen[None]):
    """Help for the screen named `screen_name` (a name from console/screens/__init__.py's SCREENS, or the
    screen's SCREEN_NAME)."""

    SCREEN_NAME = "help"
    HELP = """\
# Help

Every key of the screen below and of the whole app, with the id it can be remapped by and what it
does. Press `escape` or `?` to close.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close", id="close-help", tooltip="Close the help screen"),
    ]

    def __init__(self, screen_name: str) -> None:
        super().__init__()
        self.screen_name = screen_name

    def _live_screen(self) -> Screen | None:
        for screen in reversed(self.app.screen_stack):
            if screen is not self and screen_name(screen) == self.screen_name:
                return screen
        return None

    def _widget_bindings(self) -> list[Binding]:
        """The keys of the project's widgets on the live screen (the evidence panes' tab keys, a pane's
        maximise): they work on that screen too, though the screen does not declare them."""
        screen = self._live_screen()
        if screen is None:
            return []
        classes = {type(w) for w in screen.walk_children() if type(w).__module__.startswith("redagent.")}
        return [b for cls in sorted(classes, key=lambda c: c.__qualname__) for b in own_bindings(cls)]

    def _screen_type(self) -> type[Screen] | None:
        live = self._live_screen()
        if live is not None:
            return type(live)
        try:
            return screen_class(self.screen_name)
        except ScreenUnavailable:
            return None

    def compose(self) -> ComposeResult:
        cls = self._screen_type()
        text = getattr(cls, "HELP", None) or f"# {self.screen_name}\n\nNo help for this screen."
        with VerticalScroll(id="help-body"):
            yield Markdown(text, id="help-text")
            yield Static("Keys", classes="help-heading")
            yield DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)
            yield Static("escape closes", classes="help-hint")

    def on_mount(self) -> None:
        table = self.query_one("#help-keys", DataTable)
        table.add_columns("key", "id", "what it does", "where")
        seen: set[str] = set()
        rows = [(b, "this screen") for b in own_bindings(self._screen_type() or Screen)]
        rows += [(b, "on its panes") for b in self._widget_bindings()]
        rows += [(b, "everywhere") for b in own_bindings(type(self.app)) if self._app_binding_active(b)]
        for binding, where in rows:
            if binding.id in seen:
                continue
            seen.add(binding.id or binding.key)
            keys = ", ".join(self.app.get_key_display(Binding(key, "")) for key in binding.key.split(","))
            table.add_row(keys, binding.id or "", binding.tooltip or binding.description, where)
        table.focus()

    def _app_binding_active(self, binding: Binding) -> bool:
        action, _, params = binding.action.partition("(")
        parameters = tuple(p.strip(" '\")") for p in params.split(",")) if params else ()
        return self.app.check_action(action, parameters) is not False
