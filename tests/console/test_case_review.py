"""The case review screen under the pilot: an expert reviews the round's cases in order with the rubric and a
decision, reviews are write-once with reasoned corrections, the other expert's reviews never show, and the
agreement per rubric item appears once both experts are done. Also `redagent cases round new / status`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from redagent.console.rounds_cli import rounds_app
from redagent.console.screens.case_review import CaseReviewScreen, ReasonDialog
from redagent.judges.rounds import new_round
from redagent.store.db import open_store
from tests.console.test_audit_screens import ScreenHost, drive, screen_text, settle

PASS = dict.fromkeys(
    ("ivc_consistency", "threat_model_compliance", "task_attack_coherence", "verifier_correctness"), "pass"
)


@pytest.fixture
def round_store(tmp_path) -> dict[str, Any]:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        round_id = new_round(store, 3, 11, ["ann", "ben"], round_id="round-test")
        cases = [c.case_id for c in store.round_cases(round_id)]
        for case_id in cases:
            store.submit_review(round_id, case_id, "ben", PASS, "accept", "BEN-NOTE-SENTINEL")
    return {"url": url, "round_id": round_id, "cases": cases}


def test_an_expert_reviews_the_round_and_then_sees_agreement(round_store):
    url, cases = round_store["url"], round_store["cases"]
    app = ScreenHost(url, "ann", CaseReviewScreen)

    async def scenario(pilot) -> None:
        screen = app.screen
        text = screen_text(app)
        assert screen.current.case_id == cases[0] and "0/3 reviewed" in text
        assert "IVC path" in text and "Task" in text and "BEN-NOTE-SENTINEL" not in text
        assert "Agreement is shown when both" in text
        # incomplete rubric: refused with a message
        await pilot.press("1", "a", "ctrl+s")
        await settle(pilot)
        assert "set every rubric item first" in screen_text(app)
        # 1 → pass, 2 → pass, 3 → fail (two presses), 4 → pass; accept; submit
        await pilot.press("2", "3", "3", "4", "a", "ctrl+s")
        await settle(pilot)
        assert "1/3 reviewed" in screen_text(app) and screen.current.case_id == cases[1]
        for _ in cases[1:]:
            await pilot.press("1", "2", "3", "4", "v", "ctrl+s")
            await settle(pilot)
        text = screen_text(app)
        assert "3/3 reviewed" in text and "Agreement of the two experts (3 cases" in text
        assert "BEN-NOTE-SENTINEL" not in text
        # write-once, then a correction with its reason
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "already reviewed" in screen_text(app)
        await pilot.press("x", "c")
        await settle(pilot)
        assert isinstance(app.screen, ReasonDialog)
        await pilot.press(*"verifier misses a path", "enter")
        await settle(pilot)
        assert app.screen is screen and "review corrected" in screen_text(app)

    drive(app, scenario, size=(140, 40))
    with open_store(url) as store:
        mine = [r for r in store.case_reviews(round_store["round_id"], first_only=False) if r.expert == "ann"]
    firsts = {r.case_id: r.decision for r in mine if r.version == 1}
    assert [firsts[case_id] for case_id in cases] == ["accept", "revise", "revise"]
    first = next(r for r in mine if r.case_id == cases[0])
    assert first.rubric == {**PASS, "task_attack_coherence": "fail"}
    corrections = [r for r in mine if r.version == 2]
    assert [(r.decision, r.reason) for r in corrections] == [("exclude", "verifier misses a path")]


def test_agreement_table_matches_the_rounds_status_command(round_store):
    url, round_id = round_store["url"], round_store["round_id"]
    with open_store(url) as store:
        for n, case_id in enumerate(round_store["cases"]):
            store.submit_review(
                round_id, case_id, "ann", {**PASS, "ivc_consistency": "fail" if n else "pass"}, "accept"
            )
    status = CliRunner().invoke(rounds_app, ["status", round_id, "--db", url, "--json"])
    assert status.exit_code == 0, status.output
    expected = json.loads(status.output)["items"]
    app = ScreenHost(url, "ben", CaseReviewScreen)

    async def scenario(pilot) -> None:
        from textual.widgets import DataTable

        table = pilot.app.screen.query_one("#agreement", DataTable)
        rows = {table.get_row_at(i)[0]: table.get_row_at(i)[1:] for i in range(table.row_count)}
        assert rows["IVC consistency"] == [
            f"{100 * expected['ivc_consistency']['agreement']:.1f}%",
            f"{expected['ivc_consistency']['kappa']:.3f}"
            if expected["ivc_consistency"]["kappa_defined"]
            else "undefined",
        ]
        assert rows["decision"] == ["100.0%", "undefined"]
        assert "ann" not in screen_text(pilot.app).split("expert ben")[1].split("\n")[0]

    drive(app, scenario, size=(140, 40))


def test_unknown_expert_is_a_message(round_store):
    app = ScreenHost(round_store["url"], "eve", CaseReviewScreen)

    async def scenario(pilot) -> None:
        assert "'eve' is not an expert of any review round" in screen_text(pilot.app)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "no case to review" in screen_text(pilot.app)

    drive(app, scenario)


def test_rounds_cli_new_and_errors(tmp_path):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    made = runner.invoke(rounds_app, ["new", "--n", "6", "--seed", "5", "--experts", "ann,ben", "--db", url, "--json"])
    assert made.exit_code == 0, made.output
    result = json.loads(made.output)
    assert result["n"] == 6 and [c["position"] for c in result["cases"]] == list(range(1, 7))
    again = runner.invoke(rounds_app, ["new", "--n", "6", "--seed", "5", "--experts", "ann,ben", "--db", url, "--json"])
    assert [c["case_id"] for c in json.loads(again.output)["cases"]] == [c["case_id"] for c in result["cases"]]
    for args, message in (
        (["new", "--n", "999", "--experts", "ann,ben"], "larger than the library"),
        (["new", "--experts", "ann"], "exactly two different experts"),
        (["status", "round-nope"], "no review round 'round-nope'"),
    ):
        bad = runner.invoke(rounds_app, [*args, "--db", url])
        assert bad.exit_code == 2 and message in bad.output, bad.output


def test_the_footer_shows_the_rubric_and_decision_keys(round_store):
    """The rubric keys were in help only; an expert sets them on every case, so the footer names them."""
    app = ScreenHost(round_store["url"], "ann", CaseReviewScreen)

    async def scenario(pilot) -> None:
        footer = screen_text(app).rstrip().splitlines()[-1]
        for shown in (
            "1 IVC",
            "2 Threat model",
            "3 Coherence",
            "4 Verifier",
            "a Accept",
            "v Revise",
            "x Exclude",
            "^s Submit",
        ):
            assert shown in footer, f"{shown!r} not in the footer: {footer!r}"

    drive(app, scenario, size=(180, 50))


def test_the_case_text_keeps_the_middle_at_100_columns(round_store):
    """Two fixed 44-column side panels left the case text ~10 columns wide at 100×30."""
    app = ScreenHost(round_store["url"], "ann", CaseReviewScreen)

    async def scenario(pilot) -> None:
        assert app.screen.query_one("#case-scroll").size.width >= 40

    drive(app, scenario, size=(100, 30))
