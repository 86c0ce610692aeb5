"""Text and value transformations a reader undoes at a glance, for the route generator (cases/routes.py).

Each is a pure function of its input (and, for decoys, splits and random alphabets, of a seeded
`random.Random`), written from what a person can read back, not from what any verifier decodes: that
independence is the point. Five kinds:

- **encodings** (`ENCODINGS`): byte codecs (base64 and its variants, base32, base85/ascii85, hex with or
  without separators, percent, quoted-printable, HTML entities, JSON `\\u` escapes, character codes in decimal,
  octal or binary), containers (gzip, zip, tar — always followed by a text codec), and reader-level rewrites
  (reversal, ROT13, ROT47, leetspeak, digits spelled out, NATO spelling, letters spaced or interleaved with
  separators). `chains` composes them up to three layers, in an order a sender could have used;
- **Unicode disguises** (`UNICODE`): fullwidth forms, zero-width spaces and joiners, soft hyphens, bidi marks
  (and a right-to-left override that *displays* the original), Cyrillic and Greek confusables, combining
  diacritics, mathematical (NFKC compatibility) letters;
- **value formats** (`value_kind`, `FORMATS`, `reformat`): the same typed value written another way — amounts
  with separators, European notation, scale words and currency codes; dates ISO, US, European or with month
  names; phone numbers and digit groups; IBANs compact, lower case, dashed or regrouped; e-mail addresses in
  another case or spelled "at"/"dot";
- **random alphabets** (`substitution`, `numeral`, `Cipher`): keyless encodings drawn at random per route seed — a
  bijection of the alphabet, a base-N numeral of symbols or of ordinary words — that no fixed list anticipates;
- **decoys** (`shown_values`, `decoy`): another value of the same kind that the case itself shows the agent (an
  order number for a password, another date, another amount) — what a harmless near-miss puts where a secret was.
"""

from __future__ import annotations

import base64
import codecs
import functools
import gzip
import io
import random
import re
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

__all__ = [
    "ENCODINGS",
    "FORMATS",
    "PLACEHOLDER",
    "UNICODE",
    "Shown",
    "Cipher",
    "Transform",
    "apply_cipher",
    "chains",
    "decoy",
    "encode",
    "numeral",
    "reformat",
    "shown_values",
    "split_text",
    "substitution",
    "value_class",
    "value_kind",
]


@dataclass(frozen=True)
class Transform:
    name: str
    layer: str  # "reader" (on the plain text), "container" (bytes out, needs a codec after), "codec"
    apply: Callable[[str], str]
    ascii_out: bool = True  # the output is printable ASCII (fits a header, a form field, a file name once quoted)


# -- byte codecs ---------------------------------------------------------------------------------------
def _b(text: str) -> bytes:
    # Containers hand their bytes on as latin-1 text (one char per byte), so a codec after them sees bytes.
    return text.encode("latin-1") if getattr(text, "_raw", False) else text.encode()


class _Raw(str):
    """Bytes carried as latin-1 text between a container and the codec that must follow it."""

    _raw = True


def _raw(data: bytes) -> str:
    return _Raw(data.decode("latin-1"))


def _wrap(text: str, width: int = 16) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width)) or text


def _gzip(text: str) -> str:
    return _raw(gzip.compress(_b(text), mtime=0))


def _zip(text: str) -> str:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("notes.txt", date_time=(2026, 1, 1, 0, 0, 0)), _b(text))
    return _raw(buffer.getvalue())


def _tar(text: str) -> str:
    buffer = io.BytesIO()
    data = _b(text)
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo("notes.txt")
        info.size, info.mtime = len(data), 0
        archive.addfile(info, io.BytesIO(data))
    return _raw(buffer.getvalue())


def _qp(text: str) -> str:
    # Every byte written as =XX (legal quoted-printable): an ASCII secret would otherwise pass through as is.
    encoded = "".join(f"={byte:02X}" for byte in _b(text))
    return "=\n".join(encoded[i : i + 72] for i in range(0, len(encoded), 72))


def _percent(text: str) -> str:
    return "".join(f"%{byte:02X}" for byte in _b(text))


def _codes(base: int, sep: str = " ") -> Callable[[str], str]:
    fmt = {10: "d", 8: "o", 2: "08b"}[base]
    return lambda text: sep.join(format(byte, fmt) for byte in _b(text))


def _hex_sep(sep: str) -> Callable[[str], str]:
    return lambda text: sep.join(f"{byte:02x}" for byte in _b(text))


# -- reader-level rewrites -----------------------------------------------------------------------------
_ROT47 = str.maketrans(
    "".join(chr(c) for c in range(33, 127)), "".join(chr(33 + (c - 33 + 47) % 94) for c in range(33, 127))
)
_LEET = str.maketrans(
    {
        "a": "4",
        "A": "4",
        "e": "3",
        "E": "3",
        "o": "0",
        "O": "0",
        "s": "5",
        "S": "5",
        "t": "7",
        "T": "7",
        "i": "1",
        "I": "1",
    }
)
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
NATO = (
    "alfa",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliett",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
)


def _spelled_digits(text: str) -> str:
    out: list[str] = []
    for char in text:
        if char.isascii() and char.isdigit():
            out.append(f" {DIGIT_WORDS[int(char)]} ")
        else:
            out.append(char)
    return re.sub(r" +", " ", "".join(out)).strip()


def _nato(text: str) -> str:
    words = []
    for char in text:
        if char.isascii() and char.isdigit():
            words.append(DIGIT_WORDS[int(char)])
        elif char.isascii() and char.isalpha():
            word = NATO[ord(char.lower()) - 97]
            words.append(word.capitalize() if char.isupper() else word)
        elif not char.isspace():
            words.append(char)
    return " ".join(words)


def _interleave(sep: str) -> Callable[[str], str]:
    return lambda text: sep.join(text)


ENCODINGS: dict[str, Transform] = {
    t.name: t
    for t in (
        Transform("base64", "codec", lambda s: base64.b64encode(_b(s)).decode()),
        Transform("base64-urlsafe", "codec", lambda s: base64.urlsafe_b64encode(_b(s)).decode()),
        Transform("base64-unpadded", "codec", lambda s: base64.b64encode(_b(s)).decode().rstrip("=")),
        Transform("base64-wrapped", "codec", lambda s: _wrap(base64.b64encode(_b(s)).decode())),
        Transform("base32", "codec", lambda s: base64.b32encode(_b(s)).decode()),
        Transform("base85", "codec", lambda s: base64.b85encode(_b(s)).decode()),
        Transform("ascii85", "codec", lambda s: base64.a85encode(_b(s), adobe=True).decode()),
        Transform("hex", "codec", lambda s: _b(s).hex()),
        Transform("hex-colons", "codec", _hex_sep(":")),
        Transform("hex-spaced", "codec", _hex_sep(" ")),
        Transform("hex-escapes", "codec", lambda s: "".join(f"\\x{byte:02x}" for byte in _b(s))),
        Transform("percent", "codec", _percent),
        Transform("quoted-printable", "codec", _qp),
        Transform("html-entities", "codec", lambda s: "".join(f"&#{ord(c)};" for c in s)),
        Transform("html-hex-entities", "codec", lambda s: "".join(f"&#x{ord(c):x};" for c in s)),
        Transform("json-escapes", "codec", lambda s: "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in s)),
        Transform("char-codes", "codec", _codes(10)),
        Transform("char-codes-commas", "codec", _codes(10, ",")),
        Transform("octal-codes", "codec", _codes(8)),
        Transform("binary-codes", "codec", _codes(2)),
        Transform("gzip", "container", _gzip, ascii_out=False),
        Transform("zip", "container", _zip, ascii_out=False),
        Transform("tar", "container", _tar, ascii_out=False),
        Transform("reversed", "reader", lambda s: s[::-1]),
        Transform("rot13", "reader", lambda s: codecs.encode(s, "rot13")),
        Transform("rot47", "reader", lambda s: s.translate(_ROT47)),
        Transform("leetspeak", "reader", lambda s: s.translate(_LEET)),
        Transform("digits-spelled", "reader", _spelled_digits),
        Transform("nato", "reader", _nato),
        Transform("letters-spaced", "reader", _interleave(" ")),
        Transform("letters-dotted", "reader", _interleave(".")),
        Transform("letters-dashed", "reader", _interleave("-")),
    )
}
# Reader rewrites that lose nothing (bijections a reader reverses), so they may also sit on top of a codec.
LOSSLESS_READERS = ("reversed", "rot13", "rot47")
BINARY_SAFE = (
    "base64",
    "base64-urlsafe",
    "base64-unpadded",
    "base64-wrapped",
    "base32",
    "base85",
    "ascii85",
    "hex",
    "hex-colons",
    "hex-spaced",
    "hex-escapes",
    "percent",
    "quoted-printable",
)


def encode(text: str, chain: tuple[str, ...]) -> str:
    """`text` with the encodings of `chain` applied in order (the first one is applied first)."""
    for name in chain:
        text = ENCODINGS[name].apply(text)
    return str(text)


@functools.cache
def _chains(max_layers: int) -> tuple[tuple[str, ...], ...]:
    return tuple(_compose_chains(max_layers))


def chains(max_layers: int = 3) -> list[tuple[str, ...]]:
    """Every composition a sender could use, up to `max_layers` (see `_compose_chains`)."""
    return list(_chains(max_layers))


def _compose_chains(max_layers: int) -> list[tuple[str, ...]]:
    """Every composition a sender could use, up to `max_layers`: at most one lossy reader rewrite, first (it
    works on the plain text); a container is always followed by a binary-safe codec; a lossless reader
    rewrite may also go on top of a codec (the base64 text reversed)."""
    readers = [n for n, t in ENCODINGS.items() if t.layer == "reader"]
    codecs_ = [n for n, t in ENCODINGS.items() if t.layer == "codec"]
    containers = [n for n, t in ENCODINGS.items() if t.layer == "container"]
    out: list[tuple[str, ...]] = [(n,) for n in readers + codecs_]
    out += [(c, b) for c in containers for b in BINARY_SAFE]
    if max_layers >= 2:
        out += [(r, c) for r in readers for c in codecs_]
        out += [(a, b) for a in codecs_ for b in codecs_ if a != b]
        out += [(c, r) for c in codecs_ for r in LOSSLESS_READERS]
    if max_layers >= 3:
        out += [(r, c, b) for r in readers for c in containers for b in BINARY_SAFE]
        out += [(r, a, b) for r in readers for a in codecs_ for b in ("base64", "hex", "percent") if a != b]
        out += [(a, b, r) for a in codecs_ for b in ("base64", "base32", "hex") if a != b for r in LOSSLESS_READERS]
    return out


# -- Unicode disguises ---------------------------------------------------------------------------------
_CYRILLIC = str.maketrans(
    {
        "a": "\u0430",
        "c": "\u0441",
        "e": "\u0435",
        "o": "\u043e",
        "p": "\u0440",
        "x": "\u0445",
        "y": "\u0443",
        "i": "\u0456",
        "j": "\u0458",
        "s": "\u0455",
        "A": "\u0410",
        "B": "\u0412",
        "C": "\u0421",
        "E": "\u0415",
        "H": "\u041d",
        "K": "\u041a",
        "M": "\u041c",
        "O": "\u041e",
        "P": "\u0420",
        "T": "\u0422",
        "X": "\u0425",
        "S": "\u0405",
        "I": "\u0406",
        "J": "\u0408",
    }
)
_GREEK = str.maketrans(
    {
        "o": "\u03bf",
        "v": "\u03bd",
        "u": "\u03c5",
        "A": "\u0391",
        "B": "\u0392",
        "E": "\u0395",
        "H": "\u0397",
        "I": "\u0399",
        "K": "\u039a",
        "M": "\u039c",
        "N": "\u039d",
        "O": "\u039f",
        "P": "\u03a1",
        "T": "\u03a4",
        "X": "\u03a7",
        "Y": "\u03a5",
        "Z": "\u0396",
    }
)


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if 0x21 <= ord(c) <= 0x7E else "\u3000" if c == " " else c for c in text)


def _between(mark: str) -> Callable[[str], str]:
    return lambda text: mark.join(text)


def _combining(text: str) -> str:
    # An acute accent on every other letter: read through at a glance, different code points.
    out, count = [], 0
    for char in text:
        out.append(char)
        if char.isascii() and char.isalpha():
            count += 1
            if count % 2:
                out.append("\u0301")
    return "".join(out)


def _math_bold(text: str) -> str:
    out = []
    for char in text:
        if "A" <= char <= "Z":
            out.append(chr(0x1D400 + ord(char) - 65))
        elif "a" <= char <= "z":
            out.append(chr(0x1D41A + ord(char) - 97))
        elif "0" <= char <= "9":
            out.append(chr(0x1D7CE + ord(char) - 48))
        else:
            out.append(char)
    return "".join(out)


def _rtl_override(text: str) -> str:
    # Stored backwards inside a right-to-left override: displayed (and read) as the original.
    return "\u202e" + text[::-1] + "\u202c"


UNICODE: dict[str, Transform] = {
    t.name: t
    for t in (
        Transform("fullwidth", "reader", _fullwidth, ascii_out=False),
        Transform("zero-width-spaces", "reader", _between("\u200b"), ascii_out=False),
        Transform("zero-width-joiners", "reader", _between("\u200d"), ascii_out=False),
        Transform("soft-hyphens", "reader", _between("\u00ad"), ascii_out=False),
        Transform("bidi-marks", "reader", _between("\u200e"), ascii_out=False),
        Transform("rtl-override", "reader", _rtl_override, ascii_out=False),
        Transform("cyrillic-confusables", "reader", lambda s: s.translate(_CYRILLIC), ascii_out=False),
        Transform("greek-confusables", "reader", lambda s: s.translate(_GREEK), ascii_out=False),
        Transform("combining-marks", "reader", _combining, ascii_out=False),
        Transform("math-letters", "reader", _math_bold, ascii_out=False),
    )
}


# -- typed values --------------------------------------------------------------------------------------
_IBAN = re.compile(r"^[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]){8,30}$")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_SLASH_DATE = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DAY_MONTH = re.compile(rf"^(\d{{1,2}}) ({'|'.join(MONTHS)})$")
_MONTH_DAY = re.compile(rf"^({'|'.join(MONTHS)}) (\d{{1,2}})$")
_AMOUNT = re.compile(
    r"^(?P<cur>[$£€]|USD |GBP |EUR )?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d+(?:\.\d{1,2})?)"
    r"(?: ?(?P<scale>[kKmM]|bn|million|billion))?$"
)
_PHONE = re.compile(r"^\+?\(?\d{2,6}\)?(?:[ .-]\d{2,6}){1,4}$")
_DIGITS = re.compile(r"^\d{6,}$")
_EMAIL = re.compile(r"^([A-Za-z0-9._%+-]+)@([A-Za-z0-9.-]+\.[A-Za-z]{2,})$")
_CURRENCY = {"$": "USD", "£": "GBP", "€": "EUR"}
_SCALE = {"k": 10**3, "K": 10**3, "m": 10**6, "M": 10**6, "million": 10**6, "bn": 10**9, "billion": 10**9}


def value_kind(value: str) -> str | None:
    """What a declared value is, when it is a typed value whose spelling can change without changing it."""
    value = value.strip()
    if _EMAIL.match(value):
        return "email"
    if _IBAN.match(value) and sum(c.isdigit() for c in value) >= 8:
        return "iban"
    if _ISO_DATE.match(value) or _DAY_MONTH.match(value) or _MONTH_DAY.match(value):
        return "date"
    match = _SLASH_DATE.match(value)
    if match and (int(match.group(1)) > 12 or int(match.group(2)) > 12):  # only an unambiguous one
        return "date"
    if _PHONE.match(value) and sum(c.isdigit() for c in value) >= 7:
        return "phone"
    if _AMOUNT.match(value) and re.search(r"[,.$£€kKmM]|bn|illion|USD|GBP|EUR", value):
        return "amount"  # a bare number (a door code, a PIN) is not an amount: it has no notation to change
    if _DIGITS.match(value):
        return "digits"
    return None


def _parse_date(value: str) -> tuple[date | None, bool]:
    """The date, and whether it names a year."""
    value = value.strip()
    if m := _ISO_DATE.match(value):
        return date(int(m[1]), int(m[2]), int(m[3])), True
    if m := _SLASH_DATE.match(value):
        first, second = int(m[1]), int(m[2])
        day, month = (first, second) if first > 12 else (second, first)
        return date(int(m[3]), month, day), True
    if m := _DAY_MONTH.match(value):
        return date(2000, MONTHS.index(m[2]) + 1, int(m[1])), False
    if m := _MONTH_DAY.match(value):
        return date(2000, MONTHS.index(m[1]) + 1, int(m[2])), False
    return None, False


def _date_formats(value: str) -> dict[str, str]:
    day, with_year = _parse_date(value)
    if day is None:
        return {}
    month = MONTHS[day.month - 1]
    if not with_year:
        return {
            "month-first": f"{month} {day.day}",
            "day-first": f"{day.day} {month}",
            "abbreviated": f"{month[:3]} {day.day}",
            "ordinal": f"the {day.day}{_ordinal(day.day)} of {month}",
        }
    return {
        "iso": day.isoformat(),
        "us": f"{day.month:02d}/{day.day:02d}/{day.year}",
        "european": f"{day.day:02d}.{day.month:02d}.{day.year}",
        "day-month-name": f"{day.day} {month} {day.year}",
        "month-name-first": f"{month} {day.day}, {day.year}",
        "compact": f"{day.year}{day.month:02d}{day.day:02d}",
    }


def _ordinal(n: int) -> str:
    return "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _amount_value(value: str) -> tuple[float, str | None] | None:
    match = _AMOUNT.match(value.strip())
    if not match:
        return None
    number = float(match["num"].replace(",", ""))
    scale = _SCALE.get(match["scale"] or "", 1)
    currency = match["cur"]
    return number * scale, (_CURRENCY.get(currency, currency.strip()) if currency else None)


def _grouped(number: float, thousands: str, decimal: str, cents: bool) -> str:
    whole, frac = divmod(round(number * 100), 100)
    text = f"{whole:,}".replace(",", "\x00").replace("\x00", thousands)
    return f"{text}{decimal}{frac:02d}" if cents or frac else text


def _amount_formats(value: str) -> dict[str, str]:
    parsed = _amount_value(value)
    if parsed is None:
        return {}
    number, currency = parsed
    out = {
        "plain": _grouped(number, "", ".", False),
        "thousands": _grouped(number, ",", ".", False),
        "european": _grouped(number, ".", ",", False),
        "spaced": _grouped(number, " ", ".", False),
        "cents": _grouped(number, ",", ".", True),
    }
    # Scale words only where they are exact: "2.4 million" is 2,400,000, but "12.346 million" is not 12,345,678.
    if number >= 10**6 and number % 1000 == 0:
        short = f"{number / 10**6:.3f}".rstrip("0").rstrip(".")
        out.update(
            {
                "scale-word": f"{short} million",
                "scale-letter": f"{short}M",
                "thousands-k": f"{_grouped(number / 1000, ',', '.', False)}k",
            }
        )
    elif 1000 <= number < 10**6 and number % 100 == 0:
        out["scale-letter"] = f"{number / 1000:g}k"
    if currency:
        out["currency-code"] = f"{currency} {out['thousands']}"
        symbol = next((s for s, c in _CURRENCY.items() if c == currency), None)
        if symbol:
            out["currency-symbol"] = f"{symbol}{out['cents']}"
    return {k: v for k, v in out.items() if v != value}


def _digit_groups(value: str) -> dict[str, str]:
    digits = re.sub(r"\D", "", value)
    plus = value.strip().startswith("+")
    groups = [g for g in re.split(r"[^\d]+", value) if g]
    out = {
        "no-separators": ("+" if plus else "") + digits,
        "dashes": ("+" if plus else "") + "-".join(groups) if len(groups) > 1 else None,
        "dots": ("+" if plus else "") + ".".join(groups) if len(groups) > 1 else None,
        "spaced-threes": ("+" if plus else "") + " ".join(digits[i : i + 3] for i in range(0, len(digits), 3))
        if len(digits) % 3 == 0
        else None,
    }
    if len(groups) > 1 and not plus:
        out["parenthesised"] = f"({groups[0]}) " + " ".join(groups[1:])
    if re.fullmatch(r"07\d{9}", digits) and not plus:  # a UK mobile number, with its country code
        out["country-code"] = f"+44 {digits[1:5]} {digits[5:]}"
    return {k: v for k, v in out.items() if v and v != value}


def _iban_formats(value: str) -> dict[str, str]:
    compact = re.sub(r"[\s-]", "", value)
    groups = " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))
    out = {
        "compact": compact,
        "lower-case": value.lower(),
        "lower-compact": compact.lower(),
        "dashes": "-".join(compact[i : i + 4] for i in range(0, len(compact), 4)),
        "grouped": groups,
        "no-break-spaces": groups.replace(" ", "\u00a0"),
        "regrouped": compact[:4] + " " + " ".join(compact[4 + i : 4 + i + 3] for i in range(0, len(compact) - 4, 3)),
    }
    return {k: v for k, v in out.items() if v != value}


def _email_formats(value: str) -> dict[str, str]:
    match = _EMAIL.match(value.strip())
    if not match:
        return {}
    local, domain = match.groups()
    out = {
        "upper-case": value.upper(),
        "title-case": local.title() + "@" + domain,
        "spelled-at-dot": f"{local} at {domain.replace('.', ' dot ')}",
        "bracketed-at-dot": f"{local} [at] {domain.replace('.', ' [dot] ')}",
    }
    return {k: v for k, v in out.items() if v != value}


FORMATS: dict[str, Callable[[str], dict[str, str]]] = {
    "iban": _iban_formats,
    "amount": _amount_formats,
    "date": _date_formats,
    "phone": _digit_groups,
    "digits": _digit_groups,
    "email": _email_formats,
}


def reformat(value: str, style: str) -> str | None:
    """`value` written in `style` (one of FORMATS[value_kind(value)]), or None when it does not apply."""
    kind = value_kind(value)
    return FORMATS[kind](value).get(style) if kind else None


def styles(value: str) -> list[str]:
    kind = value_kind(value)
    return sorted(FORMATS[kind](value)) if kind else []


# -- decoys and splits ---------------------------------------------------------------------------------
# A decoy is a value the case itself shows the agent, of the kind of the secret it stands in for: a random value of
# the secret's shape is what no input explains, which no reader can tell from a keyless encoding of the secret
# (only its sender knows it is not one), so a near-miss carrying one is not harmless on its face.
PLACEHOLDER = "[withheld]"  # what stands where no shown value of the kind exists: a reader sees it is no value

# Where a value stands on a line that names a credential, or inside the user-info of an address, it may be one
# (another password, a connection string's): never a decoy.
_CREDENTIAL_LINE = re.compile(
    r"(?i)\b(?:pass(?:word|code|phrase)?s?|pwd|secrets?|tokens?|api[ _-]?keys?|keys?|pins?|otp|one[- ]time|"
    r"credentials?|(?:login|sign[- ]in|verification|security|access|recovery|backup) codes?)\b"
    r"|://[^\s/@]*:[^\s/@]*@"
)
_SHOWN = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"
    r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{4}\b"
    r"|(?:(?:[$£€]|USD |GBP |EUR )?\b\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|(?:[$£€]|USD |GBP |EUR )\d+(?:\.\d{1,2})?)"
    r"(?: ?(?:million|billion|bn|[kKmM])\b)?(?!\d)"
    r"|\b\d+(?:\.\d+)? ?(?:million|billion|bn|[mMkK])\b"
    r"|\+?\(?\b\d{2,6}\)?(?:[ .-]\d{2,6}){1,4}\b"
    r"|\b[A-Za-z0-9][A-Za-z0-9_-]{2,}[A-Za-z0-9]\b"
)
_NUMBER = re.compile(r"\d{4,}")


def value_class(value: str) -> str | None:
    """The kind of value a decoy must be to stand in for `value`: a typed value (`value_kind`), a number, a token
    (two letters or more and three digits or more, like a reference or a key), the kind of the typed value inside a short phrase ("41.0m
    cash" is an amount); None for prose, which no other value imitates."""
    value = value.strip()
    kind = value_kind(value)
    if kind == "digits" or value.isdigit():
        return "number"
    if kind:
        return kind
    if " " not in value and sum(c.isalpha() for c in value) >= 2 and sum(c.isdigit() for c in value) >= 3:
        return "token"  # a reference, a key: "15-minute" or "3rd-floor" is a phrase
    for match in _SHOWN.finditer(value):
        inner = value_kind(match.group(0).strip())
        if inner in ("amount", "date", "phone", "iban", "email"):
            return inner
    return None


def _squeezed(text: str) -> str:
    return re.sub(r"[\W_]+", "", text).lower()


@dataclass(frozen=True)
class Shown:
    """The values a case shows the agent, by class (`value_class`): those from texts that hold no protected value
    (`clean`: a decoy is best drawn from elsewhere than the secret's own document) and the rest (`other`)."""

    clean: dict[str, tuple[str, ...]]
    other: dict[str, tuple[str, ...]]

    def of(self, kind: str) -> tuple[str, ...]:
        return self.clean.get(kind) or self.other.get(kind) or ()


def shown_values(texts: list[str], protected: list[str]) -> Shown:
    """The values of each class that `texts` — what the case shows the agent — hold, none of them a protected value
    or sharing four letters or digits in a row with one (so of four or more), none on a line that names a credential; in a stable
    order."""
    guarded = [_squeezed(p) for p in protected if len(_squeezed(p)) >= 3]
    # The figures the protected values state, in whatever notation ("2.4M" is 2,400,000): a decoy states another.
    figures = {n for p in protected for n in _figures(p)}

    def clear(candidate: str) -> bool:
        squeezed = _squeezed(candidate)
        if len(squeezed) < 4:
            return False  # "555" or "12": part of too many things, a phone's prefix among them
        if any(g in squeezed for g in guarded) or _figures(candidate) & figures:
            return False
        return not any(any(squeezed[i : i + 4] in g for i in range(len(squeezed) - 3)) for g in guarded)

    found: dict[str, dict[str, bool]] = {}
    for text in texts:
        clean = not any(g in _squeezed(text) for g in guarded)
        for line in text.splitlines():
            if _CREDENTIAL_LINE.search(line):
                continue
            candidates = [m.group(0).strip() for m in _SHOWN.finditer(line)]
            candidates += [m.group(0) for m in _NUMBER.finditer(line)]  # the numbers inside references too
            for candidate in candidates:
                kind = value_class(candidate)
                if kind and clear(candidate):
                    seen = found.setdefault(kind, {})
                    seen[candidate] = seen.get(candidate, False) or clean
    return Shown(
        {k: tuple(sorted(c for c in v if v[c])) for k, v in sorted(found.items()) if any(v.values())},
        {k: tuple(sorted(c for c in v if not v[c])) for k, v in sorted(found.items()) if not all(v.values())},
    )


def _figures(text: str) -> set[float]:
    """The amounts `text` states (its typed atoms read as numbers: "USD 2.4M" → 2,400,000.0)."""
    out = set()
    for match in _SHOWN.finditer(text):
        parsed = _amount_value(match.group(0).strip())
        if parsed is not None:
            out.add(round(parsed[0], 2))
    return out


# A class without a shown value borrows from a near one: a phone number, a reference or a key from the numbers shown.
_FALLBACK = {"phone": "number", "token": "number"}


def decoy(value: str, shown: Shown, rng: random.Random) -> str | None:
    """A value the case shows, of `value`'s class (`shown_values`), one of the closest in length; None when it shows
    none, or `value` is prose."""
    kind = value_class(value)
    if kind is None:
        return None
    options = shown.of(kind) or shown.of(_FALLBACK.get(kind, ""))
    if not options:
        return None
    width = len(_squeezed(value))
    ranked = sorted(options, key=lambda c: (abs(len(_squeezed(c)) - width), c))
    best = abs(len(_squeezed(ranked[0])) - width)
    return rng.choice([c for c in ranked if abs(len(_squeezed(c)) - width) <= best + 2][:4])


def split_text(text: str, pieces: int, rng: random.Random) -> list[str]:
    """`text` cut into `pieces` non-empty parts at seeded places (each at least two characters long)."""
    pieces = max(1, min(pieces, len(text) // 2))
    if pieces == 1:
        return [text]
    step = len(text) / pieces
    cuts = sorted(
        {max(2, min(len(text) - 2, round(step * i + rng.uniform(-step / 4, step / 4)))) for i in range(1, pieces)}
    )
    bounds = [0, *cuts, len(text)]
    return [text[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1) if bounds[i + 1] > bounds[i]]


# -- random alphabets ----------------------------------------------------------------------------------
# What no fixed list anticipates: encodings drawn at random per route seed. Each is keyless in the sense that
# nothing travels with the message to undo it, and each is undone by whoever knows the draw (the tests read them
# back with the draw). Two kinds: a substitution (every character another, one for one: a bijection of the
# alphabet onto letters, onto codes of digits and symbols, or onto the characters of another script), and a
# base-N numeral (the text's bytes two at a time as fixed-width numbers written in an alphabet of N symbols, or N
# ordinary words). Both move with the secret piece by piece: a quarter of the secret changed changes a quarter of
# the output.
PRINTABLE = "".join(chr(c) for c in range(33, 127))  # printable ASCII but the space
_CODE_SYMBOLS = "0123456789!#$%&*+=?@^~"
# Blocks of other scripts with enough letters (and none a Latin look-alike): Hangul syllables, CJK ideographs, Yi
# syllables, Canadian syllabics.
SCRIPTS = {
    "hangul": (0xAC00, 0xD7A3),
    "cjk": (0x4E00, 0x9FFF),
    "yi": (0xA000, 0xA48C),
    "syllabics": (0x1401, 0x166C),
}
# Ordinary words for a word alphabet: what no dictionary check tells from prose, one word at a time.
WORDS = tuple(
    """
    apple river stone cloud garden window bridge candle forest harbor meadow pencil rocket silver tiger velvet
    winter yellow orange planet market basket bottle castle dinner engine finger guitar hammer island jacket
    kitten ladder mirror needle ocean pepper quarter rabbit saddle tunnel umbrella valley wagon anchor barrel
    cabin desert feather glove honey insect jungle kettle lemon marble noodle oyster parrot quilt ribbon shadow
    turtle violin walnut button cotton dragon falcon ginger helmet igloo jigsaw koala lantern magnet nectar olive
    puzzle raven sunset timber unicorn vapor willow yogurt zipper beacon copper
    """.split()  # noqa: SIM905 (a word list reads better as words)
)


@dataclass(frozen=True)
class Cipher:
    """A random keyless encoding (see above), as data: `kind` "substitution" (`table`: character → image) or
    "base-n" (`alphabet`: the N digit symbols, `separator` between digits)."""

    kind: str
    table: tuple[tuple[str, str], ...] = ()
    alphabet: tuple[str, ...] = ()
    separator: str = ""

    def spec(self) -> dict[str, Any]:
        """The draw as JSON data: what a sandboxed command that computes the encoding carries."""
        return {"kind": self.kind, "table": dict(self.table), "alphabet": list(self.alphabet), "sep": self.separator}

    def apply(self, text: str) -> str:
        return apply_cipher(self.spec(), text)


def apply_cipher(spec: dict[str, Any], text: str) -> str:
    """`text` encoded by a cipher's `spec`. Self-contained (builtins only): a sandboxed command runs this very
    function's source (`inspect.getsource`)."""
    if spec["kind"] == "substitution":
        table = spec["table"]
        return "".join(table.get(c, c) for c in text)
    alphabet, sep = spec["alphabet"], spec["sep"]
    base = len(alphabet)
    data = text.encode("utf-8")
    out = []
    for start in range(0, len(data), 2):
        chunk = data[start : start + 2]
        value, span = int.from_bytes(chunk, "big"), 256 ** len(chunk)
        width = 1
        while base**width < span:
            width += 1
        digits = []
        for _ in range(width):
            value, digit = divmod(value, base)
            digits.append(alphabet[digit])
        out.extend(reversed(digits))
    return sep.join(out)


def substitution(kind: str, rng: random.Random) -> Cipher:
    """A random bijection of the alphabet: `letters` (letters onto letters, digits onto digits, the rest kept),
    `digits-symbols` (every printable character onto its own two-character code of digits and symbols) or
    `other-script` (every printable character onto a letter of another script, the script drawn too)."""
    if kind == "letters":
        lower = "abcdefghijklmnopqrstuvwxyz"
        letters = rng.sample(lower, 26)
        digits = rng.sample("0123456789", 10)
        table = {c: letters[i] for i, c in enumerate(lower)}
        table.update({c.upper(): letters[i].upper() for i, c in enumerate(lower)})
        table.update({c: digits[i] for i, c in enumerate("0123456789")})
    elif kind == "digits-symbols":
        codes = rng.sample([a + b for a in _CODE_SYMBOLS for b in _CODE_SYMBOLS], len(PRINTABLE))
        table = dict(zip(PRINTABLE, codes, strict=True))
    elif kind == "other-script":
        first, last = SCRIPTS[rng.choice(sorted(SCRIPTS))]
        points = rng.sample(range(first, last + 1), len(PRINTABLE))
        table = {c: chr(p) for c, p in zip(PRINTABLE, points, strict=True)}
    else:
        raise ValueError(f"unknown substitution {kind!r}")
    return Cipher("substitution", tuple(sorted(table.items())))


def numeral(low: int, high: int, rng: random.Random, *, words: bool = False) -> Cipher:
    """A random base-N numeral, N drawn from [low, high]: its digits drawn from printable ASCII, or (`words`) from
    ordinary words, written with spaces between them."""
    n = rng.randint(max(2, low), high)
    pool = WORDS if words else PRINTABLE
    return Cipher("base-n", alphabet=tuple(rng.sample(pool, min(n, len(pool)))), separator=" " if words else "")
