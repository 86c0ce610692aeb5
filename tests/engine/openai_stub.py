"""A real HTTP server on loopback that speaks the OpenAI chat-completions protocol with scripted replies.

Tests queue what the "model" answers — a tool call, text, an HTTP error, a stall — and read back the
requests it received. It stands in for a paid endpoint; nothing leaves the machine.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(name: str, args: dict[str, Any] | str, call_id: str = "call_1") -> dict[str, Any]:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {"content": None, "tool_calls": [{"id": call_id, "type": "function",
                                             "function": {"name": name, "arguments": arguments}}]}


def text(content: str) -> dict[str, Any]:
    return {"content": content}


def error(status: int, message: str = "scripted failure") -> dict[str, Any]:
    return {"status": status, "error": message}


def stall(seconds: float) -> dict[str, Any]:
    return {"delay": seconds, "content": "too late"}


class ChatServer:
    def __init__(self) -> None:
        self.script: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.default: dict[str, Any] = text("Done.")
        server = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between headers and body

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append(body)
                step = server.script.popleft() if server.script else server.default
                if step.get("delay"):
                    time.sleep(step["delay"])
                if "status" in step:
                    payload = json.dumps({"error": {"message": step["error"], "type": "scripted"}}).encode()
                    self.send_response(step["status"])
                else:
                    message = {"role": "assistant", "content": step.get("content")}
                    if step.get("tool_calls"):
                        message["tool_calls"] = step["tool_calls"]
                    payload = json.dumps({
                        "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": 0,
                        "model": body.get("model", "stub"),
                        "choices": [{"index": 0, "message": message,
                                     "finish_reason": "tool_calls" if step.get("tool_calls") else "stop"}],
                        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError):  # the client gave up (a timeout test)
                    self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
