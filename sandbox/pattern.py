"""Verifier regexes (`regex`, `iregex`) matched in time linear in the text: RE2, through `google-re2`.

A case file's pattern meets text an agent wrote, and Python's `re` backtracks: a pattern as plain as a
dozen `.*` in a row takes hours on a few kilobytes, inside one C call that holds the interpreter lock,
so neither a budget nor a signal reaches it. RE2 compiles a pattern into an automaton and reads each
byte of the text once per automaton state it can be in, so the time is bounded by the text's length
times the pattern's compiled size — both bounded here (the pattern) and by the sandbox (the text). The
binding releases the interpreter lock while it matches, so other threads (a run's writer, a signal
watchdog) go on meanwhile.

RE2 refuses what needs backtracking — backreferences (`\\1`, `(?P=name)`), lookarounds (`(?=`, `(?!`,
`(?<=`, `(?<!`), possessive and atomic groups, conditionals — and `\\Z` (written `\\z` in RE2); `problem`
says so in words a case author can act on, and `cases validate` reports it at the rule's line. Its
classes `\\d \\w \\s \\b` are ASCII (`\\p{L}`, `\\p{N}` name Unicode classes), and `$` without `(?m)` matches
only at the very end of the text. The real libraries' 96 distinct patterns all compile unchanged.
"""

from __future__ import annotations

import re
from functools import lru_cache

import re2

# The real libraries' longest pattern has 104 characters and compiles to 88 RE2 instructions (case-folded too).
# The compiled size, not the length, is what bounds the time: RE2 reads the text once, but at each byte it may
# be at every position of the pattern at once (its NFA, when the DFA cannot cache its states): `[ab]*a[ab]{293}Q`
# costs about 2 CPU s per MiB of random a/b text. A position is counted as RE2 compiles the pattern for single
# bytes (Latin-1): in UTF-8 a Unicode class is a tree of byte ranges (`\p{L}` alone is 1,200 instructions) of
# which a character takes one path, so counting those would refuse `\p{L}` for a cost it does not have. Both
# bounds are about 3x and 5x the largest real patterns; benchmarks/case_bounds.py times the worst shape found.
MAX_PATTERN_CHARS = 500
MAX_PROGRAM = 300  # RE2 instructions, compiled for single bytes (case folding included)
# RE2's memory budget per compiled pattern, mostly its lazy DFA's cache (RE2's default is 8 MiB): a pattern that
# outgrows it falls back to the NFA, which the worst case measured above already is, so 1 MiB costs no time and
# bounds a cache full of patterns that met hostile text to 128 MiB.
_MAX_MEM = 1 << 20
_CACHE = 128  # compiled patterns kept: the libraries hold 96 distinct ones

# What RE2's parser says, and what it means to someone who wrote a Python regex.
_EXPLAINED = (
    (re.compile(r"invalid escape sequence: \\[1-9]"), "backreferences (\\1…) are not supported"),
    (
        re.compile(r"invalid perl operator: \(\?P(=|>|$)|invalid escape sequence: \\k"),
        "named backreferences ((?P=name), \\k<name>) are not supported",
    ),
    (re.compile(r"invalid perl operator: \(\?#"), "comments ((?#…)) are not supported"),
    (re.compile(r"invalid perl operator: \(\?<?[=!]"), "lookarounds ((?=…), (?!…), (?<=…), (?<!…)) are not supported"),
    (re.compile(r"invalid perl operator: \(\?>"), "atomic groups ((?>…)) are not supported"),
    (re.compile(r"invalid perl operator: \(\?\("), "conditionals ((?(1)…|…)) are not supported"),
    (re.compile(r"bad repetition operator: (\*|\+|\?|\})\+"), "possessive repeats (a++, a*+) are not supported"),
    (re.compile(r"invalid escape sequence: \\Z"), "\\Z is written \\z here"),
)


class PatternError(ValueError):
    """A pattern the verifier's matcher will not run; the message says why in one line."""


def _options(ignore_case: bool) -> re2.Options:
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.never_capture = True  # a yes/no answer: groups would only cost time
    options.log_errors = False  # a refused pattern is reported once, by `problem`, not also by RE2's logger
    options.max_mem = _MAX_MEM
    return options


@lru_cache(maxsize=_CACHE)
def _compiled(pattern: str, ignore_case: bool) -> re2._Regexp:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"a pattern of {len(pattern):,} characters (at most {MAX_PATTERN_CHARS:,})")
    try:
        compiled = re2.compile(pattern, options=_options(ignore_case))
    except re2.error as exc:
        if "pattern too large" in _detail(exc):  # over RE2's own memory budget: far over ours
            raise PatternError(_too_large("too many")) from None
        raise PatternError(_explain(exc)) from None
    except UnicodeEncodeError:
        raise PatternError("a pattern holding a lone surrogate is not text") from None
    size = _positions(pattern, ignore_case)
    if size > MAX_PROGRAM:
        raise PatternError(_too_large(f"{size:,}"))
    return compiled


def _positions(pattern: str, ignore_case: bool) -> int:
    """The pattern's size as RE2 compiles it for single bytes (Latin-1): how many places of it the matcher can
    be at for one byte of text. A pattern that only UTF-8 can read (a code point past U+00FF) is measured as
    compiled for UTF-8, which only counts more."""
    options = _options(ignore_case)
    options.encoding = re2.Options.Encoding.LATIN1
    try:
        return re2.compile(pattern.encode("utf-8"), options=options).programsize
    except re2.error as exc:
        if "pattern too large" in _detail(exc):
            return MAX_PROGRAM + 1
        return re2.compile(pattern, options=_options(ignore_case)).programsize


def _too_large(count: str) -> str:
    return (
        f"the pattern compiles to {count} instructions (at most {MAX_PROGRAM:,}): large counted repeats ({{n,m}}) "
        f"of a Unicode class or of a group multiply its size"
    )


def _detail(exc: re2.error) -> str:
    detail = exc.args[0] if exc.args else ""
    return detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)


def _explain(exc: re2.error) -> str:
    detail = _detail(exc)
    for shape, meaning in _EXPLAINED:
        if shape.search(detail):
            return f"{meaning}: the verifier matches with RE2, in linear time ({detail})"
    return f"not a pattern RE2 accepts: {detail}"


def problem(pattern: object, *, ignore_case: bool = False) -> str | None:
    """Why the verifier cannot use this pattern, or None."""
    if not isinstance(pattern, str):
        return f"a pattern is a string, not {type(pattern).__name__}"
    try:
        _compiled(pattern, ignore_case)
    except PatternError as exc:
        return str(exc)
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def search(pattern: str, text: str, *, ignore_case: bool = False) -> bool:
    """Whether the pattern matches anywhere in `text`. PatternError for a pattern `problem` refuses."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (a JSON escape in an agent's arguments) must not make a match fail: it is read
        # as the replacement character, as any UTF-8 reader shows it.
        data = _SURROGATE.sub("\ufffd", text).encode("utf-8")
    return _compiled(pattern, ignore_case).search(data) is not None
