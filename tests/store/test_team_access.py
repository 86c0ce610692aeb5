"""A team store on PostgreSQL: one login per person, and the database refuses every read and write their
role does not allow — tried from SQL with each member's own login, and through the Store API."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import errors as pg_errors
from sqlalchemy.engine import make_url

from redagent.store import InvalidRecord, open_store
from redagent.store.access import ADJUDICATOR, EXPERT, OWNER, RESEARCHER, REVIEWER
from redagent.store.errors import StoreError, UnknownAudit, UnknownReviewer
from tests.dbs import _libpq_conninfo, create_database, drop_database, require_pg
from tests.store.test_audit import (
    MODEL,
    PEER,
    filled,  # noqa: F401
    make_audit,
)

# Every table a reviewer or adjudicator must not read (their evidence comes only through blind_* views).
UNBLINDED = (
    "run",
    "rollout",
    "event",
    "receipt",
    "blob",
    "snapshot",
    "diff_entry",
    "judge_label",
    "recognition_label",
    "audit",
    "audit_item",
    "audit_assignment",
    "team_member",
    "review_round",
    "round_case",
)


@pytest.fixture
def pg_url() -> Iterator[str]:
    from redagent.store.access import AccessQueries

    admin = require_pg()
    url = create_database(admin)
    prefix = AccessQueries.login_prefix(make_url(url).database or "")
    try:
        yield url
    finally:
        with psycopg.connect(_libpq_conninfo(admin), autocommit=True) as conn:
            logins = [
                row[0]
                for row in conn.execute(
                    "SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (prefix.replace("_", r"\_") + "%",)
                )
            ]
            for login in logins:
                # A member's session a test left open (a console worker mid-query at exit) would keep the
                # database from being dropped; as a member of the login the admin may end it.
                conn.execute(psycopg.sql.SQL("GRANT {} TO current_user").format(psycopg.sql.Identifier(login)))
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (login,))
        drop_database(admin, url)
        # Logins are cluster-wide: drop the ones this database's team created (after the database,
        # which takes their grants with it).
        with psycopg.connect(_libpq_conninfo(admin), autocommit=True) as conn:
            for login in logins:
                conn.execute(psycopg.sql.SQL("DROP ROLE IF EXISTS {}").format(psycopg.sql.Identifier(login)))


@pytest.fixture
def store(pg_url):
    opened = open_store(pg_url)
    yield opened
    opened.close()


@pytest.fixture
def team(filled):  # noqa: F811
    store = filled
    make_audit(store, "audit-1", reviewers=("alice", PEER))
    make_audit(store, "audit-other", reviewers=("mallory", "trent"), adjudicator="oscar")
    members = {
        name: store.add_member(name, role)
        for name, role in (
            ("alice", REVIEWER),
            (PEER, REVIEWER),
            ("carol", ADJUDICATOR),
            ("dave", RESEARCHER),
            ("erin", EXPERT),
        )
    }
    return store, members


def sql(url: str, statement: str):
    with psycopg.connect(_libpq_conninfo(url), autocommit=True, connect_timeout=5) as conn:
        return conn.execute(statement).fetchall()


def test_the_owner_is_unblinded_and_each_login_gets_its_own_role(team):
    store, members = team
    assert store.identity().role == OWNER and not store.identity().enforced
    for name, member in members.items():
        assert member.login and member.secret_url and member.token
        with open_store(member.secret_url) as theirs:
            identity = theirs.identity()
            assert (identity.name, identity.role, identity.enforced) == (name, member.role, True)
    assert {m.name: m.role for m in store.team()}["carol"] == ADJUDICATOR


@pytest.mark.parametrize("who", ["alice", "carol", "erin"])
def test_blinded_roles_are_refused_every_unblinded_table(team, who):
    _, members = team
    url = members[who].secret_url
    for table in UNBLINDED:
        if who == "erin" and table in ("review_round", "round_case"):
            continue  # an expert reads the rounds they review
        with pytest.raises(pg_errors.InsufficientPrivilege):
            sql(url, f'SELECT * FROM "{table}" LIMIT 1')


def test_a_reviewer_sees_only_their_own_queue_labels_and_audits(team):
    store, members = team
    alice, peer = members["alice"].secret_url, members[PEER].secret_url
    with open_store(peer) as theirs:
        item = theirs.reviewer_queue("audit-1", PEER)[0].item_id
        theirs.submit_label("audit-1", item, PEER, "harmful", "peer's note")
    assert {row[0] for row in sql(alice, "SELECT DISTINCT reviewer FROM blind_queue")} == {"alice"}
    assert {row[0] for row in sql(alice, "SELECT DISTINCT audit_id FROM blind_item")} == {"audit-1"}
    assert {row[0] for row in sql(alice, "SELECT id FROM blind_audit")} == {"audit-1"}
    with pytest.raises(pg_errors.InsufficientPrivilege):  # no table of labels is hers to read (migration 0010)
        sql(alice, "SELECT * FROM audit_label")
    assert sql(alice, "SELECT * FROM own_label") == []  # the peer's label is invisible to her
    with pytest.raises(pg_errors.InsufficientPrivilege):
        sql(alice, "SELECT * FROM blind_slot_label")  # the two reviewers' labels are the adjudicator's
    # The model is blinded in the view itself, not only in Python.
    assert all(row[0] is None for row in sql(alice, "SELECT model FROM blind_item"))
    assert MODEL not in str(sql(alice, "SELECT * FROM blind_event"))


def test_a_reviewer_cannot_write_as_someone_else_or_change_a_label(team):
    _, members = team
    alice = members["alice"].secret_url
    with open_store(alice) as mine:
        item = mine.reviewer_queue("audit-1", "alice")[0].item_id
        mine.submit_label("audit-1", item, "alice", "not_harmful")
        with pytest.raises(UnknownReviewer):  # the peer's queue does not exist for her login
            mine.submit_label("audit-1", item, PEER, "harmful")
        with pytest.raises(UnknownAudit):  # an audit she has no part in does not exist for her
            mine.reviewer_queue("audit-other", "alice")
        with pytest.raises(StoreError, match="permission denied"):
            mine.audit_items("audit-1")
    with pytest.raises(pg_errors.InsufficientPrivilege):  # and from SQL, row-level security refuses it
        sql(
            alice,
            f"INSERT INTO audit_label (item_id, reviewer, label, note, version, created_at) "
            f"VALUES ({item}, '{PEER}', 'harmful', '', 1, now())",
        )
    with pytest.raises(pg_errors.InsufficientPrivilege):
        sql(alice, "UPDATE audit_label SET label = 'harmful'")
    with pytest.raises(pg_errors.InsufficientPrivilege):
        sql(alice, "DELETE FROM audit_label")
    with pytest.raises(pg_errors.InsufficientPrivilege):
        sql(alice, "INSERT INTO team_member (name, role, created_at) VALUES ('x', 'researcher', now())")


def test_the_adjudicator_sees_slots_not_names_and_decides_only_their_audits(team):
    store, members = team
    for name in ("alice", PEER):
        with open_store(members[name].secret_url) as theirs:
            item = sorted(e.item_id for e in theirs.reviewer_queue("audit-1", name))[0]
            theirs.submit_label("audit-1", item, name, "harmful" if name == "alice" else "not_harmful")
    carol = members["carol"].secret_url
    rows = sql(carol, "SELECT audit_id, item_id, slot, label FROM blind_slot_label")
    assert {(row[0], row[2]) for row in rows} == {("audit-1", "A"), ("audit-1", "B")}
    assert "alice" not in str(rows) and PEER not in str(rows)
    with open_store(carol) as theirs:
        queue = theirs.adjudication_queue("audit-1", "carol")
        assert [entry.item_id for entry in queue] == [item]
        theirs.adjudicate("audit-1", item, "carol", "harmful", "decided")
    with pytest.raises(pg_errors.InsufficientPrivilege):
        sql(carol, "SELECT * FROM audit_label")
    with pytest.raises(pg_errors.InsufficientPrivilege):  # nor decide in someone else's name
        sql(
            carol,
            f"INSERT INTO adjudication (item_id, adjudicator, label, note, version, created_at) "
            f"VALUES ({item}, 'oscar', 'harmful', '', 2, now())",
        )
    # Another audit's adjudicator is not carol: the policy refuses her decision there.
    other_item = store.audit_items("audit-other")[0].item_id
    with pytest.raises(pg_errors.InsufficientPrivilege):
        sql(
            carol,
            f"INSERT INTO adjudication (item_id, adjudicator, label, note, version, created_at) "
            f"VALUES ({other_item}, 'carol', 'harmful', '', 1, now())",
        )


def test_a_researcher_reads_everything_but_cannot_label_or_change_the_team(team):
    _, members = team
    dave = members["dave"].secret_url
    assert sql(dave, "SELECT count(*) FROM rollout")[0][0] > 0
    assert sql(dave, "SELECT count(*) FROM judge_label")[0][0] > 0
    item = sql(dave, "SELECT item_id FROM audit_assignment WHERE reviewer = 'alice' LIMIT 1")[0][0]
    with pytest.raises(pg_errors.InsufficientPrivilege):
        sql(
            dave,
            f"INSERT INTO audit_label (item_id, reviewer, label, note, version, created_at) "
            f"VALUES ({item}, 'alice', 'harmful', '', 1, now())",
        )
    with pytest.raises(pg_errors.InsufficientPrivilege):
        sql(dave, "UPDATE team_member SET login = current_user WHERE name = 'alice'")
    with open_store(dave) as theirs, pytest.raises(InvalidRecord, match="only the store's owner"):
        theirs.add_member("zed", REVIEWER)


def test_a_removed_member_cannot_log_in_and_a_stranger_is_refused(team):
    store, members = team
    store.remove_member("erin")
    with pytest.raises(StoreError):
        open_store(members["erin"].secret_url)
    assert "erin" not in {m.name for m in store.team()}
