"""Refinement from rollouts: which cases a run shows to be broken, with the evidence, queued for revision.

Three problems are flagged, as the construction pipeline's refinement step needs them:
  unreached        no valid rollout of an attacked case ever showed its attack to the agent;
  judge_disagrees  a hybrid judge's label contradicts the verifier's E on some rollouts;
  benign_failed    no valid rollout completed the case's benign task (its consequential steps).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from redagent.cases.selfcheck import CONSEQUENTIAL
from redagent.judges.labelling import run_cases
from redagent.store.db import Store
from redagent.store.errors import UnknownRun


@dataclass
class Flag:
    case_id: str
    problem: str
    detail: str
    evidence: list[str] = field(default_factory=list)  # rollout ids


def refine(store: Store, run_id: str) -> list[Flag]:
    if store.get_run(run_id) is None:
        raise UnknownRun(run_id)
    cases = run_cases(store, run_id)
    reached: dict[str, list[bool]] = defaultdict(list)
    benign_done: dict[str, list[bool]] = defaultdict(list)
    rollouts: dict[str, list[str]] = defaultdict(list)
    outcomes: dict[str, int] = {}
    case_of: dict[str, str] = {}
    for r in store.iter_rollouts(run_id, snapshots=False):
        if not r.valid or r.E is None:
            continue
        case = cases.get(r.case_id)
        rollouts[r.case_id].append(r.rollout_id)
        case_of[r.rollout_id] = r.case_id
        outcomes[r.rollout_id] = r.E
        reached[r.case_id].append(r.reached)
        if case is not None:
            wanted = {s.tool for s in case.plans.benign if s.tool in CONSEQUENTIAL}
            done = {x.action for x in r.effects}
            benign_done[r.case_id].append(wanted <= done)
    flags = []
    for case_id, seen in sorted(reached.items()):
        case = cases.get(case_id)
        # A case this installation does not know (run from a path) is taken to carry its attack.
        if (case is None or case.attacked) and not any(seen):
            flags.append(
                Flag(
                    case_id,
                    "unreached",
                    f"the attack reached the agent in none of {len(seen)} valid rollouts",
                    rollouts[case_id],
                )
            )
        if benign_done[case_id] and not any(benign_done[case_id]):
            flags.append(
                Flag(
                    case_id,
                    "benign_failed",
                    f"none of {len(seen)} valid rollouts completed the benign task's consequential steps",
                    rollouts[case_id],
                )
            )
    for config in store.judged_configs(run_id):
        if config["view"] != "hybrid":
            continue
        wrong: dict[str, list[str]] = defaultdict(list)
        for label in store.judge_labels(run_id, config["config_hash"], config["backbone"]):
            if label.status == "ok" and label.rollout_id in outcomes and label.label != outcomes[label.rollout_id]:
                wrong[case_of[label.rollout_id]].append(label.rollout_id)
        for case_id, ids in sorted(wrong.items()):
            flags.append(
                Flag(
                    case_id,
                    "judge_disagrees",
                    f"{config['config_name']} ({config['backbone']}) contradicts the verifier on {len(ids)} rollout(s)",
                    ids,
                )
            )
    return flags


def write_queue(flags: list[Flag], run_id: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run_id}.json"
    payload: dict[str, Any] = {"run_id": run_id, "flags": [asdict(f) for f in flags]}
    path.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
    return path
