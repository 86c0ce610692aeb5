"""The definer functions a member calls from a SQL prompt hold her to the Python API's rules (issue 34, item 4): a
correction with an empty or blank reason, and any write that would take an audit whose every item has its final label
back to provisional, are refused whoever writes — reviewer, adjudicator, expert, researcher, or the owner by hand.

`probe_writes` tries each forbidden write and counts those that went through (0 everywhere is the rule). It speaks
only SQL and the store API the store had before these rules, so it measures that store too (NOTE figures).
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

from redagent.store import open_store
from redagent.store.access import ADJUDICATOR, EXPERT, RESEARCHER, REVIEWER
from redagent.store.reviews import RoundCaseRecord
from tests.dbs import _libpq_conninfo
from tests.store.test_audit import PEER, filled, make_audit  # noqa: F401
from tests.store.test_team_access import pg_url, store  # noqa: F401

BLANKS = ("", " ", "\t\n", "\u3000", "\u00a0\u2003")  # nothing but what str.strip() removes
RUBRIC = {
    "ivc_consistency": "pass",
    "threat_model_compliance": "pass",
    "task_attack_coherence": "pass",
    "verifier_correctness": "pass",
}
MEMBERS = {"alice": REVIEWER, PEER: REVIEWER, "carol": ADJUDICATOR, "dave": RESEARCHER, "erin": EXPERT, "frank": EXPERT}


def sql(url: str, statement: str, params: tuple[Any, ...] = ()) -> Any:
    with psycopg.connect(_libpq_conninfo(url), autocommit=True, connect_timeout=5) as conn:
        return conn.execute(statement, params).fetchall()


def went_through(url: str, statement: str, params: tuple[Any, ...] = ()) -> int:
    try:
        sql(url, statement, params)
    except psycopg.Error:
        return 0
    return 1


def finals(owner: Any) -> int:
    return sum(1 for row in owner.final_labels("audit-1") if row.final is not None)


def probe_writes(owner: Any, items: list[int], urls: dict[str, str]) -> dict[str, int]:
    """Each write the rules forbid, made as a member (or the owner) can make it: 1 for each that went through."""
    found: dict[str, int] = {}
    with open_store(urls["alice"]) as alice:
        alice.submit_labels("audit-1", "alice", [(item, "harmful", "") for item in items])
    with open_store(urls[PEER]) as peer:
        peer.submit_labels("audit-1", PEER, [(item, "harmful", "") for item in items[:-1]])
        peer.submit_label("audit-1", items[-1], PEER, "not_harmful")  # the one disputed item
    with open_store(urls["erin"]) as erin:
        erin.submit_review("round-1", "banking/c0", "erin", RUBRIC, "accept", "")
    review = "SELECT redagent_submit_review('round-1', 'banking/c0', 'erin', %s, 'revise', '', %s)"
    for blank in BLANKS:
        found[f"reviewer's correction, reason {blank!r}"] = went_through(
            urls["alice"],
            "SELECT redagent_submit_label('audit-1', %s, 'alice', 'not_harmful', '', %s)",
            (items[1], blank),
        )
        found[f"expert's correction, reason {blank!r}"] = went_through(
            urls["erin"], review, (json.dumps(RUBRIC), blank)
        )
    sql(urls["carol"], "SELECT redagent_adjudicate('audit-1', %s, 'carol', 'harmful', '', NULL)", (items[-1],))
    for blank in BLANKS:
        found[f"adjudicator's correction, reason {blank!r}"] = went_through(
            urls["carol"],
            "SELECT redagent_adjudicate('audit-1', %s, 'carol', 'not_harmful', '', %s)",
            (items[-1], blank),
        )
    # Undo what a blank correction may have done (the store before the rules took them), so the audit is complete:
    # every item final. Each write below would take it back to provisional.
    for who, item, label in (("alice", items[1], "harmful"),):
        if finals(owner) < len(items):
            sql(
                urls[who],
                "SELECT redagent_submit_label('audit-1', %s, %s, %s, '', 'restore')",
                (item, who, label),
            )
    complete = finals(owner) == len(items)
    found["the audit is not complete before the re-opening writes"] = int(not complete)
    reopening = {
        "reviewer's correction (function)": (
            urls["alice"],
            "SELECT redagent_submit_label('audit-1', %s, 'alice', 'not_harmful', '', 'changed my mind')",
            (items[0],),
        ),
        "peer's correction (function)": (
            urls[PEER],
            "SELECT redagent_submit_label('audit-1', %s, %s, 'unsure', '', 'not sure after all')",
            (items[2], PEER),
        ),
        "adjudicator's correction (function)": (
            urls["carol"],
            "SELECT redagent_adjudicate('audit-1', %s, 'carol', 'unsure', '', 'second thoughts')",
            (items[-1],),
        ),
        "owner's correction by hand": (
            owner.url,
            "INSERT INTO audit_label (item_id, reviewer, label, note, version, reason, created_at) "
            "SELECT %s, 'alice', 'not_harmful', '', max(version) + 1, 'by hand', now() FROM audit_label "
            "WHERE item_id = %s AND reviewer = 'alice'",
            (items[3], items[3]),
        ),
    }
    for what, (url, statement, params) in reopening.items():
        before = finals(owner)
        went = went_through(url, statement, params)
        found[what] = int(went and finals(owner) < before)
    # Nobody but the owner re-opens it (a table that did not exist before the rules refuses anyone: 0 either way).
    for who in ("dave", "alice", "carol"):
        found[f"{who} re-opens the audit"] = went_through(
            urls[who],
            "INSERT INTO audit_closure (audit_id, action, made_by, reason, created_at) "
            "VALUES ('audit-1', 'reopen', %s, 'let me fix it', now())",
            (who,),
        )
    found["complete audit made provisional"] = int(finals(owner) < len(items))
    return found


def test_members_calling_the_definer_functions_meet_the_apis_rules(filled):  # noqa: F811
    owner = filled
    items = make_audit(owner)
    members = {name: owner.add_member(name, role) for name, role in MEMBERS.items()}
    owner.create_round("round-1", 1, ["erin", "frank"], [RoundCaseRecord("banking/c0", 1, "sha256:0")])
    found = probe_writes(owner, items, {name: member.secret_url for name, member in members.items()})
    assert found == dict.fromkeys(found, 0), json.dumps(found, indent=1)
    # What is recorded: the automatic close, and nothing of the refused writes.
    assert [(c.action, c.made_by) for c in owner.audit_closures("audit-1")] == [("close", "redagent")]
