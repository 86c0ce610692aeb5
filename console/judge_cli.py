"""`redagent judge`, `recognize`, `stats`, `report` and `export`: label a run's rollouts, and read its results
out — one statistics table, the full report, or every rollout with its evidence as JSON lines or Inspect logs. The readers
never create a missing store. Errors take cli_common's one-line path."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import typer

from redagent.console.cli_common import DB_OPTION, Commands, clean, examples, fail, opened_store, out, print_json, split

# Mounted without a name (console/cli.py): its commands are top-level, `redagent judge`, `redagent stats`, …
judge_app = typer.Typer(cls=Commands)


# What judging and recognition both take for each judge call.
TIMEOUT_OPTION = typer.Option(60.0, "--timeout", help="seconds per judge call")
RETRIES_OPTION = typer.Option(
    3, "--retries", help="retries per judge call (408, 409, 429, 5xx, dropped connections, malformed replies)"
)
MAX_TOKENS_OPTION = typer.Option(2048, "--max-tokens", help="most tokens per judge reply")


@judge_app.command(
    "judge",
    epilog=examples(
        "redagent judge run-3fa2",
        "redagent judge run-3fa2 --views state,hybrid --backbone openai/gpt-4o-mini --concurrency 4",
    ),
)
def judge(
    run_id: str = typer.Argument(...),
    views: str = typer.Option("trajectory,state,hybrid", "--views", help="evidence views to judge under"),
    backbone: str = typer.Option("rule", "--backbone", help="'rule' (deterministic) or a litellm model string"),
    api_base: str | None = typer.Option(None, "--api-base"),
    concurrency: int = typer.Option(8, "--concurrency"),
    timeout: float = TIMEOUT_OPTION,
    retries: int = RETRIES_OPTION,
    max_tokens: int = MAX_TOKENS_OPTION,
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Label every valid rollout of a run under each view's judging configuration (cached by config hash)."""
    from redagent.judges.labelling import judge_run

    with opened_store(db) as store:
        report = judge_run(
            store,
            run_id,
            split(views),
            backbone=backbone,
            api_base=api_base,
            concurrency=concurrency,
            timeout=timeout,
            retries=retries,
            max_tokens=max_tokens,
        ).to_dict()
    if as_json:
        print_json(report)
        return
    for name in report["configs"]:
        out.print(
            f"{name} ({backbone}): judged {report['judged'].get(name, 0)}, cached {report['cached'].get(name, 0)}"
            f", failed {report['failed'].get(name, 0)}",
            highlight=False,
        )
    if report["stale_cases"]:
        out.print(f"{report['stale_cases']} rollouts skipped: their case changed since the run", highlight=False)


@judge_app.command(
    "recognize",
    epilog=examples("redagent recognize run-3fa2", "redagent recognize run-3fa2 --backbone openai/gpt-4o-mini"),
)
def recognize(
    run_id: str = typer.Argument(...),
    backbone: str | None = typer.Option(None, "--backbone", help="a litellm model; default: the lexical judge"),
    api_base: str | None = typer.Option(None, "--api-base"),
    concurrency: int = typer.Option(8, "--concurrency"),
    timeout: float = TIMEOUT_OPTION,
    retries: int = RETRIES_OPTION,
    max_tokens: int = MAX_TOKENS_OPTION,
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Recognition labels (broad and strict R, action anchor) for every harmful (E=1) rollout."""
    from redagent.judges.labelling import recognize_run

    with opened_store(db) as store:
        result = recognize_run(
            store,
            run_id,
            backbone=backbone,
            api_base=api_base,
            concurrency=concurrency,
            timeout=timeout,
            retries=retries,
            max_tokens=max_tokens,
        )
    if as_json:
        print_json(result)
    else:
        out.print(
            f"{result['judge']}: {result['labelled']} labelled ({result['unresolved']} unresolved anchors, "
            f"{result['failed']} failed), {result['cached']} already labelled",
            highlight=False,
        )


@judge_app.command("stats", epilog=examples("redagent stats run-3fa2", "redagent stats run-3fa2 views --json"))
def stats_command(
    run_id: str = typer.Argument(...),
    table: str = typer.Argument("asr", help="asr | utility | views | ranking | cue | defense | reg | audit | adaptive"),
    backbone: str = typer.Option("rule", "--backbone"),
    recognition: str = typer.Option("lexical", "--recognition-judge"),
    reps: int = typer.Option(10_000, "--reps", help="bootstrap replicates"),
    seed: int = typer.Option(0, "--seed"),
    audit_id: str | None = typer.Option(None, "--audit", help="the audit to report (default: the run's newest)"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Print one statistics table, with its protocol and valid denominators."""
    from redagent.judges.report import TABLES, build_report, markdown

    if table not in TABLES:
        fail(f"unknown table {table!r} (known: {', '.join(TABLES)})")
    with opened_store(db, create=False) as store:
        report = build_report(
            store,
            run_id,
            backbone=backbone,
            recognition_judge=recognition,
            reps=reps,
            seed=seed,
            only=table,
            audit_id=audit_id,
        )
    # The ASR table comes with the utility table beside it (the same cells).
    shown = ("protocol", table, "utility") if table == "asr" else ("protocol", table)
    if as_json:
        print_json(report.to_json(shown))
    else:
        sys.stdout.write(clean(markdown(report.only(shown))) + "\n")


@judge_app.command("report", epilog=examples("redagent report run-3fa2 --out reports/run-3fa2"))
def report_command(
    run_id: str = typer.Argument(...),
    out_dir: Path = typer.Option(..., "--out", help="directory to write the report into"),
    formats: str = typer.Option("md,csv,json", "--format"),
    backbone: str = typer.Option("rule", "--backbone"),
    recognition: str = typer.Option("lexical", "--recognition-judge"),
    reps: int = typer.Option(10_000, "--reps"),
    seed: int = typer.Option(0, "--seed"),
    audit_id: str | None = typer.Option(None, "--audit", help="the audit to report (default: the run's newest)"),
    db: str | None = DB_OPTION,
) -> None:
    """Write every table (Markdown, CSV, JSON) and the plots (PNG) for a run."""
    from redagent.judges.report import build_report, write_report

    chosen = split(formats)
    unknown = [f for f in chosen if f not in ("md", "csv", "json")]
    if unknown:
        fail(f"unknown report format {unknown[0]!r} (known: md, csv, json)")
    with opened_store(db, create=False) as store:
        report = build_report(
            store, run_id, backbone=backbone, recognition_judge=recognition, reps=reps, seed=seed, audit_id=audit_id
        )
    for path in write_report(report, out_dir, chosen):
        out.print(str(path), highlight=False)


@judge_app.command(
    "export",
    epilog=examples(
        "redagent export run-3fa2 --out run-3fa2.jsonl",
        "redagent export run-3fa2 --format inspect --out logs/run-3fa2",
    ),
)
def export(
    run_id: str = typer.Argument(...),
    fmt: str = typer.Option("jsonl", "--format", help="jsonl | inspect (Inspect AI eval logs, one per cell)"),
    output: Path | None = typer.Option(
        None, "--out", help="file to write (default: stdout); for inspect, the folder to write the logs into"
    ),
    db: str | None = DB_OPTION,
) -> None:
    """One rollout per line with all its evidence: events, receipts, diff, snapshots, E, validity, and its place in
    the run's evidence chain with the chain's head (`chain`); or, with
    `--format inspect`, the run as Inspect eval logs, one per cell, that `inspect view --log-dir DIR` opens (needs
    the inspect extra: pip install -e '.\\[inspect]')."""
    if fmt not in ("jsonl", "inspect"):
        fail(f"unknown export format {fmt!r} (known: jsonl, inspect)")
    if fmt == "inspect":
        from redagent.judges.inspect_export import export_run

        if output is None:
            fail("--format inspect writes a folder of logs: name it with --out DIR")
        with opened_store(db, create=False) as store:
            for path in export_run(store, run_id, output):
                out.print(str(path), highlight=False, soft_wrap=True)
        return
    with opened_store(db, create=False) as store:
        if store.get_run(run_id) is None:
            fail(f"no run {run_id!r} in the store")
        head, records, links = store.evidence_links(run_id)
        sink = output.open("wb") if output else sys.stdout.buffer
        try:
            for row in store.iter_export(run_id):
                # Each line carries the rollout's place and digest in the run's evidence chain and the chain's head
                # when exported: `redagent runs verify RUN --head HEAD` locates that head later.
                seq, digest = links.get(("rollout", row["rollout_id"]), (None, None))
                row["chain"] = {"seq": seq, "digest": digest, "head": head, "records": records}
                sink.write(orjson.dumps(row, default=str) + b"\n")
        finally:
            if output:
                sink.close()
