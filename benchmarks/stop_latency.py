"""Seconds from a signal to the end of `redagent run` while its model server never answers.

    python benchmarks/stop_latency.py [--repeat 3] [--concurrency 2]

Starts a loopback server that answers the pre-flight and holds every rollout's request unanswered
(tests/engine/hanging_server.py), runs `redagent run` on three cases with the native harness against it as
a process, waits until `--concurrency` rollouts are waiting on the model, sends SIGINT (then, in a second
round, SIGTERM) and prints, per repeat, the seconds until the process ended, its exit code, and whether the
server saw every held request closed. The figure includes printing the run's summary and the interpreter's
exit; on a busy machine it grows with the load (also printed).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from redagent.engine.harnesses.native import SYSTEM
from tests.engine.hanging_server import HangingServer

CASES = "banking-e2-invoice-bank-details-change,email-t1-send-email-journal-bcc,workspace-e5-agents-md-telemetry-exfil"
HANG_S = 120.0


def once(signum: int, concurrency: int) -> tuple[float, int, bool]:
    server = HangingServer(hold=lambda body: SYSTEM in str(body.get("messages")))
    with server, tempfile.TemporaryDirectory() as folder:
        process = subprocess.Popen(
            [sys.executable, "-m", "redagent", "run", "--cases", CASES, "--models", "openai/stub-model"]
            + ["--harnesses", "native", "--no-benign-arm", "--concurrency", str(concurrency)]
            + ["--api-base", server.url, "--timeout", "600", "--db", str(Path(folder) / "store.db")],
            cwd=folder,
            env={**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-bench")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + HANG_S
        while len(server.holding()) < concurrency:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit(f"the run never got {concurrency} rollouts waiting on the model")
            server.wait_held(concurrency, 0.05)  # woken by an arrival; the bound only re-checks the process
        sent = time.perf_counter()
        process.send_signal(signum)
        try:
            code = process.wait(HANG_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = -1
        seconds = time.perf_counter() - sent
        closed = all(h.closed.wait(10) for h in server.held)
    return seconds, code, closed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    for signum in (signal.SIGINT, signal.SIGTERM):
        figures = []
        for i in range(args.repeat):
            seconds, code, closed = once(signum, args.concurrency)
            figures.append(seconds)
            print(
                f"{signal.Signals(signum).name} #{i + 1}: {seconds:.2f} s to exit, exit code {code}, "
                f"held requests closed: {closed}, load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        print(f"{signal.Signals(signum).name}: median {statistics.median(figures):.2f} s, max {max(figures):.2f} s")


if __name__ == "__main__":
    main()
