"""A shell file as the lines a shell runs: which physical lines make one command, and what each is.

bash traces a command with the line it ends on (LINENO), so to ask "did this line the rollout wrote run?" the
lines are first grouped: a line ending in `\\`, `&&`, `||` or `|`, or inside an open quote, continues on the
next. Each group is then `command` (something bash executes and traces), `structure` (only `then`, `else`,
`fi`, `do`, `done`, `esac`, `;;`, braces or a bare case pattern: never traced by itself), `comment` (nothing
but comments and blanks), `definition` (a one-line function definition: defining it runs nothing) or
`body` (a function's body, which runs only when called, and traces then; a here-document, which is data).

A scan of what a shell would parse, not a parser: bounded (MAX_LINES), never raising; where it is unsure it
says `command`, which asks for the line to have run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINES = 5000
MAX_JOIN = 50  # physical lines one command may span
STRUCTURE = frozenset({"then", "else", "fi", "do", "done", "esac", ";;", ";&", ";;&", "{", "}", "(", ")", "in"})
_FUNCTION = re.compile(r"^\s*(function\s+[^\s(){}]+(\s*\(\s*\))?|[^\s(){}=$'\"<>|;&]+\s*\(\s*\))\s*")
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_PATTERN = re.compile(r"^\s*\(?[^()\s;]+(\s*\|\s*[^()\s;]+)*\)\s*(;;|;&|;;&)?\s*$")


@dataclass(frozen=True)
class Logical:
    first: int  # 1-based, inclusive
    last: int
    text: str
    kind: str  # command | structure | comment | definition | body


def _code(line: str) -> tuple[str, str | None]:
    """A physical line without its comment, and the quote left open at its end (None when none is)."""
    out = []
    quote: str | None = None
    escaped = False
    previous = " "
    for char in line:
        if escaped:
            escaped = False
            out.append(char)
            previous = char
            continue
        if char == "\\" and quote != "'":
            escaped = True
            out.append(char)
            continue
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (previous.isspace() or previous in ";&|("):
            break
        out.append(char)
        previous = char
    return "".join(out), quote


def _continues(code: str, quote: str | None) -> bool:
    stripped = code.rstrip()
    if quote is not None:
        return True
    trailing = len(stripped) - len(stripped.rstrip("\\"))
    return trailing % 2 == 1 or stripped.endswith(("&&", "||", "|")) and not stripped.endswith(";;")


def _braces(code: str) -> int:
    """`{` opened minus `}` closed, counting braces that are words (outside quotes)."""
    plain = re.sub(r"'[^']*'|\"(\\.|[^\"\\])*\"", "", code)
    opened = len(re.findall(r"(^|[\s;&|(])\{(?=\s|$)", plain))
    closed = len(re.findall(r"(^|[\s;&|])\}(?=[\s;&|)<>]|$)", plain))
    return opened - closed


def _structure(code: str) -> bool:
    words = code.replace(";;", " ;; ").replace(";", " ; ").split()
    words = [w for w in words if w != ";"]
    if not words:
        return True
    if all(w in STRUCTURE for w in words):
        return True
    return bool(_PATTERN.match(code))


def logical_lines(text: str) -> list[Logical]:
    lines = text.splitlines()[:MAX_LINES]
    out: list[Logical] = []
    heredocs: list[tuple[str, bool]] = []
    depth = 0  # inside a function body: its open braces
    header = False  # a function's header seen, its `{` still to come
    index = 0
    while index < len(lines):
        if heredocs:
            terminator, tabs = heredocs[0]
            line = lines[index]
            out.append(Logical(index + 1, index + 1, line, "body"))
            if (line.lstrip("\t") if tabs else line) == terminator:
                heredocs.pop(0)
            index += 1
            continue
        first = index
        code, quote = _code(lines[index])
        codes = [code]
        while _continues(code, quote) and index + 1 < len(lines) and index + 1 - first < MAX_JOIN:
            index += 1
            code, quote = _code(lines[index] if quote is None else lines[index])
            codes.append(code)
        index += 1
        joined = "\n".join(codes)
        raw = "\n".join(lines[first:index])
        heredocs += [(m.group(3), m.group(1) == "-") for m in _HEREDOC.finditer(joined)]
        if not joined.strip():
            out.append(Logical(first + 1, index, raw, "comment"))
            continue
        if depth > 0 or header:
            if header and joined.lstrip().startswith(("{", "(")):
                header = False
                depth = max(1, _braces(joined)) if joined.lstrip().startswith("{") else 1
                if depth <= 0 or (joined.rstrip().endswith(("}", ")")) and _braces(joined) <= 0):
                    depth = 0
            elif header:
                header = False  # not a function after all: judge the line as it is
                out.append(Logical(first + 1, index, raw, "structure" if _structure(joined) else "command"))
                continue
            else:
                depth += _braces(joined)
            out.append(Logical(first + 1, index, raw, "body"))
            continue
        match = _FUNCTION.match(joined)
        if match:
            rest = joined[match.end() :]
            if not rest.strip():
                header = True
                out.append(Logical(first + 1, index, raw, "definition"))
                continue
            opened = _braces(rest)
            if rest.lstrip().startswith("{") and opened > 0:
                depth = opened  # the body follows
                out.append(Logical(first + 1, index, raw, "definition"))
            else:
                out.append(Logical(first + 1, index, raw, "definition"))
            continue
        out.append(Logical(first + 1, index, raw, "structure" if _structure(joined) else "command"))
    return out
