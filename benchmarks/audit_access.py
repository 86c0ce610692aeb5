"""What a reviewer waits for on a PostgreSQL team store: reading a page of her queue, and writing a label through the
definer function — the cost of issue 34's rules (members' views as function scans, the evidence-version check and
the closing rules on every label), measured before and after with the same script.

    python benchmarks/audit_access.py [--db postgresql+psycopg://…/postgres] [--items 360] [--page 20] [--repeat 3]
    PYTHONPATH=/path/to/old/tree python benchmarks/audit_access.py …   # the same against an older checkout

--db names a server and a role that may create databases and roles (default $REDAGENT_TEST_PG); a fresh database
is made and dropped. In it: a run of --items × 2 rollouts (12 events, 2 receipts and a diff each), judged; an audit
of --items items; two reviewers with logins of their own. Then, as the reviewer with her own login:

- a queue page: her queue (`reviewer_queue`: positions and her labels) and the evidence of --page items
  (`reviewer_item`), as the labelling screen reads them moving down the queue — per page and per item;
- a label write: `submit_label` of each item of the page through `redagent_submit_label`, per label; and the one
  label that gives the audit's last item its final label (the second reviewer's last), where the database now
  checks every item and closes the audit.

Times are wall clock (median and 90th percentile over --repeat rounds), on whatever else the machine is doing:
compare runs made one after the other. Only the PostgreSQL path is measured: on SQLite no member exists.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from redagent.store import open_store
from redagent.store.records import AuditItemRecord, AuditRecord, JudgeLabelRecord, RolloutRecord, RunRecord

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def conninfo(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def rollout(run_id: str, n: int) -> RolloutRecord:
    rollout_id = "ro-" + hashlib.sha256(f"{run_id}|{n}".encode()).hexdigest()[:16]
    events = [
        {
            "idx": i,
            "role": ("user", "assistant", "tool")[min(i, 1 + i % 2)],
            "text": f"step {i} of rollout {n}: " + "lorem ipsum " * 20,
            "tool_call": {"id": f"c{i}", "name": "banking.transfer", "args": {"amount": 10.5 * i}} if i % 2 else None,
            "original": None,
            "observation": "ok" if i and i % 2 == 0 else None,
            "receipts": ["r1"] if i == 2 else [],
            "tampered": False,
        }
        for i in range(12)
    ]
    receipts = [
        {
            "id": f"r{k}",
            "seq": k,
            "service": "banking",
            "action": "transfer",
            "args": {"amount": 10.5 * k},
            "outcome": "ok",
            "actor": "agent",
            "step": k,
            "effect": {"transfer": {"amount": 10.5 * k}},
            "error": None,
            "via": None,
        }
        for k in (1, 2)
    ]
    state = {"banking": {"balance": 5000 - n}}
    return RolloutRecord(
        id=rollout_id,
        run_id=run_id,
        case_id=f"banking/c{n // 2:04d}",
        case_version=1,
        case_hash="sha256:" + hashlib.sha256(str(n // 2).encode()).hexdigest()[:12],
        strategy="E2",
        vulnerability="V01",
        constraint="C01",
        surfaces=["banking"],
        channel="email",
        model="sim/comply",
        harness="native",
        cue="clean",
        defense="none",
        attempt=n % 2,
        valid=True,
        invalid_reason=None,
        invalid_detail=None,
        E=n % 2,
        evidence={"rule": "x"},
        expected_E=n % 2,
        reached=True,
        final_text="done",
        started_at=T0 + timedelta(seconds=n),
        finished_at=T0 + timedelta(seconds=n, milliseconds=900),
        duration_ms=900.0,
        prompt_tokens=800,
        completion_tokens=90,
        cost_usd=0.001,
        baseline_rollout_id=None,
        events=events,
        receipts=receipts,
        baseline={"banking": {"balance": 5000}},
        final=state,
        diff=[{"path": "banking.balance", "op": "changed", "before": 5000, "after": 5000 - n}],
    )


def build(url: str, items: int) -> tuple[str, dict[str, str], list[int]]:
    """The store, its audit and the reviewers' URLs; returns (audit id, {reviewer: url}, alice's items in order)."""
    with open_store(url) as owner:
        run_id = "run-bench"
        owner.create_run(
            RunRecord(
                id=run_id,
                status="finished",
                protocol={"models": ["sim/comply"], "harnesses": ["native"], "cues": ["clean"], "defenses": ["none"]},
                case_set_hash="sha256:cases",
                code_version="bench",
                planned=items * 2,
                created_at=T0,
            )
        )
        rollouts = [rollout(run_id, n) for n in range(items * 2)]
        for start in range(0, len(rollouts), 100):
            owner.write_rollouts(rollouts[start : start + 100])
        owner.write_judge_labels(
            [
                JudgeLabelRecord(
                    rollout_id=r.id,
                    run_id=run_id,
                    config_name="state/rule",
                    config_hash="h-state",
                    view="state",
                    contract_hash="c",
                    gate="agent-effects",
                    backbone="rule",
                    label=r.E,
                    status="ok",
                    rationale="r",
                )
                for r in rollouts
            ]
        )
        chosen = sorted(r.id for r in rollouts)[:items]
        owner.create_audit(
            AuditRecord(
                id="audit-bench",
                run_id=run_id,
                config_name="state/rule",
                config_hash="h-state",
                backbone="rule",
                seed=0,
                n=items,
                stratify=["label"],
                reviewers=["alice", "bob"],
                adjudicator="carol",
            ),
            [
                AuditItemRecord(r, "label=0", items * 2, items, 2.0, positions={"alice": k + 1, "bob": items - k})
                for k, r in enumerate(chosen)
            ],
        )
        urls = {name: owner.add_member(name, "reviewer").secret_url or "" for name in ("alice", "bob")}
        queue = [entry.item_id for entry in owner.reviewer_queue("audit-bench", "alice")]
    return "audit-bench", urls, queue


def percentiles(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return f"median {statistics.median(values) * 1000:7.2f} ms   p90 {p90 * 1000:7.2f} ms   (n={len(values)})"


def measure(url: str, bob_url: str, audit_id: str, queue: list[int], page: int, repeat: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {"page": [], "item": [], "label": []}
    with open_store(url) as alice:
        alice.reviewer_queue(audit_id, "alice")  # warm: the connection, the identity, the plans
        alice.reviewer_item(audit_id, queue[0], "alice")
        for round_ in range(repeat):
            shown = queue[round_ * page : (round_ + 1) * page]
            start = time.perf_counter()
            alice.reviewer_queue(audit_id, "alice")
            for item_id in shown:
                began = time.perf_counter()
                alice.reviewer_item(audit_id, item_id, "alice")
                found["item"].append(time.perf_counter() - began)
            found["page"].append(time.perf_counter() - start)
            for item_id in shown:
                began = time.perf_counter()
                alice.submit_label(audit_id, item_id, "alice", "harmful", "")
                found["label"].append(time.perf_counter() - began)
        labelled = {entry.item_id for entry in alice.reviewer_queue(audit_id, "alice") if entry.labelled}
        alice.submit_labels(audit_id, "alice", [(item, "harmful", "") for item in queue if item not in labelled])
    # The label that gives the audit's last item its final label: with issue 34 the database then checks that every
    # item is final and closes the audit (the check the other writes skip while first labels are missing).
    with open_store(bob_url) as bob:
        bob.submit_labels(audit_id, "bob", [(item, "harmful", "") for item in queue[:-1]])
        began = time.perf_counter()
        bob.submit_label(audit_id, queue[-1], "bob", "harmful", "")
        found["closing"] = [time.perf_counter() - began]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--db", default=os.environ.get("REDAGENT_TEST_PG"), help="an admin URL (default $REDAGENT_TEST_PG)"
    )
    parser.add_argument("--items", type=int, default=360)
    parser.add_argument("--page", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.db:
        raise SystemExit(
            "error: --db (or $REDAGENT_TEST_PG) must name a PostgreSQL server and a role that may create databases"
        )
    if args.page * args.repeat > args.items:
        raise SystemExit("error: --page × --repeat must not exceed --items (each label is written once)")
    name = f"redagent_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(conninfo(args.db), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = make_url(args.db).set(database=name).render_as_string(hide_password=False)
    logins: list[str] = []
    try:
        import redagent.store.migrate as migrate

        built = time.perf_counter()
        audit_id, urls, queue = build(url, args.items)
        print(
            f"schema {migrate.head_revision()}: {args.items * 2} rollouts, an audit of {args.items}, built in "
            f"{time.perf_counter() - built:.1f} s"
        )
        with open_store(url) as owner:
            logins = [member.login for member in owner.team() if member.login]
        found = measure(urls["alice"], urls["bob"], audit_id, queue, args.page, args.repeat)
        print(f"reviewer's queue page ({args.page} items read):  {percentiles(found['page'])}")
        print(f"  one item's evidence (reviewer_item):  {percentiles(found['item'])}")
        print(f"label write (redagent_submit_label):    {percentiles(found['label'])}")
        print(f"  the label that completes the audit:   {found['closing'][0] * 1000:7.2f} ms")
    finally:
        with psycopg.connect(conninfo(args.db), autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND usename = current_user "
                "AND pid <> pg_backend_pid()",
                (name,),
            )
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
            for login in logins:
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(login)))


if __name__ == "__main__":
    main()
