"""Snapshot keys are lossless: every workspace path has one key, no two paths share one, each key gives its
bytes back, and a valid UTF-8 path is its own key (so snapshots, diffs and case files written before keep
their keys)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from redagent.sandbox import names

component = st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b)
path = st.lists(component, min_size=1, max_size=3).map(b"/".join)


@given(path)
def test_every_path_round_trips_through_its_key(raw):
    key = names.from_bytes(raw)
    assert names.to_bytes(key) == raw
    key.encode("utf-8")  # storable text: no lone surrogate


@given(path, path)
def test_no_two_paths_share_a_key(one, other):
    if one != other:
        assert names.from_bytes(one) != names.from_bytes(other)


@given(st.lists(st.text(min_size=1, max_size=8).filter(lambda t: "/" not in t and "\0" not in t), min_size=1))
def test_a_valid_utf8_path_is_its_own_key(parts):
    text = "/".join(
        p for p in parts if p.encode("utf-8", "surrogatepass") and not any(0xD800 <= ord(c) < 0xE000 for c in p)
    )
    if text:
        assert names.from_bytes(text.encode()) == text and not names.escaped(text)


def test_keys_no_name_can_give_are_refused():
    for key in ("a\x00b", "a\x00\x00", "a\\q\x00", "caf\\xc3\\xa9\x00", "x\\\x00"):
        assert names.path(key) is None, key
