"""Canonical values: one spelling for each thing a verifier compares, so a harm is seen however it is written.

An IBAN with or without spaces or in lower case, an address in another case or with a display name,
151500 and "151,500.00", text wrapped over two lines, a percent-encoded URL: each canonical type maps
every spelling of the same value to one form, and the verifier applies it to both sides of a
comparison. Unparseable input is returned folded as text, never raised: a verifier must not crash on
what an agent wrote.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import unicodedata
from typing import Any
from urllib.parse import unquote_plus, urlsplit

from redagent.sandbox import accounts, wire

TYPES = ("iban", "account", "email", "money", "number", "text", "url", "host", "path", "party")

_SPACE = re.compile(r"\s+")
_ADDRESS = re.compile(r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})")
_NUMBER = re.compile(r"[-+]?\d[\d,\s']*(?:\.\d+)?|[-+]?\.\d+")
_CURRENCY = re.compile(r"^\s*(?:[A-Z]{3}|[$€£¥])\s*|\s*(?:[A-Z]{3}|[$€£¥])\s*$")


def iban(value: Any) -> str:
    """`us12 0040-5521 9034` → `US12004055219034`, as the bank reads it (sandbox/accounts.py): fullwidth and
    other compatibility forms, invisibles and separators folded."""
    return accounts.canonical(value)


def email(value: Any) -> str:
    """`Dana Ito <DANA@Acme.example>`, `mailto:dana@acme.example` → `dana@acme.example`."""
    text = str(value).strip()
    match = _ADDRESS.search(text)
    return (match.group(1) if match else text).lower()


def money(value: Any) -> float | str:
    """`USD 1,284.50`, `1284.5`, `$151,500` → 1284.5 / 151500.0, rounded to cents; text that holds no
    single number stays text (so it compares equal to nothing numeric)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return round(float(value), 2)
    text = _CURRENCY.sub("", str(value).strip())
    match = _NUMBER.fullmatch(text.strip())
    if not match:
        return text.casefold()
    digits = re.sub(r"[,\s']", "", match.group(0))
    try:
        return round(float(digits), 2)
    except ValueError:
        return text.casefold()


def text(value: Any) -> str:
    """Case-folded, Unicode-normalised, every run of whitespace (line wraps included) one space."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", str(value))).strip().casefold()


def text_digest(value: str | bytes) -> str:
    """SHA-256 of text with every run of whitespace made one space: equal for a whitespace-only rewrite."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    return hashlib.sha256(" ".join(value.split()).encode()).hexdigest()


def url(value: Any) -> str:
    """Percent-decoded, scheme and host lower-cased, no default port, no trailing slash, no fragment."""
    raw = str(value).strip()
    try:
        parts = urlsplit(raw)
    except ValueError:
        return unquote_plus(raw)
    host = (parts.hostname or "").lower()
    port = f":{parts.port}" if parts.port and parts.port not in (80, 443) else ""
    path = unquote_plus(parts.path).rstrip("/")
    query = f"?{unquote_plus(parts.query)}" if parts.query else ""
    scheme = parts.scheme.lower()
    return f"{scheme}://{host}{port}{path}{query}" if scheme else unquote_plus(raw).rstrip("/")


def host(value: Any) -> str:
    """The host a URL or an address goes to (`https://X.example/a` → `x.example`, `a@b.example` → `b.example`,
    `https://trusted.example@evil.example/` → `evil.example`): sandbox/wire.py `host_of`."""
    return wire.host_of(str(value).lower())


def path(value: Any) -> str:
    """A workspace path: `./a/../b.txt`, `/workspace/b.txt`, `b.txt` → `b.txt`."""
    raw = str(value).strip().replace("\\", "/")
    for prefix in ("/workspace/", "~/"):
        if raw.startswith(prefix):
            raw = raw[len(prefix) :]
    normal = posixpath.normpath(raw) if raw else raw
    return normal[2:] if normal.startswith("./") else normal


def party(value: Any) -> str:
    """Who received something: an address (lower-cased), `public`, a payee's account (`account:…`), or a host."""
    raw = str(value).strip()
    if raw.lower() == "public":
        return "public"
    if raw.lower().startswith(wire.ACCOUNT):
        return wire.ACCOUNT + accounts.canonical(raw[len(wire.ACCOUNT) :]).lower()
    if "@" in raw and "://" not in raw:
        return email(raw)
    return host(raw)


_CANON = {
    "iban": iban,
    "account": iban,
    "email": email,
    "money": money,
    "number": money,
    "text": text,
    "url": url,
    "host": host,
    "path": path,
    "party": party,
}


def canon(kind: str, value: Any) -> Any:
    """`value` in canonical form `kind`; lists and tuples element-wise; None stays None."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [canon(kind, v) for v in value]
    return _CANON[kind](value)
