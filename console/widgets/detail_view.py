"""One evidence entry in full: a tool call's arguments, a tool result, a receipt, a state change, a CLI's transcript.

The panes give each entry one line (or a few) cut at their edge; `enter` on an entry opens this view over
the screen: the whole entry, wrapped to the terminal's width, scrollable with the usual keys. What it shows
is built by the caller (console/widgets/evidence.py) from the stored evidence, cleaned and bounded there.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from redagent.console.widgets.footer import KeyFooter


class DetailView(ModalScreen[None]):
    """`title` over `content`, wrapped and scrollable; escape (or enter again) closes it."""

    SCREEN_NAME = "detail"
    HELP = """\
# Evidence detail

One entry of the evidence in full, wrapped: a tool call with all its arguments, a tool result as the
agent saw it (and, if it was tampered with, what the service returned), a receipt with its arguments,
effect and error, a state change before and after, or a real agent CLI's own transcript read as a
conversation (user, assistant, tool call and tool result turns).

- the arrows, `pageup` / `pagedown`, `home` / `end` scroll;
- `escape` (or `enter`) goes back to the panes, where the cursor still is.

Text from the agent is shown as text: control and bidi characters are removed, and a very long
entry is cut with a line saying how much was left out.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter", "close", "Close", id="close-detail", tooltip="Back to the evidence panes"),
    ]
    DEFAULT_CSS = """
    DetailView { align: center middle; }
    DetailView #detail-body {
        width: 100%; height: 1fr; border: round $accent; border-title-color: $text; padding: 0 1;
        background: $surface;
    }
    DetailView #detail-text { width: 1fr; height: auto; }
    """

    def __init__(self, title: str, content: Text) -> None:
        super().__init__()
        self.title_text = title
        self.content = content

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-body") as body:
            body.border_title = Text(self.title_text)  # a Text: a tool's name is never read as markup
            body.border_subtitle = "escape closes"
            yield Static(self.content, id="detail-text", markup=False)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#detail-body", VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)
