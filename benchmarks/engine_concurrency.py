"""Engine concurrency against a model that answers after a fixed delay: achieved throughput at
concurrency 1, 16, 64 and 128 as a fraction of the ideal (concurrency / delay).

    python benchmarks/engine_concurrency.py [--delay 0.2] [--levels 1,16,64,128]

The model endpoint is a loopback HTTP server in a separate process speaking the OpenAI protocol; it
always answers with a final message, so most rollouts make one model call — but a case whose task
comes in several user turns makes one per turn. The server counts the calls, and the fraction is
model calls per second over the ideal concurrency / delay (the rate if every slot always waited on
the model). Rollouts go through litellm, the native harness, the sandbox and a SQLite store exactly
as in a real run.

The first model call (litellm's import and client set-up, seconds) happens before any level is
timed. Each level also prints the CPU this process spent per rollout and the rate one interpreter
can reach at that cost (rollouts are Python work under one GIL): when the ideal rate at a level is
above that ceiling, the level is bounded by CPU, not by the engine's concurrency. The same rollouts
with a calibration agent instead of the HTTP model give the share that is the model client's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "bench",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Nothing to do."}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
    }
).encode()


def serve(port_queue, delay: float, calls) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms ACK stall

        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with calls.get_lock():
                calls.value += 1
            time.sleep(delay)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(REPLY)))
            self.end_headers()
            self.wfile.write(REPLY)

    ThreadingHTTPServer.request_queue_size = 512
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port_queue.put(server.server_address[1])
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--levels", default="1,16,64,128")
    options = parser.parse_args()
    ports = multiprocessing.Queue()
    calls = multiprocessing.Value("q", 0)
    server = multiprocessing.Process(target=serve, args=(ports, options.delay, calls), daemon=True)
    server.start()
    base = f"http://127.0.0.1:{ports.get(timeout=10)}/v1"
    os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-benchmark")

    from machine import CpuMeter

    from redagent.engine.matrix import RunSpec, start_run
    from redagent.llm.client import LiteLLMModel, ModelRequest
    from redagent.store.db import open_store

    warm = LiteLLMModel("openai/bench-model", api_base=base, timeout=30, retries=0)
    asyncio.run(
        warm.complete(
            ModelRequest(messages=[{"role": "user", "content": "warm up"}], tools=None, harness="native", turn=0)
        )
    )
    print(
        f"model delay {options.delay * 1000:.0f} ms, native harness, SQLite store; fraction = model calls/s "
        f"over concurrency / delay"
    )
    with tempfile.TemporaryDirectory() as folder, open_store(f"sqlite:///{folder}/bench.db") as store:

        def timed(spec: RunSpec):
            runner = start_run(store, spec)
            before = calls.value
            with CpuMeter() as meter:
                progress = asyncio.run(runner.run())
            return progress, meter.use, calls.value - before

        offline, offline_use, _ = timed(
            RunSpec(cases="all", models=["sim/ignore"], harnesses=["native"], attempts=4, concurrency=16)
        )
        engine_ms = offline_use.own_core_s / offline.done * 1000
        print(
            f"the same rollouts with a calibration agent: {engine_ms:.2f} ms CPU each in this process "
            f"(sandbox, harness, store)"
        )
        for level in (int(x) for x in options.levels.split(",")):
            attempts = max(2, (level * 8) // 62 + 1)  # enough rollouts for several waves at this level
            progress, use, made = timed(
                RunSpec(
                    cases="all",
                    models=["openai/bench-model"],
                    harnesses=["native"],
                    attempts=attempts,
                    concurrency=level,
                    api_base=base,
                    timeout=30,
                    retries=0,
                )
            )
            achieved = made / use.wall_s
            ideal = level / options.delay
            per_call_ms = use.own_core_s / made * 1000
            ceiling = 1000 / per_call_ms
            print(
                f"concurrency {level:4d}: {progress.done:5d} rollouts, {made:5d} model calls in {use.wall_s:6.2f} s "
                f"= {progress.done / use.wall_s:6.1f} rollouts/s, {achieved:6.1f} calls/s; ideal {ideal:6.1f} "
                f"calls/s; fraction {achieved / ideal:.2f} (invalid {progress.invalid})"
            )
            print(
                f"{'':18s}{use.own_core_s / progress.done * 1000:.2f} ms CPU per rollout here (a calibration "
                f"agent's: {engine_ms:.2f}); {per_call_ms:.2f} ms per model call -> one interpreter reaches at "
                f"most {ceiling:.0f} calls/s = fraction {min(1.0, ceiling / ideal):.2f}; {use.line()}"
            )
    server.terminate()


if __name__ == "__main__":
    main()
