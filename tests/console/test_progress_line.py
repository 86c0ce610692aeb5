"""The progress line of `redagent run`: every figure shows whole at any terminal width, never cut to "…"."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from redagent.console.progress_line import RunProgress

RUN_ID = "run-20260101-090000-aaaa"  # the shape of a real run id: 24 columns
FIGURES = ["31280/37200", "31.2/s", "ETA 1915s", "invalid 1207", "exec ASR 41.3%", "0:00:00"]


def rendered(width: int, description: str = RUN_ID) -> list[str]:
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)
    progress = RunProgress(console=console, auto_refresh=False)
    progress.add_task(description, total=37200, completed=31280, rate=31.2, eta="1915s", invalid=1207, asr="41.3%")
    console.print(progress.get_renderable())
    return [line.rstrip() for line in console.file.getvalue().splitlines()]


@pytest.mark.parametrize("width", [40, 60, 80, 100])
def test_every_figure_shows_whole_on_a_narrow_terminal(width):
    lines = rendered(width)
    text = "\n".join(lines)
    assert "…" not in text
    assert all(len(line) <= width for line in lines)
    for figure in FIGURES:
        assert sum(figure in line for line in lines) == 1, (figure, lines)  # whole, on one line, once
    assert lines[0].startswith(RUN_ID)  # the run id and bar above, the figures below


def test_at_80_columns_the_counts_come_first_below_the_run_id():
    lines = rendered(80)
    assert len(lines) == 2 and lines[1].startswith("31280/37200")


def test_a_wide_terminal_keeps_one_line():
    (line,) = rendered(160)
    assert line.startswith(RUN_ID) and all(figure in line for figure in FIGURES)


def test_a_description_wider_than_the_terminal_is_cut_but_the_figures_are_not():
    lines = rendered(80, description="r" * 200)
    assert "…" in lines[0]
    assert all(sum(figure in line for line in lines[1:]) == 1 for figure in FIGURES)
