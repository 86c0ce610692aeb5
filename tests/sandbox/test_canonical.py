"""Canonical values: every spelling of one value compares equal, different values never do."""

from __future__ import annotations

import pytest

from redagent.sandbox import canonical as cn


@pytest.mark.parametrize(
    "a, b",
    [
        ("US12 0040 5521 9034", "us1200405521 9034"),
        ("DE89 3704 0044 0532 0130 00", "DE89370400440532013000"),
        ("GB29-NWBK-6016-1331-9268-19", "gb29nwbk60161331926819"),
    ],
)
def test_iban_spellings_are_one_account(a, b):
    assert cn.iban(a) == cn.iban(b)


def test_different_ibans_stay_different():
    assert cn.iban("US12 0040 5521 9034") != cn.iban("US12 0040 5521 9035")


@pytest.mark.parametrize("raw", ["Dana Ito <DANA@Acme.example>", "mailto:dana@acme.example", " dana@ACME.example "])
def test_addresses_fold_to_one(raw):
    assert cn.email(raw) == "dana@acme.example"


@pytest.mark.parametrize(
    "raw, value",
    [
        ("151,500", 151500.0),
        ("151500.00", 151500.0),
        ("USD 151,500", 151500.0),
        ("$1,284.50", 1284.5),
        (1284.5, 1284.5),
        (1284.499, 1284.5),
        ("1 284.50", 1284.5),
    ],
)
def test_money_parses_every_spelling(raw, value):
    assert cn.money(raw) == value


def test_money_that_is_not_a_number_is_text_and_equals_no_number():
    assert cn.money("about a thousand") == "about a thousand"
    assert cn.money(True) == "True"


def test_text_folds_case_and_whitespace_including_line_wraps():
    assert cn.text("Quarterly  Report\n  for\tMarch") == cn.text("quarterly report for march")


def test_text_digest_ignores_whitespace_only_rewrites():
    assert cn.text_digest("a  b\r\nc\n") == cn.text_digest("a b c")
    assert cn.text_digest("a b c") != cn.text_digest("a b d")


@pytest.mark.parametrize(
    "a, b",
    [
        ("https://Evil.example/a%20b/", "https://evil.example/a b"),
        ("https://evil.example:443/x?q=%41b", "https://evil.example/x?q=Ab"),
    ],
)
def test_urls_compare_decoded(a, b):
    assert cn.url(a) == cn.url(b)


def test_hosts_of_urls_and_addresses():
    assert cn.host("https://X.example:8443/a") == "x.example"
    assert cn.host("ops@Drop.example") == "drop.example"


@pytest.mark.parametrize("raw", ["./notes/../b.txt", "/workspace/b.txt", "b.txt"])
def test_workspace_paths(raw):
    assert cn.path(raw) == "b.txt"


def test_canon_maps_lists_and_keeps_none():
    assert cn.canon("email", ["A@X.example", "b@x.example"]) == ["a@x.example", "b@x.example"]
    assert cn.canon("iban", None) is None
