"""`inspect eval redagent/bench` (issue 26 item 2): the cases as an Inspect task, run with Inspect's offline model
(`mockllm/model`) answering as a calibration agent does, give the same E and U on every case as the engine's own run
of that calibration agent (native harness); the log imports into a store as a run (`redagent import inspect`),
the rule judges label it as they label the engine's run, and `stats` shows it. A sample Inspect ended with an error
is an invalid rollout. Inspect's own shell and file access go through the case's sandbox and its receipts.

Scenarios: sim/comply with the benign arm on the whole starter library in the full suite (`--full`, CI's phase 2:
62 cases, 124 samples), by default on one case of each kind per surface (`*-e2-*,*-u4-*`: 10 cases, 20 samples);
sim/indirect (helper scripts it writes and runs with run_command under bubblewrap) on the workspace u-cases;
sim/reminder-sensitive under the policy-reminder defense on the email e- and t-cases; and sim/comply on the e2 cases with
Inspect's own ReAct agent in place of the task's default (`--solver redagent/react`).

inspect-ai is an optional extra: without it these tests skip with the reason; under CI (`make inspect`) they fail."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from redagent.engine.matrix import RunSpec, start_run
from redagent.store.db import open_store
from tests.ci import in_ci
from tests.conftest import needs_bwrap
from tests.judges.test_inspect_logs import require_inspect

pytestmark = pytest.mark.sampled  # the whole starter library under --full (CI's phase 2 runs it again so)
HERE = Path(__file__).resolve().parent
ENV = {"COLUMNS": "200", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}


@dataclass(frozen=True)
class Scenario:
    behaviour: str
    cases: str
    defense: str = "none"
    benign_arm: bool = False
    fail: str | None = None  # a case whose sample the scripted model fails
    full_cases: str | None = None  # what the full suite takes instead of `cases`
    harmful: bool = True  # whether the behaviour realises the harm on some of these cases
    solver: str | None = None  # `--solver`: another agent in place of the task's default


SCENARIOS = [
    Scenario(
        "sim/comply",
        "*-e2-*,*-u4-*",
        benign_arm=True,
        fail="banking-e2-invoice-bank-details-change",
        full_cases="all",
    ),
    Scenario("sim/indirect", "workspace-u*"),
    # The defense text reaches the agent before each decision, so this behaviour complies nowhere.
    Scenario("sim/reminder-sensitive", "email-e*,email-t*", defense="policy-reminder", harmful=False),
    # Inspect's own ReAct agent in place of the task's default (`--solver redagent/react`).
    Scenario("sim/comply", "*-e2-*", solver="redagent/react"),
]


def redagent(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "redagent", *args], capture_output=True, text=True, timeout=600, env=ENV
    )
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


@pytest.fixture(scope="module")
def store_db(tmp_path_factory) -> Path:
    require_inspect()
    return tmp_path_factory.mktemp("inspect-task") / "store.db"


def inspect_run(scenario: Scenario, logs: Path) -> Path:
    """The scenario through `inspect eval redagent/bench` in a process of its own; the log it wrote."""
    command = [sys.executable, str(HERE / "inspect_eval.py"), scenario.behaviour, str(logs)]
    command += ["-T", f"cases={scenario.cases}", "-T", f"defense={scenario.defense}"]
    command += ["-T", f"benign_arm={str(scenario.benign_arm).lower()}"]
    if scenario.fail:
        command += ["--fail", scenario.fail]
    if scenario.solver:
        command += ["--solver", scenario.solver]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return Path(result.stdout.strip().splitlines()[-1].removeprefix("file://"))


def engine_run(scenario: Scenario, db: Path) -> str:
    spec = RunSpec(
        cases=scenario.cases,
        models=[scenario.behaviour],
        harnesses=["native"],
        defenses=[scenario.defense],
        benign_arm=scenario.benign_arm,
    )
    with open_store(f"sqlite:///{db}") as store:
        runner = start_run(store, spec)
        asyncio.run(runner.run())
        return runner.run_record.id


def outcomes(db: Path, run_id: str) -> dict[str, dict]:
    """Per case: validity, E, U and every rule judge's label."""
    with open_store(f"sqlite:///{db}", create=False) as store:
        found = {
            r["case_id"]: {"valid": r["valid"], "reason": r["invalid_reason"], "E": r["E"], "U": r["U"], "labels": {}}
            for r in store.iter_export(run_id)
        }
        ids = {r["rollout_id"]: r["case_id"] for r in store.iter_export(run_id)}
        for config in store.judged_configs(run_id):
            for label in store.judge_labels(run_id, config["config_hash"], config["backbone"]):
                found[ids[label.rollout_id]]["labels"][config["config_name"]] = label.label
    return found


@pytest.fixture(scope="module", params=SCENARIOS, ids=lambda s: f"{s.behaviour}-{s.defense}-{s.solver or 'default'}")
def compared(request, store_db, tmp_path_factory, full_suite) -> dict:
    scenario: Scenario = request.param
    if full_suite and scenario.full_cases:
        scenario = replace(scenario, cases=scenario.full_cases)
    log = inspect_run(scenario, tmp_path_factory.mktemp("logs"))
    imported = json.loads(redagent("import", "inspect", str(log), "--db", str(store_db), "--json").stdout)
    engine = engine_run(scenario, store_db)
    for run_id in (imported["run_id"], engine):
        redagent("judge", run_id, "--db", str(store_db))
    return {
        "scenario": scenario,
        "log": log,
        "run_id": imported["run_id"],
        "inspect": outcomes(store_db, imported["run_id"]),
        "engine": outcomes(store_db, engine),
        "engine_run": engine,
    }


def test_inspect_gives_the_engines_E_and_U_and_judge_labels_on_every_case(compared):
    scenario, inspect, engine = compared["scenario"], compared["inspect"], compared["engine"]
    assert set(inspect) == set(engine)
    compared_cases = [case for case in engine if case != scenario.fail]
    assert compared_cases and all(engine[c]["valid"] for c in compared_cases)
    for case in compared_cases:
        assert inspect[case]["valid"], (case, inspect[case])
        assert (inspect[case]["E"], inspect[case]["U"]) == (engine[case]["E"], engine[case]["U"]), case
        # The trajectory rebuilt from Inspect's chat, with each receipt's step, reads to every view's rule judge as
        # the engine's own trajectory does.
        assert inspect[case]["labels"] == engine[case]["labels"], case
        assert set(inspect[case]["labels"]) == {"trajectory/rule", "state/rule", "hybrid/rule"}
    # Not a vacuous match: where the behaviour is harmful some cases have E = 1 (and the benign arm's E = 0), and
    # tasks are done.
    harms = {engine[c]["E"] for c in compared_cases}
    assert (1 in harms) == scenario.harmful and (0 in harms or not scenario.benign_arm)
    assert any(engine[c]["U"] == 1 for c in compared_cases)


def test_a_sample_inspect_ended_with_an_error_is_an_invalid_rollout(compared):
    scenario, inspect = compared["scenario"], compared["inspect"]
    if scenario.fail is None:
        pytest.skip("this scenario fails no sample")
    failed = inspect[scenario.fail]
    assert failed["valid"] is False and failed["reason"] == "inspect_error" and failed["E"] is None
    assert failed["U"] is None and failed["labels"] == {}


def test_stats_show_the_imported_run_as_the_engines(compared, store_db):
    scenario = compared["scenario"]
    shown = json.loads(redagent("stats", compared["run_id"], "asr", "--db", str(store_db), "--json").stdout)
    theirs = json.loads(redagent("stats", compared["engine_run"], "asr", "--db", str(store_db), "--json").stdout)
    assert shown["protocol"]["models"] == ["mockllm/model"] and shown["protocol"]["harnesses"] == ["inspect"]
    assert shown["protocol"]["defenses"] == [scenario.defense]
    with open_store(f"sqlite:///{store_db}", create=False) as store:
        protocol = store.get_run(compared["run_id"]).protocol
    # The harness's build: inspect-ai's version and the solver Inspect ran (the task's setup, then its agent).
    agent = scenario.solver or "redagent/case_agent"
    assert protocol["harness_builds"]["inspect"]["solver"] == ["redagent/case_tools", agent]
    assert protocol["harness_builds"]["inspect"]["inspect_ai"] == "0.3.285"
    assert protocol["max_tokens"] is None and protocol["benign_arm"] == scenario.benign_arm
    rows = {r["source"]: (r["harmful"], r["valid"]) for r in shown["asr"]}
    expected = {r["source"]: (r["harmful"], r["valid"]) for r in theirs["asr"]}
    failed = 1 if scenario.fail else 0  # the failed sample is invalid there, valid in the engine's run
    assert set(rows) == set(expected) == {"execution", "trajectory/rule", "state/rule", "hybrid/rule"}
    engine_failed_E = compared["engine"][scenario.fail]["E"] if scenario.fail else 0
    for source, (harmful, valid) in expected.items():
        assert rows[source] == (harmful - engine_failed_E, valid - failed), source
    table = redagent("stats", compared["run_id"], "utility", "--db", str(store_db)).stdout
    assert "mockllm/model" in table and "inspect" in table


def test_the_log_holds_E_and_U_with_what_decided_them(compared):
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(compared["log"]))
    assert log.eval.task == "redagent/bench" and log.status == "success"
    assert log.eval.task_args["defense"] == compared["scenario"].defense
    scored = [s for s in log.samples if s.scores]
    assert scored
    for sample in scored:
        E = sample.scores["E"]
        evidence = E.metadata["evidence"]
        assert E.value == sample.metadata["redagent"]["outcome"]["E"]
        # The receipts that decided E are in the score, whole; the explanation names them and the diff paths.
        assert [r["id"] for r in E.metadata["receipts"]] == [
            r for r in evidence["receipts"] if any(x["id"] == r for x in sample.metadata["redagent"]["receipts"])
        ]
        for rid in evidence["receipts"]:
            assert rid in E.explanation
        for path in evidence["diff"]:
            assert str(path) in E.explanation
        if E.value == 1:
            assert evidence["receipts"] or evidence["diff"]
        if "U" in sample.scores:
            assert sample.scores["U"].value == sample.metadata["redagent"]["outcome"]["U"]
        # The trajectory keeps the user's turn as the engine does, the defense text the model saw after it aside.
        events = sample.metadata["redagent"]["events"]
        assert events[0]["role"] == "user" and events[0]["text"] == sample.input


def _docker_problem() -> str | None:
    from redagent.sandbox.docker_backend import DEFAULT_IMAGE, docker_problem

    return docker_problem(DEFAULT_IMAGE)


DOCKER_PROBLEM = _docker_problem()


# In the Docker group of tests/conftest.py (a parameter "docker"), so it never runs beside another Docker test.
@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("bwrap", marks=needs_bwrap),
        pytest.param(
            "docker",
            marks=pytest.mark.skipif(
                not in_ci() and DOCKER_PROBLEM is not None, reason=f"docker unavailable: {DOCKER_PROBLEM}"
            ),
        ),
    ],
)
def test_inspect_exec_and_files_go_through_the_case_world(backend):
    """What an Inspect agent's own shell does (its `bash()` tool, inspect_swe's agents) is a run_command through the
    gateway on the task's backend (bubblewrap, or Docker with `sandbox=docker:IMAGE`), with its receipt and its
    effect on the state the verifier reads."""
    require_inspect()
    from redagent.engine.inspect_sandbox import CaseSandbox, CaseSandboxConfig
    from redagent.engine.inspect_trajectory import case_document
    from redagent.engine.plan import select_cases
    from redagent.sandbox.docker_backend import DEFAULT_IMAGE

    case = select_cases("workspace-*")[0]
    config = CaseSandboxConfig(sandbox="bwrap" if backend == "bwrap" else f"docker:{DEFAULT_IMAGE}")

    async def scenario() -> tuple:
        await CaseSandbox.task_init("redagent/bench", config)
        try:
            return await in_sample()
        finally:
            await CaseSandbox.task_cleanup("redagent/bench", config, True)

    async def in_sample() -> tuple:
        made = await CaseSandbox.sample_init("redagent/bench", config, {"redagent": case_document(case)})
        box = made["default"]
        assert isinstance(box, CaseSandbox)
        ran = await box.exec(["bash", "--login", "-c", "echo from-inspect > inspect-note.txt && cat inspect-note.txt"])
        await box.write_file("scaffold.txt", "written by the scaffold\n")
        read = await box.read_file("scaffold.txt")
        raw = await box.read_file("inspect-note.txt", text=False)
        try:
            await box.read_file("no-such-file.txt")
        except FileNotFoundError:
            missing = True
        else:
            missing = False
        failed = await box.exec(["sh", "-c", "exit 3"])
        finished = await box.finish()
        await CaseSandbox.sample_cleanup("redagent/bench", config, made, False)
        return box, ran, read, raw, missing, failed, finished

    box, ran, read, raw, missing, failed, finished = asyncio.run(scenario())
    assert ran.success and ran.stdout.strip() == "from-inspect"
    assert read == "written by the scaffold\n" and raw == b"from-inspect\n" and missing
    assert not failed.success and failed.returncode == 3
    assert [c.tool for c in box.calls] == [
        "run_command",
        "write_file",
        "read_file",
        "run_command",
        "read_file",
        "run_command",
    ]
    assert all(c.sandboxed for c in box.calls)
    commands = [r for r in finished.receipts if r.action == "run_command"]
    assert len(commands) == 3 and commands[0].effect["isolation"] == ("bubblewrap" if backend == "bwrap" else "docker")
    assert "inspect-note.txt" in commands[0].effect["changed"]
    changed = {d.path for d in finished.diff}
    assert any("inspect-note.txt" in str(p) for p in changed) and any("scaffold.txt" in str(p) for p in changed)
    assert not box.run.env.workspace_dir.exists()  # removed with the sample


def test_the_inspect_command_runs_the_task_against_a_model_server(tmp_path):
    """`inspect eval redagent/bench` as a user types it, from a folder outside the checkout and from the checkout
    (whose redagent.egg-info inspect-ai would otherwise read the package from), against an OpenAI-compatible
    server on loopback: the task resolves by its registered name, `-T` options arrive (a comma-separated case list
    becomes a list on Inspect's command line), the model is offered the case's tools with the cue's system prompt, and
    the log imports."""
    require_inspect()
    from inspect_ai.log import read_eval_log

    from redagent.cases.execution import CaseRun
    from redagent.engine.plan import select_cases
    from tests.engine.openai_stub import ChatServer

    cases = ["banking-e2-invoice-bank-details-change", "email-e1-handover-notes-client-export"]
    chosen = select_cases(",".join(cases))
    shown = {}  # the tools each case shows an agent, as the engine's harnesses list them
    for case in chosen:
        run = CaseRun(case)
        shown[case.id] = [t["name"] for t in run.tools()]
        run.close()
    inspect = Path(sys.executable).parent / "inspect"
    for number, folder in enumerate((tmp_path, HERE.parents[1])):
        logs = tmp_path / f"logs{number}"
        with ChatServer() as server:  # answers every request "Done." without a tool call
            result = subprocess.run(
                [str(inspect), "eval", "redagent/bench", "--model", "openai/stub", "--model-base-url", server.url]
                + ["-M", "responses_api=false", "-T", f"cases={','.join(cases)}", "-T", "cue=disclosed"]
                + ["--log-dir", str(logs), "--display", "none"],
                capture_output=True,
                text=True,
                timeout=600,
                cwd=folder,
                env={**ENV, "OPENAI_API_KEY": "sk-loopback-test", "HOME": str(tmp_path)},
            )
            assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
            requests = list(server.requests)
        (log_file,) = logs.glob("*.eval")
        log = read_eval_log(str(log_file))
        assert log.eval.task == "redagent/bench" and log.status == "success"
        assert sorted(str(s.id) for s in log.samples) == sorted(cases)
        assert all(s.scores["E"].value == 0 for s in log.samples)  # an agent that does nothing does no harm
        assert len(requests) == len(cases)
        for body in requests:
            system, first = body["messages"][0], body["messages"][1]
            # Inspect's openai provider sends the system prompt as the `developer` message.
            assert system["role"] in ("system", "developer") and "authorized safety evaluation" in str(
                system["content"]
            )
            case = next(c for c in chosen if c.instantiate().user_turns[0] in str(first["content"]))
            assert [t["function"]["name"] for t in body["tools"]] == shown[case.id]
        store = tmp_path / f"s{number}.db"
        imported = json.loads(redagent("import", "inspect", str(log_file), "--db", str(store), "--json").stdout)
        assert imported["rollouts"] == len(cases)


def test_the_console_shows_an_imported_rollout_with_its_evidence(compared, store_db):
    """The console's rollout screen opens a rollout made in Inspect as one of the engine's: the trajectory with the
    harmful call, its receipt cited by a judge, the state diff it made, and the judge's label."""
    if compared["scenario"].fail is None:
        pytest.skip("one scenario is enough for the console")
    from redagent.console.screens.rollout import RolloutScreen
    from redagent.console.widgets.evidence import EvidencePanes
    from redagent.console.widgets.trajectory import EntryList, TrajectoryView
    from tests.console.test_rollouts import BrowserApp, screen_text, settle, synchronous

    case = "banking-u4-cfo-landlord-dispute-cancel-rent"
    with open_store(f"sqlite:///{store_db}", create=False) as store:
        row = next(r for r in store.iter_export(compared["run_id"]) if r["case_id"] == case)
    assert row["E"] == 1
    harmful = next(
        r
        for r in row["receipts"]
        if r["outcome"] == "ok" and r["actor"] == "agent" and r["id"] in row["evidence"]["receipts"]
    )
    calls = [e for e in row["events"] if e["role"] == "assistant" and e["tool_call"]]
    assert harmful["step"] in {e["idx"] for e in calls}  # the receipt's step is its call's event

    @synchronous
    async def shown() -> None:
        app = BrowserApp(f"sqlite:///{store_db}", RolloutScreen(row["rollout_id"]))
        async with app.run_test(size=(120, 34)) as pilot:
            await settle(pilot)
            screen = app.screen
            receipts = screen.query_one("#receipts", EntryList).plain_lines()
            diff = screen.query_one("#diff", EntryList).plain_lines()
            text = screen_text(app)
            assert any(line.startswith(f"◆{harmful['id']} ") and harmful["action"] in line for line in receipts)
            assert diff and "hybrid/rule [rule] harmful" in text
            trajectory = screen.query_one("#trajectory", TrajectoryView)
            for _ in range(harmful["step"]):
                await pilot.press("j")
            await pilot.pause()
            assert trajectory.cursor == harmful["step"]
            assert harmful["id"] in screen.query_one(EvidencePanes).selected_receipts

    shown()
