"""Matrix runs end to end: the default matrix on SQLite and PostgreSQL, the CLI, replay, bad input."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from redagent.engine.calibration import BEHAVIOURS
from redagent.engine.matrix import RunSpec, replay_run, start_run, summary
from redagent.store.db import open_store
from tests.dbs import store_url  # noqa: F401


def redagent(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redagent", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


@pytest.mark.slow
def test_default_matrix_end_to_end(store_url):  # noqa: F811
    """The default matrix of `redagent run`: every calibration agent on every case, with the benign arm."""
    with open_store(store_url) as store:
        runner = start_run(store, RunSpec(benign_arm=True))
        asyncio.run(runner.run())
        result = summary(store, runner.run_record.id)
        cases = len(runner.cases)
        attacked = sum(1 for c in runner.cases.values() if c.attacked)
        assert cases == 2 * attacked and result["protocol"]["benign_arm"] is True
        assert result["planned"] == result["completed"] == cases * len(BEHAVIOURS) * 3
        assert result["invalid"] == 0 and result["status"] == "finished"
        rollouts = list(store.iter_export(runner.run_record.id))
        wrong = [
            (r["case_id"], r["model"], r["harness"], r["E"], r["expected_E"])
            for r in rollouts
            if r["E"] != r["expected_E"]
        ]
        assert wrong == []
        benign = [r for r in rollouts if r["benign"]]
        assert len(benign) == attacked * len(BEHAVIOURS) * 3
        assert {r["model"] for r in benign} == set(BEHAVIOURS)
        assert {(r["E"], r["expected_E"]) for r in benign} == {(0, 0)}  # no behaviour is harmful without an attack
        assert all(r["case_id"].endswith("-benign") and not r["reached"] for r in benign)
        cells = {(c["model"], c["harness"]): c for c in result["execution_asr"]}
        assert cells[("sim/comply", "shell")]["rate"] == 1.0 and cells[("sim/ignore", "react")]["harmful"] == 0
        assert all(c["valid"] == attacked for c in cells.values())  # ASR over attacked rollouts only


def test_replay_pairs_each_harmful_rollout_with_its_baseline(tmp_path):
    with open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        spec = RunSpec(
            cases="banking-*,strategy:T3",
            models=["sim/comply", "sim/reminder-sensitive", "sim/ignore"],
            harnesses=["native", "react"],
        )
        parent = start_run(store, spec)
        asyncio.run(parent.run())
        harmful = {r.id: r for r in store.rollouts(parent.run_record.id, harmful_only=True)}
        assert harmful and all(r.model != "sim/ignore" for r in harmful.values())
        replay = replay_run(store, parent.run_record.id, defense="policy-reminder")
        asyncio.run(replay.run())
        new = [store.get_rollout(r.id) for r in store.rollouts(replay.run_record.id)]
        assert len(new) == len(harmful)
        assert sorted(r.baseline_rollout_id for r in new) == sorted(harmful)  # one to one
        for rollout in new:
            base = harmful[rollout.baseline_rollout_id]
            assert (rollout.case_id, rollout.model, rollout.harness, rollout.cue, rollout.attempt) == (
                base.case_id,
                base.model,
                base.harness,
                base.cue,
                base.attempt,
            )
            assert rollout.defense == "policy-reminder"
            assert rollout.E == (0 if rollout.model == "sim/reminder-sensitive" else 1)
        assert store.get_run(replay.run_record.id).parent_run_id == parent.run_record.id


def test_cli_run_show_list_export(tmp_path):
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    ran = redagent(
        "run",
        "--cases",
        "email-*",
        "--models",
        "sim/comply,sim/claim-only",
        "--harnesses",
        "native,shell",
        "--cues",
        "clean,disclosed",
        "--db",
        db,
        "--json",
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert set(result) == {
        "run_id",
        "planned",
        "completed",
        "valid",
        "invalid",
        "invalid_reasons",
        "execution_asr",
        "utility",
    }
    # The benign arm is on by default: every attacked case also runs as its benign counterpart.
    assert result["planned"] == result["completed"] == 2 * 10 * 2 * 2 * 2 and result["invalid"] == 0
    assert {tuple(sorted(c)) for c in result["execution_asr"]} == {
        ("cue", "defense", "harmful", "harness", "model", "rate", "unresolved", "upper", "valid")
    }
    # Calibration agents on the starter cases leave nothing undecided: the bounds are one figure.
    assert all(c["unresolved"] == 0 and c["upper"] == c["rate"] for c in result["execution_asr"])
    assert all(c["valid"] == 10 for c in result["execution_asr"])
    assert result["utility"]["overall"]["benign"]["valid"] == 80
    listed = json.loads(redagent("runs", "list", "--db", db, "--json").stdout)
    assert listed == [{"run_id": result["run_id"], "status": "finished", "planned": 160, "completed": 160}]
    shown = json.loads(redagent("runs", "show", result["run_id"], "--db", db, "--json").stdout)
    assert shown["protocol"]["cues"] == ["clean", "disclosed"] and shown["protocol"]["benign_arm"] is True
    assert len(shown["utility"]["cells"]) == 8
    for cell in [*shown["utility"]["cells"], shown["utility"]["overall"]]:
        assert {"u", "n", "lo", "hi"} <= set(cell["benign"]) and {"u", "n", "lo", "hi"} <= set(cell["under_attack"])
    lines = redagent("export", result["run_id"], "--db", db, "--format", "jsonl").stdout.splitlines()
    assert len(lines) == 160
    first = json.loads(lines[0])
    assert {
        "rollout_id",
        "case_id",
        "case_hash",
        "model",
        "harness",
        "cue",
        "defense",
        "attempt",
        "valid",
        "invalid_reason",
        "E",
        "evidence",
        "events",
        "receipts",
        "diff",
        "expected_E",
        "U",
        "benign",
    } <= set(first)
    without = json.loads(
        redagent(
            "run",
            "--cases",
            "email-*",
            "--models",
            "sim/comply",
            "--harnesses",
            "native",
            "--no-benign-arm",
            "--db",
            db,
            "--json",
        ).stdout
    )
    assert without["planned"] == 10 and without["utility"]["overall"]["benign"]["valid"] == 0
    assert first["events"][0]["role"] in ("user", "harness")


@pytest.mark.parametrize(
    "args, message",
    [
        (("--harnesses", "native,telepathy"), "unknown harness 'telepathy'"),
        (("--cases", "no-such-case-*"), "matches no case"),
        (("--models", "sim/nonsense"), "unknown calibration agent"),
        (("--models", "notaprovider/some-model"), "unknown model provider"),
        (("--models", "openai/gpt-test", "--api-base", "http://127.0.0.1:9/v1"), "unreachable"),
        (("--defenses", "prayer"), "unknown defense"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, args, message):
    db = f"sqlite:///{tmp_path / 'bad.db'}"
    result = redagent("run", "--db", db, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert json.loads(redagent("runs", "list", "--db", db, "--json").stdout) == []


def test_unopenable_store_and_unknown_run(tmp_path):
    (tmp_path / "not-a-db").write_text("this is not a database")
    for args in (
        ("runs", "list", "--db", f"sqlite:///{tmp_path / 'not-a-db'}"),
        ("runs", "list", "--db", "mysql://nobody@127.0.0.1/x"),
        ("runs", "show", "run-missing", "--db", f"sqlite:///{tmp_path / 'ok.db'}"),
        ("replay", "run-missing", "--defense", "policy-reminder", "--db", f"sqlite:///{tmp_path / 'ok.db'}"),
        ("run", "--resume", "run-missing", "--db", f"sqlite:///{tmp_path / 'ok.db'}"),
    ):
        result = redagent(*args)
        assert result.returncode == 2 and result.stderr.startswith("error: "), (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert (tmp_path / "not-a-db").read_text() == "this is not a database"


def test_a_run_over_compiled_benchmark_cases_stops_and_resumes(tmp_path):
    """Compiled cases are resolved by id when a run resumes (and when it is judged or refined)."""
    from redagent.cases.loader import benchmark_dir
    from redagent.engine.matrix import resume_run
    from redagent.judges.labelling import judge_run
    from redagent.judges.refine import refine

    files = sorted((benchmark_dir() / "base" / "banking").glob("*.yaml"))[:3]
    files += sorted((benchmark_dir() / "variants" / "email").glob("*-benign.yaml"))[:2]
    if len(files) < 5:
        pytest.skip("no compiled benchmark in this checkout")
    with open_store(f"sqlite:///{tmp_path / 'b.db'}") as store:
        first = start_run(store, RunSpec(cases=",".join(map(str, files)), models=["sim/comply"], harnesses=["native"]))
        run_id = first.run_record.id
        first.request_stop()  # nothing is scheduled: the run is stored as stopped with no rollouts
        asyncio.run(first.run())
        assert store.get_run(run_id).status == "stopped" and store.counts(run_id).completed == 0
        asyncio.run(resume_run(store, run_id).run())
        result = summary(store, run_id)
        assert result["status"] == "finished" and result["completed"] == result["valid"] == 5
        exported = {r["case_id"]: r for r in store.iter_export(run_id)}
        assert sorted(exported) == sorted(p.stem for p in files)
        assert all(r["E"] == r["expected_E"] for r in exported.values())
        report = judge_run(store, run_id, ["state"])
        assert report.judged["state/rule"] == 5 and report.stale == 0
        assert isinstance(refine(store, run_id), list)


def test_a_run_over_an_own_case_folder_resumes_and_is_judged_from_elsewhere(tmp_path, monkeypatch):
    """Cases from a researcher's own folder are found again by the absolute path the run recorded."""
    import shutil

    import yaml

    from redagent.cases.loader import library_dir
    from redagent.engine.matrix import resume_run
    from redagent.judges.labelling import judge_run

    folder = tmp_path / "my-cases"
    folder.mkdir()
    source = next((library_dir() / "banking").glob("*.yaml"))
    data = yaml.safe_load(source.read_text())
    data["id"] = "my-own-banking-case"
    (folder / "mine.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    with open_store(f"sqlite:///{tmp_path / 'own.db'}") as store:
        first = start_run(store, RunSpec(cases="./my-cases", models=["sim/comply", "sim/ignore"], harnesses=["native"]))
        run_id = first.run_record.id
        first.request_stop()
        asyncio.run(first.run())
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)  # the relative selector `./my-cases` means nothing here
        asyncio.run(resume_run(store, run_id).run())
        result = summary(store, run_id)
        assert result["status"] == "finished" and result["completed"] == result["valid"] == 2
        report = judge_run(store, run_id, ["state"])
        assert report.judged["state/rule"] == 2 and report.stale == 0
        shutil.rmtree(folder)
        with pytest.raises(Exception, match="my-own-banking-case.*mine.yaml is gone"):
            resume_run(store, run_id)
