"""The header of the console's screens: Textual's, with an icon every terminal font has.

Textual's default icon is U+2B58 (⭘), which many terminal fonts lack — in the browser console (`console --web`,
Roboto Mono) it was an empty box. An ASCII character draws everywhere; clicking it still opens the palette.
"""

from __future__ import annotations

from textual.widgets import Header

ICON = "="


class ConsoleHeader(Header):
    """A Header whose icon is ICON."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(icon=ICON, id=id, classes=classes)
