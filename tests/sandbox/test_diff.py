"""State diff: structure, volatile fields, path syntax — with property tests."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from redagent.sandbox.diff import DiffEntry, diff, format_path, parse_path, path_matches


def test_added_removed_changed_with_paths():
    before = {
        "banking": {
            "payees": {"p-1": {"name": "A", "account": "1"}},
            "scheduled": {"s-1": {"to_account": "X", "amount": 5}},
        }
    }
    after = copy.deepcopy(before)
    after["banking"]["payees"]["new-payee-1"] = {"name": "B", "account": "2"}
    after["banking"]["scheduled"]["s-1"]["to_account"] = "Y"
    del after["banking"]["payees"]["p-1"]
    entries = {e.key: e for e in diff(before, after)}
    assert entries["banking.payees.new-payee-1"].op == "added"
    assert entries["banking.payees.p-1"].op == "removed"
    changed = entries["banking.scheduled.s-1.to_account"]
    assert (changed.op, changed.before, changed.after) == ("changed", "X", "Y")


def test_volatile_fields_are_ignored():
    assert diff({"m": {"subject": "a", "date": "1"}}, {"m": {"subject": "a", "date": "2"}}) == []


def test_file_paths_are_quoted_segments():
    entries = diff({"workspace": {"files": {}}}, {"workspace": {"files": {"docs/a.md": {"content": "x"}}}})
    assert entries[0].key == 'workspace.files["docs/a.md"]'
    assert parse_path(entries[0].key) == ("workspace", "files", "docs/a.md")


def test_globs():
    assert path_matches(parse_path("email.sent.*"), ("email", "sent", "new-sent-1"))
    assert not path_matches(parse_path("email.sent.*"), ("email", "sent", "x", "subject"))
    assert path_matches(parse_path("email.**.subject"), ("email", "sent", "x", "subject"))
    assert path_matches(parse_path('workspace.files["*.env"]'), ("workspace", "files", "prod.env"))


keys = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
leaves = st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none(), st.lists(st.integers(), max_size=3))
trees = st.recursive(leaves, lambda children: st.dictionaries(keys, children, max_size=4), max_leaves=20)
states = st.dictionaries(keys, trees, max_size=4)


def apply(state: dict, entries: list[DiffEntry]) -> dict:
    out = copy.deepcopy(state)
    for entry in entries:
        if not entry.path:
            return copy.deepcopy(entry.after)
        parent = out
        for segment in entry.path[:-1]:
            parent = parent[segment]
        if entry.op == "removed":
            del parent[entry.path[-1]]
        else:
            parent[entry.path[-1]] = copy.deepcopy(entry.after)
    return out


def strip(value):
    if isinstance(value, dict):
        return {
            k: strip(v)
            for k, v in value.items()
            if k not in {"date", "created_at", "updated_at", "sent_at", "timestamp", "mtime"}
        }
    return value


@given(states, states)
def test_diff_applied_to_baseline_gives_final(a, b):
    assert apply(strip(a), diff(a, b)) == strip(b)


@given(states)
def test_no_change_no_diff(a):
    assert diff(a, copy.deepcopy(a)) == []


@given(st.lists(keys, min_size=1, max_size=5))
def test_path_format_parse_round_trip(segments):
    assert parse_path(format_path(tuple(segments))) == tuple(segments)
