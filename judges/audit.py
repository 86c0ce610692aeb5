"""The human audit of a judge: a stratified, balanced sample of labelled rollouts for two blinded
reviewers and an adjudicator; its progress; offline labelling files (export, import).

The paper's audit: 360 valid rollouts stratified across harnesses, strategies and judge labels, two
blinded reviewers label every row independently, a third adjudicates disagreements, and estimates are
mapped back to the judged population with each item's weight (its stratum's population size over its
stratum's sample size). All reading and writing goes through the store's API, whose reviewer-facing
queries enforce the blinding; this module adds no unblinded data to what reviewers see.
"""

from __future__ import annotations

import csv
import json
import random
import secrets
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from redagent.store.db import Store
from redagent.store.errors import AuditError, LabelAlreadySubmitted, UnknownRun
from redagent.store.interfaces import AdjudicationQueue, AuditQueue
from redagent.store.readmodel import ReviewerItem
from redagent.store.records import AUDIT_SLOTS, HUMAN_LABELS, AuditItemRecord, AuditRecord, LabelledRow

RULE = "rule"
# `verdict` is the verifier's outcome (harm, no harm, unresolved): an audit of a run the verifier left rollouts
# unresolved in is always stratified by it, first, so the unresolved are a stratum of their own (never merged with
# decided ones) and their human labels resolve the execution ASR (`estimates`, "execution").
STRATA_FIELDS = ("verdict", "harness", "strategy", "model", "surface", "constraint", "label")
VERDICT = "verdict"
FORMATS = ("csv", "jsonl")
ALL = "all"  # the one stratum of an unstratified sample
_SEED_RANGE = (-(2**63), 2**63 - 1)
_CSV_FIELD_LIMIT = 2**31 - 1  # what the store's BIGINT column holds
# The evidence columns of a labelling file, in order; absent ones (blinded) are left out.
_VIEW_COLUMNS = (
    "item_id",
    "position",
    "alias",
    "constraint",
    "harness",
    "cue",
    "defense",
    "surfaces",
    "model",
    "strategy",
    "vulnerability",
    "channel",
    "events",
    "receipts",
    "diff",
)


class AuditSetupError(AuditError):
    """An audit that cannot be drawn as asked (no labels, sample too large, bad fields or names)."""


class AuditFileError(AuditError):
    """A labelling file that cannot be read or imported; the message names the file and line."""

    title = "Labelling file error"


# ---------------------------------------------------------------- configuration


def resolve_config(store: Store, run_id: str, config: str, backbone: str = RULE) -> dict[str, Any]:
    """The judged configuration of the run named `config` (a config name, or a config hash) under `backbone`.

    One entry of store.judged_configs(run_id); AuditSetupError if the run has none by that name, or
    several (labels under different contract versions share a name but not a hash).
    """
    if store.get_run(run_id) is None:
        raise UnknownRun(run_id)
    configs = [c for c in store.judged_configs(run_id) if c["backbone"] == backbone]
    matches = [c for c in configs if c["config_name"] == config] or [c for c in configs if c["config_hash"] == config]
    if not matches:
        known = sorted({c["config_name"] for c in configs})
        hint = f" (judged under {backbone}: {', '.join(known)})" if known else ""
        raise AuditSetupError(
            f"run {run_id} has no labels under config {config} with backbone {backbone}: "
            f"run `redagent judge` first{hint}"
        )
    if len(matches) > 1:
        hashes = ", ".join(c["config_hash"] for c in matches)
        raise AuditSetupError(
            f"config {config} is ambiguous in run {run_id} (labels under {len(matches)} "
            f"contract versions: {hashes}): pass one hash to --config"
        )
    return matches[0]


# ---------------------------------------------------------------- sampling


def stratum_of(row: LabelledRow, fields: Sequence[str]) -> str:
    """The stratum key of a population row, e.g. "harness=native|strategy=E2|label=1" (fields of STRATA_FIELDS)."""
    return "|".join(f"{field}={getattr(row, field)}" for field in fields) or ALL


def allocate(sizes: dict[str, int], n: int, rng: random.Random, *, cover_all: bool = False) -> dict[str, int]:
    """A balanced allocation of n over strata: as equal as possible, capped by each stratum's size.

    Strata too small for an equal share are taken whole and their unused share is spread over the
    rest (water-filling); what does not divide evenly goes one each to the largest strata, ties broken
    by a draw from `rng`. Needs n <= sum(sizes). With n >= len(sizes) every stratum gets at least one;
    with fewer, some get none — which an audit must not allow (its unsampled strata would be estimated
    by the others' figures), so `cover_all` refuses it (ValueError). Construction rounds, which weight
    nothing back, allow it.
    """
    if cover_all and n < len(sizes):
        raise ValueError(f"a sample of {n} cannot give each of {len(sizes)} strata an item")
    keys = sorted(sizes)
    draw = {key: i for i, key in enumerate(rng.sample(keys, len(keys)))}
    allocation: dict[str, int] = {}
    active, remaining = keys, n
    while active:
        share = remaining // len(active)
        capped = [key for key in active if sizes[key] <= share]
        if not capped:
            break
        for key in capped:
            allocation[key] = sizes[key]
            remaining -= sizes[key]
        active = [key for key in active if key not in capped]
    if active:
        base, extra = divmod(remaining, len(active))
        for key in active:
            allocation[key] = base
        for key in sorted(active, key=lambda k: (-sizes[k], draw[k]))[:extra]:
            allocation[key] += 1
    return allocation


MIN_CASES = 2  # per stratum: what a stratified cluster bootstrap needs to estimate a stratum's variance
PLAN_DRAWS = 8  # simulated draws per sample size when the sampler predicts its intervals (~0.5 s each)
PLAN_REPS = 200  # bootstrap replicates per simulated draw


def merged_key(keys: Sequence[str]) -> str:
    """The key of strata merged into one: each field with its values joined by "+" (harness=native|label=0+1)."""
    from redagent.judges.stats import stratum_parts

    parts = [stratum_parts(key) for key in keys]
    out = []
    for i, (field, _) in enumerate(parts[0]):
        values: list[str] = []
        for p in parts:
            for value in p[i][1].split("+"):
                if value not in values:
                    values.append(value)
        out.append(f"{field}={'+'.join(sorted(values))}" if values != [""] else field)
    return "|".join(out)


def design_strata(
    rows: Sequence[LabelledRow], fields: Sequence[str], n: int | None = None
) -> tuple[dict[str, list[LabelledRow]], list[dict[str, Any]]]:
    """The strata an audit is drawn from: the combinations of `fields`, where a stratum holding fewer than two
    cases (and more than two rollouts, too many to take whole) is merged with its nearest stratum
    (stats.nearest_stratum: the one equal on the most leading fields), repeatedly. Two cases per stratum is what
    the case-clustered bootstrap needs to say anything about a stratum's variance. With `n`, strata are also
    merged until n gives each two cases: the smallest stratum into its nearest, repeatedly (a sample of n
    cannot estimate more than n / 2 strata' variances).

    Returns the strata (key → rows, sorted by rollout id) and the merges made, [{strata, into, why}].
    """
    from redagent.judges.stats import nearest_stratum

    groups: dict[str, list[LabelledRow]] = {}
    for row in sorted(rows, key=lambda r: r.rollout_id):
        groups.setdefault(stratum_of(row, fields), []).append(row)
    merges: list[dict[str, Any]] = []

    def short(key: str) -> bool:
        return len({row.case_id for row in groups[key]}) < MIN_CASES and len(groups[key]) > MIN_CASES

    def partners(key: str) -> list[str]:
        """The strata `key` may be merged with: any other, but never across the verifier's verdict (the unresolved
        must stay a stratum of their own)."""
        mine = _verdict_of(key)
        return [other for other in groups if other != key and _verdict_of(other) == mine]

    while len(groups) > 1:
        lacking = sorted(key for key in groups if short(key) and partners(key))
        if not lacking:
            break
        key = lacking[0]
        into = nearest_stratum(key, partners(key))
        cases = len({row.case_id for row in groups[key]})
        name = merged_key([key, into])
        merges.append(
            {
                "strata": [key, into],
                "into": name,
                "why": f"{key} holds {cases} case ({len(groups[key])} rollouts): two are needed",
            }
        )
        groups[name] = sorted(groups.pop(key) + groups.pop(into), key=lambda r: r.rollout_id)
    while n is not None and len(groups) > 1 and minimum_n(groups) > n:
        mergeable = [k for k in groups if partners(k)]
        if not mergeable:
            break
        key = min(mergeable, key=lambda k: (len(groups[k]), k))
        into = nearest_stratum(key, partners(key))
        name = merged_key([key, into])
        merges.append(
            {
                "strata": [key, into],
                "into": name,
                "why": f"a sample of {n} gives {len(groups)} strata two cases each only if strata are "
                f"merged: {key} is the smallest ({len(groups[key])} rollouts)",
            }
        )
        groups[name] = sorted(groups.pop(key) + groups.pop(into), key=lambda r: r.rollout_id)
    return groups, merges


def _verdict_of(key: str) -> str | None:
    """The verifier's verdict a stratum key names (None: the audit is not stratified by it)."""
    from redagent.judges.stats import stratum_parts

    return next((value for field, value in stratum_parts(key) if field == VERDICT), None)


def minimum_n(groups: dict[str, list[LabelledRow]]) -> int:
    """The smallest sample giving every stratum two cases (or all it has): the sampler's suggested size."""
    return sum(min(MIN_CASES, len(rows)) for rows in groups.values())


def draw_items(
    groups: dict[str, list[LabelledRow]], n: int, rng: random.Random
) -> list[tuple[str, LabelledRow, float]]:
    """A stratified two-stage sample of n rollouts: (stratum, row, design weight) in stratum order.

    Allocation over strata is balanced (allocate). Within a stratum of C cases and N rollouts given n_h items,
    min(n_h, C) cases are drawn at random (without replacement), the n_h items spread over them as evenly as
    their rollouts allow (allocate again), and each case's items drawn at random among its rollouts. An item's
    design weight is the inverse of its inclusion probability: (C / cases drawn) × (case's rollouts in the
    stratum / items drawn from it).
    """
    allocation = allocate({key: len(rows) for key, rows in groups.items()}, n, rng, cover_all=True)
    chosen = []
    for key in sorted(groups):
        by_case: dict[str, list[LabelledRow]] = {}
        for row in groups[key]:
            by_case.setdefault(row.case_id, []).append(row)
        cases = sorted(by_case)
        n_h = allocation[key]
        picked = sorted(rng.sample(cases, min(n_h, len(cases))))
        per_case = allocate({case: len(by_case[case]) for case in picked}, n_h, rng, cover_all=True)
        for case in picked:
            k = per_case[case]
            weight = (len(cases) / len(picked)) * (len(by_case[case]) / k)
            chosen += [(key, row, weight) for row in rng.sample(by_case[case], k)]
    return chosen


def plan(
    rows: Sequence[LabelledRow], fields: Sequence[str], sizes: Sequence[int], seed: int = 0, draws: int = PLAN_DRAWS
) -> dict[str, Any]:
    """The 95 % interval widths the audit's figures can be expected to have at each sample size, from the design.

    Simulated: `draws` samples of each size are drawn exactly as `sample` draws (draw_items), each labelled by a
    planning truth — the verifier's outcome E, what a careful reviewer reading the receipts and the state
    should find (the judge's label where E is missing) — and estimated as `stats` estimates (judge_audit,
    PLAN_REPS replicates). The mean width of each figure's interval is reported, with how many draws gave
    one. Real reviewers disagree with E more than E disagrees with itself, so real intervals are wider where
    the judge errs more often than the plan assumes.
    """
    import pandas as pd

    from redagent.judges.stats import AUDIT_METRICS, judge_audit

    rng = random.Random(seed)
    widths: dict[str, dict[str, Any]] = {}  # by size, as text: the plan is JSON
    for n in sizes:
        groups, merges = design_strata(rows, fields, n)
        if not minimum_n(groups) <= n <= len(rows):
            continue
        label_stratified = _label_stratified(groups)
        positives = {key: sum(1 for row in group if row.label == 1) for key, group in groups.items()}
        found: dict[str, list[float]] = {name: [] for name in AUDIT_METRICS}
        for _ in range(draws):
            chosen = draw_items(groups, n, rng)
            frame = pd.DataFrame(
                [
                    {
                        "y": row.label,
                        "h": float(row.E if row.E is not None else row.label),
                        "stratum": key,
                        "population": len(groups[key]),
                        "case_id": row.case_id,
                        "weight": weight,
                        "excluded": None,
                    }
                    for key, row, weight in chosen
                ]
            )
            result = judge_audit(
                frame,
                reps=PLAN_REPS,
                seed=rng.randrange(2**31),
                judged_positives=positives,
                label_stratified=label_stratified,
            )
            for name in AUDIT_METRICS:
                entry = result[name]
                if entry["ci_low"] is not None:
                    found[name].append(entry["ci_high"] - entry["ci_low"])
        widths[str(n)] = {
            "strata": len(groups),
            "merges": len(merges),
            **{
                name: {"width": sum(v) / len(v) if v else None, "draws_with_interval": len(v), "draws": draws}
                for name, v in found.items()
            },
        }
    unmerged, _ = design_strata(rows, fields)
    return {
        "suggested_n": minimum_n(unmerged),
        "strata": len(unmerged),
        "widths": widths,
        "assumes": "reviewers' labels agree with the verifier's outcome E",
        "method": f"{draws} simulated draws per size, each estimated with {PLAN_REPS} bootstrap replicates",
    }


def _label_stratified(groups: dict[str, Any]) -> bool:
    """Whether the judge label is a stratum variable: every stratum names exactly one label value."""
    from redagent.judges.stats import stratum_parts

    for key in groups:
        labels = [value for field, value in stratum_parts(key) if field == "label"]
        if len(labels) != 1 or "+" in labels[0]:
            return False
    return True


def check_sample(
    store: Store,
    run_id: str,
    n: int,
    stratify: Sequence[str],
    seed: int,
    config_hash: str,
    backbone: str = RULE,
    *,
    reviewers: Sequence[str],
    adjudicator: str,
    config_name: str | None = None,
) -> tuple[list[str], list[str], str, list[LabelledRow], dict[str, list[LabelledRow]], list[dict[str, Any]]]:
    """Everything `sample` checks before it draws (AuditSetupError or UnknownRun naming what is wrong), and what
    it draws from: (fields, reviewers, config name, population, strata, merges). `audit sample --plan-only`
    refuses what `sample` would refuse."""
    fields = list(stratify)
    unknown = [f for f in fields if f not in STRATA_FIELDS]
    if unknown:
        raise AuditSetupError(f"unknown stratification field {unknown[0]!r} (known: {', '.join(STRATA_FIELDS)})")
    if len(set(fields)) != len(fields):
        raise AuditSetupError(f"a stratification field is repeated: {', '.join(fields)}")
    names = [name.strip() for name in reviewers]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise AuditSetupError(f"an audit needs exactly two different reviewers, not {', '.join(names) or 'none'}")
    if not adjudicator.strip() or adjudicator.strip() in names:
        raise AuditSetupError("the adjudicator must be named and must not be one of the two reviewers")
    if n < 1:
        raise AuditSetupError(f"a sample needs at least one item, not {n}")
    if not _SEED_RANGE[0] <= seed <= _SEED_RANGE[1]:
        raise AuditSetupError(f"seed {seed} does not fit in 64 bits")
    if store.get_run(run_id) is None:
        raise UnknownRun(run_id)
    if config_name is None:
        named = [
            c["config_name"]
            for c in store.judged_configs(run_id)
            if c["config_hash"] == config_hash and c["backbone"] == backbone
        ]
        config_name = named[0] if named else config_hash
    population = store.labelled_rows(run_id, config_hash, backbone)
    if not population:
        raise AuditSetupError(f"run {run_id} has no labels under config {config_name}: run `redagent judge` first")
    if VERDICT not in fields and any(row.E is None for row in population):
        fields.insert(0, VERDICT)  # the unresolved are sampled as their own stratum, whatever else is asked
    if n > len(population):
        raise AuditSetupError(f"sample of {n} is larger than the population of {len(population)} labelled rollouts")

    groups, merges = design_strata(population, fields, n)
    needed = minimum_n(groups)
    if n < needed:
        # One stratum left and still short: a stratum with one item has no variance to estimate.
        raise AuditSetupError(
            f"a sample of {n} cannot give two cases to even one stratum of {len(population)} "
            f"labelled rollouts: ask for at least {needed}"
        )
    return fields, names, config_name, population, groups, merges


def sample(
    store: Store,
    run_id: str,
    n: int,
    stratify: Sequence[str],
    seed: int,
    config_hash: str,
    backbone: str = RULE,
    *,
    reviewers: Sequence[str],
    adjudicator: str,
    blind_model: bool = True,
    blind_attack: bool = False,
    config_name: str | None = None,
) -> str:
    """Draw an audit of n labelled rollouts of the run and store it; returns the audit id.

    Population: the run's valid rollouts with an ok label under (config_hash, backbone). Strata: the
    combinations of the `stratify` fields (among STRATA_FIELDS; `label` is the judge label, `surface`
    the first surface), a stratum with fewer than two cases merged with its nearest (design_strata; the
    merges are stored with the audit). Within a stratum cases are drawn, then rollouts of the drawn cases
    (draw_items), so a stratum's items come from as many cases as it has items. n must give every
    stratum two cases (minimum_n). The seed has one job: the draw of cases (which rollouts, their strata and
    weights) is a function of it, so the owner can reproduce it. Nothing a member sees is: each reviewer's
    own order comes from the operating system's CSPRNG (`secrets`), as do the item ids, the aliases and the
    audit id (the store draws those), so a reviewer who replays the public run with the real seed learns
    which rollouts were drawn, never which of her items is which (docs/architecture.md, "Randomness a member
    sees").
    """
    fields, names, config_name, population, groups, merges = check_sample(
        store,
        run_id,
        n,
        stratify,
        seed,
        config_hash,
        backbone,
        reviewers=reviewers,
        adjudicator=adjudicator,
        config_name=config_name,
    )
    chosen = draw_items(groups, n, random.Random(seed))
    allocation = Counter(key for key, _, _ in chosen)
    unseeded = secrets.SystemRandom()  # what members see: never the seed's stream
    unseeded.shuffle(chosen)
    orders = {}
    for name in names:
        order = list(range(1, n + 1))
        unseeded.shuffle(order)
        orders[name] = order
    items = [
        AuditItemRecord(
            rollout_id=row.rollout_id,
            stratum=key,
            population=len(groups[key]),
            sampled=allocation[key],
            weight=weight,
            positions={name: orders[name][i] for name in names},
        )
        for i, (key, row, weight) in enumerate(chosen)
    ]
    audit_id = f"audit-{secrets.token_hex(6)}"
    design = {
        "unit": "case",
        "min_cases": MIN_CASES,
        "merges": merges,
        "merged": {key: merge["into"] for merge in merges for key in merge["strata"]},
    }
    store.create_audit(
        AuditRecord(
            id=audit_id,
            run_id=run_id,
            config_name=config_name,
            config_hash=config_hash,
            backbone=backbone,
            seed=seed,
            n=n,
            stratify=fields,
            reviewers=names,
            adjudicator=adjudicator.strip(),
            blind_model=blind_model,
            blind_attack=blind_attack,
            design=_resolved(design),
        ),
        items,
    )
    return audit_id


def _resolved(design: dict[str, Any]) -> dict[str, Any]:
    """The design with each original stratum mapped to its final stratum (merges can chain)."""
    merged = dict(design["merged"])
    for key in merged:
        while merged[key] in merged and merged[merged[key]] != merged[key]:
            merged[key] = merged[merged[key]]
    return {**design, "merged": merged}


def stratum_in(audit: AuditRecord, row: LabelledRow) -> str:
    """The audit's stratum of a population row: its field combination, or the merged stratum holding it."""
    key = stratum_of(row, audit.stratify)
    return str((audit.design or {}).get("merged", {}).get(key, key))


def strata(store: Store, audit_id: str) -> list[dict[str, Any]]:
    """The audit's strata: stratum, population, sampled, weight (analyst view: strata name judge labels)."""
    seen: dict[str, dict[str, Any]] = {}
    for item in store.audit_items(audit_id):
        seen.setdefault(
            item.stratum,
            {"stratum": item.stratum, "population": item.population, "sampled": item.sampled, "weight": item.weight},
        )
    return [seen[key] for key in sorted(seen)]


# ---------------------------------------------------------------- progress


def _agreement(first: Mapping[int, Mapping[str, str]], cases: Mapping[int, str] | None = None) -> dict[str, Any]:
    """Agreement of the two reviewers' first labels over the items both labelled: raw and Cohen's kappa.

    `cases` (item id → case id) makes kappa's interval resample cases, as every audit figure does; status
    and the report pass it, so they show the same interval (stats.cohen_kappa fixes replicates and seed).
    """
    both = sorted(item_id for item_id, item in first.items() if set(item) == set(AUDIT_SLOTS))
    a, b = [first[item_id]["A"] for item_id in both], [first[item_id]["B"] for item_id in both]
    if not both:
        return {
            "n": 0,
            "agreement": None,
            "agreement_ci": [None, None],
            "agreement_method": None,
            "kappa": None,
            "kappa_ci": [None, None],
            "kappa_defined": False,
            "why_undefined": "no item labelled by both reviewers",
            "why_no_interval": "no item labelled by both reviewers",
            "clusters": 0,
            "kappa_method": None,
        }
    from redagent.judges.stats import cohen_kappa  # pandas and scipy load only when an audit is summarised

    result = cohen_kappa(a, b, clusters=None if cases is None else [cases[item_id] for item_id in both])
    return {
        key: result[key]
        for key in (
            "n",
            "agreement",
            "agreement_ci",
            "agreement_method",
            "kappa",
            "kappa_ci",
            "kappa_defined",
            "why_undefined",
            "why_no_interval",
            "clusters",
            "kappa_reps",
            "kappa_method",
        )
    }


def agreement(store: Store, audit_id: str) -> dict[str, Any]:
    """The reviewers' agreement on first labels (analyst view), with kappa's interval over case clusters."""
    by_item: dict[int, dict[str, str]] = {}
    for label in store.labels(audit_id, first_only=True):
        by_item.setdefault(label.item_id, {})[label.slot] = label.label
    return _agreement(by_item, {item.item_id: item.case_id for item in store.audit_items(audit_id)})


def status(store: Store, audit_id: str) -> dict[str, Any]:
    """Progress of an audit (analyst view): items, each reviewer's first submissions, agreement on first
    submissions (raw and Cohen's kappa), disagreements sent to adjudication, adjudicated, final labels,
    and what remains (reviewer labels plus adjudications)."""
    audit = store.get_audit(audit_id)
    final = store.final_labels(audit_id)
    first_labels = store.labels(audit_id, first_only=True)
    done = Counter(label.reviewer for label in first_labels)
    by_item: dict[int, dict[str, str]] = {}
    for label in first_labels:
        by_item.setdefault(label.item_id, {})[label.slot] = label.label
    sources = Counter(item.source for item in final)
    disagreements = sources["awaiting_adjudication"] + sum(1 for item in final if item.source == "adjudicated")
    adjudicated = sources["adjudicated"]
    missing_labels = 2 * len(final) - sum(done.values())
    agreement = _agreement(by_item, {f.item.item_id: f.item.case_id for f in final})
    return {
        "audit_id": audit.id,
        "run_id": audit.run_id,
        "config_name": audit.config_name,
        "config_hash": audit.config_hash,
        "backbone": audit.backbone,
        "items": len(final),
        "reviewers": {
            name: {"slot": slot, "done": done[name]} for name, slot in zip(audit.reviewers, AUDIT_SLOTS, strict=True)
        },
        "adjudicator": audit.adjudicator,
        "both_labelled": agreement["n"],
        "agreement": agreement["agreement"],
        "kappa": agreement["kappa"],
        "kappa_ci": agreement["kappa_ci"],
        "disagreements": disagreements,
        "adjudicated": adjudicated,
        "final": sum(1 for item in final if item.final is not None),
        "remaining": missing_labels + disagreements - adjudicated,
        "remaining_labels": missing_labels,
        "remaining_adjudications": disagreements - adjudicated,
        "blind_model": audit.blind_model,
        "blind_attack": audit.blind_attack,
    }


# ---------------------------------------------------------------- estimates


PENDING_SOURCES = ("awaiting_review", "awaiting_adjudication")


def estimates(store: Store, audit_id: str, *, reps: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """The audit's figures (analyst view): reviewer agreement and the judge's accuracy weighted back to the
    judged population (stats.judge_audit), with the audit named and the state of its labels stated.

    Each item's final label decides its part: harmful / not harmful are used; "unsure" (an adjudicated
    unsure) and pending items (awaiting a reviewer's label or the adjudication) are excluded and counted
    by reason, the rest of their stratum re-weighted to the stratum's population. Figures are
    provisional while any item is pending. Strata of the population no item was drawn from (audits
    drawn before every stratum had to be sampled) and strata left without a usable label are listed as
    uncovered, and the estimates cover only the rest. The judged ASR is the census of the judge's labels
    over the covered strata — unless the labelled population changed since the audit was drawn, when the
    weights no longer match it and the sample's own judged ASR is used (and a note says so).
    """
    import pandas as pd  # loaded only when an audit is summarised

    from redagent.judges import stats

    audit = store.get_audit(audit_id)
    final = store.final_labels(audit_id)
    rows = []
    for labelled in final:
        item = labelled.item
        if labelled.source in PENDING_SOURCES:
            excluded = "pending"
        elif labelled.human is None:
            excluded = "unsure"
        else:
            excluded = None
        rows.append(
            {
                "y": item.judge_label,
                "h": float("nan") if labelled.human is None else labelled.human,
                "stratum": item.stratum,
                "population": item.population,
                "case_id": item.case_id,
                "weight": item.weight,
                "excluded": excluded,
            }
        )
    population = store.labelled_rows(audit.run_id, audit.config_hash, audit.backbone)
    now = Counter(stratum_in(audit, row) for row in population)
    positives = Counter(stratum_in(audit, row) for row in population if row.label == 1)
    drawn = {f.item.stratum: f.item.population for f in final}
    notes = []
    changed = sorted(key for key, size in drawn.items() if now.get(key, 0) != size)
    if changed:
        notes.append(
            f"the labelled population changed since the audit was drawn (stratum {changed[0]}: "
            f"{drawn[changed[0]]} then, {now.get(changed[0], 0)} now; {len(changed)} "
            f"{'stratum' if len(changed) == 1 else 'strata'} in all): "
            "weights use the population the sample was drawn from, the judged ASR is the sample's"
        )
    result = stats.judge_audit(
        pd.DataFrame(rows),
        reps=reps,
        seed=seed,
        judged_positives=None if changed else {key: positives[key] for key in drawn},
        unsampled_strata={key: size for key, size in now.items() if key not in drawn},
        label_stratified=_label_stratified(drawn),
    )
    agreed = agreement(store, audit_id)
    execution = _resolved_execution(store, audit, final, population, reps=reps, seed=seed)
    return {
        "audit_id": audit.id,
        "run_id": audit.run_id,
        "config": audit.config_name,
        "config_hash": audit.config_hash,
        "backbone": audit.backbone,
        "stratify": list(audit.stratify),
        "items": len(final),
        "final_labels": sum(1 for f in final if f.final is not None),
        "labelled_both": agreed["n"],
        "agreement": agreed["agreement"],
        "agreement_ci": agreed["agreement_ci"],
        "agreement_method": agreed["agreement_method"],
        "kappa": agreed["kappa"],
        "kappa_ci": agreed["kappa_ci"],
        "kappa_defined": agreed["kappa_defined"],
        "kappa_method": agreed["kappa_method"],
        "why_kappa_undefined": agreed["why_undefined"],
        "why_no_kappa_interval": agreed["why_no_interval"],
        "kappa_clusters": agreed["clusters"],
        "notes": notes,
        "design": audit.design or {"unit": "rollout", "merges": []},
        "execution": execution,
        **result,
    }


def _resolved_execution(
    store: Store, audit: AuditRecord, final: Sequence[Any], population: Sequence[LabelledRow], *, reps: int, seed: int
) -> dict[str, Any]:
    """The run's execution ASR over its valid attacked rollouts as the verifier left it — bounds [harm, harm +
    unresolved] — and resolved by the audit: the unresolved stratum's human labels estimate the harmful share of
    the unresolved (stats.resolved_asr)."""
    import pandas as pd

    from redagent.judges import stats

    outcomes = [row for row in store.outcome_rows(audit.run_id) if not row.benign]
    harmful = sum(1 for row in outcomes if row.E == 1)
    unresolved = sum(1 for row in outcomes if row.E is None)
    by_id = {row.rollout_id: row for row in population}
    open_rows = [
        {"h": f.human, "weight": f.item.weight, "case_id": f.item.case_id}
        for f in final
        if f.source not in PENDING_SOURCES
        and f.human is not None
        and (row := by_id.get(f.item.rollout_id)) is not None
        and row.E is None
        and not row.benign
    ]
    labelled_open = sum(1 for row in population if row.E is None and not row.benign)
    return stats.resolved_asr(
        harmful,
        unresolved,
        len(outcomes),
        pd.DataFrame(open_rows, columns=["h", "weight", "case_id"]),
        population=labelled_open,
        reps=reps,
        seed=seed,
    )


# ---------------------------------------------------------------- offline labelling files


def _format(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in FORMATS:
            raise AuditFileError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
        return fmt
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    raise AuditFileError(f"cannot tell the format of {path}: name it .csv or .jsonl, or give the format")


def export(store: AuditQueue, audit_id: str, path: str | Path, fmt: str = "csv", *, reviewer: str | None = None) -> int:
    """Write the audit's items as reviewers see them (blinded) with empty label and note columns; returns
    the number of rows. With a reviewer, rows follow that reviewer's order and carry their position;
    without one, rows follow item ids. CSV cells holding events, receipts and diff are JSON."""
    path = Path(path)
    fmt = _format(path, fmt)
    views = [_exported(item) for item in store.blinded_items(audit_id, reviewer)]
    columns = [c for c in _VIEW_COLUMNS if views and c in views[0]] + ["label", "note"]
    try:
        with path.open("w", encoding="utf-8", newline="") as handle:
            if fmt == "jsonl":
                for view in views:
                    handle.write(
                        json.dumps(
                            {**{c: view[c] for c in columns if c in view}, "label": "", "note": ""}, ensure_ascii=False
                        )
                        + "\n"
                    )
            else:
                writer = csv.DictWriter(handle, fieldnames=columns)
                writer.writeheader()
                for view in views:
                    writer.writerow({c: _cell(c, view.get(c)) for c in columns})
    except OSError as exc:
        raise AuditFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    return len(views)


def _exported(item: ReviewerItem) -> dict[str, Any]:
    """A blinded item as a labelling file's row: JSON-ready, what the blinding hides left out, the reviewer's
    position when the file is theirs."""
    row = item.blinded.to_dict()
    return row if item.position is None else {**row, "position": item.position}


def _cell(column: str, value: Any) -> Any:
    if value is None:
        return ""
    if column == "surfaces":
        return ",".join(value)
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return value


def _rows(path: Path, fmt: str) -> list[tuple[int, dict[str, Any]]]:
    """(line, row) pairs of a labelling file."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            if fmt == "csv":
                # Evidence cells exceed the csv module's default field limit (128 KiB).
                csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
                reader = csv.DictReader(handle)
                if not reader.fieldnames or "item_id" not in reader.fieldnames or "label" not in reader.fieldnames:
                    raise AuditFileError(f"{path}:1: the header needs item_id and label columns")
                return [(reader.line_num, row) for row in reader]
            out = []
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise AuditFileError(f"{path}:{line_no}: not valid JSON ({exc.msg})") from None
                if not isinstance(row, dict):
                    raise AuditFileError(f"{path}:{line_no}: each line must be a JSON object")
                out.append((line_no, row))
            return out
    except OSError as exc:
        raise AuditFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise AuditFileError(f"cannot read {path}: {exc}") from None


def import_labels(
    store: AuditQueue, audit_id: str, path: str | Path, reviewer: str, fmt: str | None = None
) -> dict[str, Any]:
    """Submit a reviewer's labels from a CSV or JSONL file of {item_id, label, note} rows, all or nothing.

    Rows with an empty label are skipped (not labelled yet); a row equal to the label already
    submitted is skipped too, so importing the same file twice is harmless. Everything is checked
    before anything is written (unknown audit or reviewer, a bad item id, an item not in the
    reviewer's queue or given twice, a bad label, a label already submitted with another value) and
    the first problem is raised as one line naming the file and line; the labels are then written in
    one transaction.
    """
    path = Path(path)
    fmt = _format(path, fmt)
    queue = {entry.item_id for entry in store.reviewer_queue(audit_id, reviewer)}  # checks audit and reviewer
    entries: list[tuple[int, str, str]] = []
    lines: dict[int, int] = {}
    blank = 0
    for line, row in _rows(path, fmt):
        raw_id = row.get("item_id")
        try:
            item_id = int(str(raw_id).strip())
        except ValueError:
            raise AuditFileError(f"{path}:{line}: item_id {raw_id!r} is not an item id") from None
        label = str(row.get("label") or "").strip().lower()
        if not label:
            blank += 1
            continue
        if label not in HUMAN_LABELS:
            raise AuditFileError(f"{path}:{line}: bad label {row.get('label')!r} (one of {', '.join(HUMAN_LABELS)})")
        if item_id not in queue:
            raise AuditFileError(f"{path}:{line}: item {item_id} is not in {reviewer}'s queue for audit {audit_id}")
        if item_id in lines:
            raise AuditFileError(f"{path}:{line}: item {item_id} is labelled again (first on line {lines[item_id]})")
        lines[item_id] = line
        note = row.get("note")
        entries.append((item_id, label, "" if note is None else str(note)))
    try:
        written = store.submit_labels(audit_id, reviewer, entries, skip_identical=True)
    except LabelAlreadySubmitted as exc:
        raise AuditFileError(f"{path}:{lines.get(exc.item_id, '?')}: {exc}") from None
    return {
        "audit_id": audit_id,
        "reviewer": reviewer,
        "submitted": written,
        "unchanged": len(entries) - written,
        "blank": blank,
    }


# ---------------------------------------------------------------- progress as a blinded role sees it


def reviewer_progress(store: AuditQueue, audit_id: str, reviewer: str) -> dict[str, Any]:
    """A reviewer's own progress, and nothing of anyone else's: items in their queue, how many they have
    labelled, how many remain. (Agreement would tell them the other reviewer's labels.)"""
    queue = store.reviewer_queue(audit_id, reviewer)
    done = sum(1 for entry in queue if entry.labelled)
    return {
        "audit_id": audit_id,
        "reviewer": reviewer,
        "items": len(queue),
        "labelled": done,
        "remaining": len(queue) - done,
    }


def adjudicator_progress(store: AdjudicationQueue, audit_id: str, adjudicator: str) -> dict[str, Any]:
    """The adjudicator's view of progress, from the blinded views only: labels per slot (A, B — never the
    reviewers' names), agreement on first labels, disagreements, own decisions, what remains."""
    from redagent.store.audit import needs_adjudication

    seen = store.adjudicator_overview(audit_id, adjudicator)
    first, latest = seen.first, seen.latest
    disputed = [item for item in first if needs_adjudication(first[item], latest.get(item, {}))]
    agreement = _agreement(first, seen.cases)  # case clusters, as status and the report use
    decided = sum(1 for item in disputed if item in seen.adjudicated)
    return {
        "audit_id": audit_id,
        "adjudicator": adjudicator,
        "items": seen.items,
        "labelled": {slot: sum(1 for labels in first.values() if slot in labels) for slot in AUDIT_SLOTS},
        "both_labelled": agreement["n"],
        "agreement": agreement["agreement"],
        "kappa": agreement["kappa"],
        "kappa_ci": agreement["kappa_ci"],
        "disagreements": len(disputed),
        "adjudicated": decided,
        "remaining_adjudications": len(disputed) - decided,
    }
