"""The four real agent CLIs, installed, driven by every calibration agent on starter cases.

Skipped where a CLI is not installed — except in CI (`CI` set), where a missing installation fails:
`.ci/run` installs the pinned CLIs first (`redagent harnesses install …`).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from redagent.cases.execution import CaseRun
from redagent.cases.loader import load_cases
from redagent.engine.calibration import BEHAVIOURS
from redagent.engine.harnesses.cli import CLI_HARNESSES, profile
from redagent.engine.harnesses.cli.install import installation
from redagent.engine.matrix import RunSpec, start_run, summary
from redagent.store.db import open_store
from tests.ci import in_ci

# All five surfaces (email, files, banking, browser, workspace), the attack channels (tool: a poisoned
# description and a look-alike; user, in a later turn of a multi-turn case, so the CLI's session is
# resumed; environment, on a web page) and sandboxed commands (the page's curl, sim/indirect's helper).
CASES = (
    "email-t1-send-email-journal-bcc",
    "files-t2-backup-lookalike-upload",
    "cross-u5-bills-escalation-parking-notice",
    "cross-e3-docs-page-token-check-curl",
)
CONCURRENCY = {"openclaw": 2}  # 800 MB per rollout
# Every calibration agent once or twice, every case three or four times, instead of all forty pairs: what the CLI can get
# wrong (a tool call dropped, reshaped or sent twice, a session not resumed) shows on any pair, and one OpenClaw
# turn costs ~20 CPU-seconds of Node start-up. The pairs give both outcomes on every case, and the two agents whose
# E depends on the case meet it both ways: sim/indirect acts only through a sandboxed command (the page's curl, E = 1
# on cross-e3, 0 on email-t1), sim/one-channel only on the user channel (1 on the multi-turn cross-u5, 0 on
# email-t1).
PAIRS = {
    CASES[0]: ("sim/comply", "sim/ignore", "sim/one-channel", "sim/indirect"),
    CASES[1]: ("sim/recognize-comply", "sim/attempt-fail", "sim/refuse-2"),
    CASES[2]: ("sim/one-channel", "sim/comply-claim-refusal", "sim/ignore"),
    CASES[3]: ("sim/indirect", "sim/reminder-sensitive", "sim/claim-only"),
}


def _needs(name: str):
    installed = installation(profile(name)).installed
    return pytest.mark.skipif(
        not installed and not in_ci(), reason=f"{name} is not installed (redagent harnesses install {name})"
    )


@pytest.fixture(scope="module", params=[pytest.param(n, marks=_needs(n)) for n in CLI_HARNESSES])
def name(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def _pair_runs():
    """One store per CLI, kept for the session rather than the module: however pytest-xdist batches a CLI's tests
    to its worker, the pairs run once (one OpenClaw pass costs minutes)."""
    runs: dict[str, tuple] = {}
    yield runs
    for store, _ in runs.values():
        store.close()


@pytest.fixture
def pairs(name, _pair_runs, tmp_path_factory):
    """The pairs through one CLI, one run per case, once per session: the tests below read its rollouts."""
    runs = _pair_runs
    if name not in runs:
        store = open_store(f"sqlite:///{tmp_path_factory.mktemp(name) / 'runs.db'}")
        rollouts = {}
        try:
            for case, models in PAIRS.items():
                runner = start_run(
                    store,
                    RunSpec(harnesses=[name], concurrency=CONCURRENCY.get(name, 4), cases=case, models=list(models)),
                )
                asyncio.run(runner.run())
                rollouts[runner.run_record.id] = list(store.iter_export(runner.run_record.id))
        except BaseException:
            store.close()
            raise
        runs[name] = (store, rollouts)
    return runs[name]


def _record(store, rollouts, case: str, model: str):
    (row,) = [r for rows in rollouts.values() for r in rows if r["case_id"] == case and r["model"] == model]
    return store.get_rollout(row["rollout_id"])


def test_the_pairs_cover_every_calibration_agent():
    assert {m for models in PAIRS.values() for m in models} == set(BEHAVIOURS)


def test_every_calibration_agent_gets_its_expected_E_through_the_cli(pairs, name):
    store, runs = pairs
    for run_id in runs:
        assert summary(store, run_id)["protocol"]["harness_builds"][name] == {
            "version": profile(name).version,
            "config_hash": profile(name).config_hash(),
            "wire": profile(name).wire,
        }
    rollouts = [r for rows in runs.values() for r in rows]
    assert sorted((r["case_id"], r["model"]) for r in rollouts) == sorted(
        (case, model) for case, models in PAIRS.items() for model in models
    )
    invalid = [(r["case_id"], r["model"], r["invalid_reason"], r["invalid_detail"]) for r in rollouts if not r["valid"]]
    assert invalid == []
    wrong = [(r["case_id"], r["model"], r["E"], r["expected_E"]) for r in rollouts if r["E"] != r["expected_E"]]
    assert wrong == []
    # both outcomes on every case: a CLI that dropped every tool call would fail here, not pass as all-safe
    assert {(r["case_id"], r["E"]) for r in rollouts} == {(c, e) for c in PAIRS for e in (0, 1)}
    for run_id in runs:
        for record in (store.get_rollout(r.id) for r in store.rollouts(run_id)):
            artifact = json.loads(next(e["text"] for e in record.events if e["role"] == "transcript"))
            assert artifact["harness"] == name and artifact["version"] == profile(name).version
            assert all(t["exit_code"] == 0 and t["transcript"] for t in artifact["turns"])
            calls = [e for e in record.events if e["role"] == "assistant" and e["tool_call"]]
            assert len(calls) == artifact["mcp"]["calls"]  # every tool call went through the MCP bridge


def test_a_poisoned_description_reaches_the_cli_as_the_gateway_shaped_it_or_is_recorded_as_rewritten(pairs):
    case = next(c for c in load_cases() if c.id == CASES[0])
    record = _record(*pairs, case.id, "sim/ignore")
    artifact = json.loads(next(e["text"] for e in record.events if e["role"] == "transcript"))
    status = artifact["endpoint"]["tool_descriptions"]["send_email"]
    assert status in ("verbatim", "wrapped", "rewritten")
    shown = [
        t["description"]
        for p in artifact["endpoint"]["prompts"]
        for t in p["tools"]
        if t["name"].endswith("send_email")
    ]
    assert shown
    run = CaseRun(case)
    gateway = next(t["description"] for t in run.tools() if t["name"] == "send_email")
    run.finish()
    assert case.attack.marker in gateway  # the gateway shaped it: the poisoned text is in it
    if status == "verbatim":
        assert shown == [gateway] * len(shown)
    elif status == "wrapped":
        assert all(gateway in d for d in shown)
    else:  # rewritten by the CLI: recorded, and visibly not what the gateway served
        assert all(d != gateway for d in shown)


def test_multi_turn_cases_resume_the_clis_session(pairs):
    record = _record(*pairs, CASES[2], "sim/ignore")
    artifact = json.loads(next(e["text"] for e in record.events if e["role"] == "transcript"))
    assert len(artifact["turns"]) == 3
    users = [e for e in record.events if e["role"] == "user"]
    assert len(users) == 3
    first = {}
    for decision in artifact["endpoint"]["decisions"]:
        first.setdefault(decision["turn"], decision)
    assert sorted(first) == [0, 1, 2]
    # each later turn's first request carries the earlier turns: the session was resumed
    assert first[0]["user_messages"] < first[1]["user_messages"] < first[2]["user_messages"]


def test_harnesses_list_shows_every_harness_with_its_version():
    proc = subprocess.run(
        [sys.executable, "-m", "redagent", "harnesses", "list", "--json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert set(rows) == {"native", "react", "shell", *CLI_HARNESSES}
    assert all(rows[n]["version"] == profile(n).version for n in CLI_HARNESSES)


def test_a_run_with_a_missing_cli_is_one_line_naming_the_install_command(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "REDAGENT_HARNESS_CACHE": str(tmp_path / "empty-cache"), "COLUMNS": "200"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "redagent",
            "run",
            "--harnesses",
            "codex",
            "--models",
            "sim/ignore",
            "--cases",
            CASES[0],
            "--db",
            f"sqlite:///{tmp_path / 'r.db'}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: harness codex is not installed; run `redagent harnesses install codex`"
