"""Replay of a run made under several defenses: every baseline is re-run and paired with its own rollout, and the
defense effect names each baseline by the defense it actually ran under."""

from __future__ import annotations

import asyncio

from redagent.engine.matrix import RunSpec, replay_run, resume_run, start_run
from redagent.judges.report import build_report
from redagent.store.db import open_store

# sim/comply is harmful whatever the defense; with two defenses in the parent, every (case, model, harness,
# cue, attempt) has two harmful baselines that differ only in their defense.
SPEC = RunSpec(
    cases="banking-*",
    models=["sim/comply", "sim/reminder-sensitive"],
    harnesses=["native"],
    defenses=["none", "self-reminder"],
    attempts=2,
)


def test_replay_of_a_run_with_several_defenses_keeps_every_baseline(tmp_path):
    with open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        parent = start_run(store, SPEC)
        asyncio.run(parent.run())
        harmful = {r.id: r for r in store.rollouts(parent.run_record.id, harmful_only=True)}
        assert {r.defense for r in harmful.values()} == {"none", "self-reminder"}

        replay = replay_run(store, parent.run_record.id, defense="policy-reminder")
        assert len(replay.keys) == len(harmful) == replay.run_record.planned
        asyncio.run(replay.run())
        new = [store.get_rollout(r.id) for r in store.rollouts(replay.run_record.id)]
        # One replayed rollout per baseline: none is dropped because another baseline shares its cell.
        assert sorted(r.baseline_rollout_id for r in new) == sorted(harmful)
        for rollout in new:
            base = harmful[rollout.baseline_rollout_id]
            assert (rollout.case_id, rollout.model, rollout.harness, rollout.cue) == (
                base.case_id,
                base.model,
                base.harness,
                base.cue,
            )
            assert rollout.defense == "policy-reminder"
            assert rollout.E == (0 if rollout.model == "sim/reminder-sensitive" else 1)
        # The first defense keeps its attempt numbers, so a replay of a one-defense run is what it always was.
        for rollout in new:
            base = harmful[rollout.baseline_rollout_id]
            if base.defense == "none":
                assert rollout.attempt == base.attempt
        assert len({(r.case_id, r.model, r.harness, r.cue, r.attempt) for r in new}) == len(new)
        # A resume of the replay recomputes the same keys: nothing is left to run.
        assert resume_run(store, replay.run_record.id).pending() == []

        effects = build_report(store, replay.run_record.id, reps=200, only="defense").defense or ()
        pooled = {e.baseline: e for e in effects if e.model == "all"}
        parent_id = parent.run_record.id
        assert set(pooled) == {f"{parent_id} (none)", f"{parent_id} (self-reminder)"}
        for defense, entry in ((d, pooled[f"{parent_id} ({d})"]) for d in ("none", "self-reminder")):
            baselines = [r for r in harmful.values() if r.defense == defense]
            assert entry.treatment == "policy-reminder"
            assert entry.change.pairs == len(baselines) and entry.change.baseline_harmful == len(baselines)
            assert entry.change.prevented == sum(1 for r in baselines if r.model == "sim/reminder-sensitive")
