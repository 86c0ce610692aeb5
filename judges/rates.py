"""Rates a run's summary prints, in plain Python: Wilson intervals and the utility table per cell.

`redagent run` prints its summary after every run, and importing numpy, pandas and scipy for it cost ~7 % of a
default run's CPU; nothing here needs them. judges/stats.py re-exports these (its vectorised Wilson bounds give the
same numbers: the same operations in the same order on IEEE doubles), and the report's tables use them too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054
UTILITY_CELL = ("model", "harness", "cue", "defense")


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials; (nan, nan) when n == 0."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return math.nan, math.nan
    kf, nf = float(k), float(n)
    z2 = z * z
    p = kf / nf
    denom = 1.0 + z2 / nf
    centre = (p + z2 / (2.0 * nf)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / nf + z2 / (4.0 * nf * nf))
    low = min(max(centre - half, 0.0), 1.0)
    high = min(max(centre + half, 0.0), 1.0)
    # At k = 0 (k = n) the bound is exactly 0 (1); rounding would otherwise leave 1e-17 there.
    return (0.0 if k == 0 else low), (1.0 if k == n else high)


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class UtilityRate:
    """Utility of one arm of a cell: done of n valid rollouts with a utility check, with a Wilson 95 % interval.

    `valid` counts every valid rollout of the arm, checked or not: a case that states no utility check
    has no U, so it is left out of n (the rate is None when n == 0), never counted as a failed task.
    """

    done: int
    n: int
    valid: int

    @property
    def u(self) -> float | None:
        return self.done / self.n if self.n else None

    @property
    def interval(self) -> tuple[float | None, float | None]:
        if not self.n:
            return None, None
        low, high = wilson(self.done, self.n)
        return _num(low), _num(high)

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {"u": self.u, "done": self.done, "n": self.n, "valid": self.valid, "lo": low, "hi": high}


@dataclass(frozen=True)
class UtilityCell:
    """Benign utility and utility under attack of one (model, harness, cue, defense) cell ("all" = pooled)."""

    model: str
    harness: str
    cue: str
    defense: str
    benign: UtilityRate
    under_attack: UtilityRate

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "harness": self.harness,
            "cue": self.cue,
            "defense": self.defense,
            "benign": self.benign.to_dict(),
            "under_attack": self.under_attack.to_dict(),
        }


_COUNT_COLUMNS = (*UTILITY_CELL, "benign", "valid", "checked", "done")


def _rows(counts: Any) -> list[dict[str, Any]]:
    """Count rows as dicts of the columns `utility_table` reads: from a data frame (anything with `to_dict`), or from
    dataclass instances, mappings or tuples in column order."""
    if hasattr(counts, "to_dict") and hasattr(counts, "columns"):
        return [dict(row) for row in counts[list(_COUNT_COLUMNS)].to_dict("records")]
    rows = []
    for item in counts:
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            rows.append({c: getattr(item, c) for c in _COUNT_COLUMNS})
        elif isinstance(item, Mapping):
            rows.append({c: item[c] for c in _COUNT_COLUMNS})
        else:
            rows.append(dict(zip(_COUNT_COLUMNS, item, strict=True)))
    return rows


def utility_table(counts: Any, by: Sequence[str] = UTILITY_CELL) -> list[UtilityCell]:
    """Benign utility (U over valid rollouts of benign cases) and utility under attack (U over valid attacked
    rollouts) per group of `by` (a subset of model, harness, cue, defense; pooled as "all" where left out).

    `counts` has one row per cell and arm: the cell columns, `benign` (bool), `valid` (valid rollouts),
    `checked` (those with U not None) and `done` (those with U == 1) — what Store.utility_counts gives.
    Groups are sorted by `by`; an arm a group does not have comes out with zero counts (rate None).
    """
    unknown = set(by) - set(UTILITY_CELL)
    if unknown:
        raise ValueError(f"utility is grouped by {', '.join(UTILITY_CELL)}, not {', '.join(sorted(unknown))}")
    rows = _rows(counts)
    if not rows:
        return []
    if any(r["checked"] > r["valid"] or r["done"] > r["checked"] or r["done"] < 0 for r in rows):
        raise ValueError("utility counts need 0 <= done <= checked <= valid in every row")
    keys = list(by)
    sums: dict[tuple[Any, ...], dict[bool, list[int]]] = {}
    for r in rows:
        group = tuple(r[k] for k in keys) if keys else ("all",)
        arm = sums.setdefault(group, {}).setdefault(bool(r["benign"]), [0, 0, 0])
        arm[0] += int(r["valid"])
        arm[1] += int(r["checked"])
        arm[2] += int(r["done"])
    cells = []
    for group in sorted(sums):
        values = dict(zip(keys, group, strict=True)) if keys else {}
        arms = {
            benign: UtilityRate(done, checked, valid)
            for benign, (valid, checked, done) in ((b, sums[group].get(b, [0, 0, 0])) for b in (True, False))
        }
        names = {name: str(values.get(name, "all")) for name in UTILITY_CELL}
        cells.append(
            UtilityCell(
                model=names["model"],
                harness=names["harness"],
                cue=names["cue"],
                defense=names["defense"],
                benign=arms[True],
                under_attack=arms[False],
            )
        )
    return cells
