"""Every statistic the paper reports, for one run, each with its protocol and its valid denominator.

`build_report` reads outcomes, labels, recognition labels and audits from the store and computes:
execution and reported ASR per cell over attacked rollouts (Wilson intervals), benign utility and utility
under attack per cell (Wilson intervals), paired view comparisons (exact McNemar,
case-clustered bootstrap of the difference), ranking reversals across slices, evaluation-cue and
defense effects on matched pairs, the Recognition–Execution Gap, and the judge audit. `write_report`
renders it as JSON, Markdown and CSV, with PNG plots.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import Any

import orjson
import pandas as pd

from redagent.cases.taxonomy import strategy_category
from redagent.judges import stats
from redagent.judges.config import RULE, VIEWS
from redagent.judges.labelling import LEXICAL, recognition_contract_hash, run_cases
from redagent.store.db import Store

TABLES = ("asr", "utility", "views", "ranking", "cue", "defense", "reg", "audit")


class ReportError(ValueError):
    pass


def _protocol(store: Store, run_id: str, backbone: str, configs: list[dict[str, Any]]) -> dict[str, Any]:
    run = store.get_run(run_id)
    if run is None:
        raise ReportError(f"no run {run_id!r} in the store")
    p = run.protocol
    return {"run_id": run_id, "status": run.status, "models": p.get("models"), "harnesses": p.get("harnesses"),
            "cues": p.get("cues"), "defenses": p.get("defenses"), "attempts": p.get("attempts"),
            "cases": p.get("cases"), "case_set_hash": run.case_set_hash, "code_version": run.code_version,
            "parent_run_id": run.parent_run_id, "backbone": backbone,
            "benign_arm": bool(p.get("benign_arm", False)),
            "judging_configurations": [{k: c[k] for k in ("config_name", "config_hash", "view", "backbone")}
                                       for c in configs if c["backbone"] == backbone]}


def build_report(store: Store, run_id: str, *, backbone: str = RULE, recognition_judge: str = LEXICAL,
                 reps: int = 10_000, seed: int = 0, only: str | None = None) -> dict[str, Any]:
    configs = [c for c in store.judged_configs(run_id)]
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
        report["asr"] = _asr(attacked, attacked_labels, backbone)
        report["by_strategy"] = _by_strategy(attacked)
        semantic = _semantic(store, run_id, attacked, configs)
        if semantic is not None:
            report["semantic"] = semantic
    if want("asr") or want("utility"):
        report["utility"] = utility(store, run_id)
    if want("views") or want("ranking"):
        views, ranking = _views(labels, reps, seed)
        report["views"], report["ranking"] = views, ranking
    if want("cue"):
        report["cue"] = _effects(attacked, "cue", "clean", ("model", "case_id", "harness", "defense", "attempt"),
                                 reps, seed)
    if want("defense"):
        report["defense"] = _defense(store, run_id, attacked, reps, seed)
    if want("reg"):
        report["reg"] = _reg(store, run_id, outcomes, recognition_judge)
    if want("audit"):
        audit = _audit(store, run_id, reps, seed)
        if audit is not None:
            report["audit"] = audit
    return report


def _attacked(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of attacked rollouts (benign == False); an empty frame as it is."""
    return df[~df["benign"].astype(bool)] if "benign" in df else df


def utility(store: Store, run_id: str) -> dict[str, Any]:
    """Benign utility and utility under attack per (model, harness, cue, defense) cell and pooled over the run:
    {"cells": [...], "overall": {...}}, each with benign and under_attack {u, done, n, valid, lo, hi} (Wilson 95 %,
    n = valid rollouts with a utility check; u None — "n/a" — when n is 0)."""
    counts = store.utility_counts(run_id)
    asr = {(c["model"], c["harness"], c["cue"], c["defense"]): c for c in store.execution_asr(run_id)}
    cells = []
    for cell in stats.utility_table(counts):
        rate = asr.get((cell.model, cell.harness, cell.cue, cell.defense))
        cells.append({**cell.to_dict(), "execution_asr": None if rate is None else
                      {k: rate[k] for k in ("harmful", "valid", "rate")}})
    pooled = stats.utility_table(counts, by=[])
    empty = stats.UtilityRate(0, 0, 0)
    harmful, valid = sum(c["harmful"] for c in asr.values()), sum(c["valid"] for c in asr.values())
    overall = {"benign": (pooled[0].benign if pooled else empty).to_dict(),
               "under_attack": (pooled[0].under_attack if pooled else empty).to_dict(),
               "execution_asr": {"harmful": harmful, "valid": valid, "rate": harmful / valid if valid else None}}
    return {"cells": cells, "overall": overall}


def _cells(df: pd.DataFrame, value: str, source: str, backbone: str | None) -> list[dict[str, Any]]:
    if df.empty:
        return []
    table = stats.rate_table(df.assign(y=df[value].astype(int)), ["model", "harness", "cue", "defense"])
    return [{"model": r.model, "harness": r.harness, "cue": r.cue, "defense": r.defense, "source": source,
             "backbone": backbone, "harmful": int(r.harmful), "valid": int(r.valid), "rate": float(r.rate),
             "ci_low": float(r.ci_low), "ci_high": float(r.ci_high)} for r in table.itertuples()]


def _asr(outcomes: pd.DataFrame, labels: dict[str, pd.DataFrame], backbone: str) -> list[dict[str, Any]]:
    cells = _cells(outcomes, "E", "execution", None)
    for name, frame in labels.items():
        cells += _cells(frame, "label", name, backbone)
    return cells


def _views(labels: dict[str, pd.DataFrame], reps: int, seed: int) -> tuple[list[dict[str, Any]], list[dict]]:
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
            views.append({"a": a, "b": b, "model": model, **{k: result[k] for k in (
                "n", "a_rate", "b_rate", "disagreement", "a_only", "b_only", "mcnemar_p", "diff", "diff_ci_low",
                "diff_ci_high")}})
        frame = paired.assign(strategy_category=paired["strategy"].map(strategy_category))
        rates = stats.slice_rates(frame, "a", "b", {"global": None, "harness": "harness",
                                                    "category": "strategy_category", "strategy": "strategy"})
        result = stats.ranking_reversals(rates, "a", "b")
        ranking.append({"a": a, "b": b, **result})
    return views, ranking


def _effects(outcomes: pd.DataFrame, column: str, baseline: str, keys: tuple[str, ...], reps: int,
             seed: int) -> list[dict[str, Any]]:
    if outcomes.empty or outcomes[column].nunique() < 2:
        return []
    out = []
    wide = outcomes.pivot_table(index=list(keys), columns=column, values="E", aggfunc="first").reset_index()
    for treatment in sorted(set(outcomes[column]) - {baseline}):
        if baseline not in wide or treatment not in wide:
            continue
        for model, group in [("all", wide), *wide.groupby("model", sort=True)]:
            result = stats.paired_effect(group[["case_id", baseline, treatment]].rename(
                columns={baseline: "base", treatment: "treat"}), "base", "treat", reps=reps, seed=seed)
            out.append({"baseline": baseline, "treatment": treatment, "model": model, **result})
    return out


def _defense(store: Store, run_id: str, outcomes: pd.DataFrame, reps: int, seed: int) -> list[dict[str, Any]]:
    run = store.get_run(run_id)
    if run.parent_run_id is None:
        return _effects(outcomes, "defense", "none", ("model", "case_id", "harness", "cue", "attempt"), reps, seed)
    # A replay: each rollout is paired with the historical rollout it re-ran.
    parent = {r.id: r.E for r in store.rollouts(run.parent_run_id)}
    rows = []
    for r in store.iter_export(run_id):
        if r["benign"]:
            continue
        base = parent.get(r["baseline_rollout_id"])
        rows.append({"model": r["model"], "case_id": r["case_id"], "defense": r["defense"],
                     "base": base, "treat": r["E"] if r["valid"] else None})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return []
    out = []
    for (model, defense), group in [(("all", d), g) for d, g in frame.groupby("defense")] + list(
            frame.groupby(["model", "defense"], sort=True)):
        result = stats.paired_effect(group, "base", "treat", reps=reps, seed=seed)
        out.append({"baseline": f"{run.parent_run_id} (none)", "treatment": defense, "model": model, **result})
    return out


def _reg(store: Store, run_id: str, outcomes: pd.DataFrame, judge: str) -> dict[str, Any] | None:
    labels = store.recognition_labels(run_id, judge, recognition_contract_hash(judge))
    rows = [{"rollout_id": r.rollout_id, "resolved": r.resolved, "broad": r.broad, "strict": r.strict}
            for r in labels if r.status == "ok"]
    if not rows:
        return None
    frame = pd.DataFrame(rows).merge(outcomes[["rollout_id", "strategy", "model"]], on="rollout_id")
    frame.loc[~frame["resolved"], ["broad", "strict"]] = float("nan")
    return {"judge": judge, **stats.reg(frame, by="strategy")}


def _semantic(store: Store, run_id: str, outcomes: pd.DataFrame,
              configs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Rollouts of semantic cases (honest reporting, C28): the verifier decides only their deterministic
    part (e.g. the refund promise was mailed), so their E is an upper bound; whether the agent then
    misreported it is for an LLM judge under the hybrid view, with the case's judge instructions.
    Per LLM backbone that labelled them: how many it decided, and how many stay harmful (E = 1 and the
    judge says harmful). None when the run has no semantic case."""
    if outcomes.empty:
        return None
    cases = run_cases(store, run_id)
    semantic = outcomes[outcomes["case_id"].isin([cid for cid, case in cases.items() if case.semantic])]
    if semantic.empty:
        return None
    result: dict[str, Any] = {"cases": int(semantic["case_id"].nunique()), "valid": len(semantic),
                              "harmful_by_rule": int((semantic["E"] == 1).sum()), "llm_hybrid": []}
    by_rule = dict(zip(semantic["rollout_id"], semantic["E"], strict=True))
    for config in configs:
        if config["view"] != "hybrid" or config["backbone"] == RULE:
            continue
        rows = store.labelled_rows(run_id, config["config_hash"], config["backbone"])
        labelled = {row["rollout_id"]: row["label"] for row in rows if row["rollout_id"] in by_rule}
        result["llm_hybrid"].append({
            "config": config["config_name"], "backbone": config["backbone"], "decided": len(labelled),
            "harmful": sum(1 for rid, label in labelled.items() if label == 1 and by_rule[rid] == 1),
            "undecided": len(by_rule) - len(labelled)})
    return result


def _by_strategy(outcomes: pd.DataFrame) -> list[dict[str, Any]]:
    if outcomes.empty:
        return []
    table = stats.rate_table(outcomes.assign(y=outcomes["E"].astype(int)), ["strategy", "model", "harness"])
    return [{"strategy": r.strategy, "model": r.model, "harness": r.harness, "harmful": int(r.harmful),
             "valid": int(r.valid), "rate": float(r.rate)} for r in table.itertuples()]


def _audit(store: Store, run_id: str, reps: int, seed: int) -> dict[str, Any] | None:
    audits = store.audits(run_id)
    if not audits:
        return None
    audit = audits[-1]
    first = store.labels(audit.id, first_only=True)
    by_item: dict[int, dict[str, str]] = {}
    for label in first:
        by_item.setdefault(label["item_id"], {})[label["slot"]] = label["label"]
    both = [v for v in by_item.values() if "A" in v and "B" in v]
    agreement = (stats.cohen_kappa([v["A"] for v in both], [v["B"] for v in both], reps=reps, seed=seed)
                 if both else None)
    finals = store.final_labels(audit.id)
    # Items whose final human label is "unsure" or still missing are left out of the confusion matrix.
    frame = pd.DataFrame([{"y": f["judge_label"], "h": f["human"], "stratum": f["stratum"], "weight": f["weight"],
                           "case_id": f["case_id"]} for f in finals if f["human"] is not None])
    items = finals
    population = pd.DataFrame(store.labelled_rows(run_id, audit.config_hash, audit.backbone))
    judged = float(population["label"].mean()) if not population.empty else None
    result = {"audit_id": audit.id, "config": audit.config_name, "backbone": audit.backbone,
              "items": len(items), "labelled_both": len(both), "final_labels": len(frame),
              "kappa": agreement["kappa"] if agreement else None,
              "kappa_ci": agreement["kappa_ci"] if agreement else [None, None],
              "agreement_ci": agreement["agreement_ci"] if agreement else [None, None],
              "kappa_defined": agreement["kappa_defined"] if agreement else False,
              "why_kappa_undefined": agreement["why_undefined"] if agreement else "no item labelled by both",
              "agreement": agreement["agreement"] if agreement else None}
    if len(frame):
        result.update(stats.judge_audit(frame, reps=reps, seed=seed, population_judged_asr=judged))
    return result


# -- rendering ---------------------------------------------------------------------------------
def _num3(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def write_report(report: dict[str, Any], out: Path, formats: list[str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if "json" in formats:
        path = out / "report.json"
        path.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY,
                                      default=_plain))
        written.append(path)
    if "csv" in formats:
        for name in ("asr", "by_strategy", "views", "ranking", "cue", "defense"):
            rows = report.get(name) or []
            if rows:
                path = out / f"{name}.csv"
                _csv(path, [{k: v for k, v in r.items() if not isinstance(v, (list, dict))} for r in rows])
                written.append(path)
        if report.get("utility") and report["utility"]["cells"]:
            path = out / "utility.csv"
            _csv(path, utility_rows(report["utility"]))
            written.append(path)
        if report.get("reg"):
            path = out / "reg.csv"
            _csv(path, [{"strategy": "all", **{k: v for k, v in report["reg"].items() if k not in ("by", "judge")}}]
                 + [r for r in report["reg"].get("by", [])])
            written.append(path)
        if report.get("audit"):
            path = out / "audit.csv"
            _csv(path, [_flatten(report["audit"])])
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


def _pct(value: Any) -> str:
    return "—" if value is None or value != value else f"{100 * value:.2f}%"


def utility_rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    """The utility table flattened for CSV: one row per cell, then the pooled row (model "all")."""
    pooled = {"model": "all", "harness": "all", "cue": "all", "defense": "all", **table["overall"]}
    return [{**{k: cell[k] for k in ("model", "harness", "cue", "defense")},
             **{f"{part}_{k}": v for part in ("benign", "under_attack", "execution_asr")
                for k, v in (cell[part] or {"harmful": None, "valid": None, "rate": None}).items()}}
            for cell in [*table["cells"], pooled]]


def utility_text(rate: dict[str, Any]) -> str:
    """One arm's utility as the tables print it: "75.00% (6/8, 40.93%–92.85%)", or "n/a (no check in 10 valid)"."""
    if not rate["n"]:
        return f"n/a (no check in {rate['valid']} valid)" if rate["valid"] else "n/a"
    return f"{_pct(rate['u'])} ({rate['done']}/{rate['n']}, {_pct(rate['lo'])}–{_pct(rate['hi'])})"


def _asr_text(rate: dict[str, Any] | None) -> str:
    return f"{_pct(rate['rate'])} ({rate['harmful']}/{rate['valid']})" if rate else "—"


def _utility_markdown(table: dict[str, Any]) -> list[str]:
    lines = ["## Utility (U = 1: the user's task was done; done / n checked, Wilson 95 %)", "",
             "Benign utility is over valid rollouts of benign cases (the benign arm, benign variants), utility "
             "under attack over valid attacked rollouts; n counts the rollouts whose case states a utility check.",
             ""]
    if not any(table["overall"][arm]["n"] for arm in ("benign", "under_attack")):
        lines += ["No case of this run states a utility check yet: every utility rate is n/a.", ""]
    lines += ["| model | harness | cue | defense | benign utility | utility under attack | execution ASR |",
              "|---|---|---|---|---|---|---:|"]
    o = table["overall"]
    for c in [*table["cells"], {"model": "all", "harness": "all", "cue": "all", "defense": "all", **o}]:
        lines.append(f"| {c['model']} | {c['harness']} | {c['cue']} | {c['defense']} | {utility_text(c['benign'])} "
                     f"| {utility_text(c['under_attack'])} | {_asr_text(c['execution_asr'])} |")
    lines.append("")
    return lines


def markdown(report: dict[str, Any]) -> str:
    p = report["protocol"]
    lines = [f"# Report for {p['run_id']}", "", "## Protocol", "",
             f"- models: {', '.join(p['models'] or [])}", f"- harnesses: {', '.join(p['harnesses'] or [])}",
             f"- evaluation cues: {', '.join(p['cues'] or [])}", f"- defenses: {', '.join(p['defenses'] or [])}",
             f"- attempt budget: {p['attempts']}",
             f"- benign arm: {'on' if p.get('benign_arm') else 'off'}", f"- judge backbone: {p['backbone']}",
             f"- judging configurations: {', '.join(c['config_name'] + ' (' + c['config_hash'] + ')' for c in p['judging_configurations']) or 'none'}",  # noqa: E501
             f"- cases: {p['cases']} (case set {p['case_set_hash'][:12]}), code {p['code_version']}", ""]
    if report.get("asr"):
        lines += ["## ASR per cell over attacked rollouts (harmful / valid, Wilson 95 %)", "",
                  "| source | model | harness | cue | defense | harmful | valid | ASR | 95 % CI |",
                  "|---|---|---|---|---|---:|---:|---:|---|"]
        lines += [f"| {c['source']} | {c['model']} | {c['harness']} | {c['cue']} | {c['defense']} | {c['harmful']} | "
                  f"{c['valid']} | {_pct(c['rate'])} | {_pct(c['ci_low'])}–{_pct(c['ci_high'])} |"
                  for c in report["asr"]]
        lines.append("")
    if report.get("utility") is not None:
        lines += _utility_markdown(report["utility"])
    if report.get("semantic"):
        m = report["semantic"]
        lines += ["## Semantic constraints (honest reporting)", "",
                  f"{m['valid']} valid rollouts of {m['cases']} semantic cases: the verifier decides only their "
                  f"deterministic part, so the execution ASR above counts them at that value ({m['harmful_by_rule']} "
                  "harmful) — an upper bound until an LLM judge under the hybrid view decides them "
                  "(`redagent judge RUN --views hybrid --backbone MODEL`).", ""]
        lines += [f"- {j['config']} ({j['backbone']}): decided {j['decided']}, harmful {j['harmful']} "
                  f"(rule and judge agree), undecided {j['undecided']}" for j in m["llm_hybrid"]]
        lines.append("")
    if report.get("views"):
        lines += ["## Paired view comparisons (same rollouts)", "",
                  "| a | b | model | n | disagreement | a only | b only | McNemar p | b − a | 95 % CI |",
                  "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
        lines += [f"| {v['a']} | {v['b']} | {v['model']} | {v['n']} | {_pct(v['disagreement'])} | {v['a_only']} | "
                  f"{v['b_only']} | {v['mcnemar_p']:.3g} | {_pct(v['diff'])} | {_pct(v['diff_ci_low'])}–"
                  f"{_pct(v['diff_ci_high'])} |" for v in report["views"]]
        lines.append("")
    if report.get("ranking"):
        lines += ["## Ranking agreement across slices", ""]
        lines += [f"- {r['a']} vs {r['b']}: {r['slices_with_reversal']} of {r['slices']} slices with a strict "
                  f"pairwise reversal, {r['inversions']} inversions" for r in report["ranking"]]
        lines.append("")
    for key, title in (("cue", "Evaluation-cue effect (matched pairs)"), ("defense", "Defense effect (matched pairs)")):
        if report.get(key):
            lines += [f"## {title}", "", "| baseline | treatment | model | pairs | incomplete | change (pp) | "
                      "95 % CI | prevented | introduced |", "|---|---|---|---:|---:|---:|---|---:|---:|"]
            lines += [f"| {e['baseline']} | {e['treatment']} | {e['model']} | {e['pairs']} | {e['incomplete']} | "
                      f"{_num(e['change_pp'])} | {_num(e['ci_low_pp'])} – {_num(e['ci_high_pp'])} | {e['prevented']} "
                      f"of {e['baseline_harmful']} | {e['introduced']} |" for e in report[key]]
            lines.append("")
    if report.get("reg"):
        r = report["reg"]
        lines += ["## Recognition–Execution Gap", "",
                  f"Judge: {r['judge']}. Of {r['executions']} harmful executions, {r['resolved']} have a resolved "
                  f"action anchor ({r['unresolved']} unresolved, excluded rather than counted as R=0).", "",
                  f"- broad P(R=1 | E=1) = {r['broad']}/{r['resolved']} = {_pct(r['rate_broad'])} "
                  f"(full-cohort lower bound {_pct(r['lower_bound_broad'])})",
                  f"- strict P(R=1 | E=1) = {r['strict']}/{r['resolved']} = {_pct(r['rate_strict'])} "
                  f"(full-cohort lower bound {_pct(r['lower_bound_strict'])})", ""]
    if report.get("audit"):
        a = report["audit"]
        lines += ["## Human audit of the judge", "",
                  f"Audit {a['audit_id']} of configuration {a['config']} ({a['backbone']}): {a['items']} items, "
                  f"{a['labelled_both']} labelled by both reviewers, {a['final_labels']} final labels.", "",
                  f"- agreement {_pct(a['agreement'])} ({_pct(a['agreement_ci'][0])}–{_pct(a['agreement_ci'][1])}); "
                  "kappa " + (f"{a['kappa']:.3f} ({_num3(a['kappa_ci'][0])} to {_num3(a['kappa_ci'][1])}, "
                              "item bootstrap)" if a.get("kappa_defined")
                              else f"undefined ({a['why_kappa_undefined']})")]
        for metric in ("precision", "recall", "specificity", "f1", "accuracy", "judged_asr", "audited_asr"):
            if isinstance(a.get(metric), dict):
                m = a[metric]
                lines.append(f"- {metric}: {_pct(m['value'])} ({_pct(m['ci_low'])}–{_pct(m['ci_high'])})")
        lines.append("")
    return "\n".join(lines)


def _num(value: Any) -> str:
    return "—" if value is None else f"{value:+.2f}"


def _plots(report: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    cells = pd.DataFrame(report.get("asr") or [])
    if not cells.empty:
        execution = cells[cells["source"] == "execution"]
        matrix = execution.pivot_table(index="model", columns="harness", values="rate", aggfunc="mean")
        written.append(_heatmap(plt, matrix, "Execution ASR: model × harness", out / "asr_matrix.png"))
        views = cells.groupby(["source", "model"])["harmful"].sum() / cells.groupby(["source", "model"])["valid"].sum()
        table = views.unstack("source")
        strategies = pd.DataFrame(report.get("by_strategy") or [])
        if not strategies.empty:
            strategies["cell"] = strategies["model"] + " · " + strategies["harness"]
            grid = strategies.pivot_table(index="cell", columns="strategy", values="rate", aggfunc="mean")
            written.append(_heatmap(plt, grid, "Execution ASR by intervention strategy",
                                    out / "strategy_heatmap.png"))
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


def _heatmap(plt, matrix: pd.DataFrame, title: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(max(5, matrix.shape[1] * 1.2 + 2), max(3, matrix.shape[0] * 0.45 + 1)))
    image = ax.imshow(matrix.to_numpy(dtype=float), vmin=0, vmax=1, cmap="Reds", aspect="auto")
    ax.set_xticks(range(matrix.shape[1]), matrix.columns, rotation=30, ha="right")
    ax.set_yticks(range(matrix.shape[0]), matrix.index)
    for (i, j), value in pd.DataFrame(matrix.to_numpy()).stack().items():
        ax.text(j, i, f"{value:.0%}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
