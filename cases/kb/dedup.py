"""Duplicates among the corpora's techniques: the same text (once normalised), or nearly the same.

Exact: texts equal after `normalise` (case, punctuation, whitespace and template-slot spelling folded) are one
technique; the first in corpus order is kept. Near: MinHash signatures over word 3-shingles, banded for
locality-sensitive hashing; two texts sharing a band are compared exactly (Jaccard of their shingle sets) and
one at `THRESHOLD` or above is a near-duplicate of the earlier. Both are bounded whatever the corpora hold:
shingles per text (`MAX_SHINGLES`), and comparisons per bucket (`MAX_BUCKET`: a bucket that a thousand
look-alike entries fall into costs at most that many comparisons per text, never a quadratic pass).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

HASHES = 32  # MinHash signature length
BANDS = 8  # LSH bands of HASHES // BANDS rows: pairs near THRESHOLD share a band with high probability
THRESHOLD = 0.8  # Jaccard similarity of word 3-shingles at or above which a text is a near-duplicate
MAX_SHINGLES = 1500
MAX_BUCKET = 64
_MASK = (1 << 64) - 1
# Fixed seeds: the signatures, and so the kept set, are the same on every run and machine.
_SEEDS = [
    int.from_bytes(hashlib.blake2b(f"redagent-kb-{i}".encode(), digest_size=8).digest(), "big") for i in range(HASHES)
]
_SLOT = re.compile(r"\{\{?\s*[\w.]*\s*\}?\}|\[(?:insert[^\]]*|prompt|question|query)\]", re.IGNORECASE)
_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)
_JINJA_RAW = re.compile(r"\{%-?\s*(?:raw|endraw)\s*-?%\}")  # PyRIT's escaping of a template's braces


def normalise(text: str) -> str:
    """The text as compared: template slots as one token, lower case, punctuation and spacing folded."""
    text = _SLOT.sub(" slot ", _JINJA_RAW.sub(" ", text))
    return " ".join(_NON_WORD.sub(" ", text.lower()).split())


def shingles(normalised: str) -> set[int]:
    words = normalised.split()
    if len(words) < 3:
        grams = [" ".join(words)]
    else:
        grams = [" ".join(words[i : i + 3]) for i in range(len(words) - 2)]
    return {int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "big") for g in grams[:MAX_SHINGLES]}


def signature(values: set[int]) -> tuple[int, ...]:
    # xor with a seed, then a multiplicative mix: a cheap family of hash permutations of the 64-bit shingle hashes
    return tuple(min(((v ^ s) * 0x9E3779B97F4A7C15) & _MASK for v in values) for s in _SEEDS)


def jaccard(a: set[int], b: set[int]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass
class Deduplicated:
    kept: list[int] = field(default_factory=list)  # indices of the kept texts, in input order
    exact: dict[int, int] = field(default_factory=dict)  # dropped index → the kept index it repeats
    near: dict[int, tuple[int, float]] = field(default_factory=dict)  # dropped index → (kept index, similarity)


def deduplicate(texts: Sequence[str], threshold: float = THRESHOLD) -> Deduplicated:
    """Which of `texts` to keep: the first of every exact or near-duplicate group, in order."""
    result = Deduplicated()
    seen: dict[str, int] = {}
    buckets: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    kept_shingles: dict[int, set[int]] = {}
    rows = HASHES // BANDS
    for index, text in enumerate(texts):
        norm = normalise(text)
        if norm in seen:
            result.exact[index] = seen[norm]
            continue
        seen[norm] = index
        values = shingles(norm)
        sig = signature(values)
        keys = [(band, sig[band * rows : (band + 1) * rows]) for band in range(BANDS)]
        best: tuple[int, float] | None = None
        compared: set[int] = set()
        for key in keys:
            for other in buckets.get(key, ())[:MAX_BUCKET]:
                if other in compared:
                    continue
                compared.add(other)
                similarity = jaccard(values, kept_shingles[other])
                if similarity >= threshold and (best is None or similarity > best[1]):
                    best = (other, similarity)
        if best is not None:
            result.near[index] = (best[0], round(best[1], 3))
            continue
        result.kept.append(index)
        kept_shingles[index] = values
        for key in keys:
            buckets.setdefault(key, []).append(index)
    return result
