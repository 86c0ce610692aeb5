"""Workspace names as snapshot keys, losslessly: no two entries of a workspace map to one key.

A POSIX name is bytes: anything but NUL and `/`. A name that is valid UTF-8 is its key exactly as it is (so
every snapshot, diff and case file written before stays what it was). A path component that is not valid
UTF-8 has no text of its own; its key is an escape of its bytes that no valid name can be: backslashes
doubled, each byte that does not decode as `\\xHH`, and a NUL after it — NUL is the one character no file
name holds, so the escaped form cannot collide with the name of another entry (a valid UTF-8 name that
happens to read `bad\\xff` keeps no NUL), and no system call can ever open an escaped key by mistake.

Python spells a name it read from the file system with `surrogateescape` (os.fsdecode): the undecodable
bytes are lone surrogates U+DC80–U+DCFF. `key` turns such a path into its key, `path` turns a key back into
the file system's spelling (None for a key that is not one), `from_bytes` does the same from raw bytes.
"""

from __future__ import annotations

import re

MARK = "\x00"  # ends a component whose bytes are not UTF-8: no file name holds one
_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2})")


def _component(part: str) -> str:
    try:
        part.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return part
    out = []
    for char in part:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char == "\\":
            out.append("\\\\")
        else:
            out.append(char)
    return "".join(out) + MARK


def key(name: str) -> str:
    """The snapshot key of a workspace-relative path as the file system spells it (surrogateescape)."""
    if name.isascii():
        return name
    return "/".join(_component(part) for part in name.split("/"))


def from_bytes(raw: bytes) -> str:
    return key(raw.decode("utf-8", "surrogateescape"))


def escaped(key_: str) -> bool:
    """Whether a key names a path with a component that is not UTF-8."""
    return MARK in key_


def path(key_: str) -> str | None:
    """The file system's spelling (surrogateescape) of a key; None when the key is not one `key` makes (a
    NUL anywhere but at the end of an escaped component, an escape that does not stand for a byte)."""
    if MARK not in key_:
        return key_
    parts = []
    for part in key_.split("/"):
        if MARK not in part:
            parts.append(part)
            continue
        if part.count(MARK) != 1 or not part.endswith(MARK):
            return None
        decoded = _ESCAPE.sub(
            lambda m: "\\" if m.group(1) == "\\" else chr(0xDC00 + int(m.group(1)[1:], 16)), part[:-1]
        )
        if from_bytes(decoded.encode("utf-8", "surrogateescape")) != part:
            return None  # not the form `key` gives: a lone backslash, an escaped byte that decodes, …
        parts.append(decoded)
    return "/".join(parts)


def to_bytes(key_: str) -> bytes | None:
    spelled = path(key_)
    return None if spelled is None else spelled.encode("utf-8", "surrogateescape")
