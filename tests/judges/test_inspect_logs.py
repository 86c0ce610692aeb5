"""A run as Inspect AI eval logs and back (issue 26): the default matrix (every calibration agent, the in-house
harnesses, with its benign arm) on a few built-in cases, judged by the rule judges and the lexical recognition
judge, exported with `redagent export --format inspect`, read back with inspect-ai's own reader — every sample's
scores are the store's E, U and labels — served by `inspect view`, and imported into a fresh store, where the
rollouts, labels and `stats RUN asr|utility|views` are exactly the original's. Bad input is one line and exit 2.

inspect-ai is an optional extra: without it these tests skip with the reason, and under CI (which installs it,
`make inspect`) they fail instead."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from redagent.engine.calibration import BEHAVIOURS
from redagent.engine.matrix import RunSpec, start_run
from redagent.judges.labelling import judge_run, recognize_run
from redagent.store.db import open_store
from tests.ci import require_module
from tests.engine.openai_stub import ChatServer, error, text

CASES = "banking-e2-invoice-bank-details-change,banking-t2-express-transfer-shadow-tool,cross-e2-contractor-asks-for-env-key"
STUB = "openai/stub-model"
ENV = {"COLUMNS": "200", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}


def require_inspect() -> None:
    require_module(
        "inspect_ai.log",
        "inspect-ai is not installed: the Inspect log tests need it (pip install -e '.[inspect]'; CI does)",
    )


def redagent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redagent", *args], capture_output=True, text=True, timeout=600, env=ENV
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict:
    require_inspect()
    root = tmp_path_factory.mktemp("inspect")
    db = root / "original.db"
    # Beside the calibration agents, a model on a loopback endpoint that refuses every request after the
    # pre-flight: its rollouts are invalid (model_bad_request), so invalid rollouts and their reasons travel too.
    with ChatServer() as server, pytest.MonkeyPatch.context() as patch, open_store(f"sqlite:///{db}") as store:
        patch.setenv("OPENAI_API_KEY", "sk-loopback-test")
        server.script.extend([text("OK"), text("OK")])  # the pre-flight and its tool probe
        server.default = error(400)
        spec = RunSpec(cases=CASES, benign_arm=True, models=[*BEHAVIOURS, STUB], api_base=server.url, retries=0)
        runner = start_run(store, spec)
        asyncio.run(runner.run())
        run_id = runner.run_record.id
        judge_run(store, run_id, ["trajectory", "state", "hybrid"])
        recognize_run(store, run_id)
    logs = root / "logs"
    result = redagent("export", run_id, "--format", "inspect", "--out", str(logs), "--db", str(db))
    assert result.returncode == 0, result.stderr
    return {"db": db, "run_id": run_id, "logs": logs, "listed": result.stdout.split(), "root": root}


def store_view(db: Path, run_id: str) -> dict:
    """Everything the store holds of the run: its record, every rollout with its evidence, every label."""
    with open_store(f"sqlite:///{db}", create=False) as store:
        run = store.get_run(run_id)
        rollouts = list(store.iter_export(run_id))
        configs = store.judged_configs(run_id)
        labels = {
            (c["config_name"], c["backbone"]): store.judge_labels(run_id, c["config_hash"], c["backbone"])
            for c in configs
        }
        recognition = {pair: store.recognition_labels(run_id, *pair) for pair in store.recognition_judges(run_id)}
    return {"run": run, "rollouts": rollouts, "configs": configs, "labels": labels, "recognition": recognition}


def test_every_sample_carries_the_stores_outcomes_labels_and_evidence(exported):
    from inspect_ai.log import list_eval_logs, read_eval_log

    original = store_view(exported["db"], exported["run_id"])
    by_id = {r["rollout_id"]: r for r in original["rollouts"]}
    judge = {(label.rollout_id, name): label for name, labels in original["labels"].items() for label in labels}
    recognised = {label.rollout_id: label for labels in original["recognition"].values() for label in labels}
    assert original["configs"] and recognised, "the run must have judge and recognition labels to compare"
    files = list_eval_logs(str(exported["logs"]))
    # One log per model x harness cell (one cue, one defense), each the printed file.
    assert len(files) == (len(BEHAVIOURS) + 1) * len(RunSpec().harnesses) == len(exported["listed"])
    seen: set[str] = set()
    for info in files:
        log = read_eval_log(info.name)
        assert log.eval.task == "redagent/bench" and log.eval.run_id == exported["run_id"]
        meta = log.eval.metadata["redagent"]
        cell = meta["cell"]
        assert log.eval.model == cell["model"]
        assert log.eval.task_args == {k: cell[k] for k in ("harness", "cue", "defense")}
        protocol = meta["protocol"]
        assert protocol["attempts"] == log.eval.config.epochs == 1
        # The in-house harnesses are built from the run's code version (a real CLI's pinned build would be here).
        assert protocol["harness_build"] == {"in_house": True, "code_version": original["run"].code_version}
        assert protocol["benchmarks"] == original["run"].protocol["benchmarks"]
        mine = [r for r in original["rollouts"] if all(r[k] == cell[k] for k in cell)]
        valid = [r for r in mine if r["valid"]]
        assert meta["denominators"] == {
            "rollouts": len(mine),
            "valid": len(valid),
            "valid_attacked": len([r for r in valid if not r["benign"]]),
            "invalid": len(mine) - len(valid),
        }
        assert len(log.samples) == len(mine)
        for sample in log.samples:
            data = sample.metadata["redagent"]
            rollout = by_id[data["rollout_id"]]
            seen.add(rollout["rollout_id"])
            assert (sample.id, sample.epoch) == (rollout["case_id"], rollout["attempt"])
            scores = {name: score.value for name, score in sample.scores.items()}
            # E and E_upper are the execution ASR's bounds: equal where the verifier decided, 0 and 1 where not.
            if rollout["valid"]:
                assert (scores["E"], scores["E_upper"]) == (
                    (rollout["E"], rollout["E"]) if rollout["E"] is not None else (0, 1)
                )
            else:
                assert "E" not in scores and "E_upper" not in scores
            assert scores.get("U") == rollout["U"]
            for (config_name, backbone), _labels in original["labels"].items():
                label = judge.get((rollout["rollout_id"], (config_name, backbone)))
                name = f"{config_name}@{backbone}"
                if label is None:
                    assert name not in scores
                else:
                    assert scores[name] == (label.label if label.status == "ok" else "failed")
                    assert sample.scores[name].metadata["config_hash"] == label.config_hash
            rec = recognised.get(rollout["rollout_id"])
            if rec is None:
                assert "R:lexical" not in scores
            else:
                expected = {k: v for k, v in (("broad", rec.broad), ("strict", rec.strict)) if v is not None}
                assert scores["R:lexical"] == expected
            assert data["ivc"] == {
                k: rollout[k] for k in ("strategy", "vulnerability", "constraint", "surfaces", "channel")
            }
            assert data["receipts"] == rollout["receipts"] and data["diff"] == rollout["diff"]
            assert data["validity"]["valid"] == rollout["valid"]
            if not rollout["valid"]:
                assert sample.error is not None and rollout["invalid_reason"] in sample.error.message
            # The trajectory as chat messages: one per event, tool calls as Inspect tool calls.
            assert len(sample.messages) == len(rollout["events"])
            for message, event in zip(sample.messages, rollout["events"], strict=True):
                if event["role"] == "assistant" and event["tool_call"]:
                    assert [c.function for c in message.tool_calls] == [event["tool_call"]["name"]]
                if event["role"] == "tool":
                    assert message.role == "tool" and message.text == (event["observation"] or "")
    assert seen == set(by_id)
    assert {r["invalid_reason"] for r in original["rollouts"] if r["model"] == STUB} == {"model_bad_request"}


def test_the_imported_export_is_the_run_exactly(exported):
    fresh = exported["root"] / "imported.db"
    result = redagent("import", "inspect", str(exported["logs"]), "--db", str(fresh))
    assert result.returncode == 0, result.stderr
    original, imported = store_view(exported["db"], exported["run_id"]), store_view(fresh, exported["run_id"])
    assert imported == original
    for table in ("asr", "utility", "views"):
        args = ("stats", exported["run_id"], table, "--reps", "500")
        before, after = redagent(*args, "--db", str(exported["db"])), redagent(*args, "--db", str(fresh))
        assert before.returncode == after.returncode == 0, (before.stderr, after.stderr)
        assert after.stdout == before.stdout and exported["run_id"] in after.stdout
    # Judging reads the imported run as its own: every label it would make is already there.
    with open_store(f"sqlite:///{fresh}", create=False) as store:
        report = judge_run(store, exported["run_id"], ["trajectory", "state", "hybrid"])
    assert sum(report.judged.values()) == sum(report.failed.values()) == 0 and sum(report.cached.values()) > 0
    again = redagent("import", "inspect", str(exported["logs"]), "--db", str(fresh))
    assert again.returncode == 2 and "already in the store" in again.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def viewer(exported) -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("inspect")), "view", "--log-dir", str(exported["logs"])]
        + ["--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**ENV, "HOME": str(exported["root"])},
    )
    try:
        deadline = time.monotonic() + 120  # a hang bound far above the second or two it takes
        while True:
            if proc.poll() is not None:
                pytest.fail(f"inspect view exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("inspect view did not listen within 120 s")
            # Poll again shortly, returning at once should the viewer exit instead.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_inspect_view_serves_the_folder(exported, viewer):
    conn = http.client.HTTPConnection("127.0.0.1", viewer, timeout=60)
    conn.request("GET", "/api/logs")
    response = conn.getresponse()
    body = response.read()
    assert response.status == 200, body[:500]
    from inspect_ai.log import read_eval_log

    entries = json.loads(body)["files"]
    assert {Path(entry["name"]).name for entry in entries} == {Path(name).name for name in exported["listed"]}
    # The listing reads task and id from the file names, as for the logs Inspect writes itself.
    for entry in entries:
        header = read_eval_log(str(exported["logs"] / Path(entry["name"]).name), header_only=True)
        assert (entry["task"], entry["task_id"]) == ("redagent-bench", header.eval.task_id)
    # And it serves a log whole, parsed by its own model.
    conn.request("GET", "/api/logs/" + urllib.parse.quote(entries[0]["name"], safe=""))
    response = conn.getresponse()
    served = response.read()
    assert response.status == 200 and json.loads(served)["eval"]["run_id"] == exported["run_id"]


def test_bad_input_is_one_line(exported, tmp_path):
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, read_eval_log, write_eval_log

    def one_line(result: subprocess.CompletedProcess[str], *needles: str) -> None:
        assert result.returncode == 2, (result.stdout, result.stderr)
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        for needle in needles:
            assert needle in result.stderr, result.stderr

    db = str(exported["db"])
    one_line(
        redagent("export", "run-none", "--format", "inspect", "--out", str(tmp_path / "x"), "--db", db), "run-none"
    )
    one_line(redagent("export", exported["run_id"], "--format", "inspect", "--db", db), "--out")
    other = tmp_path / "other.eval"
    write_eval_log(
        EvalLog(
            eval=EvalSpec(
                created="2026-01-01T00:00:00+00:00",
                task="theirs/task",
                dataset=EvalDataset(),
                model="mockllm/model",
                config=EvalConfig(),
            )
        ),
        str(other),
    )
    store = str(tmp_path / "s.db")
    one_line(redagent("import", "inspect", str(other), "--db", store), str(other), "theirs/task")
    text = tmp_path / "notes.json"
    text.write_text('{"not": "a log"}')
    one_line(redagent("import", "inspect", str(text), "--db", store), str(text), "not an Inspect log")
    one_line(redagent("import", "inspect", str(tmp_path / "missing.eval"), "--db", store), "missing.eval")
    # A log of this task whose sample breaks the store's invariants (a valid rollout without E), after a good log:
    # refused, naming the file, before anything of either is written.
    files = sorted(exported["logs"].iterdir())
    good, bad = files[0], next(f for f in files if "_sim-comply-native-" in f.name)
    log = read_eval_log(str(bad))
    valid = next(s for s in log.samples if s.metadata["redagent"]["validity"]["valid"])
    valid.metadata["redagent"]["outcome"]["E"] = None
    tampered = tmp_path / "tampered" / bad.name
    tampered.parent.mkdir()
    write_eval_log(log, str(tampered))
    one_line(redagent("import", "inspect", str(good), str(tampered), "--db", store), str(tampered), "needs")
    # Nothing of a refused import is stored.
    with open_store(f"sqlite:///{store}", create=False) as opened:
        assert opened.list_runs() == []


def test_without_the_extra_both_commands_say_how_to_install_it(exported, tmp_path):
    # inspect_ai made unimportable in the command's own process (None in sys.modules makes `import` raise).
    blocked = "import sys; sys.modules['inspect_ai'] = None; from redagent.console.cli import main; sys.argv[0] = 'redagent'; main()"
    for args in (
        (
            "export",
            exported["run_id"],
            "--format",
            "inspect",
            "--out",
            str(tmp_path / "x"),
            "--db",
            str(exported["db"]),
        ),
        ("import", "inspect", str(exported["logs"]), "--db", str(tmp_path / "s.db")),
    ):
        result = subprocess.run(
            [sys.executable, "-c", blocked, *args], capture_output=True, text=True, timeout=300, env=ENV
        )
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.strip() == "error: the inspect extra is not installed: pip install -e '.[inspect]'"


def test_every_log_carries_the_runs_evidence_head_and_a_log_changed_after_the_export_is_refused(exported, tmp_path):
    """Issue 34: the run's evidence chain head is in every log (the eval spec), each sample and label its place and
    digest in the chain; an import recomputes each record's digest and refuses a log whose record was changed."""
    import shutil

    from inspect_ai.log import read_eval_log, write_eval_log

    verified = redagent("runs", "verify", exported["run_id"], "--json", "--db", str(exported["db"]))
    assert verified.returncode == 0, verified.stderr
    head = json.loads(verified.stdout)["head"]
    logs = sorted(exported["logs"].glob("*.eval"))
    for path in logs:
        log = read_eval_log(str(path))
        assert log.eval.metadata["redagent"]["evidence"]["head"] == head
        for sample in log.samples or []:
            assert len(sample.metadata["redagent"]["chain"]["digest"]) == 64
    located = redagent("runs", "verify", exported["run_id"], "--head", head, "--db", str(exported["db"]))
    assert located.returncode == 0 and "the export's head is record" in located.stdout
    # A log changed after the export: one sample's final answer rewritten.
    changed = tmp_path / "changed"
    shutil.copytree(exported["logs"], changed)
    target = sorted(changed.glob("*.eval"))[0]
    log = read_eval_log(str(target))
    sample = (log.samples or [])[0]
    sample.metadata["redagent"]["final_text"] = "I refused, of course."
    write_eval_log(log, str(target))
    refused = redagent("import", "inspect", str(changed), "--db", str(tmp_path / "other.db"))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "differs from what the export recorded" in refused.stderr and "changed after the export" in refused.stderr
