"""A deterministic stratified sample of a corpus, for checks that take all of it only in the full suite.

The default suite (`make test`) checks a sample of the frozen benchmark; `make test-all` and CI check every case.
The sample has one member of every stratum (e.g. surface × strategy × variant), then one more for each value of
a covered dimension (constraint, vulnerability) that the strata did not reach, so every kind of case meets every
kind of check. Within a stratum the member is the one whose name hashes lowest (SHA-256): the same on every
machine and every run, and unrelated to file order or to how the corpus was generated.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")


def _rank(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def stratified(
    items: Sequence[T],
    stratum: Callable[[T], Hashable],
    *,
    name: Callable[[T], str],
    cover: Sequence[Callable[[T], Hashable]] = (),
) -> list[T]:
    """One item per stratum, plus one for every value of each `cover` dimension the strata missed; the items
    keep their input order."""
    ranked = sorted(items, key=lambda item: _rank(name(item)))
    chosen: dict[str, T] = {}
    seen: set[Hashable] = set()
    for item in ranked:
        key = stratum(item)
        if key not in seen:
            seen.add(key)
            chosen[name(item)] = item
    for dimension in cover:
        reached = {dimension(item) for item in chosen.values()}
        for item in ranked:
            if dimension(item) not in reached:
                reached.add(dimension(item))
                chosen[name(item)] = item
    return [item for item in items if chosen.get(name(item)) is item]
