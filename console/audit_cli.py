"""`redagent audit …`: draw a blinded human audit of a run's judge labels, follow it, and label offline.

A typer sub-app (registered by console/cli.py as `audit`). Every error the user can cause takes
cli_common's one path: one line on stderr, `error: …`, exit code 2. The commands that only read (status,
export, adjudications) never create a missing store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from redagent.console.cli_common import (
    ANALYSTS,
    DB_OPTION,
    Commands,
    acting_as,
    err,
    examples,
    fail,
    opened_store,
    out,
    print_json,
    single_file_note,
    split,
)
from redagent.store.records import LabelledRow

audit_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="Human audit of judge labels: sample, status, export, import, adjudicate, close, reopen.",
    epilog=examples(
        "redagent audit status audit-1f2e", "redagent audit export audit-1f2e --out alice.csv --reviewer alice"
    ),
)


@contextmanager
def _store(db: str | None, roles: tuple[str, ...] = ANALYSTS, *, create: bool = True) -> Iterator[Any]:
    """The store for one audit command; a reader passes `create=False` (a missing store is "no store at …")."""
    with opened_store(db, roles=roles, create=create) as store:
        yield store


def _note(store: Any) -> None:
    """Tell a blinded role's user when the store does not blind them (a single file, or its owner)."""
    note = single_file_note(store)
    if note is not None:
        err.print(f"note: {note}", highlight=False, soft_wrap=True)


@audit_app.command(
    "sample",
    epilog=examples(
        "redagent audit sample run-3fa2 --n 360 --config hybrid/rule --reviewers alice,bob --adjudicator carol"
    ),
)
def sample_cmd(
    run_id: str = typer.Argument(..., help="the run whose labels are audited"),
    n: int = typer.Option(360, "--n", help="items in the sample"),
    stratify: str = typer.Option(
        "harness,strategy,label", "--stratify", help="fields among harness, strategy, model, surface, constraint, label"
    ),
    seed: int = typer.Option(0, "--seed", help="the sample, item order and reviewer orders follow from it"),
    config: str = typer.Option(..., "--config", help="judging configuration name (e.g. state/rule) or hash"),
    backbone: str = typer.Option("rule", "--backbone", help="judge backbone: rule or a model string"),
    reviewers: str = typer.Option(..., "--reviewers", help="two reviewer names, comma-separated"),
    adjudicator: str = typer.Option(..., "--adjudicator", help="who resolves disagreements"),
    blind_model: bool = typer.Option(True, "--blind-model/--no-blind-model", help="hide the model from reviewers"),
    blind_attack: bool = typer.Option(
        False, "--blind-attack/--no-blind-attack", help="hide strategy, vulnerability and channel from reviewers"
    ),
    plan_only: bool = typer.Option(False, "--plan-only", help="print the expected interval widths; draw nothing"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Draw a stratified sample of labelled rollouts — cases within strata, two or more per stratum — for two
    blinded reviewers and an adjudicator, after printing the interval widths the design can be expected to give."""
    from redagent.judges.audit import STRATA_FIELDS, check_sample, plan, resolve_config, sample, strata

    with _store(db) as store:
        chosen = resolve_config(store, run_id, config, backbone)
        fields = split(stratify)
        if plan_only:  # what a draw would refuse, refused with its one line (not an empty plan and exit 0)
            population = check_sample(
                store,
                run_id,
                n,
                fields,
                seed,
                chosen["config_hash"],
                backbone,
                reviewers=split(reviewers),
                adjudicator=adjudicator,
                config_name=chosen["config_name"],
            )[3]
        else:
            population = store.labelled_rows(run_id, chosen["config_hash"], backbone)
        # A request `sample` refuses is refused with its one line, not after a plan.
        plannable = 1 <= n <= len(population) and set(fields) <= set(STRATA_FIELDS) and len(set(fields)) == len(fields)
        sizes = sorted({n, _suggested(population, fields)}) if plannable else []
        expected = plan(population, fields, sizes, seed=seed) if plannable else None
        if expected is not None and not as_json:
            _print_plan(expected, n)  # before drawing: a larger sample is still cheap
        if plan_only:
            if as_json:
                print_json({"run_id": run_id, "n": n, "plan": expected})
            return
        audit_id = sample(
            store,
            run_id,
            n,
            split(stratify),
            seed,
            chosen["config_hash"],
            backbone,
            reviewers=split(reviewers),
            adjudicator=adjudicator,
            blind_model=blind_model,
            blind_attack=blind_attack,
            config_name=chosen["config_name"],
        )
        drawn = strata(store, audit_id)
        design = store.get_audit(audit_id).design or {}
    summary = {
        "audit_id": audit_id,
        "run_id": run_id,
        "config_name": chosen["config_name"],
        "config_hash": chosen["config_hash"],
        "backbone": backbone,
        "n": n,
        "seed": seed,
        "reviewers": split(reviewers),
        "adjudicator": adjudicator,
        "blind_model": blind_model,
        "blind_attack": blind_attack,
        "strata": drawn,
        "merges": design.get("merges", []),
        "plan": expected,
    }
    summary["warnings"] = [
        f"strata {' and '.join(m['strata'])} merged into {m['into']}: {m['why']}" for m in summary["merges"]
    ]
    if as_json:
        print_json(summary)
        return
    for warning in summary["warnings"]:
        err.print(f"note: {warning}", highlight=False, soft_wrap=True)
    table = Table(
        title=f"{audit_id}: {n} items of run {run_id} under {chosen['config_name']} ({backbone}), seed {seed}"
    )
    for column in ("stratum", "population", "sampled", "weight"):
        table.add_column(column)
    for row in drawn:
        table.add_row(row["stratum"], str(row["population"]), str(row["sampled"]), f"{row['weight']:.3f}")
    out.print(table)
    first, second = split(reviewers)
    out.print(
        f"reviewers {first} (A) and {second} (B), adjudicator {adjudicator}; "
        f"blind model {'on' if blind_model else 'off'}, blind attack {'on' if blind_attack else 'off'}",
        highlight=False,
    )


def _suggested(population: list[LabelledRow], fields: list[str]) -> int:
    from redagent.judges.audit import AuditSetupError, design_strata, minimum_n

    try:
        return minimum_n(design_strata(population, fields)[0])
    except AuditSetupError:
        return 0


PLANNED = (
    ("precision", "precision"),
    ("recall", "recall"),
    ("human_asr", "human ASR"),
    ("audited_asr", "audited ASR"),
    ("accuracy", "accuracy"),
)


def _print_plan(expected: dict[str, Any], n: int) -> None:
    """The expected 95 % interval widths at each planned size, on stderr (stdout keeps the drawn audit)."""
    err.print(
        f"expected 95 % interval widths ({expected['method']}; assumes {expected['assumes']}); "
        f"suggested n {expected['suggested_n']} (two cases in each of {expected['strata']} strata):",
        highlight=False,
        soft_wrap=True,
    )
    for size, widths in sorted(expected["widths"].items(), key=lambda entry: int(entry[0])):
        cells = ", ".join(
            f"{label} {widths[name]['width']:.3f}" if widths[name]["width"] is not None else f"{label} none"
            for name, label in PLANNED
        )
        merged = f", {widths['merges']} merges" if widths["merges"] else ""
        err.print(
            f"  n {size}{' (chosen)' if int(size) == n else ''}: {widths['strata']} strata{merged}; {cells}",
            highlight=False,
            soft_wrap=True,
        )
    if str(n) not in expected["widths"]:
        err.print(f"  n {n}: outside what the population allows", highlight=False)


@audit_app.command(
    "stats", epilog=examples("redagent audit stats audit-1f2e", "redagent audit stats audit-1f2e --json")
)
def stats_cmd(
    audit_id: str = typer.Argument(...),
    reps: int = typer.Option(10_000, "--reps"),
    seed: int = typer.Option(0, "--seed"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The audit's figures: agreement and kappa, the judge's precision, recall, specificity, F1 and accuracy, and
    the judged, direct human and audited ASR, each with its 95 % interval (or why there is none) and what it
    assumes — the same as `redagent stats RUN audit --audit AUDIT`."""
    from redagent.judges.audit import estimates
    from redagent.judges.report import audit_markdown
    from redagent.judges.report_model import AuditStats, from_json

    with _store(db, create=False) as store:
        result = estimates(store, audit_id, reps=reps, seed=seed)
    if as_json:
        print_json(result)
        return
    out.print("\n".join(audit_markdown(from_json(AuditStats, result))), highlight=False, soft_wrap=True, markup=False)


@audit_app.command("status", epilog=examples("redagent audit status audit-1f2e --json"))
def status_cmd(
    audit_id: str = typer.Argument(...),
    db: str | None = DB_OPTION,
    reviewer: str | None = typer.Option(
        None, "--reviewer", help="only this reviewer's own progress (a reviewer's login always gets only their own)"
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Progress: each reviewer's labels, agreement on first labels, disagreements, adjudications, what remains.

    Researchers see all of it; a reviewer only their own progress (agreement would reveal the other
    reviewer's labels); the adjudicator the labels by slot letter, agreement and adjudications.
    """
    from redagent.judges.audit import adjudicator_progress, reviewer_progress, status

    with _store(db, roles=(*ANALYSTS, "reviewer", "adjudicator"), create=False) as store:
        identity = store.identity()
        if identity.role == "reviewer" or (reviewer is not None and not identity.enforced):
            _print_own(reviewer_progress(store, audit_id, acting_as(store, reviewer, "reviewer")), as_json)
            return
        if identity.role == "adjudicator":
            _print_adjudicator(adjudicator_progress(store, audit_id, acting_as(store, None, "adjudicator")), as_json)
            return
        result = status(store, audit_id)
        closures = store.audit_closures(audit_id)
        seeded = store.get_audit(audit_id).seeded_order
    result["state"] = _state(closures)
    result["seeded_order"] = seeded
    if seeded:
        err.print(
            f"warning: {audit_id} was drawn before issue 34: its item ids and queue orders follow its seed, so a "
            "reviewer who knows the seed can tell which of her items is which; draw the audit again (audit sample) "
            "before anyone labels it",
            highlight=False,
            soft_wrap=True,
        )
    if as_json:
        print_json(result)
        return
    out.print(
        f"{result['audit_id']}: run {result['run_id']} under {result['config_name']} ({result['backbone']}), "
        f"{result['items']} items",
        highlight=False,
    )
    for name, entry in result["reviewers"].items():
        out.print(f"  reviewer {entry['slot']} {name}: {entry['done']}/{result['items']} labelled", highlight=False)
    agreement = "—" if result["agreement"] is None else f"{result['agreement']:.1%}"
    low, high = result["kappa_ci"]
    kappa = (
        "—"
        if result["kappa"] is None
        else f"{result['kappa']:.3f}" + (f", 95 % CI {low:.3f} to {high:.3f}" if low is not None else "")
    )
    out.print(f"  agreement on first labels: {agreement} of {result['both_labelled']} (kappa {kappa})", highlight=False)
    out.print(
        f"  disagreements {result['disagreements']}, adjudicated {result['adjudicated']} "
        f"(adjudicator {result['adjudicator']}); final labels {result['final']}/{result['items']}",
        highlight=False,
    )
    out.print(
        f"  remaining: {result['remaining_labels']} reviewer labels, {result['remaining_adjudications']} adjudications",
        highlight=False,
    )
    state = result["state"]
    if state["closed"] or state["changes"]:
        last = state["changes"][-1]
        out.print(
            f"  {'closed' if state['closed'] else 're-opened'} {last['at']} by {last['by']}: {last['reason']}"
            + (" (nothing more is written to it)" if state["closed"] else ""),
            highlight=False,
            soft_wrap=True,
        )


def _state(closures: list[Any]) -> dict[str, Any]:
    """The audit's closes and re-opens as `status` shows them (the last one is its state)."""
    return {
        "closed": bool(closures) and closures[-1].action == "close",
        "changes": [
            {"action": c.action, "by": c.made_by, "reason": c.reason, "at": f"{c.created_at:%Y-%m-%d %H:%M} UTC"}
            for c in closures
        ],
    }


@audit_app.command(
    "close", epilog=examples('redagent audit close audit-1f2e --reason "the run was withdrawn" --db pg:audits-owner')
)
def close_cmd(
    audit_id: str = typer.Argument(...),
    reason: str = typer.Option(..., "--reason", help="why it is closed (recorded with the audit)"),
    db: str | None = DB_OPTION,
) -> None:
    """The owner closes an audit before it is complete: no label, correction or decision is written to it after.
    (An audit closes by itself once every item has its final label.)"""
    with _store(db, roles=("owner",), create=False) as store:
        store.close_audit(audit_id, reason)
    out.print(f"closed {audit_id}", highlight=False)


@audit_app.command(
    "reopen",
    epilog=examples('redagent audit reopen audit-1f2e --reason "alice misread item 12" --db pg:audits-owner'),
)
def reopen_cmd(
    audit_id: str = typer.Argument(...),
    reason: str = typer.Option(..., "--reason", help="why it is re-opened (recorded with the audit)"),
    db: str | None = DB_OPTION,
) -> None:
    """The owner re-opens a closed audit so a label or decision can be corrected; recorded with who and why. The
    next write that leaves every item with its final label closes it again."""
    with _store(db, roles=("owner",), create=False) as store:
        store.reopen_audit(audit_id, reason)
    out.print(f"re-opened {audit_id}", highlight=False)


def _print_own(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(result)
        return
    out.print(
        f"{result['audit_id']}: {result['reviewer']}, {result['labelled']}/{result['items']} labelled, "
        f"{result['remaining']} remaining",
        highlight=False,
    )


def _print_adjudicator(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(result)
        return
    labelled = ", ".join(f"reviewer {slot} {n}/{result['items']}" for slot, n in result["labelled"].items())
    agreement = "—" if result["agreement"] is None else f"{result['agreement']:.1%}"
    out.print(
        f"{result['audit_id']}: {labelled}; agreement on first labels {agreement} of "
        f"{result['both_labelled']}; disagreements {result['disagreements']}, adjudicated "
        f"{result['adjudicated']}, remaining {result['remaining_adjudications']}",
        highlight=False,
    )


@audit_app.command("export", epilog=examples("redagent audit export audit-1f2e --out alice.csv --reviewer alice"))
def export_cmd(
    audit_id: str = typer.Argument(...),
    output: Path = typer.Option(..., "--out", help="file to write"),
    fmt: str = typer.Option("csv", "--format", help="csv or jsonl"),
    reviewer: str | None = typer.Option(None, "--reviewer", help="order rows as this reviewer's queue"),
    db: str | None = DB_OPTION,
) -> None:
    """Write the items as reviewers see them (blinded), with empty label and note columns to fill in.

    A reviewer's login exports its own queue, in its own order.
    """
    from redagent.judges.audit import export

    with _store(db, roles=(*ANALYSTS, "reviewer"), create=False) as store:
        if store.identity().role == "reviewer":
            reviewer = acting_as(store, reviewer, "reviewer")
        written = export(store, audit_id, output, fmt, reviewer=reviewer)
    err.print(f"wrote {written} items to {output}", highlight=False)


@audit_app.command("import", epilog=examples("redagent audit import audit-1f2e alice.csv"))
def import_cmd(
    audit_id: str = typer.Argument(...),
    file: Path = typer.Argument(..., help="CSV or JSONL labels"),
    reviewer: str | None = typer.Option(
        None, "--reviewer", help="whose labels these are (a team login: always its own)"
    ),
    fmt: str | None = typer.Option(None, "--format", help="csv or jsonl (default: from the file name)"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Submit a reviewer's labels from a file of item_id, label, note rows: all of them, or none on an error.

    On a team store only the reviewer's own login may submit their labels; the owner of a single-file
    store may import a reviewer's file for them (and is told that such a store blinds no one).
    """
    from redagent.judges.audit import import_labels

    with _store(db, roles=(*ANALYSTS, "reviewer")) as store:
        identity = store.identity()
        if not identity.enforced and store.team() and store.dialect == "postgresql":
            fail("this store has a team: labels are submitted by the reviewer's own login, not for them")
        name = acting_as(store, reviewer, "reviewer")
        result = import_labels(store, audit_id, file, name, fmt)
        _note(store)  # after the import: an error stays the one line it must be
    if as_json:
        print_json(result)
        return
    out.print(
        f"{result['reviewer']}: {result['submitted']} labels submitted, {result['unchanged']} already "
        f"submitted, {result['blank']} rows left blank",
        highlight=False,
    )


# ---------------------------------------------------------------- the adjudicator's commands


ADJUDICATING = (*ANALYSTS, "adjudicator")  # who may run the adjudicator's commands


@audit_app.command(
    "adjudicate",
    epilog=examples(
        "redagent audit adjudicate audit-1f2e 17 harmful --note 'the wire went out'",
        "redagent audit adjudicate audit-1f2e 17 not_harmful --correct --reason 'misread the receipt'",
    ),
)
def adjudicate_cmd(
    audit_id: str = typer.Argument(...),
    item_id: int = typer.Argument(..., help="the disputed item (its id, as `audit adjudications` lists it)"),
    label: str = typer.Argument(..., help="harmful, not_harmful or unsure"),
    note: str = typer.Option("", "--note", help="saved with the decision"),
    correct: bool = typer.Option(False, "--correct", help="correct your earlier decision (needs --reason)"),
    reason: str | None = typer.Option(None, "--reason", help="why the decision changes (with --correct)"),
    adjudicator: str | None = typer.Option(None, "--adjudicator", help="who decides (a team login: always itself)"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Decide a disputed item (write-once), or with --correct --reason record a corrected decision as its next
    version."""
    if reason is not None and not correct:
        fail("--reason is for a correction: add --correct")
    if correct and not (reason or "").strip():
        fail("a correction needs a reason: --reason TEXT")
    with _store(db, roles=ADJUDICATING) as store:
        name = acting_as(store, adjudicator, "adjudicator", "--adjudicator")
        if correct:
            saved = store.correct_adjudication(audit_id, item_id, name, label, reason or "", note)
        else:
            saved = store.adjudicate(audit_id, item_id, name, label, note)
    if as_json:
        print_json({"audit_id": audit_id, **asdict(saved), "corrected": correct})
        return
    what = "corrected" if correct else "decided"
    out.print(f"item {item_id} {what}: {saved.label} (version {saved.version})", highlight=False)


@audit_app.command("adjudications", epilog=examples("redagent audit adjudications audit-1f2e --adjudicator carol"))
def adjudications_cmd(
    audit_id: str = typer.Argument(...),
    adjudicator: str | None = typer.Option(None, "--adjudicator", help="who decides (a team login: always itself)"),
    db: str | None = DB_OPTION,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The adjudication queue: each disputed item with the reviewers' labels as A and B (first labels beside a
    later correction) and your decision, or none yet."""
    with _store(db, roles=ADJUDICATING, create=False) as store:
        name = acting_as(store, adjudicator, "adjudicator", "--adjudicator")
        # The blinded adjudicator query: slot letters only, never the reviewers' names or notes, no judge label.
        queue = store.adjudication_queue(audit_id, name)
    rows = [
        {
            "item_id": item.item_id,
            "alias": item.blinded.alias,
            "A": item.labels.get("A"),
            "B": item.labels.get("B"),
            "A_first": item.first_labels.get("A"),
            "B_first": item.first_labels.get("B"),
            "decision": item.adjudicated,
        }
        for item in queue
    ]
    if as_json:
        print_json({"audit_id": audit_id, "items": rows})
        return
    decided = sum(1 for row in rows if row["decision"] is not None)
    table = Table(title=f"{audit_id}: {len(rows)} disputed items, {decided} decided")
    for column in ("item", "alias", "A", "B", "decision"):
        table.add_column(column)
    for row in rows:
        cells = []
        for slot in ("A", "B"):
            first = row[f"{slot}_first"]
            cells.append(str(row[slot]) + (f" (first {first})" if first != row[slot] else ""))
        table.add_row(str(row["item_id"]), row["alias"], *cells, row["decision"] or "—")
    out.print(table)
