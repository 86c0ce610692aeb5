"""The live progress line of `redagent run` and `redagent replay`, laid out so its figures are never cut.

One line on a wide terminal: run id, bar, rollouts done/planned, rate, ETA, invalid, execution ASR, elapsed.
When that does not fit (an 80-column terminal: the run id alone is 24 columns), the run id and the bar take
the first line and the figures the line below, each figure whole; on a terminal narrower than the figures
they flow onto further lines instead of being squeezed. On one line at 80 columns rich shrank every column to
fit, and the counts came out as "3…".
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.columns import Columns
from rich.console import RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn
from rich.table import Column, Table
from rich.text import Text

BAR_MIN = 10  # the narrowest bar worth drawing on the one-line layout


def _figures() -> list[ProgressColumn]:
    whole = Column(no_wrap=True)  # on one line, only the bar gives up width
    return [
        MofNCompleteColumn(table_column=whole),
        TextColumn("{task.fields[rate]:>7.1f}/s", table_column=whole),
        TextColumn("ETA {task.fields[eta]}", table_column=whole),
        TextColumn("invalid {task.fields[invalid]}", table_column=whole),
        TextColumn("exec ASR {task.fields[asr]}", table_column=whole),
        TimeElapsedColumn(table_column=whole),
    ]


class RunProgress(Progress):
    """A `Progress` whose tasks carry the fields rate, eta, invalid and asr (see `redagent run`)."""

    def __init__(self, **options) -> None:
        self.head: list[ProgressColumn] = [
            TextColumn("[bold]{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis")),
            BarColumn(),
        ]
        self.figures = _figures()
        super().__init__(*self.head, *self.figures, **options)

    def get_renderables(self) -> Iterable[RenderableType]:
        for task in self.tasks:
            if task.visible:
                yield from self._task_lines(task)

    def _task_lines(self, task: Task) -> Iterable[RenderableType]:
        figures = [self._cell(column, task) for column in self.figures]
        description = Text.from_markup(f"[bold]{task.description}")
        one_line = description.cell_len + BAR_MIN + sum(f.cell_len for f in figures) + len(figures) + 1
        if one_line <= self.console.width:
            yield self._grid(self.columns, task)
        else:
            yield self._grid(self.head, task)
            yield Columns(figures, padding=(0, 2))

    @staticmethod
    def _cell(column: ProgressColumn, task: Task) -> Text:
        """A figure as text, without the padding that aligns it in a column (the rate's)."""
        cell = column(task)
        text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
        return text[len(text.plain) - len(text.plain.lstrip()) :]

    def _grid(self, columns: Iterable[ProgressColumn | str], task: Task) -> Table:
        chosen = [c for c in columns if not isinstance(c, str)]
        table = Table.grid(*(c.get_table_column().copy() for c in chosen), padding=(0, 1), expand=self.expand)
        table.add_row(*(c(task) for c in chosen))
        return table
