"""Engine concurrency against a model that answers after a fixed delay: achieved throughput at
concurrency 1, 16, 64 and 128 as a fraction of the ideal (concurrency / delay).

    python benchmarks/engine_concurrency.py [--delay 0.2] [--levels 1,16,64,128]

The model endpoint is a loopback HTTP server in a separate process speaking the OpenAI protocol; each
rollout makes one model call (the model answers with a final message), so the ideal rate is
concurrency / delay rollouts per second. Rollouts go through litellm, the native harness, the
sandbox and a SQLite store exactly as in a real run.
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

REPLY = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "bench",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Nothing to do."},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}).encode()


def serve(port_queue, delay: float) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms ACK stall

        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--levels", default="1,16,64,128")
    options = parser.parse_args()
    ports = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(ports, options.delay), daemon=True)
    server.start()
    base = f"http://127.0.0.1:{ports.get(timeout=10)}/v1"
    os.environ.setdefault("OPENAI_API_KEY", "sk-loopback-benchmark")

    from redagent.engine.matrix import RunSpec, start_run
    from redagent.store.db import open_store

    print(f"model delay {options.delay * 1000:.0f} ms, one model call per rollout, native harness, SQLite store")
    with tempfile.TemporaryDirectory() as folder, open_store(f"sqlite:///{folder}/bench.db") as store:
        for level in (int(x) for x in options.levels.split(",")):
            attempts = max(2, (level * 8) // 62 + 1)  # enough rollouts for several waves at this level
            spec = RunSpec(cases="all", models=["openai/bench-model"], harnesses=["native"], attempts=attempts,
                           concurrency=level, api_base=base, timeout=30, retries=0)
            runner = start_run(store, spec)
            started = time.perf_counter()
            progress = asyncio.run(runner.run())
            elapsed = time.perf_counter() - started
            achieved = progress.done / elapsed
            ideal = level / options.delay
            print(f"concurrency {level:4d}: {progress.done:5d} rollouts in {elapsed:6.2f} s = {achieved:7.1f}/s; "
                  f"ideal {ideal:7.1f}/s; fraction {achieved / ideal:.2f} (invalid {progress.invalid})")
    server.terminate()


if __name__ == "__main__":
    main()
