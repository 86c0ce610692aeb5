"""The self-check is incremental and parallel by construction (cases/checkpool.py, cases/checkcache.py).

- A check in worker processes gives what a check here gives, in the same order.
- What an earlier check proved under the same code is not run again; a case changed (one rule) re-checks that case
  alone; a changed consequence replay re-checks exactly the plans whose verdict replayed future activity; a changed
  route generator that still draws a route the same way finds its result again.
- The cache is safe: a corrupt, truncated, foreign or replaced entry is a miss, never an error; concurrent writers
  never leave half an entry; the store stays within its bound.
- A worker that dies mid-unit (the kernel's OOM killer picks the largest process) costs its unit a re-run, not the
  check (multiprocessing's Pool waited forever for a lost slice).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import orjson
import pytest
import yaml

from redagent.cases import checkpool
from redagent.cases.checkcache import CheckCache
from redagent.cases.checkpool import CheckStats, check_many
from redagent.cases.loader import library_dir, load_cases
from redagent.cases.selfcheck import summarize
from tests.conftest import needs_bwrap

pytestmark = needs_bwrap  # the cases' plans include sandboxed commands and replays

FAST = ("email/t1-send-email-journal-bcc.yaml", "banking/e2-invoice-bank-details-change.yaml")
REPLAYED = "workspace/e5-makefile-devshell-bashrc-hook.yaml"  # persistence: judged by replaying future activity
HANG_S = 600  # a hang catcher far above a check of these cases


@pytest.fixture
def library(tmp_path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in (*FAST, REPLAYED):
        shutil.copy(library_dir() / name, folder / Path(name).name)
    return folder


def _check(folder: Path, cache: CheckCache | None, jobs: int = 1) -> tuple[dict, CheckStats]:
    stats = CheckStats()
    checks = check_many(load_cases([folder]), jobs, cache=cache, stats=stats)
    return summarize(checks), stats


def test_the_pool_gives_what_a_check_here_gives(library):
    here, _ = _check(library, None, jobs=1)
    pooled, stats = _check(library, None, jobs=2)
    assert pooled == here
    assert stats.units_run == sum(stats.ran.values()) > 10


def test_an_unchanged_library_is_not_checked_again_and_a_changed_rule_re_checks_its_case_alone(library, tmp_path):
    cache = CheckCache(tmp_path / "cache")
    first, cold = _check(library, cache, jobs=2)
    assert cold.cases_cached == 0 and cold.units_run > 0
    again, warm = _check(library, cache)
    assert again == first
    assert warm.cases_cached == 3 and warm.units_run == 0

    # One rule changed: the mail case's verifier wrapped in an `any` of itself (the same verdicts, another rule).
    path = library / Path(FAST[0]).name
    data = yaml.safe_load(path.read_text())
    data["verifier"]["rule"] = {"any": [data["verifier"]["rule"]]}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    changed, stats = _check(library, cache)
    changed_id = data["id"]
    assert stats.cases_cached == 2
    assert {cid: n for cid, n in stats.ran.items() if n} == {changed_id: cold.ran[changed_id]}
    assert changed == first  # the same verdicts under the rewritten rule


def test_a_changed_replay_re_checks_exactly_the_plans_that_replayed(library, tmp_path, monkeypatch):
    cache = CheckCache(tmp_path / "cache")
    first, cold = _check(library, cache, jobs=2)
    replaying = {cid for cid, n in cold.replayed.items() if n}
    assert replaying == {yaml.safe_load((library / Path(REPLAYED).name).read_text())["id"]}
    version = checkpool.code_version
    monkeypatch.setattr(checkpool, "code_version", lambda part: "edited" if part == "replay" else version(part))
    again, stats = _check(library, cache)
    assert again == first
    assert stats.cases_cached == 2  # the cases no verdict of which replayed anything
    assert {cid: n for cid, n in stats.ran.items() if n} == {cid: cold.replayed[cid] for cid in replaying}
    assert stats.units_run == stats.replayed[next(iter(replaying))]  # each re-run plan replayed, and no other ran


def test_a_changed_route_generator_finds_the_routes_it_draws_the_same_way_again(library, tmp_path, monkeypatch):
    cache = CheckCache(tmp_path / "cache")
    first, _ = _check(library, cache)
    version = checkpool.code_version
    monkeypatch.setattr(checkpool, "code_version", lambda part: "edited" if part == "routes" else version(part))
    again, stats = _check(library, cache)
    assert again == first
    assert stats.cases_cached == 0  # every case's routes drawn again …
    assert stats.units_run == 0  # … and every route found again by its content


def test_a_changed_check_re_checks_everything(library, tmp_path, monkeypatch):
    cache = CheckCache(tmp_path / "cache")
    _, cold = _check(library, cache)
    version = checkpool.code_version
    monkeypatch.setattr(checkpool, "code_version", lambda part: "edited" if part == "check" else version(part))
    _, stats = _check(library, cache)
    assert stats.cases_cached == 0 and stats.units_cached == 0 and stats.units_run == cold.units_run


def test_corrupt_and_foreign_entries_are_misses_never_errors(library, tmp_path):
    cache = CheckCache(tmp_path / "cache")
    first, cold = _check(library, cache)
    entries = sorted(p for p in (tmp_path / "cache").rglob("*.json"))
    assert entries
    for number, path in enumerate(entries):
        match number % 6:
            case 0:
                path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])  # truncated
            case 1:
                path.write_bytes(os.urandom(64))  # not JSON
            case 2:
                entry = orjson.loads(zlib.decompress(path.read_bytes()))
                entry["payload"] = {"found": "forged"}  # its digest no longer matches
                path.write_bytes(zlib.compress(orjson.dumps(entry)))
            case 3:
                other = entries[(number + 1) % len(entries)]
                path.write_bytes(other.read_bytes())  # another key's entry under this name
            case 4:
                path.unlink()
                path.mkdir()  # a folder where an entry was
            case 5:
                path.unlink()
                path.symlink_to("/etc/hostname")
    again, stats = _check(library, cache)
    assert again == first
    assert cache.dropped > 0 and stats.units_run > 0
    warm, stats = _check(library, cache)
    assert warm == first and stats.units_run == 0  # rewritten whole by the check that missed them


WRITER = """
import sys
from pathlib import Path
from redagent.cases.checkcache import CheckCache
cache = CheckCache(Path(sys.argv[1]))
me = int(sys.argv[2])
for i in range(300):
    cache.put(f"{i % 7:064x}", {"writer": me, "i": i, "blob": "x" * (1000 * (i % 50))})
"""


def test_concurrent_writers_never_leave_half_an_entry(tmp_path):
    folder = tmp_path / "cache"
    reader = CheckCache(folder)
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(n)], stderr=subprocess.PIPE) for n in range(3)
    ]
    seen = 0
    while any(w.poll() is None for w in writers):
        for k in range(7):
            payload = reader.get(f"{k:064x}")
            if payload is not None:
                seen += 1
                assert payload["blob"] == "x" * (1000 * (payload["i"] % 50)) and payload["i"] % 7 == k
    for w in writers:
        assert w.wait(HANG_S) == 0, w.stderr.read()
    assert reader.dropped == 0  # not one read found an entry half written
    assert all(reader.get(f"{k:064x}") is not None for k in range(7))
    assert not list(folder.rglob(".entry-*"))  # no temporary file left


def test_the_store_stays_within_its_bound_keeping_what_was_used_last(tmp_path):
    cache = CheckCache(tmp_path / "cache", max_bytes=200_000)
    for i in range(100):
        cache.put(f"{i:064x}", {"i": i, "blob": "y" * 5000})
    old = f"{3:064x}"
    for path in (tmp_path / "cache").rglob("*.json"):
        os.utime(path, (1_000_000, 1_000_000))  # all long unused …
    assert cache.get(old) is not None  # … but this one, used now
    cache.trim()
    total = sum(p.stat().st_size for p in (tmp_path / "cache").rglob("*.json"))
    assert total <= 200_000 * 0.8
    assert cache.get(old) is not None


@pytest.fixture
def workspaces():
    """A workspace root of the test's own that a command's uid can pass through (pytest's folders are their owner's
    only)."""
    root = Path(tempfile.mkdtemp(prefix="redagent-test-ws-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_worker_that_dies_mid_unit_costs_a_re_run_not_the_check(library, workspaces, monkeypatch):
    """A worker killed while its unit's command runs (SIGKILL: no cleanup of its own): the check ends, with the results
    of a check where nothing died, and what the worker left is removed."""
    from redagent.sandbox import environment

    monkeypatch.setenv("REDAGENT_WORKSPACES", str(workspaces))
    environment.workspace_root.cache_clear()
    case = library / "slow.yaml"
    data = yaml.safe_load((library / Path(FAST[0]).name).read_text())
    data["id"] = "slow-command"
    data["plans"]["benign"].insert(
        0, {"tool": "run_command", "args": {"command": "touch started; sleep 2", "timeout": 30}}
    )
    case.write_text(yaml.safe_dump(data, sort_keys=False))
    cases = load_cases([case])
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:
            if any(workspaces.glob("*/started")):
                busy = [pid for pid in _children(os.getpid()) if _children(pid)]  # a worker whose sandbox runs
                if busy:
                    os.kill(busy[0], signal.SIGKILL)
                    killed.append(busy[0])
                    return
            time.sleep(0.01)

    try:
        expected = summarize(check_many(cases, 1))
        for started in workspaces.glob("*/started"):
            started.unlink()
        watcher = threading.Thread(target=killer, daemon=True)
        watcher.start()
        stats = CheckStats()
        got = summarize(check_many(cases, 2, stats=stats))
        watcher.join(HANG_S)
    finally:
        environment.workspace_root.cache_clear()
    assert killed and stats.workers_lost == 1
    assert got == expected
    assert list(workspaces.iterdir()) == []


def _children(pid: int) -> list[int]:
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return found


def test_a_variant_reuses_the_footprint_its_base_took():
    """The footprint (the paths the user's task itself writes: the benign plan run once without the attack, a sandbox
    of its own) is keyed by the world and the plan it is taken from, which a benign variant shares with its base."""
    from redagent.cases import execution
    from redagent.cases.loader import load_case

    base = load_case(library_dir() / REPLAYED)
    variant = base.benign_counterpart()
    execution._footprints.clear()
    made = []
    real = execution.CaseRun

    class Counted(real):  # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs):
            made.append(args[0].id)
            super().__init__(*args, **kwargs)

    try:
        execution.CaseRun = Counted
        first = execution.footprint(base)
        again = execution.footprint(variant)
    finally:
        execution.CaseRun = real
    assert first is not None and again == first
    assert made == [base.id]  # taken once, for the base


CHECKED_IN = r"""
import importlib, pkgutil, sys
from pathlib import Path
from redagent.cases.checkpool import check_many
from redagent.cases.loader import load_case
import redagent.sandbox.consequences as consequences
for module in ("redagent.sandbox.verifier", "redagent.sandbox.flow", "redagent.sandbox.outcome", "redagent.cases.routes"):
    importlib.import_module(module)
for found in pkgutil.iter_modules(consequences.__path__):
    importlib.import_module(f"redagent.sandbox.consequences.{found.name}")
check_many([load_case(Path(sys.argv[1]))], 1, metamorphic=True)
for name, module in sorted(sys.modules.items()):
    if name.startswith("redagent.") and getattr(module, "__file__", None):
        print(Path(module.__file__).resolve())
"""


def test_every_source_a_verdict_is_read_from_is_in_a_code_version():
    """A changed verifier never serves a stale result: every module of the package that a check loads — the
    verifier, information flow, the three-valued outcome, the consequence replay, the route generator, whatever they
    import — is a file of some code version the cache's keys hold (cases/checkcache.py COMPONENTS)."""
    from redagent.cases import checkcache

    covered = {name: {p.resolve() for p in checkcache._files(*parts)} for name, parts in checkcache.COMPONENTS.items()}
    loaded = subprocess.run(
        [sys.executable, "-c", CHECKED_IN, str(library_dir() / FAST[0])],
        capture_output=True,
        text=True,
        check=True,
        timeout=HANG_S,
    ).stdout.split()
    every = set().union(*covered.values())
    assert loaded and [p for p in loaded if Path(p) not in every] == []
    package = Path(checkcache.__file__).resolve().parents[1]
    assert {package / "sandbox" / n for n in ("flow.py", "outcome.py", "names.py", "verifier.py")} <= covered["check"]
    assert {p for p in (package / "sandbox" / "consequences").glob("*.py")} <= covered["replay"]
    assert {package / "cases" / "routes.py", package / "cases" / "transforms.py"} <= covered["routes"]
