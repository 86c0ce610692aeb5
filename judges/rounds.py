"""Construction rounds: sample case versions of the library for expert review, and measure how far the
experts agree on each rubric item and on the decision.

A round pins each sampled case by id, version and content hash, so a review always refers to the
exact text the expert read. Sampling is stratified by surface (the library folder a case lives in:
banking, browser, email, files, workspace, or cross for multi-surface cases) with a balanced
allocation, and everything follows from the seed: which cases, and the order they are reviewed in.
The store does all reading and writing (store/reviews.py); this module holds no SQL.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redagent.cases.loader import load_cases
from redagent.cases.schema import Case
from redagent.cases.taxonomy import SURFACES
from redagent.errors import UserError
from redagent.judges.audit import allocate
from redagent.judges.stats import cohen_kappa
from redagent.store.db import Store
from redagent.store.reviews import RUBRIC_ITEMS, CaseReview, RoundCaseRecord

CROSS = "cross"
AGREEMENT_ITEMS = (*RUBRIC_ITEMS, "decision")


class RoundError(UserError, ValueError):
    """A round that cannot be drawn as asked, or a pinned case version that is no longer in the library."""

    title = "Review round error"


def surface_of(case: Case) -> str:
    """The stratum of a case: its library folder (a surface or `cross`), else its first surface."""
    folder = Path(case.source).parent.name if case.source else ""
    return folder if folder in SURFACES or folder == CROSS else case.surfaces[0]


def new_round(
    store: Store,
    n: int,
    seed: int,
    experts: Sequence[str],
    *,
    cases: Sequence[Case] | None = None,
    round_id: str | None = None,
) -> str:
    """Sample n case versions (default: from the built-in library) stratified by surface into a new round.

    The allocation is balanced over surfaces (see judges.audit.allocate), the cases within a surface a
    simple random sample, and the review order a shuffle, all drawn from `seed`; the round id is
    random unless given. Returns the round id.
    """
    names = [name.strip() for name in experts]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise RoundError(f"a round needs exactly two different experts, not {', '.join(names) or 'none'}")
    library = list(cases) if cases is not None else load_cases()
    if n < 1:
        raise RoundError(f"a round needs at least one case, not {n}")
    if n > len(library):
        raise RoundError(f"a round of {n} cases is larger than the library of {len(library)}")
    rng = random.Random(seed)
    groups: dict[str, list[Case]] = {}
    for case in sorted(library, key=lambda c: c.id):
        groups.setdefault(surface_of(case), []).append(case)
    allocation = allocate({surface: len(group) for surface, group in groups.items()}, n, rng)
    chosen = [case for surface in sorted(groups) for case in rng.sample(groups[surface], allocation[surface])]
    rng.shuffle(chosen)  # review order carries no surface blocks
    records = [RoundCaseRecord(case_id=c.id, case_version=c.version, case_hash=c.content_hash) for c in chosen]
    return store.create_round(round_id or f"round-{secrets.token_hex(6)}", seed, names, records)


def pinned_case(case_id: str, case_hash: str, library: Sequence[Case] | None = None) -> Case:
    """The library's case with this id, if it is still the version the round pinned (RoundError otherwise)."""
    for case in library if library is not None else load_cases():
        if case.id == case_id:
            if case.content_hash != case_hash:
                raise RoundError(
                    f"case {case_id} changed since the round pinned it (hash {case_hash[:12]}, "
                    f"library {case.content_hash[:12]})"
                )
            return case
    raise RoundError(f"case {case_id} is no longer in the library")


def agreement(store: Store, round_id: str) -> dict[str, Any]:
    """Agreement between the round's two experts on their first submissions, per rubric item and decision.

    Over the cases both experts reviewed: raw agreement and Cohen's kappa (None, with the reason, when
    undefined). Also each expert's progress and whether both are done.
    """
    info = store.get_round(round_id)
    first, second = info.experts
    reviews: dict[str, dict[str, CaseReview]] = {}
    for review in store.case_reviews(round_id, first_only=True):
        reviews.setdefault(review.case_id, {})[review.expert] = review
    both = [pair for pair in reviews.values() if first in pair and second in pair]
    items: dict[str, dict[str, Any]] = {}
    for item in AGREEMENT_ITEMS:

        def value(review: CaseReview, item: str = item) -> str:
            return review.decision if item == "decision" else review.rubric[item]

        items[item] = cohen_kappa([value(pair[first]) for pair in both], [value(pair[second]) for pair in both])
    progress = store.review_progress(round_id)
    return {
        "round_id": round_id,
        "experts": [first, second],
        "cases": info.n,
        "both_reviewed": len(both),
        "progress": progress,
        "done": all(count == info.n for count in progress.values()),
        "items": items,
    }
