"""A hostile SQL suite against a PostgreSQL team store: each member login (reviewer, adjudicator, expert,
researcher) with a SQL prompt, on a store with a labelled audit and a reviewed round, tries every route
the issue-23 review found — leaky functions and an error oracle on every relation it may name, plans and
buffer counts of EXPLAIN ANALYZE probes per item and label, catalog and statistics reads, forged writes —
and counts what it recovers beyond what its role may see. Every count must be 0.

The probes compare what the plans *count* (rows, rows removed, loops, buffers) rather than wall time:
a probe whose plan differs with the other reviewer's true label has learnt it, and says so with the
same certainty on a loaded machine. What a non-superuser owner cannot close (statistics views that
PostgreSQL shows every login: n_tup_ins, reltuples, relation sizes, the number of logins) is checked
separately (`test_what_only_a_superuser_can_close`) and documented in the README's team section.

With $REDAGENT_HOSTILE_OUT set, each attacker's counts are appended to that file as a JSON line.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg import sql as pgsql

from redagent.store import open_store
from redagent.store.access import ADJUDICATOR, EXPERT, RESEARCHER, REVIEWER
from redagent.store.records import AuditItemRecord, AuditRecord
from redagent.store.reviews import RoundCaseRecord
from tests.dbs import _libpq_conninfo
from tests.store.test_audit import (
    JUDGE_EVIDENCE,
    MODEL,
    PEER,
    PEER_NOTE,
    RATIONALE,
    STRATEGY,
    STRATUM,
    VERIFIER,
    filled,  # noqa: F401
)
from tests.store.test_team_access import pg_url, store  # noqa: F401

FRANK_NOTE = "FRANK-NOTE-SENTINEL"
MEMBERS = {"alice": REVIEWER, PEER: REVIEWER, "carol": ADJUDICATOR, "dave": RESEARCHER, "erin": EXPERT, "frank": EXPERT}
# People the data names who have no login (the other audit's reviewers and adjudicator).
OTHERS = ("mallory", "trent", "oscar")
PEER_LABELS = ("harmful", "not_harmful", "unsure", "harmful", "not_harmful", "harmful")  # by item id
ALICE_LABELS = ("harmful", "harmful", "harmful", "harmful")  # her first four items by id: 0 and 3 agree
LABEL_VALUES = ("harmful", "not_harmful", "unsure")
DECISION_VALUES = ("accept", "revise", "exclude")
FRANK_REVIEWS = {"banking/c0": "exclude", "banking/c1": "revise"}
RUBRIC = {
    "ivc_consistency": "pass",
    "threat_model_compliance": "pass",
    "task_attack_coherence": "unsure",
    "verifier_correctness": "fail",
}
# Every count but the residual statistics must be 0 for every attacker.
KINDS = (
    "leaky_function",
    "error_oracle",
    "plan_probe",
    "table_scan",
    "planner_estimate",
    "planner_table",
    "catalog",
    "forged_write",
)


def member_url(member: Any) -> str:
    """The member's full connection URL (the Store API hands it to programs; the CLI never prints it)."""
    return getattr(member, "secret_url", None) or member.url


def connect(url: str, **kwargs: Any) -> psycopg.Connection:
    return psycopg.connect(_libpq_conninfo(url), autocommit=True, connect_timeout=5, **kwargs)


class World:
    """The labelled store, its members' URLs, and the truths an attacker must not recover."""

    def __init__(self, owner: Any, members: dict[str, Any], items: list[int], other_items: list[int]) -> None:
        self.owner, self.members, self.items, self.other_items = owner, members, items, other_items
        self.peer_label = dict(zip(items, PEER_LABELS, strict=True))
        self.url = {name: member_url(member) for name, member in members.items()}
        self.logins = {name: member.login for name, member in members.items()}

    def snapshot(self) -> frozenset[str]:
        """What counts, as the owner reads it: labels, decisions, assignments, items, audits, team, reviews."""
        with connect(self.owner.url) as conn:
            rows: set[str] = set()
            for table in (
                "audit_label",
                "adjudication",
                "audit_assignment",
                "audit_item",
                "audit",
                "team_member",
                "case_review",
            ):
                rows.update(
                    f"{table}:{row[0]}"
                    for row in conn.execute(pgsql.SQL("SELECT t::text FROM {} t").format(pgsql.Identifier(table)))
                )
        return frozenset(rows)


@pytest.fixture
def world(filled) -> Iterator[World]:  # noqa: F811
    owner = filled
    rollouts = sorted(r.rollout_id for r in owner.labelled_rows("run-1", "h-state", "rule"))
    audit_rollouts, spare = rollouts[:6], rollouts[6:]

    def audit(audit_id: str, ids: list[str], reviewers: tuple[str, str], adjudicator: str) -> None:
        records = [
            AuditItemRecord(
                rollout_id=rollout_id,
                stratum=f"{STRATUM}|label={i % 2}",
                population=10,
                sampled=3,
                weight=10 / 3,
                positions={reviewers[0]: i + 1, reviewers[1]: len(ids) - i},
            )
            for i, rollout_id in enumerate(ids)
        ]
        owner.create_audit(
            AuditRecord(
                id=audit_id,
                run_id="run-1",
                config_name="state/rule",
                config_hash="h-state",
                backbone="rule",
                seed=7,
                n=len(ids),
                stratify=["strategy", "label"],
                reviewers=list(reviewers),
                adjudicator=adjudicator,
                blind_model=True,
                blind_attack=True,
            ),
            records,
        )

    audit("audit-1", audit_rollouts, ("alice", PEER), "carol")
    audit("audit-other", [*audit_rollouts[:2], *spare], ("mallory", "trent"), "oscar")
    items = sorted(row.item_id for row in owner.audit_items("audit-1"))
    other_items = sorted(row.item_id for row in owner.audit_items("audit-other"))
    members = {name: owner.add_member(name, role) for name, role in MEMBERS.items()}
    owner.create_round(
        "round-1", 3, ["erin", "frank"], [RoundCaseRecord(f"banking/c{i}", 1, f"sha256:{i}") for i in range(3)]
    )
    world = World(owner, members, items, other_items)
    with open_store(world.url[PEER]) as peer:
        peer.submit_labels("audit-1", PEER, [(item, label, PEER_NOTE) for item, label in world.peer_label.items()])
    with open_store(world.url["alice"]) as alice:
        alice.submit_labels(
            "audit-1", "alice", [(item, label, "mine") for item, label in zip(items, ALICE_LABELS, strict=False)]
        )
    with open_store(world.url["frank"]) as frank:
        for case_id, decision in FRANK_REVIEWS.items():
            frank.submit_review("round-1", case_id, "frank", RUBRIC, decision, FRANK_NOTE)
    # The peer and frank keep a session open while the attacker probes (what pg_stat_activity shows).
    with connect(world.url[PEER]) as peer_session, connect(world.url["frank"]) as frank_session:
        peer_session.execute("SELECT 1")
        frank_session.execute("SELECT 1")
        yield world


def wait_for(read: Any, expected: Any, timeout: float = 60.0) -> Any:
    """read() until it returns `expected` (or the hang timeout passes); the last value read."""
    deadline = time.monotonic() + timeout
    value = read()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.1)
        value = read()
    return value


# ------------------------------------------------------------------ what each attacker must not learn


def forbidden_names(world: World, attacker: str) -> set[str]:
    return {name.lower() for name in (*MEMBERS, *OTHERS) if name != attacker}


def secrets_for(attacker: str) -> tuple[str, ...]:
    """Strings whose presence in anything the attacker reads is a leak."""
    common = (MODEL, STRATEGY, RATIONALE, STRATUM, JUDGE_EVIDENCE, VERIFIER, PEER_NOTE, FRANK_NOTE)
    return (*common, *(name for name in (*MEMBERS, *OTHERS) if name != attacker))


def relations(conn: psycopg.Connection) -> list[str]:
    """Every table or view of schema public the login may SELECT from."""
    return [
        row[0]
        for row in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'm', 'p') "
            "AND has_table_privilege(c.oid, 'SELECT') ORDER BY 1"
        )
    ]


def visible(conn: psycopg.Connection, relation: str) -> set[str]:
    return {
        row[0] for row in conn.execute(pgsql.SQL("SELECT md5(t::text) FROM {} t").format(pgsql.Identifier(relation)))
    }


# ------------------------------------------------------------------ the probes


def leaky_function(world: World, attacker: str) -> int:
    """A function of the attacker's own with a tiny cost in a WHERE clause sees the rows it is shown: every
    row it sees that the attacker's plain SELECT does not return is a leak."""
    found = 0
    with connect(world.url[attacker]) as conn:
        created = None
        for schema in ("pg_temp", "public"):
            try:
                conn.execute(
                    pgsql.SQL(
                        "CREATE FUNCTION {}.peek(text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS "
                        "$$ BEGIN RAISE NOTICE 'PEEK %', md5($1); RETURN true; END $$"
                    ).format(pgsql.Identifier(schema))
                )
                created = schema
                break
            except (pg_errors.InsufficientPrivilege, pg_errors.InvalidSchemaName):
                continue
        if created is None:
            return 0
        seen: list[str] = []
        conn.add_notice_handler(lambda diag: seen.append(diag.message_primary or ""))
        for relation in relations(conn):
            mine = visible(conn, relation)
            seen.clear()
            conn.execute(
                pgsql.SQL("SELECT count(*) FROM {} t WHERE {}.peek(t::text)").format(
                    pgsql.Identifier(relation), pgsql.Identifier(created)
                )
            )
            found += len({line.removeprefix("PEEK ") for line in seen if line.startswith("PEEK ")} - mine)
    return found


def error_oracle(world: World, attacker: str) -> int:
    """No function of one's own: a division by zero for rows the attacker is not shown. An error means the
    planner evaluated her clause on a row her view or policy filters out. (The zero is not a constant: a
    constant 1 / 0 is folded, and fails, when the query is planned, whatever the rows.)"""
    found = 0
    with connect(world.url[attacker]) as conn:
        for relation in relations(conn):
            mine = sorted(visible(conn, relation))
            try:
                conn.execute(
                    pgsql.SQL(
                        "SELECT count(*) FROM {} t WHERE CASE WHEN md5(t::text) <> ALL(%s) "
                        "THEN 1 / (0 * length(t::text)) ELSE 1 END = 1"
                    ).format(pgsql.Identifier(relation)),
                    (mine,),
                )
            except pg_errors.DivisionByZero:
                found += 1
    return found


_COUNTED = (
    "Node Type",
    "Relation Name",
    "Function Name",
    "Actual Rows",
    "Actual Loops",
    "Rows Removed by Filter",
    "Rows Removed by Join Filter",
    "Rows Removed by Index Recheck",
    "Heap Fetches",
)


def plan_signature(conn: psycopg.Connection, query: pgsql.Composable, params: tuple[Any, ...]) -> str:
    """What EXPLAIN ANALYZE counts for the query (rows, loops, rows removed, buffers), never its times.
    Run twice: the first run warms the caches and plans the functions it calls."""
    explain = pgsql.SQL("EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, COSTS OFF, SUMMARY OFF, FORMAT JSON) ") + query
    for _ in range(2):
        plan = conn.execute(explain, params).fetchone()[0][0]["Plan"]

    def walk(node: dict[str, Any]) -> list[Any]:
        counted = [node.get(key) for key in _COUNTED]
        counted.append(node.get("Shared Hit Blocks", 0) + node.get("Shared Read Blocks", 0))
        return [counted, [walk(child) for child in node.get("Plans", [])]]

    return json.dumps(walk(plan))


def plan_probe(world: World, attacker: str) -> int:
    """Per item of the peer (or case of the other expert) and per value, the plan of a probe naming that
    value. The value whose plan stands out from the others' is the guess; a right guess is a finding.
    Relations the login may not name give nothing."""
    if attacker == "carol":
        targets_labels: tuple[str, ...] = ("audit_label", "own_label")  # she sees labels by slot, not by name
    else:
        targets_labels = ("audit_label", "own_label", "blind_slot_label")
    found = 0
    with connect(world.url[attacker]) as conn:
        names = set(relations(conn))
        for relation in targets_labels:
            if relation not in names:
                continue
            who = pgsql.SQL("slot = 'B'") if relation == "blind_slot_label" else pgsql.SQL("reviewer = %s")
            query = (
                pgsql.SQL("SELECT 1 FROM {} WHERE item_id = %s AND label = %s AND ").format(pgsql.Identifier(relation))
                + who
            )
            for item, truth in world.peer_label.items():
                signatures = {
                    value: plan_signature(
                        conn, query, (item, value) + (() if relation == "blind_slot_label" else (PEER,))
                    )
                    for value in LABEL_VALUES
                }
                found += _stands_out(signatures) == truth
        for relation in ("case_review", "own_review"):
            if relation not in names:
                continue
            query = pgsql.SQL("SELECT 1 FROM {} WHERE case_id = %s AND decision = %s AND expert = 'frank'").format(
                pgsql.Identifier(relation)
            )
            for case_id, truth in FRANK_REVIEWS.items():
                signatures = {value: plan_signature(conn, query, (case_id, value)) for value in DECISION_VALUES}
                found += _stands_out(signatures) == truth
    return found


def table_scan(world: World, attacker: str) -> int:
    """Whatever the login may name, EXPLAIN ANALYZE of a query on it with a cheap, leakproof clause: every
    plan node that read a table (rather than the rows a definer function returned) is a place where her
    clause meets rows that are not hers, before or beside the view's filter — what timing probes time."""
    tables = {row[0] for row in world_tables(world)} - {"alembic_version"}  # the schema's stamp: no secret
    found = 0
    with connect(world.url[attacker]) as conn:
        for relation in relations(conn):
            plan = conn.execute(
                pgsql.SQL(
                    "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, FORMAT JSON) SELECT * FROM {} t WHERE t::text <> ''"
                ).format(pgsql.Identifier(relation))
            ).fetchone()[0][0]["Plan"]
            stack = [plan]
            while stack:
                node = stack.pop()
                stack.extend(node.get("Plans", []))
                found += node.get("Relation Name") in tables and node.get("Actual Loops", 0) > 0
    return found


def planner(world: World, attacker: str) -> dict[str, int]:
    """EXPLAIN without ANALYZE: the planner's estimates, which come from statistics over every member's rows. After
    an ANALYZE (autovacuum's work; the owner runs it here), per relation the attacker may name and per value of its
    label or decision column, the row estimates of a query selecting that value (and the peer, where the relation
    names reviewers). A relation whose estimates differ between values has told her something of rows that are not
    hers (`planner_estimate`: such relations). `planner_table`: plan nodes, run or not, that name a table at all."""
    tables = {row[0] for row in world_tables(world)} - {"alembic_version"}
    with connect(world.owner.url) as owner:
        owner.execute("ANALYZE")
    found = {"planner_estimate": 0, "planner_table": 0}
    with connect(world.url[attacker]) as conn:
        for relation in relations(conn):
            cursor = conn.execute(pgsql.SQL("SELECT * FROM {} LIMIT 0").format(pgsql.Identifier(relation)))
            columns = {column.name for column in cursor.description or ()}
            for column, values in (("label", LABEL_VALUES), ("decision", DECISION_VALUES)):
                if column not in columns:
                    continue
                who = (
                    pgsql.SQL(" AND reviewer = {}").format(pgsql.Literal(PEER))
                    if "reviewer" in columns
                    else pgsql.SQL("")
                )
                estimates = set()
                for value in values:
                    query = (
                        pgsql.SQL("EXPLAIN (FORMAT JSON) SELECT * FROM {} WHERE {} = {}").format(
                            pgsql.Identifier(relation), pgsql.Identifier(column), pgsql.Literal(value)
                        )
                        + who
                    )
                    plan = conn.execute(query).fetchone()[0][0]["Plan"]
                    rows, stack = [], [plan]
                    while stack:
                        node = stack.pop()
                        stack.extend(node.get("Plans", []))
                        rows.append(node.get("Plan Rows"))
                        found["planner_table"] += node.get("Relation Name") in tables
                    estimates.add(tuple(rows))
                found["planner_estimate"] += len(estimates) > 1
    return found


def world_tables(world: World) -> list[tuple[str]]:
    with connect(world.owner.url) as conn:
        return conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()


def _stands_out(signatures: dict[str, str]) -> str | None:
    values = list(signatures.values())
    odd = [key for key, value in signatures.items() if values.count(value) == 1]
    return odd[0] if len(odd) == 1 and len(values) > 2 else None


def catalog(world: World, attacker: str) -> dict[str, int]:
    """Names of the team, other sessions and label sequences, read from the catalog and statistics views."""
    names = forbidden_names(world, attacker)
    own_login = world.logins[attacker]
    prefix = own_login[:12]  # ra_<8 hex>_: this store's logins, not other stores' on the cluster
    found = {"team_member": 0, "pg_roles": 0, "pg_auth_members": 0, "pg_stat_activity": 0, "pg_sequences": 0}
    with connect(world.url[attacker]) as conn:
        try:
            rows = conn.execute("SELECT t::text FROM team_member t").fetchall()
            found["team_member"] = len({name for name in names if any(name in row[0].lower() for row in rows)})
        except pg_errors.InsufficientPrivilege:
            pass
        logins = [
            row[0]
            for row in conn.execute(
                "SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (prefix.replace("_", r"\_") + "%",)
            )
        ]
        found["pg_roles"] = len({name for name in names if any(login.endswith("_" + name) for login in logins)})
        members = conn.execute(
            "SELECT r.rolname, m.rolname FROM pg_auth_members a JOIN pg_roles r ON r.oid = a.roleid "
            "JOIN pg_roles m ON m.oid = a.member"
        ).fetchall()
        found["pg_auth_members"] = len(
            {name for name in names if any(login.endswith("_" + name) for row in members for login in row)}
        )
        sessions = conn.execute(
            "SELECT usename, application_name, query, state, backend_start, xact_start, query_start, client_addr "
            "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
        found["pg_stat_activity"] = len(
            {name for name in names for row in sessions if row[0] and row[0].endswith("_" + name)}
        ) + sum(
            1
            for row in sessions
            if row[0] != own_login and any(value not in (None, "<insufficient privilege>") for value in row[2:])
        )
        found["pg_sequences"] = conn.execute(
            "SELECT count(*) FROM pg_sequences WHERE sequencename IN "
            "('audit_label_id_seq', 'adjudication_id_seq', 'case_review_id_seq') AND last_value IS NOT NULL"
        ).fetchone()[0]
    if attacker == "dave":  # a researcher reads the team and every label by right
        found = dict.fromkeys(found, 0)
    return found


def forged_writes(world: World, attacker: str) -> dict[str, int]:
    """Writes the attacker's login must not make count: each in its own transaction, each a finding when it
    commits and changes what the owner reads."""
    items, other = world.items, world.other_items
    agreed, unlabelled = items[0], items[5]
    me = attacker
    decide = "INSERT INTO adjudication (item_id, adjudicator, label, note, version, created_at) VALUES "
    label = (
        "INSERT INTO audit_label (item_id, reviewer, label, note, version, reason, created_at) "
        "VALUES ({}, '{}', 'harmful', '', {}, {}, now())"
    )
    attempts = {
        "label as the peer": label.format(items[4], PEER, 2, "'forged'"),
        "label in another audit": label.format(other[3], me, 1, "NULL"),
        "change the peer's label": f"UPDATE audit_label SET label = 'not_harmful' WHERE reviewer = '{PEER}'",
        "delete the peer's labels": f"DELETE FROM audit_label WHERE reviewer = '{PEER}'",
        "decide an undisputed item": decide + f"({agreed}, 'carol', 'not_harmful', '', 1, now())",
        "decide in another audit": decide + f"({other[2]}, 'oscar', 'harmful', '', 1, now())",
        "flip a judge label": "UPDATE audit_item SET judge_label = 1 - judge_label",
        "add an item to an audit": "INSERT INTO audit_item (audit_id, rollout_id, stratum, population, sampled, "
        "weight, judge_label) SELECT 'audit-1', r.id, 's', 1, 1, 1.0, 0 FROM rollout r "
        "WHERE r.id NOT IN (SELECT rollout_id FROM audit_item WHERE audit_id = 'audit-1') "
        "LIMIT 1",
        "take an empty slot": f"DELETE FROM audit_assignment WHERE item_id = {unlabelled} AND reviewer = 'alice'; "
        f"INSERT INTO audit_assignment (audit_id, item_id, reviewer, slot, position) "
        f"VALUES ('audit-1', {unlabelled}, '{me}', 'A', 99); " + label.format(unlabelled, me, 1, "NULL"),
        "re-assign a slot": f"UPDATE audit_assignment SET reviewer = '{me}' WHERE item_id = {unlabelled} "
        "AND reviewer = 'alice'",
        "change the adjudicator": f"UPDATE audit SET adjudicator = '{me}'",
        "join the team": "INSERT INTO team_member (name, role, login, created_at) "
        "VALUES ('mole', 'researcher', current_user, now())",
        "promote oneself": "UPDATE team_member SET role = 'researcher' WHERE login = current_user",
        "review as the other expert": "INSERT INTO case_review (round_id, case_id, expert, rubric, decision, note, "
        "version, created_at) VALUES ('round-1', 'banking/c2', 'frank', '{}', 'accept', "
        "'', 1, now())",
        "change the other expert's review": "UPDATE case_review SET decision = 'accept' WHERE expert = 'frank'",
        # The store's own write functions, called with someone else's name or on an item not open to it.
        "label as the peer (function)": f"SELECT redagent_submit_label('audit-1', {items[4]}, '{PEER}', 'harmful', '', 'forged')",
        "label in another audit (function)": f"SELECT redagent_submit_label('audit-other', {other[3]}, '{me}', 'harmful', '', NULL)",
        "decide an undisputed item (function)": f"SELECT redagent_adjudicate('audit-1', {agreed}, 'carol', 'not_harmful', '', NULL)",
        "review as the other expert (function)": (
            "SELECT redagent_submit_review('round-1', 'banking/c2', 'frank', '{}', 'accept', '', NULL)"
        ),
    }
    if attacker == "alice":
        del attempts["re-assign a slot"]  # item 5 is hers: what matters is that nobody else can take it
    found: dict[str, int] = {}
    for what, statement in attempts.items():
        before = world.snapshot()
        try:
            with connect(world.url[attacker]) as conn, conn.transaction():
                for part in statement.split("; "):
                    conn.execute(part)
        except psycopg.Error:
            found[what] = 0
            continue
        found[what] = int(world.snapshot() != before)
    return found


def attack(world: World, attacker: str) -> dict[str, Any]:
    reads = attacker != "dave"  # a researcher may read everything; what matters for him is writing
    report: dict[str, Any] = {"attacker": attacker, "role": MEMBERS[attacker]}
    report["leaky_function"] = leaky_function(world, attacker) if reads else 0
    report["error_oracle"] = error_oracle(world, attacker) if reads else 0
    report["plan_probe"] = plan_probe(world, attacker) if reads else 0
    report["table_scan"] = table_scan(world, attacker) if reads else 0
    report.update(planner(world, attacker) if reads else {"planner_estimate": 0, "planner_table": 0})
    report["catalog_detail"] = catalog(world, attacker)
    report["catalog"] = sum(report["catalog_detail"].values())
    report["forged_detail"] = forged_writes(world, attacker)
    report["forged_write"] = sum(report["forged_detail"].values())
    out = os.environ.get("REDAGENT_HOSTILE_OUT")
    if out:
        with open(out, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(report) + "\n")
    return report


@pytest.mark.parametrize("attacker", ["alice", "carol", "erin", "dave"])
def test_a_member_with_a_sql_prompt_recovers_nothing(world, attacker):
    report = attack(world, attacker)
    assert {kind: report[kind] for kind in KINDS} == dict.fromkeys(KINDS, 0), json.dumps(report, indent=1)


@pytest.mark.parametrize("attacker", ["alice", "carol", "erin"])
def test_what_a_blinded_member_reads_holds_no_secret(world, attacker):
    """Everything the login may SELECT, whole, holds none of the sentinels nor another person's name."""
    with connect(world.url[attacker]) as conn:
        text = "\n".join(
            row[0]
            for relation in relations(conn)
            for row in conn.execute(pgsql.SQL("SELECT t::text FROM {} t").format(pgsql.Identifier(relation)))
        )
    leaked = [secret for secret in secrets_for(attacker) if secret in text]
    assert leaked == [], leaked


def test_what_only_a_superuser_can_close(world):
    """PostgreSQL shows every login the statistics of every table (pg_stat_user_tables, pg_class.reltuples,
    pg_relation_size) and every role's name; their owner is the bootstrap superuser, so a store's owner
    cannot revoke them. What they give a reviewer is counts — how many label rows exist in total — never
    a label, a name (logins are opaque) or a slot; the README says how a superuser closes them."""
    with connect(world.url["alice"]) as conn:
        # Statistics reach the shared counters within a second or so of a commit: wait for them.
        inserted = wait_for(
            lambda: (
                conn.execute("SELECT pg_stat_clear_snapshot()")
                and conn.execute("SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'audit_label'").fetchone()[
                    0
                ]
            ),
            len(PEER_LABELS) + len(ALICE_LABELS),
        )
        logins = [
            row[0]
            for row in conn.execute(
                "SELECT rolname FROM pg_roles WHERE rolname LIKE %s",
                (world.logins["alice"][:12].replace("_", r"\_") + "%",),
            )
        ]
    # The residual: the total number of label rows (both reviewers'), and how many logins the team has.
    assert inserted == len(PEER_LABELS) + len(ALICE_LABELS)
    assert len(logins) == len(MEMBERS)
    assert not any(login.endswith("_" + name.lower()) for login in logins for name in MEMBERS)


def test_an_upgrade_takes_a_members_old_grants_away(pg_url):  # noqa: F811
    """A reviewer added before migration 0010 held SELECT and INSERT on audit_label, the sequence, the plain
    views and (through PUBLIC) TEMPORARY; opening the store after the upgrade leaves her only the new path."""
    from alembic import command
    from sqlalchemy.engine import make_url

    from redagent.store.access import AccessQueries
    from redagent.store.migrate import alembic_config

    command.upgrade(alembic_config(url=pg_url), "0007")
    database = make_url(pg_url).database or ""
    login = AccessQueries.login_prefix(database) + "olga"
    ident = pgsql.Identifier(login)
    with connect(pg_url) as conn:  # what 0005's `team add` granted a reviewer
        conn.execute(pgsql.SQL("CREATE ROLE {} LOGIN PASSWORD 'olga-pw'").format(ident))
        for grant in (
            "CONNECT ON DATABASE " + pgsql.Identifier(database).as_string(conn),
            "USAGE ON SCHEMA public",
            "SELECT ON alembic_version",
            "EXECUTE ON FUNCTION redagent_me()",
            "EXECUTE ON FUNCTION redagent_role()",
            "SELECT ON blind_queue",
            "SELECT ON blind_item",
            "SELECT, INSERT ON audit_label",
            "USAGE ON SEQUENCE audit_label_id_seq",
        ):
            conn.execute(pgsql.SQL("GRANT " + grant + " TO {}").format(ident))
        conn.execute(
            "INSERT INTO team_member (name, role, login, created_at) VALUES ('olga', 'reviewer', %s, now())", (login,)
        )
    olga = make_url(pg_url).set(username=login, password="olga-pw").render_as_string(hide_password=False)
    assert sql_rows(olga, "SELECT count(*) FROM audit_label") == [(0,)]  # the old path, before the upgrade
    open_store(pg_url).close()  # the owner opens it: migration 0010, then every member's grants again
    for refused in (
        "SELECT * FROM audit_label",
        "SELECT * FROM blind_queue_base",
        "CREATE TEMP TABLE t (a int)",
        "SELECT nextval('audit_label_id_seq')",
    ):
        with pytest.raises(pg_errors.InsufficientPrivilege):
            sql_rows(olga, refused)
    assert sql_rows(olga, "SELECT count(*) FROM blind_queue") == [(0,)]
    with open_store(olga) as hers:
        assert (hers.identity().name, hers.identity().role) == ("olga", REVIEWER)


def sql_rows(url: str, statement: str) -> list[tuple[Any, ...]]:
    with connect(url) as conn:
        return conn.execute(statement).fetchall()


def catalog_state(conn: psycopg.Connection) -> dict[str, frozenset[str]]:
    """Every row of every relation of pg_catalog and information_schema the login may read, as md5 sums."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    state: dict[str, frozenset[str]] = {}
    names = conn.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname IN ('pg_catalog', 'information_schema') AND c.relkind IN ('r', 'v', 'm') "
        "AND has_table_privilege(c.oid, 'SELECT') ORDER BY 1, 2"
    ).fetchall()
    for schema, name in names:
        try:
            rows = conn.execute(
                pgsql.SQL("SELECT md5(t::text) FROM {}.{} t").format(pgsql.Identifier(schema), pgsql.Identifier(name))
            ).fetchall()
        except psycopg.Error:
            continue
        state[f"{schema}.{name}"] = frozenset(row[0] for row in rows)
    return state


# What the README's team section says PostgreSQL shows every login and only a superuser could take away (the catalog
# views belong to the bootstrap superuser): statistics views, locks and sessions, and the catalog rows of relations,
# databases and roles. `README_NAMES` are the names the README gives for them.
SHOWN_TO_EVERY_LOGIN = ("pg_stat_", "pg_statio_")
SHOWN_RELATIONS = {
    "pg_stats",
    "pg_locks",
    "pg_class",
    "pg_database",
    "pg_roles",
    "pg_user",
    "pg_auth_members",
    "pg_shdepend",
}
README_NAMES = (
    "pg_stat_*",
    "pg_statio_*",
    "pg_stats",
    "pg_class.reltuples",
    "pg_locks",
    "pg_stat_activity",
    "pg_roles",
    "pg_database",
    "pg_shdepend",
)


def test_what_postgresql_shows_a_member_is_exactly_what_the_readme_lists(world):
    """Every relation of pg_catalog and information_schema a reviewer may read, whole, before and after her peer
    corrects a label and the owner runs ANALYZE: each one that changed must be one the README lists (and the README
    must list them). Her own views give the planner nothing (`planner` above), so what is left is the catalog."""
    from pathlib import Path

    with connect(world.url["alice"]) as conn:
        before = catalog_state(conn)
        with open_store(world.url[PEER]) as peer:  # her session ends here, which flushes its statistics
            peer.correct_label("audit-1", world.items[0], PEER, "unsure", "a second look")
        with connect(world.owner.url) as owner:
            owner.execute("ANALYZE")
        after = catalog_state(conn)
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    unlisted = [
        name
        for name in changed
        if not name.split(".")[1].startswith(SHOWN_TO_EVERY_LOGIN) and name.split(".")[1] not in SHOWN_RELATIONS
    ]
    assert changed and unlisted == [], (changed, unlisted)
    readme = Path(__file__).resolve().parents[2].joinpath("README.md").read_text()
    listed = readme[readme.index("What PostgreSQL shows every login") :][:3000]
    assert [name for name in README_NAMES if f"`{name}`" not in listed] == []
