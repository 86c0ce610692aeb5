"""GitHub Actions expressions (`${{ … }}` and `if:`), evaluated as GitHub does — or refused.

Literals (null, booleans, numbers, 'strings' with '' escapes), property access (`a.b`, `a['b']`), `!`,
comparisons with GitHub's loose typing (operands of different types are compared as numbers; strings
case-insensitively), `&&` / `||` returning an operand, and the functions contains, startsWith, endsWith,
format, join, toJSON, fromJSON, hashFiles and the status functions success, failure, always, cancelled.
A missing property is null. A context or function this evaluator does not know raises `Unknown`, so a
caller reports it instead of guessing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

MAX_LENGTH = 4096
MAX_DEPTH = 64


class Unknown(Exception):
    """An expression the evaluator cannot decide (a context, function or syntax it does not know)."""


_TOKEN = re.compile(
    r"""\s*(?:
    (?P<number>0x[0-9a-fA-F]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<string>'(?:[^']|'')*')
  | (?P<op>&&|\|\||==|!=|<=|>=|[!<>()\[\].,*])
  | (?P<name>[A-Za-z_][A-Za-z0-9_-]*)
)""",
    re.VERBOSE,
)


def tokens(text: str) -> list[tuple[str, str]]:
    if len(text) > MAX_LENGTH:
        raise Unknown("expression too long")
    found, index = [], 0
    text = text.strip()
    while index < len(text):
        match = _TOKEN.match(text, index)
        if not match or match.end() == index:
            raise Unknown(f"cannot read {text[index : index + 20]!r}")
        kind = match.lastgroup or ""
        found.append((kind, match.group(kind)))
        index = match.end()
        while index < len(text) and text[index].isspace():
            index += 1
    return found


StatusFunctions = Mapping[str, Callable[[], bool]]


class Evaluator:
    """Evaluates one expression against `contexts` (github, env, matrix, steps, needs, …) and the status
    functions of where it is evaluated."""

    def __init__(self, contexts: Mapping[str, Any], status: StatusFunctions | None = None) -> None:
        self.contexts = contexts
        self.status = status or {}

    def evaluate(self, text: str) -> Any:
        self.items = tokens(text)
        self.index = 0
        self.depth = 0
        value = self._or()
        if self.index != len(self.items):
            raise Unknown(f"unexpected {self.items[self.index][1]!r}")
        return value

    # -- grammar: or → and → comparison → unary → postfix → primary ------------------------------------
    def _peek(self) -> tuple[str, str] | None:
        return self.items[self.index] if self.index < len(self.items) else None

    def _take(self, value: str | None = None) -> tuple[str, str]:
        item = self._peek()
        if item is None or (value is not None and item[1] != value):
            raise Unknown(f"expected {value or 'more'}")
        self.index += 1
        return item

    def _or(self) -> Any:
        left = self._and()
        while self._peek() == ("op", "||"):
            self._take()
            right = self._and()
            left = left if truthy(left) else right
        return left

    def _and(self) -> Any:
        left = self._compare()
        while self._peek() == ("op", "&&"):
            self._take()
            right = self._compare()
            left = right if truthy(left) else left
        return left

    def _compare(self) -> Any:
        left = self._unary()
        while self._peek() in (("op", "=="), ("op", "!="), ("op", "<"), ("op", "<="), ("op", ">"), ("op", ">=")):
            op = self._take()[1]
            right = self._unary()
            left = compare(left, right, op)
        return left

    def _unary(self) -> Any:
        if self._peek() == ("op", "!"):
            self._take()
            return not truthy(self._unary())
        return self._postfix()

    def _postfix(self) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unknown("expression nested too deeply")
        value = self._primary()
        while True:
            item = self._peek()
            if item == ("op", "."):
                self._take()
                name = self._take()
                if name[0] != "name" and name[1] != "*":
                    raise Unknown(f"bad property {name[1]!r}")
                value = prop(value, name[1])
            elif item == ("op", "["):
                self._take()
                key = self._or()
                self._take("]")
                value = prop(value, key)
            else:
                self.depth -= 1
                return value

    def _primary(self) -> Any:
        kind, text = self._take()
        if kind == "number":
            return float(int(text, 16)) if text.lower().startswith("0x") else float(text)
        if kind == "string":
            return text[1:-1].replace("''", "'")
        if kind == "op" and text == "(":
            value = self._or()
            self._take(")")
            return value
        if kind != "name":
            raise Unknown(f"unexpected {text!r}")
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        if lowered == "null":
            return None
        if self._peek() == ("op", "("):
            self._take()
            args = []
            while self._peek() != ("op", ")"):
                args.append(self._or())
                if self._peek() == ("op", ","):
                    self._take()
            self._take(")")
            return self._call(lowered, args)
        if text not in self.contexts:
            raise Unknown(f"unknown context {text!r}")
        return self.contexts[text]

    def _call(self, name: str, args: list[Any]) -> Any:
        if name in ("success", "failure", "always", "cancelled"):
            if name not in self.status:
                raise Unknown(f"{name}() is not available here")
            return self.status[name]()
        if name == "contains" and len(args) == 2:
            haystack, needle = args
            if isinstance(haystack, list):
                return any(compare(item, needle, "==") for item in haystack)
            return text_of(needle).lower() in text_of(haystack).lower()
        if name == "startswith" and len(args) == 2:
            return text_of(args[0]).lower().startswith(text_of(args[1]).lower())
        if name == "endswith" and len(args) == 2:
            return text_of(args[0]).lower().endswith(text_of(args[1]).lower())
        if name == "format" and args:
            values = [text_of(a) for a in args[1:]]
            return (
                re.sub(
                    r"\{(\d+)\}",
                    lambda m: values[int(m.group(1))] if int(m.group(1)) < len(values) else m.group(0),
                    text_of(args[0]).replace("{{", "\0").replace("}}", "\1"),
                )
                .replace("\0", "{")
                .replace("\1", "}")
            )
        if name == "join" and args:
            separator = text_of(args[1]) if len(args) > 1 else ","
            return separator.join(text_of(a) for a in args[0]) if isinstance(args[0], list) else text_of(args[0])
        if name == "tojson" and len(args) == 1:
            return json.dumps(args[0], indent=2)
        if name == "fromjson" and len(args) == 1:
            try:
                return json.loads(text_of(args[0]))
            except ValueError as exc:
                raise Unknown(f"fromJSON of something that is not JSON: {exc}") from None
        if name == "hashfiles":
            return "0" * 64 if args else ""
        raise Unknown(f"unknown function {name}()")


def prop(value: Any, key: Any) -> Any:
    if isinstance(value, dict):
        if key == "*":
            return list(value.values())
        wanted = text_of(key).lower()
        for name, item in value.items():
            if str(name).lower() == wanted:
                return item
        return None
    if isinstance(value, list):
        if key == "*":
            return value
        if isinstance(key, float) and key.is_integer() and 0 <= key < len(value):
            return value[int(key)]
        return [prop(item, key) for item in value] if isinstance(key, str) else None
    return None


def truthy(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, float):
        return not (value == 0 or math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):  # an int: a YAML or JSON number in a context (matrix, event)
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text == "":
            return 0.0
        try:
            return float(int(text, 16)) if text.lower().startswith("0x") else float(text)
        except ValueError:
            return math.nan
    return math.nan


def compare(left: Any, right: Any, op: str) -> bool:
    a: Any  # two numbers, two lowered strings, or two values of one other scalar type (bool, int, float)
    b: Any
    # Two nulls are compared as numbers too (0): Python cannot order None.
    if type(left) is not type(right) or isinstance(left, (list, dict)) or left is None:
        if isinstance(left, (list, dict)) or isinstance(right, (list, dict)):
            same = left is right
            return same if op == "==" else (not same if op == "!=" else False)
        a, b = number(left), number(right)
    elif isinstance(left, str):
        a, b = left.lower(), right.lower()
    else:
        a, b = left, right
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if isinstance(a, float) and isinstance(b, float) and (math.isnan(a) or math.isnan(b)):
        return False
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


_STATUS = re.compile(r"\b(success|failure|always|cancelled)\s*\(", re.IGNORECASE)
_WRAPPED = re.compile(r"^\s*\$\{\{(.*)\}\}\s*$", re.DOTALL)
_EMBEDDED = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)


def condition(value: Any, evaluator: Evaluator) -> bool:
    """An `if:` as GitHub reads it: a YAML boolean, an expression with or without `${{ }}`, implicitly
    `success() && (…)` when it calls no status function."""
    if value is None:
        return truthy(evaluator.evaluate("success()"))
    if isinstance(value, bool):
        return value and truthy(evaluator.evaluate("success()"))
    if isinstance(value, (int, float)):
        return bool(value) and truthy(evaluator.evaluate("success()"))
    text = str(value)
    wrapped = _WRAPPED.match(text)
    if wrapped:
        text = wrapped.group(1)
    elif "${{" in text:  # text around an expression: the whole is a non-empty string, always true
        return truthy(evaluator.evaluate("success()"))
    if not _STATUS.search(text):
        text = f"success() && ({text})"
    return truthy(evaluator.evaluate(text))


def substitute(text: str, evaluator: Evaluator) -> tuple[str, list[str]]:
    """`${{ … }}` in a string replaced by their values; the expressions that could not be evaluated are
    returned and replaced by the empty string."""
    unknown: list[str] = []

    def value(match: re.Match) -> str:
        try:
            return text_of(evaluator.evaluate(match.group(1)))
        except Unknown:
            unknown.append(match.group(1).strip())
            return ""

    return _EMBEDDED.sub(value, text), unknown
