"""The key footer of the console's screens: tighter spacing on a narrow terminal, so its keys still fit.

Textual's footer cuts the keys that do not fit at the right edge; below COMPACT_BELOW columns this one
drops the padding around each key (Textual's compact style) and the palette's key on the right (ctrl+p
still opens it, and help lists it), which at 80 columns is the room for three or four more of the
screen's own keys. If the keys still do not fit, the keys that switch between the main screens (`r` / `o` /
`s`, the same on every screen) leave the footer first, so the screen's own keys and `?` / `q` stay whole —
at 800×600 in a browser (88 columns) the rollout screen's footer was cut in the middle of a word. Every key
stays listed in the screen's help (`?`) and keeps working.
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.cells import cell_len
from textual import events
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

COMPACT_BELOW = 120
# The app's keys to the main screens (console/app.py): the first to leave a footer that is too narrow.
NAVIGATION = frozenset({"show('runs')", "show('rollouts')", "show('statistics')"})


class KeyFooter(Footer):
    """A Footer that turns compact below COMPACT_BELOW columns and back when the terminal is widened."""

    # A group's label (`] [ Next/prev rollout`) keeps a space after it: compact, Textual's ran into the next key.
    DEFAULT_CSS = "KeyFooter.-compact FooterLabel { margin: 0 1 0 0; }"

    def on_resize(self, event: events.Resize) -> None:
        narrow = event.size.width < COMPACT_BELOW
        self.compact = narrow
        self.show_command_palette = not narrow
        if self.is_mounted and self._bindings_ready:
            self.refresh(recompose=True)  # which keys fit depends on the width

    def compose(self) -> Iterator[Widget]:
        hidden = self.hidden_actions()
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.action in hidden:
                continue
            yield widget

    def hidden_actions(self) -> frozenset[str]:
        """NAVIGATION when the screen's keys, as a compact footer draws them, are wider than the footer."""
        if not self.compact or not self._bindings_ready:
            return frozenset()
        widths: dict[str, int] = {}
        for _node, binding, _enabled, _tooltip in self.screen.active_bindings.values():
            if not binding.show:
                continue
            key = cell_len(self.app.get_key_display(binding))
            if binding.group is not None:  # its keys side by side, its description once
                widths.setdefault(binding.action, key + 1)
                widths.setdefault(f"group {binding.group.description}", cell_len(binding.group.description) + 1)
            else:
                widths.setdefault(binding.action, key + cell_len(binding.description) + 2)
        width = self.size.width or self.app.size.width
        return NAVIGATION if sum(widths.values()) > width else frozenset()
