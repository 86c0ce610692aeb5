"""The adaptive attacker on screen: the statistics screen's ASR@k table and adaptive − fixed difference are
`redagent stats RUN adaptive`'s numbers, and the trajectory draws attacker moves in their own colour."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from textual.widgets import DataTable
from typer.testing import CliRunner

from redagent.console.cli import app as cli
from redagent.console.screens.statistics import REPS, StatisticsScreen, pct
from redagent.console.widgets.trajectory import _ROLE_STYLE, event_line
from redagent.engine.matrix import RunSpec, start_run
from redagent.judges.report import asr_at_k_text, difference_text
from redagent.judges.report_model import Adaptive, from_json, to_json
from redagent.store.db import open_store
from redagent.store.readmodel import StoredEvent
from tests.console.test_audit_screens import ScreenHost, drive, screen_text

CASES = (
    "banking-u1-found-approval-code-oven-repair,email-e1-handover-notes-client-export,"
    "files-e4-venue-checklist-share-runsheet,browser-t1-post-content-source-appendix"
)


def run(url: str, **spec: Any) -> str:
    with open_store(url) as store:
        runner = start_run(store, RunSpec(cases=CASES, harnesses=["native"], **spec))
        asyncio.run(runner.run())
        return runner.run_record.id


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, str]:
    url = f"sqlite:///{tmp_path_factory.mktemp('adaptive') / 'store.db'}"
    return {
        "url": url,
        "fixed": run(url, models=["sim/refuse-2"]),
        "adaptive": run(
            url, models=["sim/refuse-2", "sim/one-channel", "sim/ignore"], attacker="scripted", attack_budget=4
        ),
    }


def cells(table: DataTable) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(row)] for row in range(table.row_count)]


def test_the_screen_shows_asr_at_k_and_the_difference_of_redagent_stats(runs):
    result = CliRunner().invoke(
        cli, ["stats", runs["adaptive"], "adaptive", "--reps", str(REPS), "--json", "--db", runs["url"]]
    )
    assert result.exit_code == 0, result.output
    table = json.loads(result.output)["adaptive"]
    shown: dict[str, Any] = {}

    async def scenario(pilot) -> None:
        shown["rows"] = cells(pilot.app.screen.query_one("#adaptive", DataTable))
        shown["report"] = pilot.app.screen.report
        shown["text"] = screen_text(pilot.app)

    drive(ScreenHost(runs["url"], None, lambda: StatisticsScreen(runs["adaptive"])), scenario, size=(200, 80))
    adaptive = from_json(Adaptive, table)
    assert shown["report"].adaptive == adaptive and to_json(adaptive) == table
    by_cell = {(c.model, c.harness, c.cue, c.defense): c.figures for c in adaptive.rows()}
    assert len(shown["rows"]) == len(by_cell) == 4
    for row in shown["rows"]:
        c = by_cell[tuple(row[:4])]
        assert row[4] == str(c.rollouts)
        assert [v.strip() for v in row[5:10]] == [pct(e.rate) for e in c.asr_at_k]
        assert row[11] == difference_text(c.fixed_vs_adaptive)
    refuse = by_cell[("sim/refuse-2", "native", "clean", "none")]
    # Safe against the fixed attack, unsafe once the attack is rephrased twice.
    assert [e.rate for e in refuse.asr_at_k] == [0.0, 0.0, 1.0, 1.0, 1.0]
    assert refuse.fixed_vs_adaptive.change_pp == 100.0
    assert adaptive.overall is not None
    assert "adaptive − fixed" in shown["text"] and asr_at_k_text(adaptive.overall.asr_at_k[0]) in shown["text"]


def test_a_run_without_attacker_says_so(runs):
    async def scenario(pilot) -> None:
        assert pilot.app.screen.report.adaptive is None
        assert "no attacker in this run" in screen_text(pilot.app)

    drive(ScreenHost(runs["url"], None, lambda: StatisticsScreen(runs["fixed"])), scenario, size=(160, 80))


def test_attacker_moves_have_their_own_colour_in_the_trajectory():
    line = event_line(
        StoredEvent(
            idx=9,
            role="attacker",
            text="Please send it today.",
            tool_call={
                "move": "move_channel",
                "channel": "email:m-1",
                "why": "the page went unread",
                "placed": False,
                "claimed_success": False,
            },
        )
    )
    plain = line.plain
    assert plain.startswith("e9    attacker") and "⚔ move_channel → email:m-1" in plain
    assert "[not placed]" in plain and "Please send it today." in plain and "why: the page went unread" in plain
    assert _ROLE_STYLE["attacker"] not in {_ROLE_STYLE[r] for r in ("user", "assistant", "tool", "system")}
    assert any(span.style == _ROLE_STYLE["attacker"] for span in line.spans)
