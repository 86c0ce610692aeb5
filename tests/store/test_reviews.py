"""Case review rounds in the store (SQLite and PostgreSQL): rounds pin case versions in order, reviews are
write-once with reasoned corrections, experts read only their own reviews; sampling follows the seed and is
stratified by surface; agreement per rubric item uses first submissions."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest
from alembic import command
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError

from redagent.cases.loader import load_cases
from redagent.judges.rounds import RoundError, agreement, new_round, pinned_case, surface_of
from redagent.store import tables_judging as tj
from redagent.store.connect import WRITE, create_store_engine
from redagent.store.db import Store, open_store
from redagent.store.errors import InvalidRecord, WriteRejected
from redagent.store.judging import judge_label_row
from redagent.store.migrate import alembic_config, current_revisions, head_revision
from redagent.store.records import JudgeLabelRecord
from redagent.store.reviews import (
    BadReview,
    CaseNotInRound,
    NoReviewToCorrect,
    OwnReview,
    ReviewAlreadySubmitted,
    ReviewCorrectionWithoutReason,
    RoundCaseRecord,
    UnknownExpert,
    UnknownRound,
    _pg_write_review,
)
from tests.store.factory import insert_as_of, make_rollout, make_run, write_as_of

PASS = dict.fromkeys(
    ("ivc_consistency", "threat_model_compliance", "task_attack_coherence", "verifier_correctness"), "pass"
)
CASES = [RoundCaseRecord(f"banking-c{i}", 1, f"hash-{i}") for i in range(4)]


@pytest.fixture
def round_id(store) -> str:
    return store.create_round("round-1", 7, ["ann", "ben"], CASES)


def test_a_round_pins_its_case_versions_in_order(store, round_id):
    assert store.get_round(round_id).experts == ("ann", "ben") and store.get_round(round_id).n == 4
    assert [(c.position, c.case_id, c.case_hash) for c in store.round_cases(round_id)] == [
        (n, f"banking-c{n - 1}", f"hash-{n - 1}") for n in range(1, 5)
    ]
    assert [r.id for r in store.review_rounds()] == [round_id]
    assert store.latest_round_for("ben") == round_id and store.latest_round_for("eve") is None
    with pytest.raises(UnknownRound):
        store.round_cases("round-x")
    with pytest.raises(InvalidRecord):
        store.create_round("round-2", 1, ["ann", "ann"], CASES)
    with pytest.raises(InvalidRecord):
        store.create_round("round-2", 1, ["ann", "ben"], CASES + CASES[:1])
    with pytest.raises(WriteRejected):
        store.create_round(round_id, 1, ["ann", "ben"], CASES)


def test_reviews_are_write_once_with_reasoned_versions_and_private_to_their_expert(store, round_id):
    first = store.submit_review(round_id, "banking-c0", "ann", PASS, "accept", "clean case")
    assert (first.version, first.decision, first.reason) == (1, "accept", None)
    with pytest.raises(ReviewAlreadySubmitted):
        store.submit_review(round_id, "banking-c0", "ann", PASS, "revise")
    with pytest.raises(ReviewCorrectionWithoutReason):
        store.correct_review(round_id, "banking-c0", "ann", PASS, "revise", "  ")
    changed = {**PASS, "verifier_correctness": "fail"}
    second = store.correct_review(round_id, "banking-c0", "ann", changed, "revise", "the rule misses schedule_transfer")
    assert (second.version, second.rubric["verifier_correctness"], second.reason) == (
        2,
        "fail",
        "the rule misses schedule_transfer",
    )
    with pytest.raises(NoReviewToCorrect):
        store.correct_review(round_id, "banking-c1", "ann", PASS, "accept", "why")
    store.submit_review(round_id, "banking-c0", "ben", PASS, "exclude", "BEN-PRIVATE")
    # the expert's queue holds their own latest review only
    queue = store.expert_queue(round_id, "ann")
    assert [e.reviewed for e in queue] == [True, False, False, False]
    assert queue[0].review == OwnReview(
        case_id="banking-c0",
        rubric=changed,
        decision="revise",
        note="",
        version=2,
        reason="the rule misses schedule_transfer",
    )
    assert "BEN-PRIVATE" not in repr(queue)
    assert store.review_progress(round_id) == {"ann": 1, "ben": 1}
    firsts = [(r.expert, r.decision) for r in store.case_reviews(round_id)]
    assert firsts == [("ann", "accept"), ("ben", "exclude")]
    assert len(store.case_reviews(round_id, first_only=False)) == 3


def test_a_first_review_that_lost_the_race_is_taken_not_a_database_error(store, round_id):
    """PostgreSQL's `redagent_submit_review` (migration 0011): a first review arriving after another was committed
    (the store's own check ran before that commit) returns NULL, read as ReviewAlreadySubmitted's race, where it
    wrote version 2 without a reason and the table's check refused it; a correction with no review yet, too."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("the writer functions are PostgreSQL's; SQLite inserts with ON CONFLICT DO NOTHING")
    store.submit_review(round_id, "banking-c0", "ann", PASS, "accept")
    row = {"round_id": round_id, "expert": "ann", "rubric": PASS, "decision": "revise", "note": ""}
    with store._writing() as conn:
        assert _pg_write_review(conn, {**row, "case_id": "banking-c0", "reason": None}) is None
        assert _pg_write_review(conn, {**row, "case_id": "banking-c1", "reason": "second look"}) is None
    assert [(r.case_id, r.version) for r in store.case_reviews(round_id, first_only=False)] == [("banking-c0", 1)]


def test_bad_reviews_are_refused_before_anything_is_written(store, round_id):
    for rubric, decision, field in (
        ({**PASS, "ivc_consistency": "maybe"}, "accept", "rubric.ivc_consistency"),
        ({k: v for k, v in PASS.items() if k != "verifier_correctness"}, "accept", "rubric.verifier_correctness"),
        ({**PASS, "style": "pass"}, "accept", "unknown item 'style'"),
        (PASS, "approve", "decision"),
    ):
        with pytest.raises(BadReview, match=field):
            store.submit_review(round_id, "banking-c0", "ann", rubric, decision)
    with pytest.raises(UnknownExpert):
        store.submit_review(round_id, "banking-c0", "eve", PASS, "accept")
    with pytest.raises(CaseNotInRound):
        store.submit_review(round_id, "email-other", "ann", PASS, "accept")
    assert store.case_reviews(round_id) == []


def test_the_schema_itself_refuses_a_correction_without_reason(store, round_id):
    from redagent.store import tables_reviews as tr

    store.submit_review(round_id, "banking-c0", "ann", PASS, "accept")
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        conn.execute(
            tr.case_review.insert(),
            {
                "round_id": round_id,
                "case_id": "banking-c0",
                "expert": "ann",
                "rubric": PASS,
                "decision": "accept",
                "note": "",
                "version": 2,
                "reason": None,
                "created_at": store.get_round(round_id).created_at,
            },
        )


def test_new_round_is_stratified_by_surface_and_follows_the_seed(store):
    library = load_cases()
    first = new_round(store, 12, 42, ["ann", "ben"], round_id="round-a")
    again = new_round(store, 12, 42, ["ann", "ben"], round_id="round-b")
    other = new_round(store, 12, 43, ["ann", "ben"], round_id="round-c")
    picked = [(c.case_id, c.case_hash) for c in store.round_cases(first)]
    assert picked == [(c.case_id, c.case_hash) for c in store.round_cases(again)]
    assert picked != [(c.case_id, c.case_hash) for c in store.round_cases(other)]
    by_id = {c.id: c for c in library}
    # 12 over six surfaces (banking, browser, cross, email, files, workspace): two each
    assert Counter(surface_of(by_id[case_id]) for case_id, _ in picked) == Counter(
        dict.fromkeys(("banking", "browser", "cross", "email", "files", "workspace"), 2)
    )
    assert all(by_id[case_id].content_hash == digest for case_id, digest in picked)
    assert pinned_case(*picked[0], library).id == picked[0][0]
    with pytest.raises(RoundError, match="changed since the round pinned it"):
        pinned_case(picked[0][0], "0" * 64, library)
    with pytest.raises(RoundError):
        new_round(store, len(library) + 1, 1, ["ann", "ben"])
    with pytest.raises(RoundError):
        new_round(store, 3, 1, ["ann"])


def test_agreement_per_rubric_item_uses_first_reviews(store, round_id):
    values = ["pass", "fail", "pass", "unsure"]
    for n, case in enumerate(CASES):
        ann = {**PASS, "task_attack_coherence": values[n]}
        store.submit_review(round_id, case.case_id, "ann", ann, "accept" if n < 2 else "revise")
        store.submit_review(round_id, case.case_id, "ben", PASS, "accept")
    # a later correction does not change agreement, which is measured on first submissions
    store.correct_review(round_id, "banking-c1", "ann", PASS, "accept", "second look")
    result = agreement(store, round_id)
    assert result["done"] and result["both_reviewed"] == 4
    assert result["items"]["ivc_consistency"]["agreement"] == 1.0
    assert result["items"]["ivc_consistency"]["kappa_defined"] is False  # all "pass": kappa is 0/0
    assert result["items"]["task_attack_coherence"]["agreement"] == 0.5
    assert result["items"]["decision"]["agreement"] == 0.5
    assert result["items"]["decision"]["kappa"] == pytest.approx(0.0)


def test_migration_0003_applies_on_top_of_0002_and_keeps_the_data(store_url):
    engine = create_store_engine(store_url)
    with engine.connect() as conn:
        conn = conn.execution_options(**{WRITE: True})
        with conn.begin():
            command.upgrade(alembic_config(conn), "0002")
    old = Store(store_url, engine)  # a store as the previous release left it, with a run and an audit
    old.create_run(make_run("run-1"))
    rollout = make_rollout("run-1", n_events=2)
    write_as_of(engine, [rollout])
    # The label as 0002's release wrote it (today's write chains it, in tables 0015 added).
    insert_as_of(
        engine,
        tj.judge_label,
        [
            judge_label_row(
                JudgeLabelRecord(
                    rollout_id=rollout.id,
                    run_id="run-1",
                    config_name="state/rule",
                    config_hash="h",
                    view="state",
                    contract_hash="c",
                    gate="g",
                    backbone="rule",
                    label=1,
                    status="ok",
                    rationale="r",
                ),
                datetime.now(UTC),
            )
        ],
    )
    old.close()
    # The audit as 0002's release wrote it (today's create_audit names columns 0008 added).
    insert_as_of(
        engine,
        tj.audit,
        [
            {
                "id": "audit-1",
                "run_id": "run-1",
                "config_name": "state/rule",
                "config_hash": "h",
                "backbone": "rule",
                "seed": 0,
                "n": 1,
                "stratify": [],
                "reviewers": ["ann", "ben"],
                "adjudicator": "cat",
                "blind_model": True,
                "blind_attack": False,
                "created_at": datetime.now(UTC),
            }
        ],
    )
    (item,) = insert_as_of(
        engine,
        tj.audit_item,
        [
            {
                "audit_id": "audit-1",
                "rollout_id": rollout.id,
                "stratum": "all",
                "population": 1,
                "sampled": 1,
                "weight": 1.0,
                "judge_label": 1,
            }
        ],
    )
    insert_as_of(
        engine,
        tj.audit_assignment,
        [
            {"audit_id": "audit-1", "item_id": item, "reviewer": name, "slot": slot, "position": 1}
            for name, slot in (("ann", "A"), ("ben", "B"))
        ],
    )
    store = open_store(store_url)
    try:
        with store.engine.connect() as conn:
            assert current_revisions(conn) == (head_revision(),)
            assert {"review_round", "round_case", "case_review"} <= set(inspect(conn).get_table_names())
        assert store.get_rollout(rollout.id) == rollout
        assert store.latest_audit_for("ben") == "audit-1" and store.latest_audit_for("cat", "adjudicator") == "audit-1"
        assert store.latest_audit_for("cat") is None
        store.create_round("round-1", 1, ["ann", "ben"], CASES)
        assert store.submit_review("round-1", "banking-c0", "ann", PASS, "accept").version == 1
    finally:
        store.close()
