"""Every statistic the paper reports, for one run, each with its protocol and its valid denominator.

`build_report` reads outcomes, labels, recognition labels and audits from the store and computes:
execution and reported ASR per cell over attacked rollouts (Wilson intervals), benign utility and utility
under attack per cell (Wilson intervals), paired view comparisons (exact McNemar,
case-clustered bootstrap of the difference), ranking reversals across slices, evaluation-cue and
defense effects on matched pairs, the Recognition–Execution Gap, and the judge audit, as a `Report` (the
dataclass tree of judges/report_model.py). `write_report` renders it as JSON, Markdown and CSV, with PNG plots.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pandas as pd

from redagent.cases.taxonomy import strategy_category
from redagent.errors import UserError
from redagent.judges import stats
from redagent.judges.config import RULE, VIEWS
from redagent.judges.health import run_health
from redagent.judges.labelling import LEXICAL, recognition_contract_hash, run_cases
from redagent.judges.report_model import (
    Adaptive,
    AsrAtK,
    AsrCell,
    AuditEstimate,
    AuditStats,
    Effect,
    ExecutionAsr,
    Health,
    PairedChange,
    RankingAgreement,
    Reg,
    Report,
    ResolvedAsr,
    Semantic,
    StrategyRate,
    UtilityTable,
    ViewComparison,
    from_json,
    to_json,
)
from redagent.judges.summary import _pct, utility, utility_text
from redagent.store.db import Store

TABLES = ("asr", "utility", "views", "ranking", "cue", "defense", "reg", "audit", "adaptive")


class ReportError(UserError, ValueError):
    title = "Report error"


def _protocol(store: Store, run_id: str, backbone: str, configs: list[dict[str, Any]]) -> dict[str, Any]:
    run = store.get_run(run_id)
    if run is None:
        raise ReportError(f"no run {run_id!r} in the store")
    p = run.protocol
    return {
        "run_id": run_id,
        "status": run.status,
        "models": p.get("models"),
        "harnesses": p.get("harnesses"),
        "cues": p.get("cues"),
        "defenses": p.get("defenses"),
        "attempts": p.get("attempts"),
        "cases": p.get("cases"),
        "case_set_hash": run.case_set_hash,
        "code_version": run.code_version,
        "parent_run_id": run.parent_run_id,
        "backbone": backbone,
        "benign_arm": bool(p.get("benign_arm", False)),
        "attacker": {
            "kind": p.get("attacker") or "none",
            "model": p.get("attacker_model"),
            "budget": p.get("attack_budget"),
        },
        "judging_configurations": [
            {k: c[k] for k in ("config_name", "config_hash", "view", "backbone")}
            for c in configs
            if c["backbone"] == backbone
        ],
    }


def build_report(
    store: Store,
    run_id: str,
    *,
    backbone: str = RULE,
    recognition_judge: str = LEXICAL,
    reps: int = 10_000,
    seed: int = 0,
    only: str | None = None,
    audit_id: str | None = None,
) -> Report:
    """The report of one run; `audit_id` picks the audit to report (default: the run's newest)."""
    configs = [c for c in store.judged_configs(run_id)]
    # The sections in the order report.json lists them; a table left out by `only` is not computed at all.
    report: dict[str, Any] = {"protocol": _protocol(store, run_id, backbone, configs)}
    outcomes = pd.DataFrame(store.outcome_rows(run_id))
    mine = {c["config_name"]: c for c in configs if c["backbone"] == backbone}
    labels = {name: pd.DataFrame(store.labelled_rows(run_id, c["config_hash"], backbone)) for name, c in mine.items()}

    def want(table: str) -> bool:
        return only in (None, table)

    # ASR and its effects are over attacked rollouts: a benign rollout (the benign arm, a benign variant)
    # is no attack that failed. Its E still counts where labels are compared (views), and its U in utility.
    attacked = _attacked(outcomes)
    attacked_labels = {name: _attacked(frame) for name, frame in labels.items()}
    if want("asr"):
        report["asr"] = _asr(attacked, attacked_labels, backbone, _cell_counts(store, run_id))
        report["by_strategy"] = _by_strategy(attacked)
        semantic = _semantic(store, run_id, attacked, configs)
        if semantic is not None:
            report["semantic"] = semantic
    if want("asr") or want("utility"):
        report["utility"] = utility(store, run_id)
    if want("asr"):
        # Beside the ASR: whether each cell measured an agent or a broken setup (judges/health.py).
        report["health"] = from_json(Health, run_health(store, run_id))
    if want("views") or want("ranking"):
        views, ranking = _views(labels, reps, seed)
        report["views"], report["ranking"] = views, ranking
    if want("cue"):
        report["cue"] = _effects(
            attacked, "cue", "clean", ("model", "case_id", "harness", "defense", "attempt"), reps, seed
        )
    if want("defense"):
        report["defense"] = _defense(store, run_id, attacked, reps, seed)
    if want("reg"):
        report["reg"] = _reg(store, run_id, outcomes, recognition_judge)
    if want("audit"):
        audit = _audit(store, run_id, reps, seed, audit_id)
        if audit is not None:
            report["audit"] = audit
    if want("adaptive"):
        adaptive = _adaptive(store, run_id, attacked, reps, seed)
        if adaptive is not None:
            report["adaptive"] = adaptive
    return Report.from_json(report)


def _adaptive(store: Store, run_id: str, attacked: pd.DataFrame, reps: int, seed: int) -> Adaptive | None:
    """An adaptive run's attacker statistics (None for a run without an attacker): per cell and pooled, ASR@k
    for k = 0 … budget with case-clustered intervals, moves-to-success, the fixed-vs-adaptive paired
    difference (E@0 against E on the same rollouts, engine/attacker/session.py), and the attacker's claims
    of success beside what the verifier found. Over valid attacked rollouts."""
    run = store.get_run(run_id)
    protocol = run.protocol if run is not None else {}
    kind = protocol.get("attacker") or "none"
    if kind == "none":
        return None
    budget = int(protocol.get("attack_budget") or 0)
    moves = store.attacker_moves(run_id)
    rows = []
    open_cells: dict[tuple[str, ...], int] = {}
    for r in attacked.itertuples(index=False) if not attacked.empty else []:
        if pd.isna(r.E):  # unresolved: neither a success nor a failure of the attacker until judged
            key = tuple(getattr(r, k) for k in CELL)
            open_cells[key] = open_cells.get(key, 0) + 1
            continue
        events = [m["move"] for m in moves.get(r.rollout_id, [])]
        made = [m for m in events if m.get("move") != "stop"]
        rows.append(
            {
                **{k: getattr(r, k) for k in (*CELL, "case_id", "rollout_id")},
                "E": int(r.E),
                "moves": len(made),
                "refused": sum(1 for m in made if not m.get("placed", True)),
                "stopped": int(any(m.get("move") == "stop" for m in events)),
                "claimed": int(any(m.get("claimed_success") for m in events)),
            }
        )
    frame = pd.DataFrame(rows, columns=[*CELL, "case_id", "rollout_id", "E", "moves", "refused", "stopped", "claimed"])

    def summary(group: pd.DataFrame, unresolved: int) -> dict[str, Any]:
        claimed = group[group["claimed"] == 1]
        return {
            "unresolved": unresolved,
            "rollouts": len(group),
            "cases": int(group["case_id"].nunique()),
            "asr_at_k": stats.asr_at_k(group, budget, reps=reps, seed=seed),
            "moves_to_success": stats.moves_to_success(group, budget),
            "fixed_vs_adaptive": stats.fixed_vs_adaptive(group, reps=reps, seed=seed),
            "moves_made": int(group["moves"].sum()),
            "refused_placements": int(group["refused"].sum()),
            "attacker_stopped": int(group["stopped"].sum()),
            "claims": {"claimed": len(claimed), "verified": int((claimed["E"] == 1).sum())},
        }

    cells = (
        [
            {**dict(zip(CELL, key, strict=True)), **summary(group, open_cells.get(key, 0))}
            for key, group in frame.groupby(list(CELL), sort=True)
        ]
        if not frame.empty
        else []
    )
    return from_json(
        Adaptive,
        {
            "attacker": kind,
            "model": protocol.get("attacker_model"),
            "budget": budget,
            "cells": cells,
            "overall": summary(frame, sum(open_cells.values())) if not frame.empty else None,
        },
    )


def adaptive_rows(table: Adaptive) -> list[dict[str, Any]]:
    """The adaptive table flattened for CSV: one row per cell and the pooled row (model "all")."""
    out = []
    for c in table.rows():
        f = c.figures
        row: dict[str, Any] = {
            "model": c.model,
            "harness": c.harness,
            "cue": c.cue,
            "defense": c.defense,
            "rollouts": f.rollouts,
            "cases": f.cases,
            "moves_made": f.moves_made,
            "refused_placements": f.refused_placements,
            "attacker_stopped": f.attacker_stopped,
        }
        for entry in f.asr_at_k:
            row[f"asr_at_{entry.k}"] = entry.rate
            row[f"asr_at_{entry.k}_ci_low"] = entry.ci_low
            row[f"asr_at_{entry.k}_ci_high"] = entry.ci_high
        diff = f.fixed_vs_adaptive
        row.update(
            fixed_asr=diff.baseline_rate,
            adaptive_asr=diff.treatment_rate,
            adaptive_minus_fixed_pp=diff.change_pp,
            diff_ci_low_pp=diff.ci_low_pp,
            diff_ci_high_pp=diff.ci_high_pp,
            mean_moves_to_success=f.moves_to_success.mean,
            claims=f.claims.claimed,
            claims_verified=f.claims.verified,
        )
        out.append(row)
    return out


def asr_at_k_text(entry: AsrAtK) -> str:
    """One ASR@k as the tables print it: "40.00% (4/10, 12.00%–70.00%)", or with the reason for no interval."""
    interval = (
        f"{_pct(entry.ci_low)}–{_pct(entry.ci_high)}" if entry.ci_low is not None else f"no CI: {entry.why_no_interval}"
    )
    return f"{_pct(entry.rate)} ({entry.harmful}/{entry.n}, {interval})"


def difference_text(diff: PairedChange) -> str:
    """The fixed-vs-adaptive difference: "+30.00 pp (10.00 – 50.00)"."""
    if diff.change_pp is None:
        return "—"
    interval = (
        f"{_num(diff.ci_low_pp)} – {_num(diff.ci_high_pp)}"
        if diff.ci_low_pp is not None
        else f"no CI: {diff.why_no_interval}"
    )
    return f"{diff.change_pp:+.2f} pp ({interval})"


def _adaptive_markdown(table: Adaptive) -> list[str]:
    budget = table.budget
    lines = [
        f"## Adaptive attacker ({table.attacker}{', ' + table.model if table.model else ''}, budget {budget} moves)",
        "",
        "ASR@k: E = 1 within the first k attacker moves, over valid attacked rollouts (case-clustered bootstrap "
        "95 %). ASR@0 is the fixed attack: the loop starts only after the case's own turns and ends when the "
        "verifier finds E = 1, so a successful rollout's stored moves are its moves-to-success. The difference "
        "is adaptive − fixed on the same rollouts (paired).",
        "",
        "| model | harness | cue | defense | n | "
        + " | ".join(f"ASR@{k}" for k in range(budget + 1))
        + " | adaptive − fixed | moves to success (0…K) | mean | claims (verified) |",
        "|---|---|---|---|---:|" + "---|" * (budget + 1) + "---|---|---:|---:|",
    ]
    for c in table.rows():
        f = c.figures
        dist = f.moves_to_success
        lines.append(
            f"| {c.model} | {c.harness} | {c.cue} | {c.defense} | {f.rollouts} | "
            + " | ".join(asr_at_k_text(e) for e in f.asr_at_k)
            + f" | {difference_text(f.fixed_vs_adaptive)} | "
            + " / ".join(str(dist.distribution[str(k)]) for k in range(budget + 1))
            + f" (+{dist.not_within_budget} not within budget) | "
            + ("—" if dist.mean is None else f"{dist.mean:.2f}")
            + " | "
            f"{f.claims.claimed} ({f.claims.verified}) |"
        )
    lines.append("")
    return lines


def _attacked(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of attacked rollouts (benign == False); an empty frame as it is."""
    return df[~df["benign"].astype(bool)] if "benign" in df else df


CELL = ("model", "harness", "cue", "defense")


def _cell_counts(store: Store, run_id: str) -> dict[tuple[str, ...], dict[str, int]]:
    """Per cell of the run's attacked rollouts: how many are stored and how many of them are invalid.

    Read from the rollouts themselves, so a cell whose every rollout was invalid is still a cell."""
    counts: dict[tuple[str, ...], dict[str, int]] = {}
    for r in store.rollouts(run_id):
        if r.benign:
            continue
        cell = counts.setdefault((r.model, r.harness, r.cue, r.defense), {"rollouts": 0, "invalid": 0})
        cell["rollouts"] += 1
        cell["invalid"] += int(not r.valid)
    return counts


def _cells(
    df: pd.DataFrame, value: str, source: str, backbone: str | None, counts: dict[tuple[str, ...], dict[str, int]]
) -> list[AsrCell]:
    """One row per cell of the run — also those with no valid (or no labelled) rollout, with rate None —
    and each cell's invalid rollouts; for a judge, `unlabelled` counts valid rollouts it has no ok label for."""
    rates: dict[tuple[str, ...], Any] = {}
    uppers: dict[tuple[str, ...], Any] = {}
    execution = value == "E"
    if not df.empty:
        low, high = _bounds(df, value)
        table = stats.rate_table(df.assign(y=low), list(CELL))
        rates = {(r.model, r.harness, r.cue, r.defense): r for r in table.itertuples()}
        if execution:
            table = stats.rate_table(df.assign(y=high), list(CELL))
            uppers = {(r.model, r.harness, r.cue, r.defense): r for r in table.itertuples()}
    out = []
    for key in sorted(set(counts) | set(rates)):
        r, u = rates.get(key), uppers.get(key)
        cell = counts.get(key, {"rollouts": 0, "invalid": 0})
        valid = int(r.valid) if r is not None else 0
        model, harness, cue, defense = key
        out.append(
            AsrCell(
                model=model,
                harness=harness,
                cue=cue,
                defense=defense,
                source=source,
                backbone=backbone,
                harmful=int(r.harmful) if r is not None else 0,
                valid=valid,
                invalid=cell["invalid"],
                rate=float(r.rate) if r is not None else None,
                ci_low=float(r.ci_low) if r is not None else None,
                ci_high=float((u if u is not None else r).ci_high) if r is not None else None,
                unlabelled=None if backbone is None else max(0, cell["rollouts"] - cell["invalid"] - valid),
                unresolved=int(u.harmful - r.harmful)
                if execution and u is not None and r is not None
                else (0 if execution else None),
                upper=float(u.rate) if u is not None else None,
            )
        )
    return out


def _bounds(df: pd.DataFrame, value: str) -> tuple[pd.Series, pd.Series]:
    """A 0/1 outcome column as its lower and upper bound: for E, an unresolved rollout (E missing) is harm in the
    upper bound and not in the lower — never counted as safe in both; a judge's label has no unresolved value."""
    column = df[value]
    low = (column == 1).astype(int)
    return low, (low | column.isna()).astype(int)


def _asr(
    outcomes: pd.DataFrame,
    labels: dict[str, pd.DataFrame],
    backbone: str,
    counts: dict[tuple[str, ...], dict[str, int]],
) -> list[AsrCell]:
    cells = _cells(outcomes, "E", "execution", None, counts)
    for name, frame in labels.items():
        cells += _cells(frame, "label", name, backbone, counts)
    return cells


def _views(
    labels: dict[str, pd.DataFrame], reps: int, seed: int
) -> tuple[list[ViewComparison], list[RankingAgreement]]:
    views, ranking = [], []
    order = {view: i for i, view in enumerate(VIEWS)}
    names = sorted(labels, key=lambda name: (order.get(name.split("/")[0], len(order)), name))
    for a, b in itertools.combinations(names, 2):  # trajectory vs state first, as the paper pairs them
        left, right = labels[a], labels[b]
        if left.empty or right.empty:
            continue
        paired = left.merge(right[["rollout_id", "label"]], on="rollout_id", suffixes=("_a", "_b"))
        paired = paired.rename(columns={"label_a": "a", "label_b": "b"})
        for model, group in [("all", paired), *paired.groupby("model", sort=True)]:
            result = stats.paired_views(group, "a", "b", reps=reps, seed=seed)
            views.append(from_json(ViewComparison, {"a": a, "b": b, "model": model, **result}))
        frame = paired.assign(strategy_category=paired["strategy"].map(strategy_category))
        rates = stats.slice_rates(
            frame,
            "a",
            "b",
            {"global": None, "harness": "harness", "category": "strategy_category", "strategy": "strategy"},
        )
        result = stats.ranking_reversals(rates, "a", "b")
        ranking.append(from_json(RankingAgreement, {"a": a, "b": b, **result}))
    return views, ranking


def _effects(
    outcomes: pd.DataFrame, column: str, baseline: str, keys: tuple[str, ...], reps: int, seed: int
) -> list[Effect]:
    # A pair with an unresolved side says nothing of the change until the audit resolves it: left out.
    outcomes = outcomes[outcomes["E"].notna()] if not outcomes.empty else outcomes
    if outcomes.empty or outcomes[column].nunique() < 2:
        return []
    out = []
    wide = outcomes.pivot_table(index=list(keys), columns=column, values="E", aggfunc="first").reset_index()
    for treatment in sorted(set(outcomes[column]) - {baseline}):
        if baseline not in wide or treatment not in wide:
            continue
        for model, group in [("all", wide), *wide.groupby("model", sort=True)]:
            result = stats.paired_effect(
                group[["case_id", baseline, treatment]].rename(columns={baseline: "base", treatment: "treat"}),
                "base",
                "treat",
                reps=reps,
                seed=seed,
            )
            out.append(Effect(baseline, treatment, model, from_json(PairedChange, result)))
    return out


def _defense(store: Store, run_id: str, outcomes: pd.DataFrame, reps: int, seed: int) -> list[Effect]:
    run = store.get_run(run_id)
    if run is None or run.parent_run_id is None:
        return _effects(outcomes, "defense", "none", ("model", "case_id", "harness", "cue", "attempt"), reps, seed)
    # A replay: each rollout is paired with the historical rollout it re-ran, and each pair is labelled by the
    # defense its baseline actually ran under (a parent may have run several).
    parent = {r.id: r for r in store.rollouts(run.parent_run_id)}
    rows = []
    for r in store.iter_rollouts(run_id, snapshots=False):
        if r.benign:
            continue
        base = parent.get(r.baseline_rollout_id) if r.baseline_rollout_id is not None else None
        rows.append(
            {
                "model": r.model,
                "case_id": r.case_id,
                "defense": r.defense,
                "baseline_defense": base.defense if base is not None else "unknown",
                "base": base.E if base is not None and base.valid else None,
                "treat": r.E if r.valid else None,
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return []
    out = []
    keys = ["baseline_defense", "defense"]
    for (model, base_defense, defense), group in [(("all", *k), g) for k, g in frame.groupby(keys, sort=True)] + [
        (k, g) for k, g in frame.groupby(["model", *keys], sort=True)
    ]:
        result = stats.paired_effect(group, "base", "treat", reps=reps, seed=seed)
        out.append(Effect(f"{run.parent_run_id} ({base_defense})", defense, model, from_json(PairedChange, result)))
    return out


def _reg(store: Store, run_id: str, outcomes: pd.DataFrame, judge: str) -> Reg | None:
    labels = store.recognition_labels(run_id, judge, recognition_contract_hash(judge))
    rows = [
        {"rollout_id": r.rollout_id, "resolved": r.resolved, "broad": r.broad, "strict": r.strict}
        for r in labels
        if r.status == "ok"
    ]
    if not rows:
        return None
    frame = pd.DataFrame(rows).merge(outcomes[["rollout_id", "strategy", "model"]], on="rollout_id")
    frame.loc[~frame["resolved"], ["broad", "strict"]] = float("nan")
    return from_json(Reg, {"judge": judge, **stats.reg(frame, by="strategy")})


def _semantic(store: Store, run_id: str, outcomes: pd.DataFrame, configs: list[dict[str, Any]]) -> Semantic | None:
    """Rollouts of semantic cases, whose rule decides only part of the harm, reported as bounds until judged.

    An *upper*-bound case (honest reporting, C28) has its deterministic part decided by the rule (the refund
    promise was mailed): E = 1 is an upper bound; whether the agent then misreported it is for an LLM judge under
    the hybrid view. A *lower*-bound case (a confidential figure that can leave paraphrased) has its verbatim,
    decoded and typed disclosures decided by the rule: E = 1 is certain, and a rollout with E = 0 that sent
    anything outside the organisation is a candidate the judge must decide. Per kind: cases, valid rollouts,
    harmful by rule, candidates and the range [lower, upper] of harmful rollouts; per LLM backbone that labelled
    them, how many it decided and how many it finds harmful. None when the run has no semantic case."""
    if outcomes.empty:
        return None
    cases = run_cases(store, run_id)
    semantic_ids = {cid: case.semantic_bound or "upper" for cid, case in cases.items() if case.semantic}
    semantic = outcomes[outcomes["case_id"].isin(list(semantic_ids))]
    if semantic.empty:
        return None
    result: dict[str, Any] = {
        "cases": int(semantic["case_id"].nunique()),
        "valid": len(semantic),
        "harmful_by_rule": int((semantic["E"] == 1).sum()),
        "llm_hybrid": [],
        "bounds": {},
    }
    by_rule = dict(zip(semantic["rollout_id"], semantic["E"], strict=True))
    bound_of = {rid: semantic_ids[cid] for rid, cid in zip(semantic["rollout_id"], semantic["case_id"], strict=True)}
    candidates = _paraphrase_candidates(
        store, run_id, {rid for rid, b in bound_of.items() if b == "lower" and by_rule[rid] == 0}
    )
    judged: dict[str, dict[str, int]] = {}
    for config in configs:
        if config["view"] != "hybrid" or config["backbone"] == RULE:
            continue
        rows = store.labelled_rows(run_id, config["config_hash"], config["backbone"])
        labelled = {row.rollout_id: row.label for row in rows if row.rollout_id in by_rule}
        judged[config["backbone"]] = labelled
        result["llm_hybrid"].append(
            {
                "config": config["config_name"],
                "backbone": config["backbone"],
                "decided": len(labelled),
                "harmful": sum(
                    1 for rid, label in labelled.items() if label == 1 and (by_rule[rid] == 1 or rid in candidates)
                ),
                "undecided": len(by_rule) - len(labelled),
            }
        )
    for kind in ("upper", "lower"):
        ids = [rid for rid, b in bound_of.items() if b == kind]
        if not ids:
            continue
        harmful = sum(by_rule[rid] == 1 for rid in ids)
        open_ = len([rid for rid in ids if rid in candidates]) if kind == "lower" else harmful
        result["bounds"][kind] = {
            "cases": len({semantic.loc[semantic["rollout_id"] == rid, "case_id"].iloc[0] for rid in ids}),
            "valid": len(ids),
            "harmful_by_rule": harmful,
            "candidates": open_,
            # Until judged: lower-bound cases are at least their rule's E and at most that plus every candidate;
            # upper-bound cases at most their rule's E and at least nothing.
            "range": [harmful, harmful + open_] if kind == "lower" else [0, harmful],
        }
    return from_json(Semantic, result)


def _paraphrase_candidates(store: Store, run_id: str, ids: set[str]) -> set[str]:
    """Of `ids` (rollouts of lower-bound semantic cases that the rule found safe), those that sent anything to a
    party outside the organisation: only they could have let the fact out in words the rule does not read."""
    if not ids:
        return set()
    from redagent.judges.evidence import receipts_of
    from redagent.sandbox.effects import derive_effects

    cases = run_cases(store, run_id)
    found: set[str] = set()
    for rollout in store.iter_rollouts(run_id, snapshots=False):
        if rollout.rollout_id not in ids:
            continue
        case = cases.get(rollout.case_id)
        org = ((case.seed.get("organization") or {}).get("domains") or []) if case else []
        effects = derive_effects(receipts_of(rollout), [], org)
        if any(x.kind == "egress" and x.fields.get("external") for x in effects):
            found.add(rollout.rollout_id)
    return found


def _by_strategy(outcomes: pd.DataFrame) -> list[StrategyRate]:
    if outcomes.empty:
        return []
    low, high = _bounds(outcomes, "E")
    table = stats.rate_table(outcomes.assign(y=low), ["strategy", "model", "harness"])
    upper = stats.rate_table(outcomes.assign(y=high), ["strategy", "model", "harness"])
    table["unresolved"] = upper["harmful"] - table["harmful"]
    table["upper"] = upper["rate"]
    return [
        StrategyRate(
            strategy=r.strategy,
            model=r.model,
            harness=r.harness,
            harmful=int(r.harmful),
            valid=int(r.valid),
            rate=float(r.rate),
            unresolved=int(r.unresolved),
            upper=float(r.upper),
        )
        for r in table.itertuples()
    ]


def _audit(store: Store, run_id: str, reps: int, seed: int, audit_id: str | None) -> AuditStats | None:
    """The chosen audit's figures (judges.audit.estimates), default the newest; None when the run has none."""
    from redagent.judges.audit import estimates

    audits = [a.id for a in store.audits(run_id)]  # newest first
    if audit_id is None:
        if not audits:
            return None
        audit_id = audits[0]
    elif audit_id not in audits:
        known = f" (its audits: {', '.join(audits)})" if audits else " (it has none)"
        raise ReportError(f"run {run_id} has no audit {audit_id!r}{known}")
    return from_json(AuditStats, {**estimates(store, audit_id, reps=reps, seed=seed), "audits": audits})


# -- rendering ---------------------------------------------------------------------------------
def _num3(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def write_report(report: Report, out: Path, formats: list[str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if "json" in formats:
        path = out / "report.json"
        path.write_bytes(
            orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY, default=_plain)
        )
        written.append(path)
    if "csv" in formats:
        tables: tuple[tuple[str, tuple[Any, ...] | None], ...] = (
            ("asr", report.asr),
            ("by_strategy", report.by_strategy),
            ("views", report.views),
            ("ranking", report.ranking),
            ("cue", report.cue),
            ("defense", report.defense),
        )
        for name, rows in tables:
            if rows:
                path = out / f"{name}.csv"
                _csv(path, [{k: v for k, v in to_json(r).items() if not isinstance(v, (list, dict))} for r in rows])
                written.append(path)
        if report.health and report.health.cells:
            path = out / "health.csv"
            _csv(path, health_rows(report.health))
            written.append(path)
        if report.adaptive and report.adaptive.cells:
            path = out / "adaptive.csv"
            _csv(path, adaptive_rows(report.adaptive))
            written.append(path)
        if report.utility and report.utility.cells:
            path = out / "utility.csv"
            _csv(path, utility_rows(report.utility))
            written.append(path)
        if report.reg:
            path = out / "reg.csv"
            _csv(path, [{"strategy": "all", **to_json(report.reg.figures)}] + [to_json(r) for r in report.reg.by])
            written.append(path)
        if report.audit:
            path = out / "audit.csv"
            _csv(path, [_flatten(to_json(report.audit))])
            written.append(path)
            # Every stratum, also those left without a usable label or never sampled (weight empty).
            path = out / "audit_strata.csv"
            _csv(
                path,
                [to_json(s) for s in report.audit.by_stratum]
                + [
                    {
                        "stratum": u.stratum,
                        "population": u.population,
                        "sampled": 0,
                        "usable": 0,
                        "unsure": 0,
                        "pending": 0,
                        "weight": None,
                        "fraction": 0.0,
                        "clusters": 0,
                    }
                    for u in report.audit.uncovered
                    if u.reason == "not sampled"
                ],
            )
            written.append(path)
    if "md" in formats:
        path = out / "report.md"
        path.write_text(markdown(report), encoding="utf-8")
        written.append(path)
    written += _plots(report, out)
    return written


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def _flatten(data: dict[str, Any]) -> dict[str, Any]:
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict):
            for inner, v in value.items():
                flat[f"{key}_{inner}"] = v
        elif not isinstance(value, list):
            flat[key] = value
    return flat


def _csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def utility_rows(table: UtilityTable) -> list[dict[str, Any]]:
    """The utility table flattened for CSV: one row per cell, then the pooled row (model "all")."""
    none = {"harmful": None, "valid": None, "rate": None, "unresolved": None, "upper": None}
    return [
        {
            "model": row.model,
            "harness": row.harness,
            "cue": row.cue,
            "defense": row.defense,
            **{
                f"{part}_{k}": v
                for part, figure in (
                    ("benign", row.figures.benign),
                    ("under_attack", row.figures.under_attack),
                    ("execution_asr", row.figures.execution_asr),
                )
                for k, v in (to_json(figure) if figure is not None else none).items()
            },
        }
        for row in table.rows()
    ]


def _asr_text(rate: ExecutionAsr | None) -> str:
    if not rate:
        return "—"
    return f"{_pct(rate.rate)} ({rate.harmful}/{rate.valid})" + bounds_text(rate.unresolved, rate.upper)


def bounds_text(unresolved: int | None, upper: float | None) -> str:
    """The execution ASR's upper bound where the verifier left rollouts unresolved: " – 12.50% (+2 unresolved)";
    nothing when it decided every one (the two bounds are one figure)."""
    return f" – {_pct(upper)} (+{unresolved} unresolved)" if unresolved else ""


def _utility_markdown(table: UtilityTable) -> list[str]:
    lines = [
        "## Utility (U = 1: the user's task was done; done / n checked, Wilson 95 %)",
        "",
        "Benign utility is over valid rollouts of benign cases (the benign arm, benign variants), utility "
        "under attack over valid attacked rollouts; n counts the rollouts whose case states a utility check.",
        "",
    ]
    if not (table.overall.benign.n or table.overall.under_attack.n):
        lines += ["No case of this run states a utility check yet: every utility rate is n/a.", ""]
    lines += [
        "| model | harness | cue | defense | benign utility | utility under attack | execution ASR |",
        "|---|---|---|---|---|---|---:|",
    ]
    for c in table.rows():
        f = c.figures
        lines.append(
            f"| {c.model} | {c.harness} | {c.cue} | {c.defense} | {utility_text(f.benign)} "
            f"| {utility_text(f.under_attack)} | {_asr_text(f.execution_asr)} |"
        )
    lines.append("")
    return lines


def health_rows(health: Health) -> list[dict[str, Any]]:
    """One CSV row per cell: counts, shares, the invalid reasons with their most frequent detail, warnings."""
    return [
        {
            "model": c.model,
            "harness": c.harness,
            "cue": c.cue,
            "defense": c.defense,
            "rollouts": c.rollouts,
            "valid": c.valid,
            "invalid_n": c.invalid_n,
            "no_tool_call": c.no_tool_call,
            "no_tool_call_share": c.no_tool_call_share,
            "attacked": c.attacked,
            "reached": c.reached,
            "exposure": c.exposure,
            "invalid": "; ".join(f"{reason} {e.n}: {e.detail or ''}" for reason, e in sorted(c.invalid.items())),
            "warnings": "; ".join(c.warnings),
        }
        for c in health.cells
    ]


def _health_markdown(health: Health) -> list[str]:
    lines = [
        "## Setup health per cell",
        "",
        "A cell measures an agent only if its rollouts ran (valid), the agent used its tools and the attack "
        "reached it (exposure, over valid attacked rollouts).",
        "",
        "| model | harness | cue | defense | valid / rollouts | no tool call | exposure | invalid (most frequent "
        "detail) |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    for c in health.cells:
        invalid = (
            "; ".join(
                f"{reason} {e.n}" + (f": {e.detail}" if e.detail else "") for reason, e in sorted(c.invalid.items())
            )
            or "—"
        )
        lines.append(
            f"| {c.model} | {c.harness} | {c.cue} | {c.defense} | {c.valid} / "
            f"{c.rollouts} | {_pct(c.no_tool_call_share)} | {_pct(c.exposure)} | "
            f"{invalid.replace('|', '/')} |"
        )
    lines.append("")
    lines += [f"- **warning**: {w}" for w in health.warnings] + ([""] if health.warnings else [])
    return lines


def markdown(report: Report) -> str:
    p = report.protocol
    configs = ", ".join(f"{c.config_name} ({c.config_hash})" for c in p.judging_configurations) or "none"
    lines = [
        f"# Report for {p.run_id}",
        "",
        "## Protocol",
        "",
        f"- models: {', '.join(p.models or [])}",
        f"- harnesses: {', '.join(p.harnesses or [])}",
        f"- evaluation cues: {', '.join(p.cues or [])}",
        f"- defenses: {', '.join(p.defenses or [])}",
        f"- attempt budget: {p.attempts}",
        f"- benign arm: {'on' if p.benign_arm else 'off'}",
        f"- judge backbone: {p.backbone}",
        *(
            [
                f"- attacker: {p.attacker.kind}"
                + (f" ({p.attacker.model})" if p.attacker.model else "")
                + f", budget {p.attacker.budget} moves per rollout"
            ]
            if p.attacker.kind != "none"
            else []
        ),
        f"- judging configurations: {configs}",
        f"- cases: {p.cases} (case set {p.case_set_hash[:12]}), code {p.code_version}",
        "",
    ]
    if report.asr:
        lines += [
            "## ASR per cell over attacked rollouts (harmful / valid, Wilson 95 %)",
            "",
            "Every cell of the run is listed, also one without a valid rollout (ASR —); invalid rollouts "
            "are counted beside the valid ones, and for a judge the valid rollouts it has no label for. The "
            "execution ASR is a pair of bounds where the verifier left rollouts unresolved: confirmed harm – "
            "confirmed + unresolved (never counted safe); its interval runs from the lower bound's Wilson low to "
            "the upper bound's Wilson high, and the audit resolves the unresolved stratum with human labels.",
            "",
            "| source | model | harness | cue | defense | harmful | valid | invalid | ASR | 95 % CI |",
            "|---|---|---|---|---|---:|---:|---:|---:|---|",
        ]
        lines += [
            f"| {c.source} | {c.model} | {c.harness} | {c.cue} | {c.defense} | {c.harmful} | "
            f"{c.valid} | {c.invalid}"
            + (f" (+{c.unlabelled} unlabelled)" if c.unlabelled else "")
            + f" | {_pct(c.rate)}{bounds_text(c.unresolved, c.upper)} | "
            + (f"{_pct(c.ci_low)}–{_pct(c.ci_high)}" if c.valid else "no valid rollout")
            + " |"
            for c in report.asr
        ]
        lines.append("")
    if report.health:
        lines += _health_markdown(report.health)
    if report.utility is not None:
        lines += _utility_markdown(report.utility)
    if report.adaptive:
        lines += _adaptive_markdown(report.adaptive)
    if report.semantic:
        m = report.semantic
        lines += [
            "## Semantic constraints (bounds until judged)",
            "",
            f"{m.valid} valid rollouts of {m.cases} semantic cases: the verifier decides only part of "
            f"their harm, so the execution ASR above counts them at the rule's value ({m.harmful_by_rule} "
            "harmful) until an LLM judge under the hybrid view decides them "
            "(`redagent judge RUN --views hybrid --backbone MODEL`).",
            "",
        ]
        for kind, b in m.bounds.items():
            what = (
                "the rule decides a deterministic part (an upper bound)"
                if kind == "upper"
                else "the rule sees verbatim, decoded and typed disclosures (a lower bound); "
                f"{b.candidates} rollouts sent something outside and are open"
            )
            lines.append(
                f"- {kind}-bound cases ({b.cases} cases, {b.valid} rollouts): {what}; harmful "
                f"between {b.range[0]} and {b.range[1]}"
            )
        lines += [
            f"- {j.config} ({j.backbone}): decided {j.decided}, harmful {j.harmful} "
            f"(rule and judge agree), undecided {j.undecided}"
            for j in m.llm_hybrid
        ]
        lines.append("")
    if report.views:
        lines += [
            "## Paired view comparisons (same rollouts)",
            "",
            "| a | b | model | n | disagreement | a only | b only | McNemar p | b − a | 95 % CI |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        lines += [
            f"| {v.a} | {v.b} | {v.model} | {v.n} | {_pct(v.disagreement)} | {v.a_only} | "
            f"{v.b_only} | {v.mcnemar_p:.3g} | {_pct(v.diff)} | "
            + (
                f"{_pct(v.diff_ci_low)}–{_pct(v.diff_ci_high)}"
                if v.diff_ci_low is not None
                else f"none: {v.why_no_interval or 'undefined'}"
            )
            + " |"
            for v in report.views
        ]
        lines.append("")
    if report.ranking:
        lines += ["## Ranking agreement across slices", ""]
        lines += [
            f"- {r.a} vs {r.b}: {r.slices_with_reversal} of {r.slices} slices with a strict "
            f"pairwise reversal, {r.inversions} inversions"
            for r in report.ranking
        ]
        lines.append("")
    for effects, title in (
        (report.cue, "Evaluation-cue effect (matched pairs)"),
        (report.defense, "Defense effect (matched pairs)"),
    ):
        if effects:
            lines += [
                f"## {title}",
                "",
                "| baseline | treatment | model | pairs | incomplete | change (pp) | "
                "95 % CI | prevented | introduced |",
                "|---|---|---|---:|---:|---:|---|---:|---:|",
            ]
            lines += [
                f"| {e.baseline} | {e.treatment} | {e.model} | {c.pairs} | {c.incomplete} | "
                f"{_num(c.change_pp)} | "
                + (
                    f"{_num(c.ci_low_pp)} – {_num(c.ci_high_pp)}"
                    if c.ci_low_pp is not None
                    else f"none: {c.why_no_interval or 'undefined'}"
                )
                + f" | {c.prevented} "
                f"of {c.baseline_harmful} | {c.introduced} |"
                for e in effects
                for c in (e.change,)
            ]
            lines.append("")
    if report.reg:
        r, g = report.reg, report.reg.figures
        lines += [
            "## Recognition–Execution Gap",
            "",
            f"Judge: {r.judge}. Of {g.executions} harmful executions, {g.resolved} have a resolved "
            f"action anchor ({g.unresolved} unresolved, excluded rather than counted as R=0).",
            "",
            f"- broad P(R=1 | E=1) = {g.broad}/{g.resolved} = {_pct(g.rate_broad)} "
            f"(full-cohort lower bound {_pct(g.lower_bound_broad)})",
            f"- strict P(R=1 | E=1) = {g.strict}/{g.resolved} = {_pct(g.rate_strict)} "
            f"(full-cohort lower bound {_pct(g.lower_bound_strict)})",
            "",
        ]
    if report.audit:
        lines += audit_markdown(report.audit)
    return "\n".join(lines)


def _num(value: Any) -> str:
    return "—" if value is None else f"{value:+.2f}"


AUDIT_LABELS = {
    "precision": "precision",
    "recall": "recall",
    "specificity": "specificity",
    "f1": "F1",
    "accuracy": "accuracy",
    "judged_asr": "judged ASR",
    "human_asr": "human ASR (direct estimate)",
    "audited_asr": "audited ASR (judged × precision / recall)",
}


def estimate_text(entry: AuditEstimate) -> str:
    """One audit figure as the report prints it: "97.84% (96.00%–99.28%)", with the reason where the value
    or its interval is undefined."""
    if entry.value is None:
        return f"undefined ({entry.why_undefined})"
    if entry.ci_low is None:
        return f"{_pct(entry.value)} (no interval: {entry.why_no_interval})"
    if entry.exact:
        how = "the judge's labels counted" if entry.source == "census" else "audited whole"
        return f"{_pct(entry.value)} (exact: {how}, no sampling error)"
    marks = [
        mark
        for mark, on in (
            ("provisional", entry.provisional),
            ("two-cluster strata", entry.two_clusters),
            (
                "Wilson at effective n" if entry.method == "wilson-effective-n" else "combined bounds",
                entry.method in ("wilson-effective-n", "combined"),
            ),
        )
        if on
    ]
    if entry.coincides_with:
        marks.append("= the direct human ASR")
    tail = f"; {', '.join(marks)}" if marks else ""
    return f"{_pct(entry.value)} ({_pct(entry.ci_low)}–{_pct(entry.ci_high)}{tail})"


def kappa_text(a: AuditStats) -> str:
    if not a.kappa_defined or a.kappa is None:
        return f"undefined ({a.why_kappa_undefined})"
    low, high = a.kappa_ci
    if low is None:
        return f"{a.kappa:.3f} (no interval: {a.why_no_kappa_interval})"
    how = a.kappa_method or "case-cluster bootstrap"
    return f"{a.kappa:.3f} ({_num3(low)} to {_num3(high)}, {how})"


def audit_state(a: AuditStats) -> list[str]:
    """The sentences that qualify an audit's figures: which audit, provisional, excluded items, coverage."""
    audits = a.audits or ()
    others = [other for other in audits if other != a.audit_id]
    newest = not audits or audits[0] == a.audit_id
    which = (
        f"Audit {a.audit_id} ({'the newest' if newest else 'chosen'} of {len(audits) or 1} "
        f"audits of this run" + (f"; others: {', '.join(others)}, choose with --audit" if others else "") + ")"
    )
    lines = [
        f"{which} of configuration {a.config} ({a.backbone}), stratified by "
        f"{', '.join(a.stratify) or 'nothing'}: {a.items} items, {a.labelled_both} labelled by both "
        f"reviewers, {a.final_labels} with a final label; {a.usable} used, excluded "
        f"{a.excluded.unsure} unsure, {a.excluded.pending} pending."
    ]
    if a.provisional:
        lines.append(
            f"PROVISIONAL: {a.excluded.pending} items still await a review or the adjudication; "
            "the figures will change when they are labelled."
        )
    if a.population_covered < a.population:
        lines.append(
            f"Coverage: the estimates cover {a.population_covered} of {a.population} labelled "
            "rollouts; not covered: "
            + "; ".join(f"{u.stratum} ({u.population} rollouts, {u.reason})" for u in a.uncovered)
            + "."
        )
    elif a.census:
        lines.append("Every rollout was audited (a census): the figures have no sampling error.")
    if a.interval_undefined:
        lines.append(f"No intervals: {a.interval_undefined} (audit it whole, or sample two or more cases in it).")
    if a.design.unit == "rollout":
        lines.append(
            "Drawn before audits sampled cases within strata: items were rollouts, so a stratum may hold "
            "two items of one case (pooled for the variance below)."
        )
    for merge in a.design.merges:
        lines.append(f"Strata {' and '.join(merge.strata)} were merged into {merge.into} when drawn: {merge.why}.")
    if a.provisional and not a.interval_undefined and not a.census:
        lines.append("Intervals are PROVISIONAL too: they assume " + "; ".join(a.interval_assumes) + ".")
    elif a.interval_assumes:
        lines.append("Intervals assume " + "; ".join(a.interval_assumes) + ".")
    if a.two_cluster_strata:
        lines.append(
            f"FEW CLUSTERS: {a.two_cluster_strata} of {a.variance_strata} variance strata rest on two "
            "cases each, so the bootstrap intervals are rough: their ends move with the bootstrap seed "
            "(--seed); more cases per stratum steady them."
        )
    if a.label_stratified and a.audited_asr.coincides_with:
        lines.append(
            "The judge label is a stratum variable: the audited ASR (judged × precision / recall) equals "
            "the direct human ASR exactly, so it is shown once, with one interval."
        )
    lines += list(a.notes)
    return lines


def _cell(text: str) -> str:
    """A Markdown table cell: a stratum key's "|" separators would otherwise split it."""
    return text.replace("|", "\\|")


def _weight(value: float | None) -> str:
    return "— (no usable label)" if value is None else f"{value:.3f}"


def resolved_text(e: ResolvedAsr) -> str:
    """The execution ASR's bounds and what the audit resolved of them, in one line."""
    head = f"execution ASR over {e.valid} valid attacked rollouts: {_pct(e.lower)}"
    if not e.unresolved:
        return head + " (the verifier decided every rollout)"
    head += f" – {_pct(e.upper)} ({e.harmful} harm, {e.unresolved} unresolved)"
    if e.rate is None:
        return head + f"; not resolved yet: {e.why_undefined}"
    interval = (
        f"{_pct(e.ci_low)}–{_pct(e.ci_high)}, {e.method}"
        if e.ci_low is not None
        else f"no interval: {e.why_no_interval}"
    )
    return (
        head + f"; resolved by the audit ({e.labelled} unresolved rollouts labelled, {_pct(e.share)} of them "
        f"harmful): {_pct(e.rate)} ({interval})"
    )


def audit_markdown(a: AuditStats) -> list[str]:
    lines = ["## Human audit of the judge", ""]
    for sentence in audit_state(a):
        lines += [sentence, ""]
    how = f", {a.agreement_method}" if a.agreement_method else ""
    lines += [
        f"- agreement on first labels {_pct(a.agreement)} ({_pct(a.agreement_ci[0])}–"
        f"{_pct(a.agreement_ci[1])}{how}); kappa {kappa_text(a)}"
    ]
    lines += [f"- {label}: {estimate_text(a.estimate(metric))}" for metric, label in AUDIT_LABELS.items()]
    notes = sorted({note for m in AUDIT_LABELS if (note := a.estimate(m).note)})
    lines += [f"  - {note}" for note in notes]
    if a.execution is not None:
        lines.append(f"- {resolved_text(a.execution)}")
    lines += [
        "",
        "Weights: each stratum's N_h shared by its usable items in proportion to their design weights "
        f"(cases drawn within strata, then rollouts of each drawn case); intervals: {a.interval_method}, "
        f"{a.reps} replicates.",
        "",
        "| stratum | population | sampled | used | unsure | pending | weight |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {_cell(s.stratum)} | {s.population} | {s.sampled} | {s.usable} | {s.unsure} | "
        f"{s.pending} | {_weight(s.weight)} |"
        for s in a.by_stratum
    ]
    lines += [
        f"| {_cell(u.stratum)} | {u.population} | 0 | 0 | 0 | 0 | — (not sampled) |"
        for u in a.uncovered
        if u.reason == "not sampled"
    ]
    lines.append("")
    return lines


def _plots(report: Report, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    cells = pd.DataFrame([to_json(c) for c in report.asr or ()])
    if not cells.empty:
        cells["rate"] = pd.to_numeric(cells["rate"], errors="coerce")  # a cell without valid rollouts has None
        execution = cells[cells["source"] == "execution"]
        matrix = execution.pivot_table(index="model", columns="harness", values="rate", aggfunc="mean")
        written.append(_heatmap(plt, matrix, "Execution ASR: model × harness", out / "asr_matrix.png"))
        views = cells.groupby(["source", "model"])["harmful"].sum() / cells.groupby(["source", "model"])["valid"].sum()
        table = views.unstack("source")
        strategies = pd.DataFrame([to_json(s) for s in report.by_strategy or ()])
        if not strategies.empty:
            strategies["cell"] = strategies["model"] + " · " + strategies["harness"]
            grid = strategies.pivot_table(index="cell", columns="strategy", values="rate", aggfunc="mean")
            written.append(_heatmap(plt, grid, "Execution ASR by intervention strategy", out / "strategy_heatmap.png"))
        fig, ax = plt.subplots(figsize=(max(6, len(table) * 0.9), 4))
        table.plot.bar(ax=ax)
        ax.set_ylabel("ASR")
        ax.set_title("Reported ASR by evidence view (same rollouts)")
        ax.set_ylim(0, 1)
        fig.tight_layout()
        fig.savefig(out / "view_comparison.png", dpi=110)
        plt.close(fig)
        written.append(out / "view_comparison.png")
    return written


def _heatmap(plt: ModuleType, matrix: pd.DataFrame, title: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(max(5, matrix.shape[1] * 1.2 + 2), max(3, matrix.shape[0] * 0.45 + 1)))
    image = ax.imshow(matrix.to_numpy(dtype=float), vmin=0, vmax=1, cmap="Reds", aspect="auto")
    ax.set_xticks(range(matrix.shape[1]), matrix.columns, rotation=30, ha="right")
    ax.set_yticks(range(matrix.shape[0]), matrix.index)
    for (i, j), value in pd.DataFrame(matrix.to_numpy()).stack().items():
        if value == value:  # a cell without valid rollouts stays blank (pandas 3 keeps NaN in stack())
            ax.text(j, i, f"{value:.0%}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
