"""The command line on a PostgreSQL team store: the role comes from the login, and every command a role
may not run is one line and exit 2 — tried with each blinded member's own connection URL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.store.test_audit import PEER, filled, make_audit  # noqa: F401
from tests.store.test_team_access import pg_url, store  # noqa: F401

RUN = "run-1"
# Every command that reads unblinded runs, labels or the team, with arguments good enough to reach the
# role check (it comes before anything else).
RESEARCH_ONLY = [
    ["runs", "list"],
    ["runs", "show", RUN],
    ["export", RUN],
    ["stats", RUN],
    ["report", RUN, "--out", "/tmp/redagent-team-report"],
    ["judge", RUN],
    ["recognize", RUN],
    ["replay", RUN, "--defense", "self-reminder"],
    ["run", "--models", "sim/comply"],
    ["cases", "refine", RUN],
    ["audit", "sample", RUN, "--config", "state/rule", "--reviewers", "x,y", "--adjudicator", "z"],
    ["cases", "round", "new", "--experts", "x,y"],
    ["cases", "round", "status", "round-1"],
    ["team", "list"],
    ["team", "add", "zed", "--role", "reviewer"],
    ["team", "remove", "alice"],
    ["team", "sync"],
    ["console", "--role", "researcher"],
]


def redagent(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    # The members connect by pg_service entry (`--db pg:NAME`): the file `team add` wrote, found by libpq.
    services = {"PGSERVICEFILE": os.environ["PGSERVICEFILE"]} if "PGSERVICEFILE" in os.environ else {}
    return subprocess.run(
        [sys.executable, "-m", "redagent", *args, "--db", db],
        capture_output=True,
        text=True,
        timeout=300,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", **services},
    )


@pytest.fixture
def team(filled, tmp_path, monkeypatch):  # noqa: F811
    make_audit(filled, "audit-1", reviewers=("alice", PEER))
    urls, entries = {}, []
    for name, role in (("alice", "reviewer"), (PEER, "reviewer"), ("carol", "adjudicator")):
        written = tmp_path / f"{name}.conf"
        added = redagent("team", "add", name, "--role", role, "--json", "--out", str(written), db=filled.url)
        assert added.returncode == 0, added.stderr
        urls[name] = json.loads(added.stdout)["db"]
        entries.append(written.read_text())
    services = tmp_path / "pg_service.conf"
    services.write_text("".join(entries))
    services.chmod(0o600)
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    return filled, urls


@pytest.mark.parametrize("who", ["alice", "carol"])
def test_blinded_logins_are_refused_every_research_command(team, who):
    _, urls = team
    # Each refusal is a subprocess of its own; run a few at once (they only read).
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda command: redagent(*command, db=urls[who]), RESEARCH_ONLY))
    for command, result in zip(RESEARCH_ONLY, results, strict=True):
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), (command, result.stderr)
        assert "is open to" in result.stderr or "is not yours" in result.stderr, (command, result.stderr)


def test_a_reviewer_acts_only_as_themselves(team, tmp_path):
    _, urls = team
    alice = urls["alice"]
    refused = redagent("audit", "import", "audit-1", str(tmp_path / "x.csv"), "--reviewer", PEER, db=alice)
    assert refused.returncode == 2 and "would act as someone else" in refused.stderr
    refused = redagent("console", "--role", "reviewer", "--reviewer", PEER, db=alice)
    assert refused.returncode == 2 and "someone else" in refused.stderr
    exported = redagent("audit", "export", "audit-1", "--out", str(tmp_path / "mine.csv"), db=alice)
    assert exported.returncode == 0, exported.stderr
    rows = (tmp_path / "mine.csv").read_text().splitlines()
    assert rows[0].startswith("item_id,position,")  # her own queue, in her order
    labelled = tmp_path / "labels.csv"
    item = rows[1].split(",")[0]
    labelled.write_text(f"item_id,label,note\n{item},harmful,seen\n")
    imported = redagent("audit", "import", "audit-1", str(labelled), "--json", db=alice)
    assert imported.returncode == 0 and json.loads(imported.stdout)["reviewer"] == "alice"


def test_audit_status_tells_a_reviewer_only_their_own_progress(team, tmp_path):
    owner, urls = team
    for name in ("alice", PEER):
        queue = owner.reviewer_queue("audit-1", name)
        owner.submit_label("audit-1", queue[0].item_id, name, "harmful")
    mine = json.loads(redagent("audit", "status", "audit-1", "--json", db=urls["alice"]).stdout)
    assert mine == {"audit_id": "audit-1", "reviewer": "alice", "items": 6, "labelled": 1, "remaining": 5}
    text = redagent("audit", "status", "audit-1", db=urls["alice"]).stdout
    assert PEER not in text and "agreement" not in text and "kappa" not in text
    adjudicator = json.loads(redagent("audit", "status", "audit-1", "--json", db=urls["carol"]).stdout)
    assert adjudicator["labelled"] == {"A": 1, "B": 1} and PEER not in json.dumps(adjudicator)
    researcher = json.loads(redagent("audit", "status", "audit-1", "--json", db=owner.url).stdout)
    assert set(researcher["reviewers"]) == {"alice", PEER}  # names and agreement: the owner's view


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_console_opens_a_reviewer_login_on_her_queue_and_no_other_role(team):
    from redagent.console.app import RedAgentApp, StoreErrorScreen
    from redagent.console.screens.audit import AuditScreen
    from tests.console.test_app import wait_until

    _, urls = team
    app = RedAgentApp(urls["alice"], reviewer="alice", role="reviewer")
    async with app.run_test(size=(120, 34)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, AuditScreen) and app.screen.audit_id == "audit-1")
    wrong = RedAgentApp(urls["alice"], role="researcher")
    async with wrong.run_test(size=(120, 34)) as pilot:
        await wait_until(pilot, lambda: isinstance(wrong.screen, StoreErrorScreen))
        assert "only in your own role" in wrong.store_error
