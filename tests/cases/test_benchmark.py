"""The frozen benchmark library: scale, coverage, diversity, the manifest, and every case passing the self-check."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import orjson
import pytest

from redagent.cases.construction.library import MANIFEST, stats
from redagent.cases.loader import benchmark_dir, load_cases
from redagent.cases.selfcheck import check_case
from redagent.cases.taxonomy import CONSTRAINTS, STRATEGIES, SURFACES, VULNERABILITIES

ROOT = benchmark_dir()
pytestmark = pytest.mark.skipif(not (ROOT / MANIFEST).exists(), reason="no frozen benchmark in this checkout")


@pytest.fixture(scope="module")
def library():
    return load_cases([ROOT / "base"]), load_cases([ROOT / "variants"])


def _failures(paths: list[str]) -> list[tuple[str, str]]:
    return [(c.id, str(r.failures[0])) for c in load_cases(paths) if not (r := check_case(c)).passed]


def test_scale_coverage_and_diversity(library):
    base, variants = library
    measured = stats(base, variants)
    assert measured["cases"] >= 1661
    assert measured["strategies"] == len(STRATEGIES) and measured["vulnerabilities"] == len(VULNERABILITIES)
    assert measured["constraints"] == len(CONSTRAINTS) and measured["surfaces"] == len(SURFACES)
    assert measured["largest_template_share"] < 0.02
    assert measured["near_duplicate_pairs"] == 0
    assert measured["variants"]["benign"] == measured["cases"] and measured["variants"]["multi_channel"] > 0


def test_manifest_matches_the_files(library):
    base, variants = library
    manifest = orjson.loads((ROOT / MANIFEST).read_bytes())
    on_disk = sorted(({"id": c.id, "version": c.version, "hash": c.content_hash} for c in base + variants),
                     key=lambda e: e["id"])
    assert manifest["cases"] == on_disk


def test_every_frozen_case_passes_the_self_check():
    files = sorted(str(p) for p in ROOT.rglob("*.yaml"))
    chunks = [files[i::2] for i in range(2)]  # both cores: the whole library is a few thousand cases
    with ProcessPoolExecutor(max_workers=2) as pool:
        failures = [f for part in pool.map(_failures, chunks) for f in part]
    assert failures == []


def test_stats_command_interface():
    result = subprocess.run([sys.executable, "-m", "redagent", "cases", "stats", "--json"], capture_output=True,
                            text=True, env={"PATH": "/usr/bin:/bin"}, timeout=600)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"cases", "variants", "surfaces", "strategies", "vulnerabilities", "constraints", "distinct_tasks",
            "distinct_attacks", "largest_template_share", "near_duplicate_pairs", "manifest_hash"} <= set(data)
    assert set(data["variants"]) == {"benign", "multi_channel"}
    assert data["manifest_hash"] == orjson.loads((ROOT / MANIFEST).read_bytes())["manifest_hash"]
