"""A real model through the harnesses, end to end: does it see its tools, do its rollouts count, how long does it take.

    python benchmarks/real_model_smoke.py --api-base http://127.0.0.1:8080/v1 --model openai/qwen
        [--api-key sk-local] [--harnesses native,react,shell] [--cases ID,ID,...] [--max-steps 8]
        [--max-tokens 512] [--timeout 300] [--retries 1] [--benign-arm]

The same from the environment: REDAGENT_SMOKE_API_BASE, REDAGENT_SMOKE_MODEL, REDAGENT_SMOKE_API_KEY. Without an
endpoint it prints "skipped: no --api-base given" and exits 0, so it can sit in any script. The README's
"Pointing a run at a model server" has a CPU-only server to point it at (Qwen2.5-Coder 1.5B behind llama.cpp's
llama-server).

Per harness it runs `redagent run` exactly as a user would (pre-flight included) on a few starter cases, into a
temporary SQLite store, one harness after another so each one's seconds are its own; the default harnesses are
the three in-house ones and every real agent CLI that is installed (the others are named as skipped). Then it
reads the stored rollouts through the store's read interface and prints per harness: rollouts, valid, invalid by
reason, the tool-call share (valid rollouts with at least one tool call), tool calls per valid rollout, E (harmful
among valid attacked rollouts), U (task done among valid rollouts whose case states a check), wall seconds, and the
run's own health warnings (`runs show`). A tool-call share of 0 means the model never used a tool: the E rate then
measures the setup, not the model.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from redagent.store.db import open_store
from redagent.store.interfaces import RolloutReader
from redagent.store.readmodel import StoredRollout

IN_HOUSE = ("native", "react", "shell")
# One case per surface family and attack channel (user, environment, tool), each with a small seed: a small model
# on a CPU has a short context and a few tokens per second.
CASES = (
    "banking-u5-contractor-new-iban-redirect",
    "email-e2-migration-relay-forwarding-rule",
    "files-t5-share-quota-error-go-public",
)
REDAGENT = (sys.executable, "-m", "redagent")
OUTPUT_CAP = 2000  # characters of a failed command's stderr shown


@dataclass
class Figures:
    """What one harness's run shows, from its stored rollouts."""

    rollouts: int = 0
    valid: int = 0
    invalid: Counter[str] = field(default_factory=Counter)
    with_tool_call: int = 0  # valid rollouts with >= 1 tool call
    tool_calls: int = 0  # tool calls over the valid rollouts
    attacked: int = 0  # valid attacked (not benign-arm) rollouts
    harmful: int = 0  # of those, E == 1
    utility_checked: int = 0  # valid rollouts whose case states a utility check
    utility_done: int = 0  # of those, U == 1

    def add(self, rollout: StoredRollout) -> None:
        self.rollouts += 1
        if not rollout.valid:
            self.invalid[rollout.invalid_reason or "no reason stored"] += 1
            return
        self.valid += 1
        calls = sum(1 for event in rollout.events if event.is_call)
        self.tool_calls += calls
        self.with_tool_call += calls > 0
        if not rollout.benign:
            self.attacked += 1
            self.harmful += rollout.E == 1
        if rollout.U is not None:
            self.utility_checked += 1
            self.utility_done += rollout.U == 1


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.0%}" if whole else f"{part}/0 (no denominator)"


def figures_of(reader: RolloutReader, run_id: str) -> Figures:
    figures = Figures()
    for rollout in reader.iter_rollouts(run_id, snapshots=False):
        figures.add(rollout)
    return figures


def harnesses_to_run(asked: str | None) -> tuple[list[str], list[str]]:
    """The harnesses to run and a line per one left out: the asked ones, else the in-house three and every
    installed real CLI (`redagent harnesses list --json`)."""
    listed = json.loads(
        subprocess.run([*REDAGENT, "harnesses", "list", "--json"], capture_output=True, text=True, check=True).stdout
    )
    installed = {h["name"]: h["installed"] for h in listed}
    names = asked.split(",") if asked else [h["name"] for h in listed]
    run, skipped = [], []
    for name in names:
        if name not in installed:
            sys.exit(f"unknown harness {name!r}: `redagent harnesses list` names {', '.join(installed)}")
        if installed[name]:
            run.append(name)
        else:
            skipped.append(f"{name}: skipped: not installed (`redagent harnesses install {name}` or `make harnesses`)")
    return run, skipped


def run_one(harness: str, args: argparse.Namespace, db: Path, env: dict[str, str]) -> tuple[str | None, float, str]:
    """`redagent run` for one harness; its run id (None if it stored no run), wall seconds and what went wrong."""
    options = {
        "--models": args.model,
        "--harnesses": harness,
        "--cases": args.cases,
        "--api-base": args.api_base,
        "--db": str(db),
        "--concurrency": str(args.concurrency),
        "--max-steps": str(args.max_steps),
        "--max-tokens": str(args.max_tokens),
        "--timeout": str(args.timeout),
        "--retries": str(args.retries),
    }
    arm = "--benign-arm" if args.benign_arm else "--no-benign-arm"
    command = [*REDAGENT, "run", *(part for pair in options.items() for part in pair), arm, "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    problem = "" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[-OUTPUT_CAP:]}"
    try:
        return json.loads(done.stdout)["run_id"], seconds, problem
    except (json.JSONDecodeError, KeyError, TypeError):
        return None, seconds, problem or f"no run summary on stdout: {done.stdout.strip()[-OUTPUT_CAP:]}"


def warnings_of(run_id: str, db: Path) -> list[str]:
    shown = subprocess.run(
        [*REDAGENT, "runs", "show", run_id, "--db", str(db), "--json"], capture_output=True, text=True, check=True
    )
    return list(json.loads(shown.stdout).get("health", {}).get("warnings", []))


def report(harness: str, figures: Figures, seconds: float, warnings: list[str]) -> None:
    invalid = ", ".join(f"{reason} {n}" for reason, n in figures.invalid.most_common()) or "none"
    per_rollout = f"{figures.tool_calls / figures.valid:.2f}" if figures.valid else "-"
    print(f"{harness}:")
    print(f"  rollouts          {figures.rollouts} ({figures.valid} valid)")
    print(f"  invalid           {invalid}")
    print(f"  tool-call share   {share(figures.with_tool_call, figures.valid)} of valid rollouts")
    print(f"  tool calls        {per_rollout} per valid rollout ({figures.tool_calls} in all)")
    print(f"  E (harmful)       {share(figures.harmful, figures.attacked)} of valid attacked rollouts")
    print(f"  U (task done)     {share(figures.utility_done, figures.utility_checked)} of valid rollouts with a check")
    print(f"  seconds           {seconds:.0f} wall ({seconds / max(figures.rollouts, 1):.0f} per rollout)")
    for warning in warnings:
        print(f"  warning           {warning}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api-base", default=os.environ.get("REDAGENT_SMOKE_API_BASE"))
    parser.add_argument("--model", default=os.environ.get("REDAGENT_SMOKE_MODEL", "openai/local"))
    parser.add_argument(
        "--api-key",
        default=os.environ.get("REDAGENT_SMOKE_API_KEY"),
        help="the key the runs send (as OPENAI_API_KEY, over the environment's: the server given here is the one "
        "asked; llama.cpp wants any)",
    )
    parser.add_argument("--harnesses", help="default: native,react,shell and every installed real CLI")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per model call (a CPU is slow)")
    parser.add_argument("--retries", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=1, help="a local server computes one reply at a time")
    parser.add_argument("--benign-arm", action="store_true", help="also run each case without its attack")
    args = parser.parse_args()
    if not args.api_base:
        print("skipped: no --api-base given (or REDAGENT_SMOKE_API_BASE)")
        return 0
    env = dict(os.environ)
    if args.api_key:
        env["OPENAI_API_KEY"] = args.api_key
    harnesses, skipped = harnesses_to_run(args.harnesses)
    print(f"{args.model} at {args.api_base}; cases {args.cases}; max {args.max_steps} steps, {args.max_tokens} tokens")
    for line in skipped:
        print(line)
    failed = False
    with tempfile.TemporaryDirectory(prefix="redagent-smoke-") as folder:
        db = Path(folder) / "smoke.db"
        for harness in harnesses:
            run_id, seconds, problem = run_one(harness, args, db, env)
            if run_id is None:
                print(f"{harness}: no run stored ({seconds:.0f} s): {problem}")
                failed = True
                continue
            if problem:
                print(f"{harness}: {problem}")
                failed = True
            with open_store(str(db), create=False) as store:
                reader: RolloutReader = store
                figures = figures_of(reader, run_id)
            report(harness, figures, seconds, warnings_of(run_id, db))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
