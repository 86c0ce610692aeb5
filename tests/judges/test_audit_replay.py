"""Randomness a member cannot replay (issue 34, item 1): a reviewer who replays the public run and knows the audit's
real seed recovers nothing of her queue — no item's stratum, case, E or judge label, nor her peer's order.

The attacker here is as strong as a replay can make her: she has every rollout and label of the run (the public
library and deterministic calibration agents reproduce them; she is even given the run's id, which the rollout ids
hash), the audit's seed, size, stratification and reviewers, and the sampler's code as it was before the change —
which shuffled the items and drew each reviewer's order from the seed's own stream after the draw. She predicts
which rollout sits at each of her positions, and behind each of her item ids in id order, and where her peer has
each item. The seed still decides *which* rollouts are drawn (the owner's reproducibility), so she knows the set;
what she must not learn is which of her items is which.

Counted per audit: `pinned`, her items whose rollout a prediction names exactly (a random order gives about one by
chance, Poisson(1): at most 9 allowed, which chance exceeds about once in ten million), `peer_position`, her items
whose position in the peer's queue it names exactly (likewise), and for each field (stratum, case, E, label) the
share of her items it gets right, against what guessing a random order of the drawn set gets (Σ p², at most
0.35 more allowed: five standard deviations at these sizes). The code before issue 34 gave pinned = n.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from redagent.engine.matrix import RunSpec, start_run
from redagent.judges import audit
from redagent.judges.config import config_for
from redagent.judges.labelling import judge_run
from redagent.store import Store, open_store
from redagent.store.records import LabelledRow

FIELDS = ("stratum", "case_id", "E", "label")
REVIEWERS = ("alice", "bob")
POISSON_CAP = 9  # P(Poisson(1) > 9) ≈ 1.1e-7


def public_run(store: Store, spec: RunSpec) -> tuple[str, str]:
    runner = start_run(store, spec)
    asyncio.run(runner.run())
    run_id = runner.run_record.id
    judge_run(store, run_id, ["state"])
    return run_id, config_for("state").config_hash


@pytest.fixture(scope="module")
def owner(tmp_path_factory) -> Iterator[tuple[Store, str, str]]:
    """The public run (a slice of the starter library: banking and email cases, four calibration agents, two
    harnesses, the benign arm), judged by the state rule judge."""
    url = f"sqlite:///{tmp_path_factory.mktemp('replay') / 'owner.db'}"
    with open_store(url) as store:
        spec = RunSpec(
            cases="banking-*,email-*",
            models=["sim/comply", "sim/ignore", "sim/indirect", "sim/recognize-comply"],
            harnesses=["native", "shell"],
            benign_arm=True,
        )
        run_id, config_hash = public_run(store, spec)
        yield store, run_id, config_hash


def old_member_fields(
    population: Sequence[LabelledRow], stratify: Sequence[str], n: int, seed: int, names: Sequence[str]
) -> tuple[list[tuple[str, LabelledRow, float]], dict[str, list[int]]]:
    """The sampler before issue 34, as the attacker reruns it: the draw, then the items shuffled and each
    reviewer's order drawn from the same seeded stream. Returns the items in id order and each name's positions."""
    groups, _ = audit.design_strata(population, stratify, n)
    rng = random.Random(seed)
    chosen = audit.draw_items(groups, n, rng)
    rng.shuffle(chosen)
    orders = {}
    for name in names:
        order = list(range(1, n + 1))
        rng.shuffle(order)
        orders[name] = order
    return chosen, orders


def replay_attack(store: Store, audit_id: str, population: Sequence[LabelledRow], me: str) -> dict[str, Any]:
    """What `me` recovers of her queue by replaying the old sampler with the audit's real seed."""
    record = store.get_audit(audit_id)
    peer = next(name for name in record.reviewers if name != me)
    truth = {item.item_id: item for item in store.audit_items(audit_id)}
    rows = {row.rollout_id: row for row in population}
    mine = store.reviewer_queue(audit_id, me)  # what she sees: her positions and item ids
    theirs = {entry.item_id: entry.position for entry in store.reviewer_queue(audit_id, peer)}

    def fields(rollout_id: str, stratum: str) -> dict[str, Any]:
        row = rows[rollout_id]
        return {"stratum": stratum, "case_id": row.case_id, "E": row.E, "label": row.label}

    actual = {entry.item_id: fields(truth[entry.item_id].rollout_id, truth[entry.item_id].stratum) for entry in mine}
    n = len(mine)
    chance = {
        name: sum((count / n) ** 2 for count in Counter(str(values[name]) for values in actual.values()).values())
        for name in FIELDS
    }
    best: dict[str, Any] = {"pinned": 0, "peer_position": 0, **{f"{name}_share": 0.0 for name in FIELDS}}
    # She does not know whether the owner named her first or second: both orders are tried, the better counted.
    for names in (tuple(record.reviewers), tuple(reversed(record.reviewers))):
        chosen, orders = old_member_fields(population, record.stratify, record.n, record.seed, names)
        by_position = {orders[me][i]: i for i in range(n)}
        by_rank = {item_id: k for k, item_id in enumerate(sorted(entry.item_id for entry in mine))}
        for predict in (
            {entry.item_id: by_position[entry.position] for entry in mine},
            {entry.item_id: by_rank[entry.item_id] for entry in mine},
        ):
            guessed = {item_id: fields(chosen[i][1].rollout_id, chosen[i][0]) for item_id, i in predict.items()}
            pinned = sum(chosen[predict[item_id]][1].rollout_id == truth[item_id].rollout_id for item_id in predict)
            peer = sum(
                orders[names[1] if names[0] == me else names[0]][i] == theirs[item] for item, i in predict.items()
            )
            best["pinned"] = max(best["pinned"], pinned)
            best["peer_position"] = max(best["peer_position"], peer)
            for name in FIELDS:
                share = sum(guessed[item][name] == actual[item][name] for item in actual) / n
                best[f"{name}_share"] = max(best[f"{name}_share"], share)
    return {"audit": audit_id, "n": n, **best, **{f"{name}_chance": chance[name] for name in FIELDS}}


def held(report: dict[str, Any]) -> list[str]:
    """What the replay recovered beyond chance (empty: nothing)."""
    broken = [name for name in ("pinned", "peer_position") if report[name] > POISSON_CAP]
    broken += [name for name in FIELDS if report[f"{name}_share"] > report[f"{name}_chance"] + 0.35]
    return broken


def draw_and_attack(store: Store, run_id: str, config_hash: str, n: int, stratify: list[str], seed: int) -> Any:
    audit_id = audit.sample(store, run_id, n, stratify, seed, config_hash, reviewers=REVIEWERS, adjudicator="carol")
    population = store.labelled_rows(run_id, config_hash, "rule")
    reports = [replay_attack(store, audit_id, population, me) for me in REVIEWERS]
    out = os.environ.get("REDAGENT_REPLAY_OUT")
    if out:
        with open(out, "a", encoding="utf-8") as handle:
            for report in reports:
                handle.write(json.dumps(report) + "\n")
    return reports


@pytest.mark.parametrize(
    ("n", "stratify", "seed"),
    [(60, ["harness", "strategy", "label"], 0), (40, ["label"], 7), (48, ["harness", "label"], 2**40 + 3)],
)
def test_a_replay_with_the_real_seed_recovers_nothing(owner, n, stratify, seed):
    store, run_id, config_hash = owner
    for report in draw_and_attack(store, run_id, config_hash, n, stratify, seed):
        assert held(report) == [], json.dumps(report, indent=1)


def test_the_seed_still_reproduces_the_owners_draw(owner):
    """Same seed, same drawn rollouts with the same strata and weights: only what members see is fresh."""
    store, run_id, config_hash = owner
    first, again = (
        audit.sample(store, run_id, 40, ["label"], 5, config_hash, reviewers=REVIEWERS, adjudicator="carol")
        for _ in range(2)
    )

    def drawn(audit_id: str) -> list[tuple[str, str, float]]:
        return sorted((i.rollout_id, i.stratum, i.weight) for i in store.audit_items(audit_id))

    assert drawn(first) == drawn(again)
    assert not {i.item_id for i in store.audit_items(first)} & {i.item_id for i in store.audit_items(again)}


@pytest.mark.slow
def test_a_replay_of_the_whole_default_run_recovers_nothing(tmp_path):
    """The issue's setting: `redagent run` as it comes (the starter library, every calibration agent, the three
    in-house harnesses, the benign arm: 3,720 rollouts), three audits of it."""
    with open_store(f"sqlite:///{tmp_path / 'default.db'}") as store:
        run_id, config_hash = public_run(store, RunSpec(benign_arm=True))
        for n, stratify, seed in ((120, ["harness", "strategy", "label"], 0), (100, ["label"], 1), (100, [], 0)):
            for report in draw_and_attack(store, run_id, config_hash, n, stratify, seed):
                assert held(report) == [], json.dumps(report, indent=1)


def test_an_audit_drawn_before_is_marked_and_status_says_how_to_fix_it(owner, tmp_path):
    """Migration 0013 marks every audit already in a store `seeded_order` (its ids and orders follow its seed);
    `audit status` warns about such an audit and names the remedy. New audits are never marked."""
    from sqlalchemy import text
    from typer.testing import CliRunner

    from redagent.console.cli import app

    store, run_id, config_hash = owner
    audit_id = audit.sample(store, run_id, 40, ["label"], 3, config_hash, reviewers=REVIEWERS, adjudicator="carol")
    assert store.get_audit(audit_id).seeded_order is False
    quiet = CliRunner().invoke(app, ["audit", "status", audit_id, "--db", store.url], prog_name="redagent")
    assert quiet.exit_code == 0 and "seed" not in quiet.stderr
    with store.engine.begin() as conn:  # what 0013 did to an audit that was there before it (audits are append-only
        # since 0015: only the file's owner, past the trigger, can do this now; the trigger is put back)
        trigger = "redagent_audit_append_only_update"
        kept = conn.execute(text("SELECT sql FROM sqlite_master WHERE name = :name"), {"name": trigger}).scalar_one()
        conn.execute(text(f"DROP TRIGGER {trigger}"))
        conn.execute(text("UPDATE audit SET seeded_order = :yes WHERE id = :id"), {"yes": True, "id": audit_id})
        conn.execute(text(kept))
    warned = CliRunner().invoke(app, ["audit", "status", audit_id, "--db", store.url], prog_name="redagent")
    assert warned.exit_code == 0 and "follow its seed" in warned.stderr and "draw the audit again" in warned.stderr
