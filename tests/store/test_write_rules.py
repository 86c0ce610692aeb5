"""One set of rules for every write path (issue 34, item 4), on both dialects: what the Python API refuses, the
database refuses too — the owner's hand-written SQL meets the same triggers as the API's writes. Two rules: a
correction says why (a reason that is not blank), and an audit whose every item has its final label is closed —
nothing re-opens it but the owner's recorded action. tests/store/test_pg_write_rules.py calls the definer functions
as each member.
"""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from redagent.store.errors import AuditClosed, AuditError, CorrectionWithoutReason, WriteRejected
from tests.store.test_audit import PEER, filled, make_audit  # noqa: F401

BLANKS = ("", " ", "\t\n", "\u3000", "\u00a0\u2003")  # nothing but what str.strip() removes


def label_all(store, items: list[int], label: str = "harmful") -> None:
    store.submit_labels("audit-1", "alice", [(item, label, "") for item in items])
    store.submit_labels("audit-1", PEER, [(item, label, "") for item in items])


def finals(store) -> int:
    return sum(1 for row in store.final_labels("audit-1") if row.final is not None)


def got_through(attempt) -> int:
    """1 when the write went through, 0 when something refused it."""
    try:
        attempt()
    except (DBAPIError, psycopg.Error, WriteRejected, AuditError):
        return 0
    return 1


# ------------------------------------------------------------------ the store's own API and the owner's SQL (both)


def test_the_owners_hand_written_correction_needs_a_reason_on_both_dialects(filled):  # noqa: F811
    items = make_audit(filled)
    filled.submit_label("audit-1", items[0], "alice", "harmful")
    accepted = 0
    for version, blank in enumerate(BLANKS, start=2):

        def write(version: int = version, blank: str = blank) -> None:
            with filled.engine.begin() as conn:
                conn.execute(
                    text(
                        "INSERT INTO audit_label (item_id, reviewer, label, note, version, reason, created_at) "
                        "VALUES (:item, 'alice', 'not_harmful', '', :version, :reason, :now)"
                    ),
                    {"item": items[0], "version": version, "reason": blank, "now": "2026-01-01 00:00:00"},
                )

        accepted += got_through(write)
    assert accepted == 0
    for blank in BLANKS:
        with pytest.raises(CorrectionWithoutReason):
            filled.correct_label("audit-1", items[0], "alice", "not_harmful", blank)


def test_a_complete_audit_is_closed_and_only_the_owners_recorded_reopen_opens_it(filled):  # noqa: F811
    items = make_audit(filled)
    label_all(filled, items)
    assert finals(filled) == len(items)
    closures = filled.audit_closures("audit-1")
    assert [(c.action, c.made_by) for c in closures] == [("close", "redagent")]
    # Every write path meets the closed audit: the API, for the reviewer and the adjudicator…
    with pytest.raises(AuditClosed, match="audit-1 is closed"):
        filled.correct_label("audit-1", items[0], "alice", "not_harmful", "I misread the receipt")
    # …and the owner's hand-written SQL.
    with pytest.raises(Exception, match="closed"), filled.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO audit_label (item_id, reviewer, label, note, version, reason, created_at, evidence_tag) "
                "VALUES (:item, 'alice', 'not_harmful', '', 2, 'by hand', :now, "
                "(SELECT evidence_tag FROM audit_item WHERE id = :item))"
            ),
            {"item": items[0], "now": "2026-01-01 00:00:00"},
        )
    assert finals(filled) == len(items)
    # The closes and re-opens are append-only, for the owner too.
    for statement in ("UPDATE audit_closure SET action = 'reopen'", "DELETE FROM audit_closure"):
        with pytest.raises(Exception, match="append-only"), filled.engine.begin() as conn:
            conn.execute(text(statement))
    # Re-opening needs a reason and is recorded; the correction it allows leaves the item disputed (open), and the
    # adjudication that settles it closes the audit again.
    for blank in BLANKS:
        with pytest.raises(AuditError, match="say why"):
            filled.reopen_audit("audit-1", blank)
    filled.reopen_audit("audit-1", "alice asked to correct item 1")
    with pytest.raises(AuditError, match="already open"):
        filled.reopen_audit("audit-1", "again")
    filled.correct_label("audit-1", items[0], "alice", "not_harmful", "I misread the receipt")
    assert finals(filled) == len(items) - 1
    assert filled.audit_closures("audit-1")[-1].action == "reopen"
    filled.adjudicate("audit-1", items[0], "carol", "not_harmful")
    assert [(c.action, c.made_by) for c in filled.audit_closures("audit-1")] == [
        ("close", "redagent"),
        ("reopen", "owner" if filled.dialect == "sqlite" else filled.identity().login),
        ("close", "redagent"),
    ]
    with pytest.raises(AuditClosed):
        filled.correct_adjudication("audit-1", items[0], "carol", "harmful", "second thoughts")


def test_the_owner_may_close_an_audit_by_hand_with_a_reason(filled):  # noqa: F811
    items = make_audit(filled)
    filled.submit_label("audit-1", items[0], "alice", "harmful")
    with pytest.raises(AuditError, match="say why"):
        filled.close_audit("audit-1", "  ")
    filled.close_audit("audit-1", "the run was withdrawn")
    with pytest.raises(AuditClosed):
        filled.submit_label("audit-1", items[1], "alice", "harmful")
    with pytest.raises(AuditError, match="already closed"):
        filled.close_audit("audit-1", "twice")


def test_the_cli_shows_the_closed_state_and_the_owner_reopens_with_a_reason(filled, tmp_path):  # noqa: F811
    import json

    from typer.testing import CliRunner

    from redagent.console.cli import app

    if filled.dialect != "sqlite":
        pytest.skip("the owner's CLI on a team store is the same commands (test_pg_write_rules: the rules)")
    items = make_audit(filled)
    label_all(filled, items)

    def run(*args: str):
        return CliRunner().invoke(app, [*args, "--db", filled.url], prog_name="redagent")

    status = run("audit", "status", "audit-1", "--json")
    assert status.exit_code == 0, status.output
    state = json.loads(status.stdout)["state"]
    assert state["closed"] and state["changes"][0]["by"] == "redagent"
    assert "closed" in run("audit", "status", "audit-1").stdout
    refused = run("audit", "reopen", "audit-1", "--reason", "   ")
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1 and "say why" in refused.stderr
    assert run("audit", "reopen", "audit-1", "--reason", "item 1 misread").exit_code == 0
    assert "re-opened" in run("audit", "status", "audit-1").stdout
    again = run("audit", "reopen", "audit-1", "--reason", "x")
    assert again.exit_code == 2 and "already open" in again.stderr
    assert run("audit", "close", "audit-1", "--reason", "done after all").exit_code == 0


def test_a_reviewers_own_write_never_closes_the_audit_reading_its_figures_does(filled):  # noqa: F811
    """Closing inside the reviewer's last write told her whether any item was disputed — her peer's agreement.
    Her writes close nothing (she may still correct); the first analyst read of the complete figures closes it."""
    items = make_audit(filled)
    label_all(filled, items)
    assert filled.audit_closures("audit-1") == []  # every item final, but no one has read the figures
    filled.correct_label("audit-1", items[0], "alice", "harmful", "I checked the receipt again")
    assert filled.audit_closures("audit-1") == []
    assert finals(filled) == len(items)  # the analyst's read
    assert [(c.action, c.reason) for c in filled.audit_closures("audit-1")] == [
        ("close", "its figures were read with every item final")
    ]
    with pytest.raises(AuditClosed):
        filled.correct_label("audit-1", items[0], "alice", "harmful", "once more")
