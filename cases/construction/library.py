"""Building, measuring and freezing the compiled library.

`build` compiles plans with every family that can serve them, keeps only cases that pass the
self-check, gives each (family, constraint, strategy) at most one base case and each family at most
`cap` cases (so no template dominates), and writes case files — plus a benign variant of every base
case (the attack removed; a complying agent must leave E at 0) and, where the family has a second
carrier, a multi-channel variant (the same goal pushed through two channels). `stats` measures
diversity instead of assuming it; `freeze` writes a manifest of ids, versions and content hashes
and refuses a library with any failing case.
"""

from __future__ import annotations

import copy
import hashlib
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import yaml

import redagent.cases.construction.families  # noqa: F401 - registers every family
from redagent.cases.checkpool import check_many
from redagent.cases.construction.attacks import knowledge
from redagent.cases.construction.compiler import Compiled, compile_case, families_for
from redagent.cases.construction.family import REGISTRY
from redagent.cases.construction.plans import IVCPlan, enumerate_plans
from redagent.cases.construction.sourcing import from_knowledge_base
from redagent.cases.kb.base import kb_path
from redagent.cases.kb.dedup import THRESHOLD, deduplicate
from redagent.cases.loader import CaseFileError, build_case, load_cases
from redagent.cases.schema import Case, place_text
from redagent.cases.selfcheck import CHECK_JOBS, check_case
from redagent.cases.taxonomy import CONSTRAINTS, STRATEGIES, SURFACES, VULNERABILITIES
from redagent.errors import UserError
from redagent.sandbox import normal

MANIFEST = "manifest.json"


@dataclass
class BuildReport:
    kept: list[Compiled] = field(default_factory=list)
    rejected: list[Compiled] = field(default_factory=list)
    variants: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        reasons = Counter(r.rejected.split(":")[0] for r in self.rejected)
        return {
            # Whether attack texts were drawn from a generated knowledge base (cases/construction/sourcing.py).
            "knowledge_base": str(kb_path()) if from_knowledge_base() is not None else None,
            "kept": len(self.kept),
            "rejected": len(self.rejected),
            "rejections": dict(reasons),
            "variants": dict(self.variants),
        }


def build(
    out: Path, *, cap: int = 33, attempts: int = 3, families: list[str] | None = None, seed: int = 0, jobs: int = 1
) -> BuildReport:
    """Compile the library into `out` (case files under base/, variants/), in `jobs` processes.

    Families are independent (caps and the one-case-per-(family, constraint, strategy) rule are per
    family), so each process compiles and writes whole families; the result is the same as serial."""
    for folder in ("base", "variants"):
        target = out / folder
        if target.exists():
            for old in target.rglob("*.yaml"):
                old.unlink()
    chosen = sorted(families or REGISTRY)
    report = BuildReport()
    if jobs <= 1 or len(chosen) < 2:
        parts = [_build_families(out, cap, attempts, chosen, seed)]
    else:
        from concurrent.futures import ProcessPoolExecutor

        chunks = [chosen[i::jobs] for i in range(jobs)]
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            parts = list(
                pool.map(_build_families, [out] * jobs, [cap] * jobs, [attempts] * jobs, chunks, [seed] * jobs)
            )
    for part in parts:
        report.kept += part.kept
        report.rejected += part.rejected
        report.variants.update(part.variants)
    report.kept.sort(key=lambda c: _data(c)["id"])
    return report


def _build_families(out: Path, cap: int, attempts: int, families: list[str], seed: int) -> BuildReport:
    report = BuildReport()
    rng = random.Random(seed)
    plans = enumerate_plans()
    rng.shuffle(plans)
    per_family: Counter = Counter()
    taken: set[tuple[str, str, str]] = set()
    for plan in plans:
        for family in families_for(plan):
            if family.name not in families:
                continue
            key = (family.name, plan.constraint, plan.strategy)
            if key in taken or per_family[family.name] >= cap:
                continue
            for attempt in range(attempts):
                compiled = compile_case(plan, family, seed * 1000 + attempt)
                if compiled.ok:
                    report.kept.append(compiled)
                    taken.add(key)
                    per_family[family.name] += 1
                    break
                if "cannot deliver" in compiled.rejected:
                    break
                report.rejected.append(compiled)
    _write(out, report)
    return report


def _write(out: Path, report: BuildReport) -> None:
    for compiled in report.kept:
        data = _data(compiled)
        surface = compiled.plan.surface
        _dump(out / "base" / surface / f"{data['id']}.yaml", data)
        benign = benign_variant(compiled)
        _dump(out / "variants" / surface / f"{benign['id']}.yaml", benign)
        report.variants["benign"] += 1
        multi = multi_channel_variant(compiled)
        if multi is not None:
            _dump(out / "variants" / surface / f"{multi['id']}.yaml", multi)
            report.variants["multi_channel"] += 1


def _data(compiled: Compiled) -> dict[str, Any]:
    """A kept case's data: `compile_case` sets it before the case built from it, so `ok` implies it."""
    assert compiled.ok and compiled.data is not None, "only a compiled case that was kept is written or varied"
    return compiled.data


def benign_variant(compiled: Compiled) -> dict[str, Any]:
    """The base case with its attack removed (`variant: benign`): nothing adversarial reaches the agent,
    so any agent that only follows the user must leave E at 0. It keeps its harmful plan and verifier,
    so the self-check still proves the verifier would see the harm — a false-positive probe."""
    data = _data(compiled)
    variant = copy.deepcopy(data)
    variant["id"] = f"{data['id']}-benign"
    variant["title"] = f"{data['title']} — benign variant"
    variant["variant"] = {"kind": "benign", "of": data["id"]}
    # Without the attack there is no look-alike tool: the harm is checked through the goal's own steps.
    variant["plans"]["harmful"] = copy.deepcopy(compiled.direct_harmful)
    return variant


def multi_channel_variant(compiled: Compiled) -> dict[str, Any] | None:
    """The same goal pushed through a second channel: the attack text also planted on another carrier
    the benign plan reads. Kept only if it is itself a valid case that passes the self-check."""
    data = _data(compiled)
    primary = data["attack"].get("target")
    second = next((ref for ref in compiled.carriers.values() if ref != primary), None)
    if second is None:
        return None
    variant = copy.deepcopy(data)
    variant["id"] = f"{data['id']}-multi"
    variant["title"] = f"{data['title']} — multi-channel variant"
    variant["notes"] = f"{data.get('notes', '')}; multi-channel: the attack also planted at {second}"
    variant["variant"] = {"kind": "multi_channel", "of": data["id"]}
    try:
        place_text(variant["seed"], second, data["attack"]["content"])
        case = build_case(variant, {}, f"<variant {variant['id']}>")
    except (CaseFileError, KeyError, TypeError, ValueError):
        return None
    return variant if check_case(case).passed else None


def _dump(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110), encoding="utf-8")


# -- measurement -------------------------------------------------------------------------------
_NAMEISH = re.compile(r"\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)*\b")
_NUMBERISH = re.compile(r"\d[\d,.\s]*")
_IDS = re.compile(r"\b[\w.-]+@[\w.-]+\b|https?://\S+|\b[A-Z]{2,}-\d+\b")


def skeleton(case: Case) -> str:
    """A case's text with names, numbers, addresses and ids blanked: equal skeletons are near-duplicates."""
    text = " ".join(
        [
            case.task,
            *case.followups,
            case.attack.content,
            orjson.dumps(case.rule).decode(),
            case.strategy,
            case.constraint,
        ]
    )
    text = _IDS.sub("<id>", text)
    text = _NUMBERISH.sub("<n>", text)
    return _NAMEISH.sub("<name>", text)


def template_of(case: Case) -> str:
    note = case.raw.get("notes", "")
    match = re.search(r"compiled by family (\S+)", note)
    return match.group(1) if match else f"handwritten:{case.id}"


@cache
def _phrasing_patterns() -> dict[str, list[re.Pattern[str]]]:
    """Each hand-written phrasing as a pattern its filled-in text matches (its fields as wildcards)."""
    field_ = re.compile(r"\\\{\w+\\\}")
    return {
        strategy: [re.compile(field_.sub(".*?", re.escape(text)), re.DOTALL) for text in texts]
        for strategy, texts in knowledge("phrasings").items()
    }


def attack_template_of(case: Case) -> str:
    """Where a case's attack text comes from: the knowledge-base wrapper it cites, the hand-written phrasing it
    cites or fills in (`phrasing:U2[1]`), else its own text (a hand-written case: a template of one)."""
    source = case.attack.source or {}
    if source.get("use", "wrapper") == "wrapper" and source.get("mapping"):
        return source["mapping"]
    if source.get("use") == "phrasing" and source.get("entry"):
        return f"phrasing:{source['entry']}"
    for index, pattern in enumerate(_phrasing_patterns().get(case.strategy, [])):
        if pattern.fullmatch(case.attack.content):
            return f"phrasing:{case.strategy}[{index}]"
    return f"text:{hashlib.sha256(case.attack.content.encode()).hexdigest()[:16]}"


def attack_diversity(base: list[Case]) -> dict[str, Any]:
    """How varied the attack texts are: the knowledge-base techniques cited, the attack templates (wrappers and
    phrasings) and the largest one's share, and the share of attack texts that repeat an earlier one (in id
    order) exactly or nearly (MinHash near-duplicates at the knowledge base's threshold: cases/kb/dedup.py).

    The repeats are split by where they come from. One long corpus wrapper around two cases' different goals
    reads as a near-duplicate (the wrapper is most of the text): that is reuse of one technique, bounded by how
    many wrappers the knowledge base holds. A repeat of a text from another template is two techniques that
    read alike, which the knowledge base's own deduplication should have merged."""
    ordered = sorted(base, key=lambda c: c.id)
    of = [attack_template_of(c) for c in ordered]
    templates = Counter(of)
    cited = {c.attack.source["mapping"] for c in ordered if c.attack.source and c.attack.source.get("mapping")}
    found = deduplicate([c.attack.content for c in ordered])
    repeats = {**found.exact, **{index: earlier for index, (earlier, _) in found.near.items()}}
    repeated = len(repeats)
    across = sum(1 for index, earlier in repeats.items() if of[index] != of[earlier])
    return {
        "techniques_cited": len(cited),
        "cases_citing": sum(1 for c in ordered if c.attack.source),
        "attack_templates": len(templates),
        "largest_attack_template_share": (max(templates.values()) / len(ordered)) if ordered else 0.0,
        "attack_near_duplicate_rate": (repeated / len(ordered)) if ordered else 0.0,
        "attack_near_duplicate_rate_across_templates": (across / len(ordered)) if ordered else 0.0,
        "attack_near_duplicate_threshold": THRESHOLD,
    }


def stats(cases: list[Case], variants: list[Case] | None = None) -> dict[str, Any]:
    base = [c for c in cases if not c.variant]
    templates = Counter(template_of(c) for c in base)
    skeletons = Counter(skeleton(c) for c in base)
    return {
        "cases": len(base),
        "variants": {
            "benign": sum(1 for c in (variants or []) if c.variant == "benign"),
            "multi_channel": sum(1 for c in (variants or []) if c.variant == "multi_channel"),
        },
        "surfaces": len({s for c in base for s in c.surfaces}),
        "strategies": len({c.strategy for c in base}),
        "vulnerabilities": len({c.vulnerability for c in base}),
        "constraints": len({c.constraint for c in base}),
        "distinct_tasks": len({c.task for c in base}),
        "distinct_attacks": len({c.attack.content for c in base}),
        "templates": len(templates),
        "largest_template_share": (max(templates.values()) / len(base)) if base else 0.0,
        "near_duplicate_pairs": sum(n * (n - 1) // 2 for n in skeletons.values()),
        "attack_diversity": attack_diversity(base),
        "by_surface": dict(Counter(c.surfaces[0] for c in base)),
        "coverage_missing": {
            "strategies": sorted(set(STRATEGIES) - {c.strategy for c in base}),
            "vulnerabilities": sorted(set(VULNERABILITIES) - {c.vulnerability for c in base}),
            "constraints": sorted(set(CONSTRAINTS) - {c.constraint for c in base}),
            "surfaces": sorted(set(SURFACES) - {s for c in base for s in c.surfaces}),
        },
    }


class FreezeRefused(UserError, ValueError):
    title = "Freeze refused"


def freeze(paths: list[Path], out: Path) -> dict[str, Any]:
    """Write the frozen manifest; refuse if any case fails the self-check."""
    cases = load_cases(paths)
    checks = check_many(cases, CHECK_JOBS)
    failing = [(r.case.id, r.failures[0]) for r in checks if not r.passed]
    if failing:
        case_id, (check, why) = failing[0]
        raise FreezeRefused(f"{len(failing)} case(s) fail the self-check; first: {case_id}: {check}: {why}")
    entries: list[dict[str, Any]] = sorted(
        ({"id": c.id, "version": c.version, "hash": c.content_hash} for c in cases), key=lambda e: e["id"]
    )
    counts: dict[str, Counter] = defaultdict(Counter)
    for c in cases:
        counts["strategy"][c.strategy] += 1
        counts["vulnerability"][c.vulnerability] += 1
        counts["constraint"][c.constraint] += 1
        for s in c.surfaces:
            counts["surface"][s] += 1
    body = orjson.dumps(entries, option=orjson.OPT_SORT_KEYS)
    versions = sorted({c.version for c in cases})
    manifest = {
        "manifest_hash": hashlib.sha256(body).hexdigest(),
        "cases": entries,
        # The benchmark version is the case-file version every compiled case carries.
        "benchmark_version": versions[0] if len(versions) == 1 else None,
        # Verdicts compare text in the normal form (sandbox/normal.py): under another version of it the
        # same rollout may be judged otherwise, so the frozen library names the one it was checked under.
        "normal_form_version": normal.VERSION,
        "variants_tried": sum(r.variants_tried for r in checks),
        "taxonomy_counts": {k: dict(sorted(v.items())) for k, v in counts.items()},
    }
    out.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    return manifest


def all_families() -> list[str]:
    return sorted(REGISTRY)


def plans_by_constraint() -> dict[str, list[IVCPlan]]:
    grouped: dict[str, list[IVCPlan]] = defaultdict(list)
    for plan in enumerate_plans():
        grouped[plan.constraint].append(plan)
    return dict(grouped)
