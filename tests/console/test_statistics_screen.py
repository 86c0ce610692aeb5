"""The statistics screen under the pilot on a judged, audited calibration run: its numbers are those of
`redagent stats RUN_ID <table> --json` (same bootstrap replicates), the tables and bars are drawn, and the
export writes the report files."""

from __future__ import annotations

import json
from typing import Any

import pytest
from textual.widgets import DataTable, Input
from typer.testing import CliRunner

from redagent.console.cli import app as cli
from redagent.console.screens.statistics import REPS, StatisticsScreen, interval, pct
from redagent.judges import audit
from redagent.judges.config import config_for
from redagent.store.db import open_store
from tests.console.test_audit_screens import ScreenHost, build_run, drive, screen_text, settle


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> dict[str, Any]:
    """A run audited under trajectory/rule by two reviewers who disagree now and then, adjudicated."""
    url = f"sqlite:///{tmp_path_factory.mktemp('stats') / 'store.db'}"
    run_id = build_run(url)
    config = config_for("trajectory")
    with open_store(url) as store:
        audit_id = audit.sample(
            store,
            run_id,
            16,
            ["label"],
            2,
            config.config_hash,
            reviewers=("alice", "bob"),
            adjudicator="carol",
            config_name=config.name,
        )
        truth = {r.rollout_id: r.E for r in store.outcome_rows(run_id)}
        items = store.audit_items(audit_id)
        for n, item in enumerate(items):
            right = "harmful" if truth[item.rollout_id] else "not_harmful"
            store.submit_label(audit_id, item.item_id, "alice", right)
            store.submit_label(audit_id, item.item_id, "bob", "unsure" if n % 4 == 0 else right)
        for entry in store.adjudication_queue(audit_id, "carol"):
            rollout = next(i.rollout_id for i in items if i.item_id == entry.item_id)
            store.adjudicate(audit_id, entry.item_id, "carol", "harmful" if truth[rollout] else "not_harmful")
    return {"url": url, "run_id": run_id}


def cli_table(audited: dict[str, Any], table: str) -> Any:
    result = CliRunner().invoke(
        cli, ["stats", audited["run_id"], table, "--reps", str(REPS), "--json", "--db", audited["url"]]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)[table]


def cells(table: DataTable) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(row)] for row in range(table.row_count)]


def test_statistics_match_redagent_stats(audited, tmp_path):
    app = ScreenHost(audited["url"], None, lambda: StatisticsScreen(audited["run_id"]))
    shown: dict[str, Any] = {}

    async def scenario(pilot) -> None:
        screen = pilot.app.screen
        shown["report"] = screen.report
        shown["metrics"] = cells(screen.query_one("#judge-metrics", DataTable))
        shown["matrix"] = cells(screen.query_one("#asr-matrix", DataTable))
        shown["views"] = cells(screen.query_one("#views", DataTable))
        shown["utility"] = cells(screen.query_one("#utility", DataTable))
        shown["text"] = screen_text(pilot.app)
        screen.query_one("#export-path", Input).value = str(tmp_path / "exported")
        screen.set_focus(None)
        await pilot.press("e")
        await settle(pilot)
        shown["after_export"] = screen_text(pilot.app)

    drive(app, scenario, size=(140, 60))
    report = shown["report"].to_json()  # the screen's report, as `redagent stats --json` prints it
    audit_json, asr_json, views_json = (cli_table(audited, name) for name in ("audit", "asr", "views"))
    # the very numbers of the command line (same function, same replicates and seed)
    assert json.loads(json.dumps(report["audit"], default=float)) == audit_json
    assert report["asr"] == asr_json and report["views"] == views_json
    # … and what is drawn says the same
    assert f"Cohen's kappa {audit_json['kappa']:.3f}" in shown["text"]
    assert f"raw agreement {pct(audit_json['agreement'])}" in shown["text"]
    for metric, value, ci, plot in shown["metrics"]:
        entry = audit_json[metric]
        shown_ci = (
            interval(entry["ci_low"], entry["ci_high"])
            if entry["ci_low"] is not None
            else f"none: {entry['why_undefined'] or entry['why_no_interval']}"
        )  # an interval or its reason
        assert (value, ci) == (pct(entry["value"]), shown_ci)
        assert set(plot) <= set("█▏▎▍▌▋▊▉")
    assert [m[0] for m in shown["metrics"]] == ["precision", "recall", "specificity", "f1", "accuracy"]
    for name in ("judged_asr", "audited_asr"):
        assert pct(audit_json[name]["value"]) in shown["text"]
    by_key = {(c["source"], c["model"], c["cue"], c["defense"]): c for c in asr_json}
    assert len(shown["matrix"]) == len(by_key)
    for source, model, cue, defense, native in shown["matrix"]:
        c = by_key[(source, model, cue, defense)]
        assert native.strip() == f"{pct(c['rate'])} ({c['harmful']}/{c['valid']})"
    utility_json = cli_table(audited, "utility")
    assert report["utility"] == utility_json
    drawn = {tuple(row[:4]): row for row in shown["utility"]}
    assert len(drawn) == len(utility_json["cells"]) + 1 and ("all", "all", "all", "all") in drawn
    for c in utility_json["cells"]:
        row = drawn[(c["model"], c["harness"], c["cue"], c["defense"])]
        for column, arm in ((4, "benign"), (7, "under_attack")):
            rate = c[arm]
            assert row[column] == (f"{pct(rate['u'])} ({rate['done']}/{rate['n']})" if rate["n"] else "n/a")
            assert row[column + 1] == (interval(rate["lo"], rate["hi"]) if rate["n"] else "")
        asr = c["execution_asr"]
        assert row[10].strip() == f"{pct(asr['rate'])} ({asr['harmful']}/{asr['valid']})"
    checked = any(utility_json["overall"][arm]["n"] for arm in ("benign", "under_attack"))
    assert ("every utility rate is n/a" in shown["text"]) is not checked
    assert [(v[0], v[1], v[2], v[4], v[5], v[9]) for v in shown["views"]] == [
        (v["a"], v["b"], v["model"], pct(v["a_rate"]), pct(v["b_rate"]), pct(v["diff"])) for v in views_json
    ]
    # export: the same files as `redagent report`
    written = {path.name for path in (tmp_path / "exported").iterdir()}
    assert {"report.json", "report.md", "asr.csv", "audit.csv"} <= written
    assert "exported" in shown["after_export"]
    exported = json.loads((tmp_path / "exported" / "report.json").read_text())
    assert exported["audit"]["kappa"] == audit_json["kappa"]


def test_unknown_run_and_no_run_are_messages(audited):
    for run_id, expected in (("run-nope", "no run 'run-nope' in the store"), (None, "no run selected")):
        app = ScreenHost(audited["url"], None, lambda run_id=run_id: StatisticsScreen(run_id))

        async def scenario(pilot, expected: str = expected) -> None:
            assert expected in screen_text(pilot.app)
            await pilot.press("e")
            await settle(pilot)
            assert "nothing to export yet" in screen_text(pilot.app)

        drive(app, scenario)
