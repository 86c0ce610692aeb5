"""The key footer of the console's screens: tighter spacing on a narrow terminal, so its keys still fit.

Textual's footer cuts the keys that do not fit at the right edge; below COMPACT_BELOW columns this one
drops the padding around each key (Textual's compact style) and the palette's key on the right (ctrl+p
still opens it, and help lists it), which at 80 columns is the room for three or four more of the
screen's own keys. Every key stays listed in the screen's help (`?`).
"""

from __future__ import annotations

from textual import events
from textual.widgets import Footer

COMPACT_BELOW = 120


class KeyFooter(Footer):
    """A Footer that turns compact below COMPACT_BELOW columns and back when the terminal is widened."""

    def on_resize(self, event: events.Resize) -> None:
        narrow = event.size.width < COMPACT_BELOW
        self.compact = narrow
        self.show_command_palette = not narrow
