"""The same matrix through Inspect (`inspect eval redagent/bench`) and through the engine (`redagent run`),
interleaved in one sitting: rollouts per second and this process's CPU per model call.

    python benchmarks/inspect_vs_engine.py [--cases all] [--behaviour sim/comply] [--rounds 3] [--concurrency 16,64,128]

Both drive the same model: a loopback OpenAI-compatible server (a process of its own, so its CPU is counted for
neither) behind which a calibration agent answers each conversation (engine/sim.py SimModel, picked by the case whose
first user turn opens the conversation). The engine reaches it through litellm (`openai/sim`, --api-base), Inspect
through its own `openai` provider (`--model openai/sim --model-base-url URL -M responses_api=false`); each runs the native tool-calling loop
over the same cases with the same tools, so they make the same model calls and get the same E (the script checks
that, case by case). The engine writes its SQLite store, Inspect its .eval log: each one's own record of the run.

After one unmeasured warm-up of each on one case (imports and first-use set-up are paid once per process), rounds
alternate which goes first (engine, Inspect; Inspect, engine; …), so a machine that gets busier or quieter
during the sitting weighs on both alike. CPU per model call is this process's CPU (all its threads) plus what its
reaped children (the sandboxed commands) used, over the model calls the server answered in that measurement. The
medians are printed last.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from machine import cpu_s, sandbox_cpu_line

ROOT = Path(__file__).resolve().parents[1]
MODEL = "sim"

# The stand-in model server, run as `python inspect_vs_engine.py --serve CASES BEHAVIOUR`: prints its URL, then serves.
SERVER = r"""
import json, sys, threading
from http.server import BaseHTTPRequestHandler
sys.path.insert(0, sys.argv[1])
from tests.engine.loopback import LoopbackServer
from redagent.engine.plan import select_cases
from redagent.engine.sim import SimModel
from redagent.llm.client import ModelRequest

cases = {c.instantiate().user_turns[0]: c for c in select_cases(sys.argv[2])}
behaviour = sys.argv[3]


def text(message):
    content = message.get("content") or ""
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


class SimServer(LoopbackServer):
    def __init__(self):
        self.agents, self.calls, self.lock = {}, 0, threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path.rstrip("/") == "/v1/models":
                    self.send({"object": "list", "data": [{"id": "sim", "object": "model", "owned_by": "bench"}]})
                elif self.path == "/stats":
                    self.send({"calls": server.calls})
                else:
                    self.send({"detail": "Not Found"}, 404)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path == "/reset":
                    with server.lock:
                        server.agents.clear()
                    self.send({})
                    return
                self.send(server.answer(body))

            def send(self, payload, status=200):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.serve(Handler)

    def answer(self, body):
        messages = body.get("messages") or []
        users = [text(m) for m in messages if m.get("role") == "user"]
        case = cases.get(users[0]) if users else None
        with self.lock:
            self.calls += 1
            if case is not None and users[0] not in self.agents:
                self.agents[users[0]] = SimModel(behaviour, case)
            agent = self.agents.get(users[0]) if users else None
        if agent is None:  # a pre-flight or a tool probe: a tool call when offered tools, else a word
            tools = body.get("tools") or []
            calls = [("call_probe", tools[0].get("function", tools[0])["name"], "{}")] if tools else []
            return self.reply(calls, "" if calls else "OK")
        reply = agent.reply(ModelRequest(messages=messages, tools=body.get("tools"), harness="native", turn=len(users) - 1))
        return self.reply([(c.id, c.name, c.arguments) for c in reply.tool_calls or []], reply.content or "")

    def reply(self, calls, content):
        message = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
            ]
        return {
            "id": f"chatcmpl-{self.calls}",
            "object": "chat.completion",
            "created": 0,
            "model": "sim",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


with SimServer() as server:
    print(server.url, flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
"""


@dataclass
class Measured:
    rollouts: int
    wall_s: float
    cpu_s: float
    calls: int
    outcomes: dict[str, Any]  # case id → E

    @property
    def rate(self) -> float:
        return self.rollouts / self.wall_s

    @property
    def cpu_ms_per_call(self) -> float:
        return self.cpu_s / self.calls * 1000 if self.calls else float("nan")


class Server:
    def __init__(self, cases: str, behaviour: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(ROOT), cases, behaviour],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url:
            raise SystemExit("the stand-in model server did not start")
        self._parts = urllib.parse.urlsplit(self.url)

    def _request(self, method: str, path: str) -> Any:
        connection = http.client.HTTPConnection(self._parts.hostname, self._parts.port, timeout=30)
        try:
            connection.request(method, path, body=b"{}" if method == "POST" else None)
            return json.loads(connection.getresponse().read())
        finally:
            connection.close()

    def calls(self) -> int:
        return int(self._request("GET", "/stats")["calls"])

    def reset(self) -> None:
        self._request("POST", "/reset")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def _cpu() -> float:
    return cpu_s()  # this process and its sandboxes (benchmarks/machine.py)


def measured(server: Server, work: Any) -> Measured:
    server.reset()
    calls, cpu, wall = server.calls(), _cpu(), time.perf_counter()
    outcomes = work()
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    return Measured(len(outcomes), wall, cpu, server.calls() - calls, outcomes)


def engine(server: Server, cases: str, concurrency: int, folder: str) -> Measured:
    from redagent.engine.matrix import RunSpec, start_run
    from redagent.store.db import open_store

    def work() -> dict[str, Any]:
        db = Path(folder) / f"engine-{time.monotonic_ns()}.db"
        spec = RunSpec(
            cases=cases, models=[f"openai/{MODEL}"], harnesses=["native"], api_base=server.url, concurrency=concurrency
        )
        with open_store(f"sqlite:///{db}") as store:
            runner = start_run(store, spec)
            asyncio.run(runner.run())
            return {r["case_id"]: r["E"] for r in store.iter_export(runner.run_record.id)}

    return measured(server, work)


def inspect(server: Server, cases: str, concurrency: int, folder: str) -> Measured:
    from inspect_ai import eval as inspect_eval

    def work() -> dict[str, Any]:
        logs = inspect_eval(
            "redagent/bench",
            model=f"openai/{MODEL}",
            model_base_url=server.url,
            # The chat-completions API, as the engine's litellm speaks it (inspect-ai's openai provider would use
            # the Responses API for this model name, which an OpenAI-compatible server does not serve).
            model_args={"responses_api": False},
            task_args={"cases": cases},
            max_samples=concurrency,
            max_connections=concurrency,
            log_dir=str(Path(folder) / "inspect"),
            display="none",
        )
        return {str(s.id): s.scores["E"].value if s.scores else None for s in logs[0].samples or []}

    return measured(server, work)


def line(label: str, m: Measured) -> str:
    return (
        f"{label:<8s}{m.rollouts:4d} rollouts in {m.wall_s:6.2f} s = {m.rate:6.2f} rollouts/s; "
        f"{m.calls:4d} model calls, CPU {m.cpu_s:6.2f} s = {m.cpu_ms_per_call:6.1f} ms per model call"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="all")
    parser.add_argument("--behaviour", default="sim/comply")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", default="16,64,128", help="one level or several, comma-separated")
    options = parser.parse_args()
    levels = [int(c) for c in str(options.concurrency).split(",")]
    os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-bench")  # both clients want one; the stand-in reads none
    server = Server(options.cases, options.behaviour)
    results: dict[tuple[str, int], list[Measured]] = {(n, c): [] for n in ("engine", "inspect") for c in levels}
    runners = {"engine": engine, "inspect": inspect}
    print(f"matrix: cases {options.cases} × {options.behaviour} behind openai/{MODEL} × native; {server.url}")
    print(f"CPU: this process and its sandboxes ({sandbox_cpu_line()}); concurrency {levels}")
    try:
        with tempfile.TemporaryDirectory() as folder:
            # Once each, unmeasured, on one case: imports and first-use set-up (litellm's, Inspect's) are paid once
            # per process, not per matrix.
            first = options.cases if "," not in options.cases and "*" not in options.cases else None
            from redagent.engine.plan import select_cases

            warm = first or select_cases(options.cases)[0].id
            for name in ("engine", "inspect"):
                runners[name](server, warm, levels[0], folder)
            # Rounds alternate which goes first, and each round visits every concurrency: a machine that gets busier
            # or quieter during the sitting weighs on both and on every level alike.
            for number in range(options.rounds):
                order = ["engine", "inspect"] if number % 2 == 0 else ["inspect", "engine"]
                for level in levels:
                    load = os.getloadavg()[0]
                    for name in order:
                        m = runners[name](server, options.cases, level, folder)
                        results[(name, level)].append(m)
                        print(f"round {number + 1} C={level:<4d}{line(name, m)}; load {load:.2f}", flush=True)
                    ours, theirs = results[("engine", level)][-1].outcomes, results[("inspect", level)][-1].outcomes
                    differ = sorted(c for c in ours if ours[c] != theirs.get(c))
                    if differ:
                        print(
                            f"round {number + 1} C={level:<4d}E differs on {len(differ)} cases {differ[:5]}", flush=True
                        )
    finally:
        server.close()
    print(f"medians (load average now {os.getloadavg()[0]:.2f}):")
    for level in levels:
        medians = {}
        for name in ("engine", "inspect"):
            runs = results[(name, level)]
            medians[name] = (
                statistics.median(m.rate for m in runs),
                statistics.median(m.cpu_ms_per_call for m in runs),
            )
            print(
                f"  C={level:<4d}{name:<8s}{medians[name][0]:7.2f} rollouts/s, {medians[name][1]:6.1f} ms CPU per model call"
            )
        (engine_rate, engine_cpu), (inspect_rate, inspect_cpu) = medians["engine"], medians["inspect"]
        print(
            f"  C={level:<4d}engine / Inspect: {engine_rate / inspect_rate:.2f}× the rollouts per second; "
            f"{inspect_cpu / engine_cpu:.2f}× the model calls per CPU-second (Inspect's CPU per call / the engine's)"
        )


if __name__ == "__main__":
    main()
