"""The verifier's regex matcher (sandbox/pattern.py): RE2, linear in the text, answering as Python's re does.

Python's re backtracks, and a verifier pattern meets text an agent wrote: a dozen `.*` in a row passed the old
nested-repeat check and then ran for hours on a 4,000-character memo, inside one C call no signal reached. The
matcher must give the same answers as re wherever both accept a pattern (checked on generated patterns and
texts), finish on the patterns that made re hang (within a hang timeout far above what it takes), and refuse
what RE2 cannot run with a message that names it.
"""

from __future__ import annotations

import re
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redagent.sandbox import pattern
from redagent.sandbox.verifier import check_rule, holds

HANG_S = 60  # each search below takes milliseconds


def _finishes(call, *args, **kwargs):
    """call(*args) on a thread that must end within HANG_S; its result."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(call(*args, **kwargs)), daemon=True)
    thread.start()
    thread.join(HANG_S)
    assert not thread.is_alive(), f"{call.__name__} still running after {HANG_S} s"
    return result[0]


# Patterns of a grammar both engines read alike on texts without newlines: ASCII literals, classes, `.`, groups,
# alternation, greedy and lazy repeats, anchors. Texts are short, so re's backtracking stays cheap.
_ATOMS = st.sampled_from(["a", "b", "c", ".", "[ab]", "[^a]", "[a-c]", "\\.", "x"])


def _repeat(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    quantifier = st.sampled_from(["*", "+", "?", "*?", "+?", "{2}", "{1,3}", "{0,2}"])
    return st.tuples(inner, quantifier).map(lambda t: f"(?:{t[0]}){t[1]}")


_PATTERNS = st.recursive(
    _ATOMS,
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map("".join),
        st.lists(inner, min_size=2, max_size=3).map(lambda parts: "(" + "|".join(parts) + ")"),
        _repeat(inner),
    ),
    max_leaves=6,
).flatmap(lambda body: st.sampled_from([body, "^" + body, body + "$", "^" + body + "$"]))


@settings(max_examples=400, deadline=None)
@given(_PATTERNS, st.text(alphabet="abcx.", max_size=12), st.booleans())
def test_answers_as_pythons_re_where_both_read_the_pattern(expression, text, ignore_case):
    expected = re.search(expression, text, re.IGNORECASE if ignore_case else 0) is not None
    assert pattern.problem(expression, ignore_case=ignore_case) is None
    assert pattern.search(expression, text, ignore_case=ignore_case) is expected


@pytest.mark.parametrize(
    "expression",
    [
        "a" + ".*a" * 12 + "b",  # a dozen .* in a row: what the old nested-repeat check let through
        "^(a+)+$",  # the textbook nested repeat
        "(a|aa)*c",  # overlapping alternatives under a repeat
        "(.*){1,20}x",
    ],
)
def test_patterns_that_made_re_hang_finish_on_a_mebibyte(expression):
    text = "a" * (1 << 20) + "!"
    assert pattern.problem(expression) is None
    assert _finishes(pattern.search, expression, text) is False
    # Through the verifier's own predicate, as a rule evaluates an effect's field.
    assert _finishes(holds, {"regex": expression}, text, {}) is False


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        (r"(a)\1", "backreferences"),
        (r"(?P<x>a)(?P=x)", "named backreferences"),
        (r"US(?=90)", "lookarounds"),
        (r"(?<!x)US", "lookarounds"),
        (r"(?>a+)b", "atomic groups"),
        (r"a++", "possessive repeats"),
        (r"(a)?(?(1)b|c)", "conditionals"),
        (r"done\Z", "\\Z is written \\z"),
        ("[\\p{L}\\p{N}]{80,}", f"instructions (at most {pattern.MAX_PROGRAM})"),
        ("x" * (pattern.MAX_PATTERN_CHARS + 1), "characters (at most"),
        ("(unclosed", "not a pattern RE2 accepts"),
    ],
)
def test_what_re2_cannot_run_is_named(expression, named):
    why = pattern.problem(expression)
    assert why is not None and named in why, why
    assert "\n" not in why
    with pytest.raises(pattern.PatternError):
        pattern.search(expression, "text")


def test_a_refused_pattern_is_a_located_rule_problem():
    rule = {"effect": {"kind": "payment", "where": {"memo": {"iregex": "(?<=invoice )BL"}}}}
    problems = check_rule(rule, {"seed": {}, "values": {}})
    assert [where for where, _ in problems] == ["verifier.rule.effect.where.memo.iregex"]
    assert "lookarounds" in problems[0][1]


def test_a_pattern_is_text():
    assert pattern.problem(12) == "a pattern is a string, not int"
    assert pattern.problem(["a"]) == "a pattern is a string, not list"


def test_the_librarys_longest_pattern_is_accepted_case_folded_too():
    longest = (
        r"(^|[;&|(]\s*)((sudo\s+)?((ba|da|z)?sh|source|\.|python3?|node|bash)\s+)?(\./)?tools/"
        r"fix\-imports\.sh"
    )
    assert pattern.problem(longest) is None and pattern.problem(longest, ignore_case=True) is None
    assert pattern.search(longest, "cd repo && bash tools/fix-imports.sh")
    assert not pattern.search(longest, "cat tools/fix-imports.txt")


def test_case_folding_is_unicode():
    assert pattern.search("ÄRGER", "kein ärger", ignore_case=True)
    assert not pattern.search("ÄRGER", "kein ärger")


def test_a_lone_surrogate_in_the_text_does_not_hide_a_match():
    # An agent's JSON may carry "\ud800": the text around it is still read (the surrogate as U+FFFD).
    assert pattern.search("US90.7781", "to US90\ud8007781")
    assert pattern.search("secret", "\udfffsecret")


def test_the_answer_is_a_search_anywhere_not_a_full_match():
    assert pattern.search("BL-\\d+", "Invoice BL-20931 for February")
    assert not pattern.search("^BL", "Invoice BL-20931")


def test_a_unicode_class_counts_as_one_place_not_its_utf8_size():
    # \p{L} compiles to 1,200 UTF-8 instructions, of which one character takes one path: its cost is one place.
    assert pattern.problem(r"\p{L}+ \p{Lu}\p{Ll}+") is None
    assert pattern.search(r"^\p{Lu}\p{Ll}+ \p{L}+$", "Ärger überall")
    assert not pattern.search(r"^\p{L}+$", "Ärger 42")
    assert pattern.problem(f"[ab]*a[ab]{{{pattern.MAX_PROGRAM - 7}}}Q") is None  # the worst shape, at the cap
    assert "at most" in pattern.problem(f"[ab]*a[ab]{{{pattern.MAX_PROGRAM - 6}}}Q")
