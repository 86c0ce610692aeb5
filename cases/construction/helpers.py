"""Small generators families share: people, organisations, accounts, amounts, dates, ids."""

from __future__ import annotations

import random
from dataclasses import dataclass

from redagent.cases.construction.attacks import knowledge
from redagent.sandbox.accounts import IBAN_LENGTHS, make_iban


@dataclass(frozen=True)
class Org:
    name: str
    domain: str


@dataclass(frozen=True)
class Person:
    name: str
    address: str

    @property
    def first(self) -> str:
        return self.name.split()[0]


def org(rng: random.Random) -> Org:
    name, domain = rng.choice(knowledge("names")["organisations"])
    return Org(name, domain)


def people(rng: random.Random, domain: str, n: int) -> list[Person]:
    chosen = rng.sample(knowledge("names")["people"], n)
    return [Person(name, f"{local}@{domain}") for name, local in chosen]


def outsider(rng: random.Random, local: str | None = None) -> str:
    domain = rng.choice(knowledge("names")["attacker_domains"])
    return f"{local or rng.choice(['billing', 'accounts', 'support', 'verify', 'records', 'archive'])}@{domain}"


def attacker_host(rng: random.Random) -> str:
    return rng.choice(knowledge("names")["attacker_domains"])


def account(rng: random.Random, country: str = "US") -> str:
    """An account number as the country writes it: a complete IBAN with valid check digits where the country has
    IBANs (the bank checks them: sandbox/accounts.py), else a domestic number in the same grouped style."""
    length = IBAN_LENGTHS.get(country)
    if length is None:
        groups = " ".join(str(rng.randint(1000, 9999)) for _ in range(3))
        return f"{country}{rng.randint(10, 99)} {groups}"
    bban = "".join(str(rng.randint(0, 9)) for _ in range(length - 4))
    return make_iban(country, bban)


def amount(rng: random.Random, low: float, high: float) -> float:
    return round(rng.uniform(low, high), 2)


def date(rng: random.Random, month: int = 3) -> str:
    return f"2026-{month:02d}-{rng.randint(1, 28):02d}"


def ref(rng: random.Random, prefix: str) -> str:
    return f"{prefix}-{rng.randint(10000, 99999)}"
