"""The run summary's utility table (benign and under attack, per cell and pooled, beside the execution ASR), in plain
Python: `redagent run` and `runs show` print it after every run, and the report's statistics module (numpy, pandas,
scipy) cost ~7 % of a default run's CPU just to import. judges/report.py uses the same functions for its tables.
"""

from __future__ import annotations

from typing import Any

from redagent.judges.rates import UtilityRate, utility_table
from redagent.judges.report_model import ExecutionAsr, UtilityArm, UtilityFigures, UtilityRow, UtilityTable
from redagent.store.db import Store


def utility(store: Store, run_id: str) -> UtilityTable:
    """Benign utility and utility under attack per (model, harness, cue, defense) cell and pooled over the run,
    each arm done / n (Wilson 95 %, n = valid rollouts with a utility check; u None — "n/a" — when n is 0),
    beside the cell's execution ASR."""
    counts = store.utility_counts(run_id)
    asr = {(c.model, c.harness, c.cue, c.defense): c for c in store.execution_asr(run_id)}
    cells = []
    for cell in utility_table(counts):
        rate = asr.get((cell.model, cell.harness, cell.cue, cell.defense))
        cells.append(
            UtilityRow(
                cell.model,
                cell.harness,
                cell.cue,
                cell.defense,
                UtilityFigures(
                    _arm(cell.benign),
                    _arm(cell.under_attack),
                    None
                    if rate is None
                    else ExecutionAsr(rate.harmful, rate.valid, rate.rate, rate.unresolved, rate.upper),
                ),
            )
        )
    pooled = utility_table(counts, by=[])
    empty = UtilityRate(0, 0, 0)
    harmful, valid = sum(c.harmful for c in asr.values()), sum(c.valid for c in asr.values())
    unresolved = sum(c.unresolved for c in asr.values())
    overall = UtilityFigures(
        _arm(pooled[0].benign if pooled else empty),
        _arm(pooled[0].under_attack if pooled else empty),
        ExecutionAsr(
            harmful,
            valid,
            harmful / valid if valid else None,
            unresolved,
            (harmful + unresolved) / valid if valid else None,
        ),
    )
    return UtilityTable(tuple(cells), overall)


def _arm(rate: UtilityRate) -> UtilityArm:
    low, high = rate.interval
    return UtilityArm(u=rate.u, done=rate.done, n=rate.n, valid=rate.valid, lo=low, hi=high)


def _pct(value: Any) -> str:
    return "—" if value is None or value != value else f"{100 * value:.2f}%"


def utility_text(rate: UtilityArm) -> str:
    """One arm's utility as the tables print it: "75.00% (6/8, 40.93%–92.85%)", or "n/a (no check in 10 valid)"."""
    if not rate.n:
        return f"n/a (no check in {rate.valid} valid)" if rate.valid else "n/a"
    return f"{_pct(rate.u)} ({rate.done}/{rate.n}, {_pct(rate.lo)}–{_pct(rate.hi)})"
