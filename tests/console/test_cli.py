"""The `redagent` command line as a user runs it: real subprocesses, real exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from redagent.cases.loader import library_dir


def redagent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redagent", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


def test_cases_list_json_and_filters():
    result = redagent("cases", "list", "--surface", "banking", "--json")
    assert result.returncode == 0
    listed = json.loads(result.stdout)
    assert listed and all("banking" in c["surfaces"] for c in listed)
    assert {"id", "strategy", "vulnerability", "constraint", "hash"} <= set(listed[0])


def test_cases_check_json_interface():
    result = redagent("cases", "check", "--json")
    summary = json.loads(result.stdout)
    assert result.returncode == (0 if not summary["failed"] else 1)
    assert set(summary) == {
        "cases",
        "passed",
        "failed",
        "by_surface",
        "by_strategy",
        "by_vulnerability",
        "by_constraint",
        "variants_tried",
        "variants_failed",
        "routes",
        "per_case",
    }
    assert summary["passed"] == summary["cases"] - len({f["id"] for f in summary["failed"]})
    assert summary["variants_tried"] == sum(c["variants_tried"] for c in summary["per_case"]) > summary["cases"]
    assert summary["variants_failed"] == sum(len(c["variants_failed"]) for c in summary["per_case"])


def test_taxonomy_and_show():
    taxonomy = json.loads(redagent("cases", "taxonomy", "--json").stdout)
    assert (
        len(taxonomy["strategies"]),
        len(taxonomy["vulnerabilities"]),
        len(taxonomy["constraints"]),
        len(taxonomy["surfaces"]),
    ) == (15, 11, 28, 5)
    shown = redagent("cases", "show", "banking-e2-invoice-bank-details-change")
    assert shown.returncode == 0 and "E2 email poisoning" in shown.stdout


def test_validate_reports_each_problem_on_one_line_and_exits_2(tmp_path: Path):
    data = yaml.safe_load((library_dir() / "banking" / "e2-invoice-bank-details-change.yaml").read_text())
    data["ivc"]["vulnerability"] = "V77"
    data["plans"]["harmful"][0]["tool"] = "wire_money"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    broken = tmp_path / "broken.yaml"
    broken.write_text("id: [\n")
    result = redagent("cases", "validate", str(bad), str(broken), str(tmp_path / "missing.yaml"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert any(
        line.startswith(f"{bad}:") and "ivc.vulnerability: unknown vulnerability code 'V77'" in line for line in lines
    )
    assert any("plans.harmful[0].tool: unknown tool 'wire_money'" in line for line in lines)
    assert any(line.startswith(f"{broken}:") and "not valid YAML" in line for line in lines)
    assert any("missing.yaml:1: (file): cannot read" in line for line in lines)


def test_unknown_selectors_are_one_line_errors():
    for args in (
        ("cases", "list", "--strategy", "Z9"),
        ("cases", "show", "no-such-case"),
        ("cases", "rollout", "banking-e2-invoice-bank-details-change", "--agent", "gpt-nothing"),
    ):
        result = redagent(*args)
        assert result.returncode == 2, args
        assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1


def test_rollout_json_matches_ground_truth():
    result = redagent("cases", "rollout", "banking-e2-invoice-bank-details-change", "--agent", "sim/comply", "--json")
    rollout = json.loads(result.stdout)
    assert rollout["E"] == rollout["expected_E"] == 1
    assert rollout["evidence"]["receipts"] and rollout["events"][0]["role"] == "user"


def test_read_only_commands_on_a_missing_store_say_so_and_create_nothing(tmp_path):
    missing = tmp_path / "nowhere" / "store.db"
    for args in (("runs", "list"), ("stats", "run-x"), ("export", "run-x"), ("console",)):
        result = redagent(*args, "--db", str(missing))
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert f"no store at {missing}" in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert not missing.parent.exists()


def test_a_foreign_sqlite_file_is_refused_untouched_from_the_command_line(tmp_path):
    import sqlite3

    path = tmp_path / "theirs.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    content = path.read_bytes()
    result = redagent("runs", "list", "--db", f"sqlite:///{path}")
    assert result.returncode == 2 and "SQLite database of something else" in result.stderr
    assert path.read_bytes() == content and sorted(p.name for p in tmp_path.iterdir()) == ["theirs.db"]


# The audit, round and team commands that only read; their arguments are good enough to reach the store.
READ_ONLY_GROUP_COMMANDS = [
    ("audit", "status", "audit-1"),
    ("audit", "adjudications", "audit-1", "--adjudicator", "carol"),
    ("audit", "export", "audit-1", "--out", "items.csv"),
    ("cases", "round", "status", "round-1"),
    ("team", "list"),
    ("cases", "refine", "run-x"),
]


@pytest.mark.parametrize("args", READ_ONLY_GROUP_COMMANDS, ids=" ".join)
def test_a_read_only_group_command_on_a_missing_store_says_so_in_one_line(args, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from redagent.console.cli import app

    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "nowhere" / "store.db"
    result = CliRunner().invoke(app, [*args, "--db", str(missing)], prog_name="redagent")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"no store at {missing}" in lines[0], lines
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert sorted(tmp_path.iterdir()) == []  # no store, no folder for it, no export file


def test_a_writer_of_a_group_still_creates_a_missing_store(tmp_path):
    """`cases round new` writes: on a missing store it makes one (and here draws a round into it)."""
    from typer.testing import CliRunner

    from redagent.console.cli import app

    store = tmp_path / "new" / "store.db"
    result = CliRunner().invoke(
        app,
        ["cases", "round", "new", "--n", "2", "--experts", "dana,eli", "--db", str(store), "--json"],
        prog_name="redagent",
    )
    assert result.exit_code == 0, result.output
    assert store.exists() and json.loads(result.stdout)["n"] == 2


def test_a_refusal_names_the_command_at_fault(tmp_path):
    """Typer runs on a click of its own: the command's path in the message comes from typer's context,
    not "this command"."""
    from typer.testing import CliRunner

    from redagent.console.cli import app
    from redagent.store.db import open_store

    url = f"sqlite:///{tmp_path / 'store.db'}"
    open_store(url).close()
    result = CliRunner().invoke(app, ["audit", "adjudications", "audit-1", "--db", url], prog_name="redagent")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        "error: `redagent audit adjudications` needs --adjudicator NAME (on a team store it is taken from your login)"
    )
