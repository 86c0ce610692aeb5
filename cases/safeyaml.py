"""Reading an untrusted case file: bounded YAML with a line number for every field.

Case files come from other people and from LLM compilers, so reading one must cost little whatever
it holds. The file is read only if it is a regular file under `MAX_FILE_BYTES`, decoded as strict
UTF-8, and composed here from libyaml's event stream (never by libyaml's own composer, whose C
recursion overflows the stack on a few hundred thousand nested brackets). While composing, every
node counts against a budget *as it is expanded*, aliases included: a billion-laughs file stops at
the first alias that would pass `MAX_NODES`, in milliseconds, and a recursive alias is an error
rather than a cycle. Depth, scalar size and the text an expansion adds are bounded the same way.
Only plain data is accepted: mappings, sequences, strings, numbers, booleans and null — no tags,
no merge keys, no second document. `check_data` applies the same bounds to data that did not come
from a file (an LLM's JSON), so every path into the loader is bounded alike.

The limits, and why they are what they are, are in docs/case-format.md ("Limits").
"""

from __future__ import annotations

import copy
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

# The real libraries (62 starter cases, benchmark v1 and v2: 11,348 files) peak at 11.4 KB per file,
# 653 nodes with aliases expanded, depth 14 and a 1,141-character scalar; these leave wide margins.
MAX_FILE_BYTES = 1 << 20  # 1 MiB
MAX_NODES = 50_000  # nodes after alias expansion (keys count)
MAX_DEPTH = 64  # nesting; orjson (the content hash) refuses more than 255 and code walks rules recursively
MAX_SCALAR_CHARS = 256 << 10  # one string: 256 KiB
MAX_KEY_CHARS = 4096  # one mapping key (PATH_MAX: a workspace file's path is a key)
MAX_EXPANDED_CHARS = 4 << 20  # all scalar text once aliases are expanded: 4 MiB
MAX_FIELD_CHARS = 16 << 20  # all located field names (`seed.email.inbox[3].body`…) together
_MAX_INT_CHARS = 100  # a longer integer literal is refused before int() (base-60 literals cost O(n²))
_INT_RANGE = (-(1 << 63), (1 << 64) - 1)  # what orjson can hash

_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when PyYAML has it
_TAG = "tag:yaml.org,2002:"
_STR, _MAP, _SEQ = _TAG + "str", _TAG + "map", _TAG + "seq"
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Scalars(yaml.constructor.SafeConstructor):
    """Safe scalars, except that dates stay text: a case's dates are data the agent reads as written."""


_CONSTRUCT = _Scalars()
_SCALARS = {
    _STR: _CONSTRUCT.construct_yaml_str,
    _TAG + "timestamp": _CONSTRUCT.construct_yaml_str,
    _TAG + "int": _CONSTRUCT.construct_yaml_int,
    _TAG + "float": _CONSTRUCT.construct_yaml_float,
    _TAG + "bool": _CONSTRUCT.construct_yaml_bool,
    _TAG + "null": _CONSTRUCT.construct_yaml_null,
}


class Located(Exception):
    """One problem at a field and line; the loader turns it into a `file:line: field: message` line."""

    def __init__(self, field: str, line: int, message: str) -> None:
        super().__init__(message)
        self.field, self.line = field or "(file)", line


def read_text(path: Path) -> str:
    """The file's text, refusing what is not a small regular UTF-8 file. O_NONBLOCK: opening a FIFO
    planted among case files must not wait for a writer; it is then refused for not being a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise Located("(file)", 1, f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Located("(file)", 1, "cannot read: not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise Located(
                "(file)", 1, f"file is {info.st_size:,} bytes; a case file may have at most {MAX_FILE_BYTES:,}"
            )
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)  # the file may grow between fstat and read
    except OSError as exc:
        raise Located("(file)", 1, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise Located("(file)", 1, f"file is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise Located("(file)", line, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


class _Frame:
    """An open mapping or sequence while its events arrive."""

    __slots__ = ("value", "path", "key", "key_path", "anchor", "start", "depth", "deepest", "cost")

    def __init__(
        self, value: Any, path: str, anchor: str | None, start: int, depth: int, cost: tuple[int, int]
    ) -> None:
        self.value, self.path, self.anchor, self.start, self.depth = value, path, anchor, start, depth
        self.key: str | None = None  # a mapping's key waiting for its value
        self.key_path = ""
        self.deepest = depth  # the deepest level reached inside it so far
        self.cost = cost  # the budgets spent when it opened: its own size is the difference at its end


class _Anchor:
    """A finished anchored node and what one more copy of it costs."""

    __slots__ = ("value", "path", "lines", "nodes", "chars", "height")

    def __init__(
        self, value: Any, path: str, lines: list[tuple[str, int]], nodes: int, chars: int, height: int
    ) -> None:
        self.value, self.path, self.lines = value, path, lines
        self.nodes, self.chars, self.height = nodes, chars, height


class _Composer:
    def __init__(self) -> None:
        self.lines: dict[str, int] = {}
        self.order: list[tuple[str, int]] = []  # (path, line) as recorded: an anchor's share is a slice
        self.nodes = self.chars = self.fields = 0
        # The latest definition of each anchor name: a frame while it is still open, then its _Anchor.
        self.anchors: dict[str, _Frame | _Anchor] = {}
        self.stack: list[_Frame] = []
        self.result: Any = None
        self.done = False

    # -- budgets -------------------------------------------------------------------------------
    def charge(self, path: str, line: int, nodes: int, chars: int) -> None:
        self.nodes += nodes
        self.chars += chars
        if self.nodes > MAX_NODES:
            raise Located(
                path,
                line,
                f"more than {MAX_NODES:,} nodes once aliases are expanded "
                f"(an alias bomb, or a file far larger than any case)",
            )
        if self.chars > MAX_EXPANDED_CHARS:
            raise Located(path, line, f"more than {MAX_EXPANDED_CHARS:,} characters of text once aliases are expanded")

    def record(self, path: str, line: int) -> None:
        self.fields += len(path)
        if self.fields > MAX_FIELD_CHARS:
            raise Located(path[:200], line, "field names too long in total (deeply nested long keys)")
        if path not in self.lines:
            self.lines[path] = line
        self.order.append((path, line))

    def reached(self, depth: int, path: str, line: int) -> None:
        if depth > MAX_DEPTH:
            raise Located(path or "(file)", line, f"nested deeper than {MAX_DEPTH} levels")
        if self.stack and depth > self.stack[-1].deepest:
            self.stack[-1].deepest = depth

    # -- where the next node goes --------------------------------------------------------------
    def place(self, line: int) -> tuple[str, int]:
        """The path of the node about to start, and its depth."""
        if not self.stack:
            if self.done:
                raise Located("(file)", line, "a case file holds one YAML document")
            return "", 0
        top = self.stack[-1]
        if isinstance(top.value, list):
            return f"{top.path}[{len(top.value)}]", top.depth + 1
        return top.key_path, top.depth + 1

    def attach(self, value: Any) -> None:
        if not self.stack:
            self.result, self.done = value, True
            return
        top = self.stack[-1]
        if isinstance(top.value, list):
            top.value.append(value)
        else:
            top.value[top.key] = value
            top.key = None

    def expecting_key(self) -> bool:
        return bool(self.stack) and isinstance(self.stack[-1].value, dict) and self.stack[-1].key is None

    # -- events --------------------------------------------------------------------------------
    def scalar(self, event: yaml.ScalarEvent, parser: Any) -> None:
        line = _line(event)
        text = event.value
        tag = event.tag
        if tag is None or tag == "!":
            # Only a plain scalar can resolve to anything but a string (`5`, `true`, `~`).
            tag = parser.resolve(yaml.ScalarNode, text, event.implicit) if event.implicit[0] else _STR
        if self.expecting_key():
            self.key(event, tag, line)
            return
        path, depth = self.place(line)
        self.reached(depth, path, line)
        if len(text) > MAX_SCALAR_CHARS:
            raise Located(path, line, f"a value of {len(text):,} characters (at most {MAX_SCALAR_CHARS:,})")
        self.charge(path, line, 1, len(text))
        self.record(path, line)
        value = self.construct(tag, text, event, path, line)
        if event.anchor is not None:
            self.anchors[event.anchor] = _Anchor(value, path, [], 1, len(text), 0)
        self.attach(value)

    def key(self, event: yaml.ScalarEvent, tag: str, line: int) -> None:
        top = self.stack[-1]
        where = top.path or "(file)"
        if event.anchor is not None:
            raise Located(where, line, "keys must be plain values (no anchors)")
        if len(event.value) > MAX_KEY_CHARS:
            raise Located(where, line, f"a key of {len(event.value):,} characters (at most {MAX_KEY_CHARS:,})")
        key = str(self.construct(tag, event.value, event, where, line))
        child = f"{top.path}.{key}" if top.path else key
        if key in top.value:
            raise Located(child, line, f"duplicate key {key!r}")
        self.charge(child, line, 1, len(key))
        self.lines[child] = line  # a key's line, even where an alias recorded the same path first
        self.record(child, line)
        top.key, top.key_path = key, child
        top.value[key] = None  # holds the key's place (and its order) until the value arrives

    def construct(self, tag: str, text: str, event: yaml.ScalarEvent, path: str, line: int) -> Any:
        if tag == _STR and (event.style != '"' or not _SURROGATE.search(text)):
            return text  # most scalars: what the safe constructor would return, without building a node
        build = _SCALARS.get(tag)
        where = path or "(file)"
        if build is None:
            raise Located(where, line, _tag_message(tag))
        if event.style == '"' and _SURROGATE.search(text):
            # Only an escape (\ud800) makes one; no encoder (orjson, a file write) accepts it later.
            raise Located(where, line, "a lone surrogate escape is not text")
        if tag == _TAG + "int" and len(text) > _MAX_INT_CHARS:
            raise Located(where, line, "integer out of range (at most 64 bits)")
        try:
            # types-PyYAML types a node's marks as the pure-Python Mark only; libyaml's parser gives its own
            # yaml._yaml.Mark (same fields), which the constructor only quotes in its messages.
            value = build(
                yaml.ScalarNode(
                    tag,
                    text,
                    event.start_mark,  # type: ignore[arg-type]
                    event.end_mark,  # type: ignore[arg-type]
                    event.style,
                )
            )
        except (ValueError, OverflowError, yaml.YAMLError) as exc:
            raise Located(where, line, f"not a valid {tag[len(_TAG) :]}: {exc}") from None
        if isinstance(value, int) and not isinstance(value, bool) and not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            raise Located(where, line, "integer out of range (at most 64 bits)")
        return value

    def start(self, event: yaml.CollectionStartEvent, mapping: bool) -> None:
        line = _line(event)
        if self.expecting_key():
            raise Located(self.stack[-1].path or "(file)", line, "keys must be plain values")
        tag = event.tag
        if tag is None or tag == "!":
            tag = _MAP if mapping else _SEQ
        path, depth = self.place(line)
        if tag != (_MAP if mapping else _SEQ):
            raise Located(path or "(file)", line, _tag_message(tag))
        self.reached(depth, path, line)
        self.charge(path, line, 1, 0)
        self.record(path, line)
        frame = _Frame(
            {} if mapping else [], path, event.anchor, len(self.order) - 1, depth, (self.nodes - 1, self.chars)
        )
        if event.anchor is not None:
            self.anchors[event.anchor] = frame
        self.stack.append(frame)

    def end(self) -> None:
        frame = self.stack.pop()
        if self.stack and frame.deepest > self.stack[-1].deepest:
            self.stack[-1].deepest = frame.deepest
        # A name redefined inside its own node keeps the inner definition, as YAML's composer does.
        if frame.anchor is not None and self.anchors.get(frame.anchor) is frame:
            nodes, chars = frame.cost
            self.anchors[frame.anchor] = _Anchor(
                frame.value,
                frame.path,
                self.order[frame.start :],
                self.nodes - nodes,
                self.chars - chars,
                frame.deepest - frame.depth,
            )
        self.attach(frame.value)

    def alias(self, event: yaml.AliasEvent) -> None:
        line = _line(event)
        name = event.anchor
        assert name is not None, "the parser gives every alias the name it refers to"
        if self.expecting_key():
            raise Located(self.stack[-1].path or "(file)", line, "keys must be plain values (no aliases)")
        path, depth = self.place(line)
        anchor = self.anchors.get(name)
        if isinstance(anchor, _Frame):
            raise Located(path or "(file)", line, f"recursive alias *{name}: it refers to a node that contains it")
        if anchor is None:
            raise Located(path or "(file)", line, f"alias *{name} names no anchor defined before it")
        self.reached(depth + anchor.height, path, line)
        # Charged before anything is copied: a bomb stops here, at the first alias over budget.
        self.charge(path, line, anchor.nodes, anchor.chars)
        self.record(path, line)
        for sub, sub_line in anchor.lines[1:]:
            self.record(path + sub[len(anchor.path) :], sub_line)
        # A copy, not the same object: later edits (placing an attack) must touch one place only.
        self.attach(copy.deepcopy(anchor.value))


def _line(event: yaml.Event) -> int:
    """The line an event starts on, from 1: the parser marks every event it gives."""
    assert event.start_mark is not None, "the parser marks every event"
    return event.start_mark.line + 1


def _tag_message(tag: str) -> str:
    if tag == _TAG + "merge":
        return "merge keys (<<) are not supported: write the mapping out"
    return f"tag {tag!r} is not allowed: case files hold plain data only"


def parse_text(text: str) -> tuple[Any, dict[str, int]]:
    """The one document of `text` as plain data, and the line of every field path. Raises `Located`."""
    parser = _PARSER(text)
    composer = _Composer()
    try:
        while parser.check_event():
            event = parser.get_event()
            kind = type(event)
            if kind is yaml.ScalarEvent:
                composer.scalar(event, parser)
            elif kind is yaml.MappingStartEvent:
                composer.start(event, mapping=True)
            elif kind is yaml.SequenceStartEvent:
                composer.start(event, mapping=False)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                composer.end()
            elif kind is yaml.AliasEvent:
                composer.alias(event)
            elif kind is yaml.DocumentStartEvent and composer.done:
                raise Located("(file)", _line(event), "a case file holds one YAML document; this is a second")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        why = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc)
        line = mark.line + 1 if mark is not None else 1
        position = getattr(exc, "position", None)
        if mark is None and isinstance(position, int):  # a ReaderError: a bad character
            line = text.count("\n", 0, position) + 1
        raise Located("(file)", line, f"not valid YAML: {why}") from None
    finally:
        parser.dispose()
    if not composer.done:
        raise Located("(file)", 1, "empty file")
    return composer.result, composer.lines


def check_data(data: Any) -> None:
    """The same bounds for data built elsewhere (an LLM's JSON, a compiler's dict): plain types only,
    string keys, depth, node count, sizes. Iterative, so no input can exhaust the stack."""
    nodes = chars = 0
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        where = path or "(file)"
        nodes += 1
        if nodes > MAX_NODES:
            raise Located(where, 1, f"more than {MAX_NODES:,} nodes")
        if depth > MAX_DEPTH:
            raise Located(where, 1, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise Located(where, 1, f"keys must be strings, not {type(key).__name__}")
                if len(key) > MAX_KEY_CHARS:
                    raise Located(where, 1, f"a key of {len(key):,} characters (at most {MAX_KEY_CHARS:,})")
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(value, (list, tuple)):  # a compiler's tuple is a list to orjson and to YAML
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, str):
            chars += len(value)
            if len(value) > MAX_SCALAR_CHARS:
                raise Located(where, 1, f"a value of {len(value):,} characters (at most {MAX_SCALAR_CHARS:,})")
            if chars > MAX_EXPANDED_CHARS:
                raise Located(where, 1, f"more than {MAX_EXPANDED_CHARS:,} characters of text")
            if _SURROGATE.search(value):
                raise Located(where, 1, "a lone surrogate is not text")
        elif isinstance(value, bool) or value is None or isinstance(value, float):
            continue
        elif isinstance(value, int):
            if not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
                raise Located(where, 1, "integer out of range (at most 64 bits)")
        else:
            raise Located(where, 1, f"{type(value).__name__} is not plain data")
