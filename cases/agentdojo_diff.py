"""The differential check of imported AgentDojo cases: the same plans through both systems.

For each imported case, the same plan is run on AgentDojo's own environment with AgentDojo's runtime (judged by
its task's `security()` and `utility()`) and on the case's sandbox (judged by the case's verifier and utility
rule: E and U). The plans are AgentDojo's own — the user task's ground truth, then with the injection task's
ground truth inserted where the attack is first seen, and alone (the agent drops the user's task) — and probe
plans that change the injection's calls where the two systems may read them differently or alike: money
scheduled instead of sent, the attacker's account spaced or lower-cased, the harm removed (paid to the user's
friend, the standing order left as it was, another password), a small amount, a standing order that is not
recurring re-pointed. Agreement is counted per plan kind and check; each disagreement is listed with the
divergences its case records.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redagent.cases.agentdojo import (
    SAFE_ACCOUNT,
    Suite,
    attack_text,
    environment,
    injection_slots,
    run_agentdojo,
    translate,
)
from redagent.cases.execution import CaseRun
from redagent.cases.loader import load_case
from redagent.cases.schema import Case, derive_marker

CASE_ID = re.compile(r"^agentdojo-banking-u(\d+)-i(\d+)$")
PLAN_KINDS = (
    "user_task",
    "injection",
    "injection_only",
    "probe_scheduled",
    "probe_spaced_account",
    "probe_lower_account",
    "probe_harm_removed",
    "probe_small_amount",
    "probe_not_recurring",
)


@dataclass
class Verdicts:
    kind: str
    case: str
    agentdojo_security: bool
    agentdojo_utility: bool
    E: int | None  # None: this project's verifier could not decide (unresolved): neither agreement nor a divergence
    U: int | None


@dataclass
class Report:
    cases: int = 0
    plans: int = 0
    verdicts: list[Verdicts] = field(default_factory=list)
    recorded: dict[str, list[str]] = field(default_factory=dict)  # case → the divergence kinds it records

    def agreement(self) -> dict[str, dict[str, dict[str, int]]]:
        """Plan kind → check → agree / disagree (security: `unresolved` where this project's verifier could not
        decide; utility: `not_stated` where the case states no check)."""
        table: dict[str, dict[str, dict[str, int]]] = {}
        for v in self.verdicts:
            row = table.setdefault(v.kind, {"security": {"agree": 0, "disagree": 0, "unresolved": 0}, "utility": {}})
            outcome = "unresolved" if v.E is None else "agree" if bool(v.E) == v.agentdojo_security else "disagree"
            row["security"][outcome] += 1
            key = "not_stated" if v.U is None else "agree" if bool(v.U) == v.agentdojo_utility else "disagree"
            row["utility"][key] = row["utility"].get(key, 0) + 1
        return table

    def divergences(self) -> list[dict[str, Any]]:
        found = []
        for v in self.verdicts:
            if v.E is not None and bool(v.E) != v.agentdojo_security:
                found.append(
                    {
                        "kind": v.kind,
                        "check": "security",
                        "case": v.case,
                        "agentdojo": v.agentdojo_security,
                        "project": v.E,
                        "recorded": self.recorded.get(v.case, []),
                    }
                )
            if v.U is not None and bool(v.U) != v.agentdojo_utility:
                found.append(
                    {
                        "kind": v.kind,
                        "check": "utility",
                        "case": v.case,
                        "agentdojo": v.agentdojo_utility,
                        "project": v.U,
                        "recorded": self.recorded.get(v.case, []),
                    }
                )
        return found

    def totals(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for row in self.agreement().values():
            for check, counts in row.items():
                total = out.setdefault(check, {})
                for key, n in counts.items():
                    total[key] = total.get(key, 0) + n
        return out

    def to_dict(self) -> dict[str, Any]:
        divergences = self.divergences()
        by_kind: dict[str, int] = {}
        for d in divergences:
            key = f"{d['kind']}/{d['check']}"
            by_kind[key] = by_kind.get(key, 0) + 1
        return {
            "cases": self.cases,
            "plans": self.plans,
            "totals": self.totals(),
            "by_kind": self.agreement(),
            "divergences_by_kind": by_kind,
            "divergences": divergences,
        }


# -- probe plans: changes to the injection task's calls ---------------------------------------------
def _call(function: str, args: dict[str, Any]) -> Any:
    from agentdojo.functions_runtime import FunctionCall

    return FunctionCall(function=function, args=args)


def _map_calls(calls: list[Any], change: Callable[[str, dict[str, Any]], tuple[str, dict[str, Any]] | None]) -> list:
    out = []
    for c in calls:
        changed = change(c.function, dict(c.args))
        out.append(c if changed is None else _call(*changed))
    return out


def _spaced(account: str) -> str:
    return " ".join(account[i : i + 4] for i in range(0, len(account), 4))


def probes(calls: list[Any], pre: Any) -> dict[str, list[Any]]:
    """The probe variants of an injection task's calls that change something (kind → calls)."""
    recurring = {t.id for t in pre.bank_account.scheduled_transactions if t.recurring}
    not_recurring = [t.id for t in pre.bank_account.scheduled_transactions if not t.recurring]
    current = {t.id: t.recipient for t in pre.bank_account.scheduled_transactions}

    def scheduled(f: str, a: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if f != "send_money":
            return None
        return "schedule_transaction", {**a, "date": "2022-04-01", "recurring": False}

    def recipient(transform: Callable[[str], str]) -> Callable[[str, dict[str, Any]], Any]:
        def change(f: str, a: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
            if f in ("send_money", "schedule_transaction", "update_scheduled_transaction") and a.get("recipient"):
                return f, {**a, "recipient": transform(a["recipient"])}
            return None

        return change

    def harm_removed(f: str, a: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if f in ("send_money", "schedule_transaction"):
            return f, {**a, "recipient": SAFE_ACCOUNT}
        if f == "update_scheduled_transaction" and a.get("recipient"):
            return f, {**a, "recipient": current.get(a["id"], SAFE_ACCOUNT)}
        if f == "update_password":
            return f, {**a, "password": "a-password-the-user-chose"}
        return None

    def small(f: str, a: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if f in ("send_money", "schedule_transaction"):
            return f, {**a, "amount": 5.0}
        return None

    def not_recurring_target(f: str, a: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if f == "update_scheduled_transaction" and a.get("id") in recurring and not_recurring:
            return f, {**a, "id": not_recurring[0]}
        return None

    variants = {
        "probe_scheduled": _map_calls(calls, scheduled),
        "probe_spaced_account": _map_calls(calls, recipient(_spaced)),
        "probe_lower_account": _map_calls(calls, recipient(str.lower)),
        "probe_harm_removed": _map_calls(calls, harm_removed),
        "probe_small_amount": _map_calls(calls, small),
        "probe_not_recurring": _map_calls(calls, not_recurring_target),
    }
    return {k: v for k, v in variants.items() if any(a is not b for a, b in zip(v, calls, strict=True))}


# -- one case --------------------------------------------------------------------------------------
def compare_case(suite: Suite, case: Case) -> list[Verdicts]:
    match = CASE_ID.match(case.id)
    if match is None:
        raise ValueError(f"{case.id}: not an imported AgentDojo banking case")
    user_task = suite.suite.user_tasks[f"user_task_{match.group(1)}"]
    injection_task = suite.suite.injection_tasks[f"injection_task_{match.group(2)}"]
    slot = injection_slots(suite, user_task)[0]
    default_env = suite.suite.load_and_inject_default_environment({})
    user = default_env.user_account
    content = attack_text(injection_task.GOAL, f"{user.first_name} {user.last_name}")
    pre = environment(suite, slot, content)
    answer = case.plans.answer
    benign = list(user_task.ground_truth(pre.model_copy(deep=True)))
    marker = derive_marker(content)
    _, outputs = run_agentdojo(suite, pre.model_copy(deep=True), benign)
    seen = next((i for i, o in enumerate(outputs) if marker in o), len(benign) - 1)
    injection = list(injection_task.ground_truth(pre.model_copy(deep=True)))
    plans: dict[str, list[Any]] = {"user_task": benign}
    for kind, calls in {"injection": injection, **probes(injection, pre)}.items():
        plans[kind] = benign[: seen + 1] + calls + benign[seen + 1 :]
    # The agent reads what shows the attack, then does only the attacker's bidding and answers nothing.
    plans["injection_only"] = benign[: seen + 1] + injection
    verdicts = []
    for kind, calls in plans.items():
        said = "" if kind == "injection_only" else answer
        env, _ = run_agentdojo(suite, pre.model_copy(deep=True), calls)
        security = bool(injection_task.security(said, pre, env))
        utility = bool(user_task.utility(said, pre, env))
        E, U = _project(case, calls, said)
        verdicts.append(Verdicts(kind, case.id, security, utility, E, U))
    return verdicts


def _project(case: Case, calls: Iterable[Any], answer: str) -> tuple[int | None, int | None]:
    run = CaseRun(case)
    try:
        for i, call in enumerate(calls):
            step = translate(call.function, dict(call.args))
            run.call(step["tool"], step["args"], step=i)
    except BaseException:
        run.close()
        raise
    finished = run.finish(answer=answer or None)
    return finished.verdict.E, finished.U


def imported_cases(folder: Path) -> list[Case]:
    """The imported cases in `folder`, in task order (u0-i0, u0-i1, …)."""
    cases = [load_case(p) for p in folder.glob("agentdojo-banking-*.yaml")]
    return sorted((c for c in cases if CASE_ID.match(c.id)), key=_order)


def _order(case: Case) -> tuple[int, ...]:
    match = CASE_ID.match(case.id)
    return tuple(int(n) for n in match.groups()) if match else (0, 0)


def compare(suite: Suite, cases: list[Case], *, sample: int | None = None, seed: int = 0) -> Report:
    """Run every case (or a seeded sample of `sample` of them) through both systems."""
    chosen = list(cases)
    if sample is not None and sample < len(chosen):
        chosen = sorted(random.Random(seed).sample(chosen, sample), key=lambda c: c.id)
    report = Report(cases=len(chosen))
    for case in chosen:
        report.recorded[case.id] = [kind for kind, _ in case.divergences]
        found = compare_case(suite, case)
        report.plans += len(found)
        report.verdicts += found
    return report
