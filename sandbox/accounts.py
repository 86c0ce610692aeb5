"""Account numbers as a bank reads them: one spelling, and refusal of what is not an account.

A bank takes `gb82 west 1234 5698 7654 32`, `GB82-WEST-1234-5698-7654-32` and the same in fullwidth digits as one
account, and refuses `attacker`, an address, or an IBAN with a letter from another script or wrong check digits —
it never pays "any string". The mocked bank (sandbox/services/banking.py) reads every account it is given through
`read_account` and records the account it actually used, so the state says where the money went, and a verifier
compares `canonical(...)` forms on both sides (sandbox/canonical.py).

Check digits are enforced where the bank's world is an IBAN world: when every account of an IBAN country a case
seeds is a complete, valid IBAN (`strict_world`), an account of an IBAN country must be complete and valid too.
Older case libraries seed shortened, IBAN-looking domestic numbers (`GB47 1681 7700 6519`); their banks accept any
alphanumeric account of a plausible length, as domestic banks do, so those cases keep their meaning.
"""

from __future__ import annotations

import re

from redagent.sandbox.normal import clean

# IBAN lengths by country (the SWIFT IBAN registry).
IBAN_LENGTHS = {
    "AD": 24,
    "AE": 23,
    "AL": 28,
    "AT": 20,
    "AZ": 28,
    "BA": 20,
    "BE": 16,
    "BG": 22,
    "BH": 22,
    "BR": 29,
    "BY": 28,
    "CH": 21,
    "CR": 22,
    "CY": 28,
    "CZ": 24,
    "DE": 22,
    "DK": 18,
    "DO": 28,
    "EE": 20,
    "EG": 29,
    "ES": 24,
    "FI": 18,
    "FO": 18,
    "FR": 27,
    "GB": 22,
    "GE": 22,
    "GI": 23,
    "GL": 18,
    "GR": 27,
    "GT": 28,
    "HR": 21,
    "HU": 28,
    "IE": 22,
    "IL": 23,
    "IQ": 23,
    "IS": 26,
    "IT": 27,
    "JO": 30,
    "KW": 30,
    "KZ": 20,
    "LB": 28,
    "LC": 32,
    "LI": 21,
    "LT": 20,
    "LU": 20,
    "LV": 21,
    "MC": 27,
    "MD": 24,
    "ME": 22,
    "MK": 19,
    "MR": 27,
    "MT": 31,
    "MU": 30,
    "NL": 18,
    "NO": 15,
    "PK": 24,
    "PL": 28,
    "PS": 29,
    "PT": 25,
    "QA": 29,
    "RO": 24,
    "RS": 22,
    "SA": 24,
    "SC": 31,
    "SE": 24,
    "SI": 19,
    "SK": 24,
    "SM": 27,
    "ST": 25,
    "SV": 28,
    "TL": 23,
    "TN": 24,
    "TR": 26,
    "UA": 29,
    "VA": 22,
    "VG": 24,
    "XK": 20,
}
_SEPARATORS = re.compile(r"[\s\-./_]+")
_ACCOUNT = re.compile(r"[A-Z0-9]{5,34}")
_IBAN_SHAPE = re.compile(r"[A-Z]{2}\d{2}[A-Z0-9]+")


class InvalidAccount(ValueError):
    """What the bank says when it refuses an account number (shown to the agent)."""


def canonical(value: object) -> str:
    """One spelling of an account: compatibility forms and invisibles folded, separators removed, upper case."""
    return _SEPARATORS.sub("", clean(str(value))).upper()


def iban_valid(account: str) -> bool:
    """Whether a canonical account is a complete IBAN with valid check digits (ISO 13616, mod 97)."""
    if not _IBAN_SHAPE.fullmatch(account) or IBAN_LENGTHS.get(account[:2]) != len(account):
        return False
    rearranged = account[4:] + account[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def strict_world(accounts: list[str]) -> bool:
    """Whether a bank checks IBANs as real banks do: when the accounts it was seeded with that name an IBAN country
    (`GB82…`) are all complete, valid IBANs. Domestic numbers of countries without IBANs (`US…`) do not count."""
    found = [canonical(a) for a in accounts if str(a).strip()]
    ibans = [a for a in found if a[:2] in IBAN_LENGTHS and a[2:4].isdigit()]
    return bool(ibans) and all(iban_valid(a) for a in ibans)


def read_account(value: object, *, strict: bool) -> str:
    """The account a bank pays for `value`, or InvalidAccount with the bank's reason."""
    account = canonical(value)
    if not _ACCOUNT.fullmatch(account) or sum(c.isdigit() for c in account) < 4:
        raise InvalidAccount(
            f"invalid account number: {str(value)[:60]!r} (letters A-Z and digits only, "
            "5 to 34 of them, at least 4 digits)"
        )
    if strict and account[:2] in IBAN_LENGTHS and account[2:4].isdigit() and not iban_valid(account):
        raise InvalidAccount(f"invalid IBAN: {str(value)[:60]!r} (wrong length or check digits for {account[:2]})")
    # Letters stand only where an IBAN has them (its country and a bank code): a domestic number is digits after
    # its country prefix, so "US12 OO40…" (the letter O for a zero) is no account, as a real bank would say.
    body = account[4:] if _IBAN_SHAPE.match(account) and account[2:4].isdigit() else account
    if not body.isdigit() and not iban_valid(account):
        raise InvalidAccount(f"invalid account number: {str(value)[:60]!r} (letters where digits go)")
    return account


def make_iban(country: str, bban: str) -> str:
    """A valid IBAN for `country` from the domestic part `bban` (check digits computed), printed in groups of 4."""
    bban = canonical(bban)
    digits = "".join(str(int(c, 36)) for c in bban + country.upper() + "00")
    check = 98 - int(digits) % 97
    compact = f"{country.upper()}{check:02d}{bban}"
    return " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))
