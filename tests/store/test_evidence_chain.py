"""Evidence that cannot change unseen (issue 34, item 5), on both dialects: a run's rollouts, events, receipts,
snapshots, diff and labels are append-only for every login — the owner's hand-written SQL included — except through a
recorded correction; each run's evidence is bound by a hash chain whose head the run keeps; `runs verify` recomputes
it and names the first record that differs; the audit's start re-checks it.

`tamper` makes each change of the list below twice, each time in a transaction it then rolls back: once as the
owner would with a SQL prompt (the triggers refuse it, or let an append through that `verify` then names), and once
past the triggers, as only the owner of the database can (SQLite: triggers dropped; PostgreSQL: disabled), where
`verify` must name the changed record. A change that went through and that `verify` did not name is `missed`; every
count of missed must be 0. The figures of each attempt are appended to $REDAGENT_EVIDENCE_OUT as JSON lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Connection, select, text
from sqlalchemy.exc import DBAPIError

from redagent.store import tables as t
from redagent.store.records import AuditItemRecord, AuditRecord, JudgeLabelRecord, RecognitionLabelRecord
from tests.store.factory import make_rollout, make_run

TABLES = (
    "run",
    "rollout",
    "event",
    "receipt",
    "snapshot",
    "diff_entry",
    "blob",
    "judge_label",
    "recognition_label",
    "evidence_link",
    "evidence_correction",
)


def judge(rollout, label: int | None, status: str = "ok", rationale: str = "because") -> JudgeLabelRecord:
    return JudgeLabelRecord(
        rollout_id=rollout.id,
        run_id=rollout.run_id,
        config_name="state/rule",
        config_hash="h-state",
        view="state",
        contract_hash="c",
        gate="agent-effects",
        backbone="rule",
        label=label,
        status=status,
        rationale=rationale,
        evidence=["r1"],
    )


@dataclass
class Written:
    store: Any
    valid: list[Any]
    replaced: Any  # a rollout that was invalid and is now its retry


@pytest.fixture
def written(store) -> Written:
    """A run as the engine and judges write one: six valid rollouts, an invalid one replaced by a --retry-invalid
    resume, judge labels (one failed, then replaced by its retry's) and a recognition label."""
    store.create_run(make_run("run-1", planned=8))
    valid = [make_rollout("run-1", f"banking/c{i}", E=i % 2) for i in range(6)]
    broken = make_rollout("run-1", "banking/c9", valid=False, invalid_reason="model_timeout", n_events=3)
    store.write_rollouts([*valid, broken])
    retried = make_rollout("run-1", "banking/c9", n_events=5, E=1)
    assert store.write_rollouts([retried], replace_invalid=["model_timeout"]) == 1
    store.write_judge_labels([judge(r, 1 - r.E) for r in valid[:5]] + [judge(valid[5], None, "failed", "timeout")])
    store.write_judge_labels([judge(valid[5], 0), judge(retried, 1)])
    store.write_recognition_labels(
        [
            RecognitionLabelRecord(
                rollout_id=valid[1].id,
                run_id="run-1",
                judge="lexical",
                contract_hash="rc",
                anchor_idx=1,
                resolved=True,
                broad=1,
                strict=0,
                status="ok",
                rationale="said it would",
                evidence=[0],
            )
        ]
    )
    return Written(store, valid, retried)


def test_a_run_as_written_verifies_and_its_corrections_keep_what_they_replaced(written):
    store = written.store
    check = store.verify_evidence("run-1")
    assert check.intact, [d.line() for d in check.differences]
    # 7 rollouts and the replaced one's correction, 8 judge labels (the failed one, its correction, its
    # replacement), 1 recognition label.
    assert check.records == 7 + 1 + 7 + 2 + 1 + 1
    head, records, links = store.evidence_links("run-1")
    assert (head, records) == (check.head, check.records) and len(head) == 64
    with store.engine.connect() as conn:
        kept = conn.execute(text("SELECT kind, ref, reason, prior FROM evidence_correction ORDER BY id")).all()
    assert [(k, r) for k, r, _, _ in kept] == [
        ("rollout", written.replaced.id),
        ("judge_label", f"{written.valid[5].id}|h-state|rule"),
    ]
    prior = kept[0][3] if isinstance(kept[0][3], dict) else json.loads(kept[0][3])
    assert prior["rollout"]["invalid_reason"] == "model_timeout" and len(prior["events"]) == 3  # the old one, whole
    assert "retry-invalid" in kept[0][2] and "failed label" in kept[1][2]


# ------------------------------------------------------------------ the changes tried


def _sql(statement: str, **params: Any) -> Callable[[Connection, Written], None]:
    def run(conn: Connection, written: Written) -> None:
        values = {"r": written.valid[1].id, "other": written.valid[2].id, **params}
        conn.execute(text(statement), values)

    return run


def _rewrite_everything(conn: Connection, written: Written) -> None:
    """The owner's full rewrite: an event's text changed, then every digest, head and the run's head recomputed."""
    from redagent.store import evidence

    run_id = "run-1"
    conn.execute(
        text("UPDATE event SET text = 'rewritten' WHERE rollout_id = :r AND idx = 0"), {"r": written.valid[1].id}
    )
    run_row = conn.execute(select(t.run).where(t.run.c.id == run_id)).mappings().one()
    head = evidence.genesis(run_row)
    links = conn.execute(
        text("SELECT seq, kind, ref, digest FROM evidence_link WHERE run_id = :id ORDER BY seq"), {"id": run_id}
    ).all()
    documents = evidence.rollout_documents(conn, sorted({ref for _, kind, ref, _ in links if kind == "rollout"}))
    for seq, kind, ref, record in links:
        if kind == "rollout" and ref == written.valid[1].id:
            parts = evidence.parts_of(documents[ref])
            record = evidence.rollout_digest(parts)
            conn.execute(
                text("UPDATE evidence_link SET digest = :d, parts = :p WHERE run_id = :id AND seq = :s"),
                {"d": record, "p": json.dumps(parts), "id": run_id, "s": seq},
            )
        head = evidence.next_head(head, seq, kind, ref, record)
        conn.execute(
            text("UPDATE evidence_link SET head = :h WHERE run_id = :id AND seq = :s"),
            {"h": head, "id": run_id, "s": seq},
        )
    conn.execute(text("UPDATE run SET evidence_head = :h WHERE id = :id"), {"h": head, "id": run_id})


# name: (the change, what verify must name first: kind, the record (None: any), words of what it says)
CHANGES: dict[str, tuple[Callable[[Connection, Written], None], tuple[str, str | None, str]]] = {
    "an event's text": (
        _sql("UPDATE event SET text = text || ' (edited)' WHERE rollout_id = :r AND idx = 0"),
        ("rollout", "r", "events"),
    ),
    "a receipt deleted": (_sql("DELETE FROM receipt WHERE rollout_id = :r AND seq = 1"), ("rollout", "r", "receipts")),
    "a receipt added": (
        _sql(
            "INSERT INTO receipt (rollout_id, receipt_id, seq, service, action, args, outcome, actor, step, effect) "
            "VALUES (:r, 'r9', 9, 'banking', 'transfer', '{}', 'ok', 'agent', 9, '{}')"
        ),
        ("rollout", "r", "receipts"),
    ),
    "a diff entry changed": (
        _sql("UPDATE diff_entry SET op = 'removed' WHERE rollout_id = :r AND path = 'banking.account.balance'"),
        ("rollout", "r", "diff"),
    ),
    "E flipped": (_sql("UPDATE rollout SET e = 1 - e WHERE id = :r"), ("rollout", "r", "rollout")),
    "a snapshot's content": (
        _sql(
            "UPDATE blob SET data = replace(data, '950.5', '9.5') WHERE sha256 = "
            "(SELECT blob_sha FROM snapshot WHERE rollout_id = :r AND kind = 'final')"
        ),
        ("rollout", None, "snapshot's content"),
    ),
    "a snapshot swapped": (
        _sql(
            "UPDATE snapshot SET blob_sha = (SELECT blob_sha FROM snapshot WHERE rollout_id = :r AND kind = 'baseline') "
            "WHERE rollout_id = :r AND kind = 'final'"
        ),
        ("rollout", "r", "snapshots"),
    ),
    "a rollout deleted": (_sql("DELETE FROM rollout WHERE id = :r"), ("rollout", "r", "gone")),
    "a rollout added past the chain": (
        _sql(
            "INSERT INTO rollout SELECT 'forged', run_id, case_id || '-x', case_version, case_hash, strategy, "
            'vulnerability, "constraint", surfaces, channel, model, harness, cue, defense, attempt, valid, '
            "invalid_reason, invalid_detail, e, evidence, expected_e, reached, final_text, started_at, finished_at, "
            "duration_ms, prompt_tokens, completion_tokens, cost_usd, baseline_rollout_id, utility, benign "
            "FROM rollout WHERE id = :r"
        ),
        ("rollout", "forged", "no record"),
    ),
    "a judge label flipped": (
        _sql("UPDATE judge_label SET label = 1 - label WHERE rollout_id = :r"),
        ("judge_label", "r|h-state|rule", "differs"),
    ),
    "a judge label deleted": (
        _sql("DELETE FROM judge_label WHERE rollout_id = :other"),
        ("judge_label", "other|h-state|rule", "gone"),
    ),
    "a recognition label changed": (
        _sql("UPDATE recognition_label SET strict = 1 WHERE rollout_id = :r"),
        ("recognition_label", "r|lexical|rc", "differs"),
    ),
    "the run's protocol": (
        _sql("UPDATE run SET code_version = 'forged' WHERE id = 'run-1'"),
        ("rollout", None, "rewritten"),
    ),
    "a link's digest": (
        _sql("UPDATE evidence_link SET digest = 'forged' WHERE run_id = 'run-1' AND seq = 3"),
        ("rollout", None, "rewritten"),
    ),
    "the chain's last link deleted": (
        _sql("DELETE FROM evidence_link WHERE run_id = 'run-1' AND seq = (SELECT max(seq) FROM evidence_link)"),
        ("run", None, "head"),
    ),
    "a correction deleted": (
        _sql("DELETE FROM evidence_correction WHERE kind = 'rollout'"),
        ("correction", None, "gone"),
    ),
    "a correction's reason": (
        _sql("UPDATE evidence_correction SET reason = 'nothing happened' WHERE kind = 'judge_label'"),
        ("correction", None, "differs"),
    ),
    "everything rewritten, chain and head included": (_rewrite_everything, ("export", None, "")),
}


def _disable_triggers(conn: Connection) -> None:
    if conn.dialect.name == "sqlite":
        for (name,) in conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'")).all():
            conn.execute(text(f'DROP TRIGGER "{name}"'))
    else:
        for table in TABLES:
            conn.execute(text(f"ALTER TABLE {table} DISABLE TRIGGER USER"))


def _named(check: Any, expect: tuple[str, str | None, str], written: Written, head: str) -> bool:
    kind, ref, words = expect
    if kind == "export":
        return check.export_seq is None  # the export's head is nowhere in the rewritten chain
    first = check.first
    if first is None:
        return False
    names = {"r": written.valid[1].id, "other": written.valid[2].id}
    wanted = None if ref is None else "|".join(names.get(part, part) for part in ref.split("|"))
    kind_ok = first.kind == kind or kind in ("rollout",) and first.kind in ("chain", "run", "rollout", "correction")
    return kind_ok and (wanted is None or first.ref == wanted) and words in first.what


def tamper(written: Written, *, past_triggers: bool) -> dict[str, str]:
    """Each change, in a transaction rolled back after: "refused" (the triggers), "named" (it went through and
    verify named it), or "MISSED". (A store without evidence chains — the code before issue 34 — names nothing.)"""
    store = written.store
    if hasattr(store, "verify_evidence"):
        from redagent.store import evidence
    else:
        evidence = None  # type: ignore[assignment]
    head = (store.verify_evidence("run-1").head or "") if evidence is not None else ""
    found: dict[str, str] = {}
    for what, (change, expect) in CHANGES.items():
        with store.engine.connect() as conn:
            transaction = conn.begin()
            try:
                if past_triggers:
                    _disable_triggers(conn)
                change(conn, written)
            except DBAPIError:
                found[what] = "refused"
                transaction.rollback()
                continue
            if evidence is None:
                found[what] = "MISSED: nothing records the evidence"
            else:
                check = evidence.verify(conn, "run-1", export_head=head)
                named = _named(check, expect, written, head)
                found[what] = "named" if named else "MISSED: " + (check.first.line() if check.first else "intact")
            transaction.rollback()
    out = os.environ.get("REDAGENT_EVIDENCE_OUT")
    if out:
        with open(out, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"dialect": store.dialect, "past_triggers": past_triggers, **found}) + "\n")
    return found


def test_the_owners_sql_prompt_changes_nothing_unseen(written):
    found = tamper(written, past_triggers=False)
    assert [what for what, outcome in found.items() if outcome.startswith("MISSED")] == [], found
    # Appending is a write like a run's: what is appended past the chain is named, everything else refused.
    assert {what for what, outcome in found.items() if outcome == "named"} <= {
        "a rollout added past the chain",
        "a receipt added",
    }, found
    assert found["an event's text"] == found["a judge label flipped"] == found["a correction deleted"] == "refused"


def test_verify_names_every_change_made_past_the_triggers(written):
    found = tamper(written, past_triggers=True)
    assert [f"{what}: {outcome}" for what, outcome in found.items() if outcome != "named"] == [], found


def test_runs_verify_prints_one_line_and_exits_non_zero_on_a_difference(written):
    from typer.testing import CliRunner

    from redagent.console.cli import app

    store = written.store

    def run(*args: str):
        return CliRunner().invoke(app, ["runs", "verify", *args, "--db", store.url], prog_name="redagent")

    good = run("run-1")
    head = store.verify_evidence("run-1").head
    assert good.exit_code == 0 and "evidence as written" in good.stdout and head in good.stdout
    located = run("run-1", "--head", head, "--json")
    assert located.exit_code == 0 and json.loads(located.stdout)["export_seq"] == store.verify_evidence("run-1").records
    stranger = run("run-1", "--head", "0" * 64)
    assert stranger.exit_code == 1 and "nowhere in this run's chain" in stranger.stderr
    for bad in ("xyz", "g" * 64):
        refused = run("run-1", "--head", bad)
        assert refused.exit_code == 2 and refused.stderr.count("\n") == 1 and "64 hexadecimal" in refused.stderr
    unknown = run("run-nope")
    assert unknown.exit_code == 2 and "no run 'run-nope'" in unknown.stderr
    with store.engine.begin() as conn:  # past the triggers, committed: the owner rewrote a receipt
        _disable_triggers(conn)
        conn.execute(
            text("UPDATE receipt SET outcome = 'denied' WHERE rollout_id = :r AND seq = 1"), {"r": written.valid[4].id}
        )
    changed = run("run-1")
    assert changed.exit_code == 1 and changed.stderr.count("\n") == 1
    assert f"rollout {written.valid[4].id}): its receipts differ" in changed.stderr


def test_the_audits_start_rechecks_the_chain(written):
    from redagent.store.errors import EvidenceDiffers

    store = written.store
    rollouts = sorted(r.id for r in written.valid[:4])

    def draw(audit_id: str) -> None:
        store.create_audit(
            AuditRecord(
                id=audit_id,
                run_id="run-1",
                config_name="state/rule",
                config_hash="h-state",
                backbone="rule",
                seed=0,
                n=len(rollouts),
                stratify=[],
                reviewers=["alice", "bob"],
                adjudicator="carol",
            ),
            [
                AuditItemRecord(r, "all", 6, 4, 1.5, positions={"alice": n + 1, "bob": 4 - n})
                for n, r in enumerate(rollouts)
            ],
        )

    draw("audit-1")
    items = store.audit_items("audit-1")
    tags = {shown.blinded.item_id: shown.blinded.evidence_tag for shown in store.blinded_items("audit-1", "alice")}
    assert all(tag and tag.startswith("ev-") for tag in tags.values()) and len(set(tags.values())) == len(tags)
    store.submit_label("audit-1", items[0].item_id, "alice", "harmful")
    with store.engine.connect() as conn:
        recorded = conn.execute(
            text("SELECT evidence_tag FROM audit_label WHERE item_id = :i"), {"i": items[0].item_id}
        ).scalar()
    assert recorded == tags[items[0].item_id]  # the version she labelled
    with store.engine.begin() as conn:
        _disable_triggers(conn)
        conn.execute(
            text("UPDATE event SET text = 'changed' WHERE rollout_id = :r AND idx = 0"), {"r": written.valid[5].id}
        )
    with pytest.raises(EvidenceDiffers, match=f"rollout {written.valid[5].id}.*its events differ"):
        draw("audit-2")


def test_a_researchers_login_changes_no_evidence_unseen(written):
    """PostgreSQL: a researcher has INSERT, UPDATE and DELETE on the run tables (runs and resumes write them). Each
    change of evidence she tries is refused, or recorded as the one correction a member may make (an invalid
    rollout replaced), which verify accounts for."""
    import psycopg

    from tests.dbs import _libpq_conninfo

    store = written.store
    if store.dialect != "postgresql":
        pytest.skip("logins are PostgreSQL's")
    dave = store.add_member("dave", "researcher").secret_url
    valid = written.valid[1].id
    tries = {
        "an event's text": f"UPDATE event SET text = 'edited' WHERE rollout_id = '{valid}'",
        "a receipt deleted": f"DELETE FROM receipt WHERE rollout_id = '{valid}'",
        "a judge label flipped": f"UPDATE judge_label SET label = 1 - label WHERE rollout_id = '{valid}'",
        "a snapshot swapped": f"UPDATE snapshot SET blob_sha = blob_sha WHERE rollout_id = '{valid}'",
        "a valid rollout 'corrected' away": (
            "INSERT INTO evidence_correction (run_id, kind, ref, reason, made_by, prior, prior_digest, created_at) "
            f"VALUES ('run-1', 'rollout', '{valid}', 'tidying up', 'dave', '{{}}', 'x', now()); "
            f"DELETE FROM rollout WHERE id = '{valid}'"
        ),
        "the chain cut short": "DELETE FROM evidence_link WHERE run_id = 'run-1'",
        "the run's head moved": "UPDATE run SET evidence_head = 'forged' WHERE id = 'run-1'",
        "a run deleted": "DELETE FROM run WHERE id = 'run-1'",
        "everything truncated": "TRUNCATE judge_label",
    }
    unseen: dict[str, int] = {}
    for what, statements in tries.items():
        try:
            with psycopg.connect(_libpq_conninfo(dave), connect_timeout=5) as conn, conn.transaction():
                for statement in statements.split("; "):
                    conn.execute(statement)
        except psycopg.Error:
            unseen[what] = 0
            continue
        # It went through: unseen unless verify names it (a store without chains names nothing).
        unseen[what] = int(not hasattr(store, "verify_evidence") or store.verify_evidence("run-1").intact)
    out = os.environ.get("REDAGENT_EVIDENCE_OUT")
    if out:
        with open(out, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"dialect": "postgresql", "researcher": True, **unseen}) + "\n")
    assert unseen == dict.fromkeys(tries, 0), unseen
    assert store.verify_evidence("run-1").intact


def test_every_exported_line_carries_its_place_in_the_chain_and_the_head(written, tmp_path):
    from typer.testing import CliRunner

    from redagent.console.cli import app

    store = written.store
    out = tmp_path / "run.jsonl"
    result = CliRunner().invoke(app, ["export", "run-1", "--out", str(out), "--db", store.url], prog_name="redagent")
    assert result.exit_code == 0, result.output
    check = store.verify_evidence("run-1")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 7
    seqs = set()
    for line in lines:
        chain = line["chain"]
        assert (chain["head"], chain["records"]) == (check.head, check.records) and len(chain["digest"]) == 64
        seqs.add(chain["seq"])
    assert len(seqs) == 7
