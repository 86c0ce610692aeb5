"""Classification by a backbone model (`redagent kb ingest --backbone MODEL`), validated against the taxonomy.

The model is shown the taxonomy's codes and one technique (its text clipped, its corpus kind and carrier) and
answers one JSON object. The answer is checked like any hostile input — bounded in size, codes known, the
constraints a list of codes or "*" — and a rejected answer is shown to the model once with the problem named.
A technique the model never classifies validly keeps the rules' classification, and its mapping says so
(`method.model_refused`): every mapping records how it was made.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

from redagent.cases.kb.classify import ANY, MAPPING_VULNERABILITIES, Classification
from redagent.cases.kb.readers import Raw
from redagent.cases.taxonomy import CONSTRAINTS, STRATEGIES, VULNERABILITIES
from redagent.llm.client import Model, ModelFailure, ModelRequest

ATTEMPTS = 2
MAX_REPLY = 8000
SHOWN_TEXT = 2000  # characters of the technique the model sees
CONCURRENCY = 4
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def prompt(raw: Raw) -> str:
    return (
        "Classify one attack technique from a public red-teaming corpus onto this taxonomy.\n"
        "Intervention strategies: "
        + "; ".join(f"{s.code} {s.name} ({s.channel}): {s.description}" for s in STRATEGIES.values())
        + "\nVulnerabilities: "
        + "; ".join(f"{v.code} {v.name}" for v in VULNERABILITIES.values())
        + "\nConstraints an agent must keep: "
        + "; ".join(f"{c.code} {c.statement}" for c in CONSTRAINTS.values())
        + f"\n\nThe corpus calls it a {raw.kind}{f', carried by {raw.carrier}' if raw.carrier else ''}. "
        f"Its text, between the markers:\n<<<\n{raw.text[:SHOWN_TEXT]}\n>>>\n\n"
        'Answer with one JSON object and nothing else: {"strategy": "<code>", "vulnerability": "<code>", '
        '"constraints": ["<code>", ...]} — the vulnerability "*" for a wrapper that carries any goal and "none" '
        "for a request for content that names no action an agent takes; the constraints the technique's goal "
        'would break, ["*"] when it is a wrapper that carries any goal, [] when none applies.'
    )


def parse(content: str) -> Classification:
    """The model's answer as a classification, or ValueError naming what is wrong."""
    if not isinstance(content, str) or len(content) > MAX_REPLY:
        raise ValueError(f"the answer must be text of at most {MAX_REPLY} characters")
    match = _OBJECT.search(content)
    if not match:
        raise ValueError("no JSON object in the answer")
    data = json.loads(match.group(0))
    if not isinstance(data, dict):
        raise ValueError("the answer must be a JSON object")
    strategy, vulnerability, constraints = data.get("strategy"), data.get("vulnerability"), data.get("constraints")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}")
    if vulnerability not in MAPPING_VULNERABILITIES:
        raise ValueError(f"unknown vulnerability {vulnerability!r}")
    if not isinstance(constraints, list) or len(constraints) > len(CONSTRAINTS):
        raise ValueError("constraints must be a list of constraint codes")
    bad = [c for c in constraints if c != ANY and c not in CONSTRAINTS]
    if bad:
        raise ValueError(f"unknown constraint {bad[0]!r}")
    chosen = (ANY,) if ANY in constraints else tuple(sorted(set(constraints)))
    return Classification(strategy, vulnerability, STRATEGIES[strategy].channel, chosen, ())


async def _one(model: Model, raw: Raw, gate: asyncio.Semaphore) -> Classification | str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt(raw)}]
    problem = "no answer"
    async with gate:
        for _ in range(ATTEMPTS):
            try:
                reply = await model.complete(ModelRequest(messages=list(messages), harness="kb"))
            except ModelFailure as failure:
                return f"{failure.reason}: {failure.detail}"[:300]
            try:
                return parse(reply.content)
            except ValueError as exc:
                problem = str(exc)[:300]
            messages += [
                {"role": "assistant", "content": (reply.content or "")[:MAX_REPLY]},
                {"role": "user", "content": f"Your answer was rejected: {problem}. Answer again with the JSON object."},
            ]
    return problem


async def classify_all(model: Model, raws: Sequence[Raw]) -> list[Classification | str]:
    """Each technique's classification by the model, or the reason it has none (the rules' stands then)."""
    gate = asyncio.Semaphore(CONCURRENCY)
    return list(await asyncio.gather(*(_one(model, raw, gate) for raw in raws)))
