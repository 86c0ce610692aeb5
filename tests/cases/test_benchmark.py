"""The frozen benchmark libraries: scale, coverage, diversity, the manifests, every case of the latest (v3) passing
the self-check, and the earlier versions (v2, v1) staying readable so the runs made on them resolve their cases."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest

from redagent.cases.construction.compiler import BENCHMARK_VERSION
from redagent.cases.construction.library import MANIFEST, stats
from redagent.cases.loader import BENCHMARKS, LATEST_BENCHMARK, benchmark_dir, load_cases
from redagent.cases.schema import Case
from redagent.cases.selfcheck import check_case
from redagent.cases.taxonomy import CONSTRAINTS, STRATEGIES, SURFACES, VULNERABILITIES
from redagent.sandbox import normal
from tests.sampling import stratified

ROOT = benchmark_dir()
pytestmark = pytest.mark.skipif(not (ROOT / MANIFEST).exists(), reason="no frozen benchmark in this checkout")
# Base cases each frozen version holds at least (v2: 1,881 of 5,643 files; v3: see its manifest).
LEAST_BASE = {2: 1661, 3: 1661}


@functools.cache
def _loaded(version: int) -> tuple[list[Case], list[Case]]:
    """A frozen version's base cases and variants, parsed once for this module (5,566 files for v3: the latest
    version is both `library` and a `versioned` parameter)."""
    root = benchmark_dir(version)
    return load_cases([root / "base"]), load_cases([root / "variants"])


@pytest.fixture(scope="module")
def library():
    return _loaded(LATEST_BENCHMARK)


# The latest version in every suite; earlier, frozen ones (their files never change) in the full suite only.
@pytest.fixture(
    scope="module",
    params=[pytest.param(v, marks=() if v == LATEST_BENCHMARK else pytest.mark.slow) for v in sorted(LEAST_BASE)],
)
def versioned(request):
    """(version, base cases, variants) of every frozen version the scale and manifest tests cover."""
    return request.param, *_loaded(request.param)


def test_the_latest_benchmark_is_the_one_the_compiler_builds():
    assert LATEST_BENCHMARK == BENCHMARK_VERSION == max(BENCHMARKS) == 3
    assert ROOT == benchmark_dir(3) and ROOT.name == "benchmark_v3"
    manifest = orjson.loads((ROOT / MANIFEST).read_bytes())
    assert manifest["benchmark_version"] == 3 and manifest["normal_form_version"] == normal.VERSION


# The self-check's own budget (120 s a case) stops a case that runs away; here, beside the rest of the suite on a
# busy machine, only a hang should fail it (a case takes seconds; one took over 120 s on a loaded 2-core machine).
HANG_BUDGET = 1800.0


# What a generated route or a mutation may get wrong over the frozen benchmark, as shares of the plans of its kind
# (issue 33's bounds for hidden route sets are 5 %, 5 % and 20 %; the benchmark's own routes are held tighter). The
# library's routes are held route by route (tests/cases/test_selfcheck.py, tests/cases/verifier_gaps.py); over
# thousands of compiled cases a known-gap list cannot be kept by hand, so the benchmark's are held to rates, with
# every route that missed named in the failure message.
MISSED = 0.02  # routes to the harm judged no harm
FALSE_ALARMS = 0.01  # harmless near-misses and mutations judged harm
UNRESOLVED = 0.05  # harmless near-misses and mutations left unresolved (each costs an audit label)
# A case's own harmful plan, its benign plan never judged harm (one left undecided is held to BENIGN_UNRESOLVED), its
# reachability, executability and rejection checks hold without exception.
_SOFT = ("metamorphic", "mutation")


BENIGN_UNRESOLVED = 0.01  # a case's own benign plan left unresolved (issue 33's bound for the benign arm)


def _benign_open(kind: str, why: str) -> bool:
    """The benign plan, or the benign plan with refused attempts, left undecided: held to BENIGN_UNRESOLVED, not
    without exception (either judged harm still fails the case)."""
    return (kind == "verifiability" and why.startswith("benign plan gives unresolved")) or (
        kind == "rejection" and why.endswith(")") and " gives unresolved (" in why
    )


def _checked(paths: list[str]) -> list[tuple[str, list[str], list[tuple[str, str, str]]]]:
    """Per case: its failures that hold without exception, and every plan's (name, expected, verdict)."""
    out = []
    for case in load_cases(paths):
        result = check_case(case, budget=HANG_BUDGET)
        hard = [f"{kind}: {why}" for kind, why in result.failures if kind not in _SOFT and not _benign_open(kind, why)]
        plans = [(p.plan, p.expect, p.verdict) for p in result.plans]
        if any(_benign_open(kind, why) for kind, why in result.failures):
            plans.append(("benign (undecided)", "no harm", "unresolved"))
        out.append((case.id, hard, plans))
    return out


def route_rates(checked: list[tuple[str, list[str], list[tuple[str, str, str]]]]) -> dict[str, Any]:
    """The shares MISSED, FALSE_ALARMS and UNRESOLVED measure, over every plan but a case's own benign and harmful
    plan (their failures are hard), with the plans behind each."""
    to_harm = [(cid, p, v) for cid, _, plans in checked for p, e, v in plans if e == "harm" and p != "harmful"]
    harmless = [
        (cid, p, v)
        for cid, _, plans in checked
        for p, e, v in plans
        if e == "no harm" and p not in ("benign", "benign (undecided)")
    ]
    missed = [(cid, p) for cid, p, v in to_harm if v == "no harm"]
    alarms = [(cid, p) for cid, p, v in harmless if v == "harm"]
    open_ = [(cid, p) for cid, p, v in harmless if v == "unresolved"]
    return {
        "to_harm": len(to_harm),
        "harmless": len(harmless),
        "missed": missed,
        "false_alarms": alarms,
        "unresolved": open_,
    }


def test_scale_coverage_and_diversity(versioned):
    version, base, variants = versioned
    measured = stats(base, variants)
    assert measured["cases"] >= LEAST_BASE[version]
    assert {c.version for c in base + variants} == {version}
    assert measured["strategies"] == len(STRATEGIES) and measured["vulnerabilities"] == len(VULNERABILITIES)
    assert measured["constraints"] == len(CONSTRAINTS) and measured["surfaces"] == len(SURFACES)
    assert measured["largest_template_share"] < 0.02
    assert measured["near_duplicate_pairs"] == 0
    assert measured["variants"]["benign"] == measured["cases"] and measured["variants"]["multi_channel"] > 0


def test_manifest_matches_the_files(versioned):
    version, base, variants = versioned
    manifest = orjson.loads((benchmark_dir(version) / MANIFEST).read_bytes())
    assert manifest["benchmark_version"] == version
    on_disk = sorted(
        ({"id": c.id, "version": c.version, "hash": c.content_hash} for c in base + variants), key=lambda e: e["id"]
    )
    assert manifest["cases"] == on_disk


def surface_of(case: Case) -> str:
    return Path(case.source).parent.name  # base/<surface>/ and variants/<surface>/


def self_check_sample(cases: list[Case]) -> list[Case]:
    """The default suite's share of the frozen benchmark: one case of every surface × strategy × variant (base,
    benign, multi-channel), and one more for every constraint and vulnerability they leave out (tests/sampling.py)."""
    return stratified(
        cases,
        lambda c: (surface_of(c), c.strategy, c.variant),
        name=lambda c: c.id,
        cover=[lambda c: c.constraint, lambda c: c.vulnerability],
    )


def full_check_sample(cases: list[Case]) -> list[Case]:
    """The full suite's share (make test-all, CI): one case of every surface × strategy × variant × constraint, and one
    more for every vulnerability they leave out — about a fifth of the benchmark. Checking every case took over an
    hour of a 2-core machine once the consequence replay, the information-flow re-runs and the drawn route families
    came in; `redagent cases check cases/benchmark_v3` checks them all (incrementally: cases/checkcache.py)."""
    return stratified(
        cases,
        lambda c: (surface_of(c), c.strategy, c.variant, c.constraint),
        name=lambda c: c.id,
        cover=[lambda c: c.vulnerability],
    )


def test_the_self_check_sample_covers_every_stratum_and_is_the_same_each_time(library):
    cases = [*library[0], *library[1]]
    sample = self_check_sample(cases)
    assert [c.id for c in sample] == [c.id for c in self_check_sample(list(reversed(cases)))][::-1]
    for dimension in (
        lambda c: (surface_of(c), c.strategy, c.variant),
        lambda c: c.constraint,
        lambda c: c.vulnerability,
        lambda c: c.channel,
    ):
        assert {dimension(c) for c in sample} == {dimension(c) for c in cases}
    assert len(sample) < len(cases) / 10


def test_every_frozen_case_passes_the_self_check_with_its_derived_routes(library, full_suite):
    """Every case of the latest benchmark under `--full` (make test-all, CI); a stratified sample of them in the
    default suite, which still meets every kind of case and every check the self-check makes. The earlier versions
    were frozen under the rules and routes of their day: they stay readable (below), not re-checked."""
    cases = [*library[0], *library[1]]
    files = sorted(c.source for c in (full_check_sample(cases) if full_suite else self_check_sample(cases)))
    # Four processes per core: a check mostly waits on sandboxed commands and replays (four processes of the full
    # check used 20 % of a core each), and many small chunks, so no process is left with the slow ones.
    workers = 4 * (os.cpu_count() or 2)
    chunks = [files[i :: workers * 4] for i in range(workers * 4)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        checked = [found for part in pool.map(_checked, [c for c in chunks if c]) for found in part]
    assert [(cid, hard) for cid, hard, _ in checked if hard] == []
    benign_open = [cid for cid, _, plans in checked if ("benign (undecided)", "no harm", "unresolved") in plans]
    assert len(benign_open) <= BENIGN_UNRESOLVED * len(checked), benign_open
    rates = route_rates(checked)
    assert len(rates["missed"]) <= MISSED * rates["to_harm"], rates["missed"]
    assert len(rates["false_alarms"]) <= FALSE_ALARMS * rates["harmless"], rates["false_alarms"]
    assert len(rates["unresolved"]) <= UNRESOLVED * rates["harmless"], rates["unresolved"]


@pytest.mark.slow
def test_stats_command_interface():
    result = subprocess.run(
        [sys.executable, "-m", "redagent", "cases", "stats", "--json"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {
        "cases",
        "variants",
        "surfaces",
        "strategies",
        "vulnerabilities",
        "constraints",
        "distinct_tasks",
        "distinct_attacks",
        "largest_template_share",
        "near_duplicate_pairs",
        "manifest_hash",
    } <= set(data)
    assert set(data["variants"]) == {"benign", "multi_channel"}
    assert data["manifest_hash"] == orjson.loads((ROOT / MANIFEST).read_bytes())["manifest_hash"]


def test_run_case_ids_resolve_by_reading_only_their_files(library, monkeypatch):
    """A stored run names its cases by id; resolving them parses their files only, not the whole benchmark."""
    import redagent.cases.loader as loader

    base, variants = library
    wanted = [base[0].id, base[-1].id, variants[0].id, variants[-1].id]
    starter = load_cases()[0].id
    parsed: list[str] = []
    real = loader.load_case
    monkeypatch.setattr(
        loader, "load_case", lambda path, *more, **given: parsed.append(str(path)) or real(path, *more, **given)
    )
    found = loader.find_cases([*wanted, starter, "banking-no-such-case-000"])
    assert sorted(found) == sorted([*wanted, starter])
    by_id = {c.id: c for c in [*base, *variants]}
    assert all(found[cid].content_hash == by_id[cid].content_hash for cid in wanted)
    compiled = [p for p in parsed if str(ROOT) in p]
    assert sorted(Path(p).stem for p in compiled) == sorted(wanted)


def test_a_compiled_file_holding_another_id_is_refused(tmp_path, monkeypatch):
    import redagent.cases.loader as loader

    source = next((ROOT / "base" / "email").glob("*.yaml"))
    (tmp_path / "base" / "email").mkdir(parents=True)
    (tmp_path / "base" / "email" / "email-renamed-000.yaml").write_bytes(source.read_bytes())
    monkeypatch.setattr(loader, "benchmark_dir", lambda version=None: tmp_path)
    with pytest.raises(loader.CaseFileError, match="differs from the file name"):
        loader.compiled_cases(["email-renamed-000"])


@pytest.mark.parametrize("version", [1, 2])
def test_an_earlier_benchmark_stays_readable_and_old_runs_resolve_their_cases(version):
    """v2 and v3 re-froze the library under the same ids; a run made on an earlier version recorded that
    version's content hashes, and resolving its cases by those hashes finds that version's files, not the
    newest's. Without hashes an id resolves to the newest version that has it."""
    import redagent.cases.loader as loader

    root = loader.benchmark_dir(version)
    manifest = orjson.loads((root / MANIFEST).read_bytes())
    newest_ids = {e["id"]: e["hash"] for e in orjson.loads((ROOT / MANIFEST).read_bytes())["cases"]}
    entry = next(
        e
        for e in manifest["cases"]
        if not e["id"].endswith(("-benign", "-multi")) and e["id"] in newest_ids and newest_ids[e["id"]] != e["hash"]
    )
    assert loader.manifest_hash(root) == manifest["manifest_hash"] != loader.manifest_hash()
    newest = loader.find_cases([entry["id"]])[entry["id"]]
    old = loader.find_cases([entry["id"]], hashes={entry["id"]: entry["hash"]})[entry["id"]]
    assert old.content_hash == entry["hash"] and old.version == version
    assert newest.version == LATEST_BENCHMARK and newest.content_hash == newest_ids[entry["id"]]
    assert newest.utility is not None and (old.utility is None) is (version == 1)
    assert loader.benchmark_version(old.source) == version and loader.benchmark_version(newest.source) == 3


def test_a_run_names_the_benchmark_version_it_used(tmp_path):
    """`--cases benchmark` means the latest version today and another one tomorrow: a run records which versions
    its cases came from, with their manifests, and `runs show` prints them."""
    from redagent.engine.matrix import RunSpec, start_run, summary
    from redagent.store.db import open_store

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(url) as store:
        # Two different cases: v2 and v3 share ids, and a run refuses one id with two contents.
        older = min((benchmark_dir(2) / "base" / "email").glob("*.yaml"))
        newer = min(f for f in (ROOT / "base" / "email").glob("*.yaml") if f.stem != older.stem)
        files = [older, newer]
        spec = RunSpec(cases=",".join(map(str, files)), models=["sim/ignore"], harnesses=["native"], benign_arm=False)
        run_id = start_run(store, spec).run_record.id
        recorded = store.get_run(run_id).protocol["benchmarks"]
        assert summary(store, run_id)["protocol"]["benchmarks"] == recorded
    assert recorded == {
        "2": orjson.loads((benchmark_dir(2) / MANIFEST).read_bytes())["manifest_hash"],
        "3": orjson.loads((ROOT / MANIFEST).read_bytes())["manifest_hash"],
    }
    shown = subprocess.run(
        [sys.executable, "-m", "redagent", "runs", "show", run_id, "--db", url],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert shown.returncode == 0, shown.stderr
    # Off a terminal the output wraps at 80 columns, and the protocol line names the case files' paths (long in
    # a deep checkout, as CI's): compare the words, not the lines.
    words = " ".join(shown.stdout.split())
    assert f"benchmark v2 (manifest {recorded['2'][:12]})" in words
    assert f"benchmark v3 (manifest {recorded['3'][:12]})" in words


def test_one_id_selected_from_two_benchmark_versions_is_refused_not_silently_narrowed():
    """v2 and v3 share ids: naming the same case from both used to keep the first file and drop the other
    without a word. The selection is refused with both files named; the same file named twice is one case."""
    from redagent.engine.plan import PlanError, select_cases

    older = min((benchmark_dir(2) / "base" / "email").glob("*.yaml"))
    newer = ROOT / "base" / "email" / older.name
    with pytest.raises(PlanError, match=f"{older.stem}.*selected twice.*benchmark_v2.*{ROOT.name}"):
        select_cases(f"{older},{newer}")
    assert [c.id for c in select_cases(f"{newer},{newer}")] == [older.stem]
