"""The help screen: the current screen's HELP (markdown) and a table of its keys and the app's (ids, tooltips)."""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Markdown, Static

from redagent.console.screens import ScreenUnavailable, screen_class, screen_name

HELP_WIDTH = 100  # the help's width where the terminal allows (styles.tcss: #help-body)


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
        self.keys: list[tuple[str, str, str, str]] = []  # (keys, binding id, what it does, where)

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
            yield DataTable(id="help-keys", cursor_type="none", zebra_stripes=True, show_cursor=False)
            yield Static("escape closes", classes="help-hint")

    def on_mount(self) -> None:
        table = self.query_one("#help-keys", DataTable)
        seen: set[str] = set()
        rows = [(b, "this screen") for b in own_bindings(self._screen_type() or Screen)]
        rows += [(b, "on its panes") for b in self._widget_bindings()]
        rows += [(b, "everywhere") for b in own_bindings(type(self.app)) if self._app_binding_active(b)]
        for binding, where in rows:
            if binding.id in seen:
                continue
            seen.add(binding.id or binding.key)
            keys = ", ".join(self.app.get_key_display(Binding(key, "")) for key in binding.key.split(","))
            self.keys.append((keys, binding.id or "", binding.tooltip or binding.description, where))
        self._fill(table)
        # The help's own scroll takes the keys, at its top: focusing the table scrolled the help down to it,
        # and the help opened in the middle of a sentence.
        body = self.query_one("#help-body", VerticalScroll)
        body.focus(scroll_visible=False)
        body.scroll_home(animate=False, immediate=True)

    def on_resize(self, event: events.Resize) -> None:
        if self.keys:
            self._fill(self.query_one("#help-keys", DataTable))

    def _fill(self, table: DataTable) -> None:
        """The keys, each column as wide as it must be and what a key does wrapped into what is left: wider
        than the help, the table was cut at its right edge (or scrolled sideways, cutting the key column)."""
        key_width = max(3, *(cell_len(row[0]) for row in self.keys))
        id_width = max(2, *(cell_len(row[1]) for row in self.keys))
        where_width = max(5, *(cell_len(row[3]) for row in self.keys))
        body = self.query_one("#help-body", VerticalScroll)
        # The help's inner width (its CSS width, less border, padding and scrollbar) less each cell's padding.
        inner = min(HELP_WIDTH, int(self.app.size.width * 0.95)) - 2 - 4 - body.styles.scrollbar_size_vertical
        what_width = max(12, inner - key_width - id_width - where_width - 2 * 4)
        table.clear(columns=True)
        table.add_column("key", width=key_width)
        table.add_column("id", width=id_width)
        table.add_column("what it does", width=what_width)
        table.add_column("where", width=where_width)
        for keys, binding_id, what, where in self.keys:
            table.add_row(keys, binding_id, Text(what), where, height=None)

    def _app_binding_active(self, binding: Binding) -> bool:
        action, _, params = binding.action.partition("(")
        parameters = tuple(p.strip(" '\")") for p in params.split(",")) if params else ()
        return self.app.check_action(action, parameters) is not False
