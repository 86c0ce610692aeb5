"""A real HTTP server on loopback that speaks the OpenAI chat-completions protocol with scripted replies.

Tests queue what the "model" answers — a tool call, text, an HTTP error (with headers such as
`Retry-After`), a stall, a body that is not JSON, a dropped connection — and read back the requests it
received. Like a real OpenAI-compatible server (vLLM, llama.cpp, Ollama's /v1) it serves only
`/v1/chat/completions` and `/v1/models` (any other path is a 404), and it can be told which model
names exist and which API key it accepts. It stands in for a paid endpoint; nothing leaves the machine.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.engine.loopback import LoopbackServer

CHAT = "/v1/chat/completions"
MODELS = "/v1/models"


def tool_call(name: str, args: dict[str, Any] | str, call_id: str = "call_1") -> dict[str, Any]:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def text(content: str) -> dict[str, Any]:
    return {"content": content}


def error(status: int, message: str = "scripted failure", headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {"status": status, "error": message, "headers": headers or {}}


def stall(seconds: float) -> dict[str, Any]:
    return {"delay": seconds, "content": "too late"}


def malformed(body: str = '{"id": "chatcmpl-x", "choices": [') -> dict[str, Any]:
    """A 200 whose body is not JSON (a proxy or server that cut its answer short)."""
    return {"raw": body}


def drop() -> dict[str, Any]:
    """Close the connection without answering (a server that crashed mid-request)."""
    return {"drop": True}


class ChatServer(LoopbackServer):
    def __init__(self, *, models: set[str] | None = None, api_key: str | None = None) -> None:
        self.script: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []  # every request's path, answered or not
        self.default: dict[str, Any] = text("Done.")
        # When set, each reply is computed from the request body instead of taken from the queue
        # (AttackerReplies: a scripted attacker model that answers by what it is asked).
        self.responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.models = models  # None: any model name is served
        self.api_key = api_key  # None: no key is checked
        server = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between headers and body
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do: a dropped connection is then a surprise

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server.paths.append(self.path)
                if self.path != MODELS:
                    return self._json(404, {"detail": "Not Found"})
                # Any name served (models None): nothing listed, so the pre-flight has no list to check names by.
                names = sorted(server.models or ())
                self._json(200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]})

            def do_POST(self) -> None:
                server.paths.append(self.path)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path != CHAT:
                    return self._json(404, {"detail": "Not Found"})
                if server.api_key is not None and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    return self._json(
                        401,
                        {"error": {"message": "Incorrect API key provided", "type": "auth", "code": "invalid_api_key"}},
                    )
                if server.models is not None and body.get("model") not in server.models:
                    return self._json(
                        404,
                        {
                            "error": {
                                "message": f"The model `{body.get('model')}` does not exist.",
                                "type": "NotFoundError",
                                "code": 404,
                            }
                        },
                    )
                server.requests.append(body)
                if server.responder is not None:
                    step = server.responder(body)
                else:
                    step = server.script.popleft() if server.script else server.default
                if step.get("delay"):
                    time.sleep(step["delay"])
                if step.get("drop"):
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(2)
                    return
                if "raw" in step:
                    return self._send(200, step["raw"].encode())
                if "status" in step:
                    return self._json(
                        step["status"], {"error": {"message": step["error"], "type": "scripted"}}, step.get("headers")
                    )
                message = {"role": "assistant", "content": step.get("content")}
                if step.get("tool_calls"):
                    message["tool_calls"] = step["tool_calls"]
                self._json(
                    200,
                    {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "stub"),
                        "choices": [
                            {
                                "index": 0,
                                "message": message,
                                "finish_reason": "tool_calls" if step.get("tool_calls") else "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                    },
                )

            def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                self._send(status, json.dumps(payload).encode(), headers)

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
                    self.wfile.write(payload)

        self.serve(Handler)


ATTACKER_CONTRACT = "# Attacker contract"  # the first line of engine/attacker/contract.md


class AttackerReplies:
    """A scripted attacker model for `ChatServer.responder`: a request whose system prompt is the attacker's
    contract gets the next queued move (a dict, sent as JSON text, or a raw string, to send a bad reply) and
    its view is kept; any other request (the pre-flight, a target model's turn) is answered "OK"."""

    def __init__(self, moves: list[dict[str, Any] | str]) -> None:
        self.moves: deque[dict[str, Any] | str] = deque(moves)
        self.views: list[dict[str, Any]] = []  # every view the attacker was shown, in order
        self.corrections: list[str] = []  # the messages that rejected a reply
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        if not messages or not str(messages[0].get("content") or "").startswith(ATTACKER_CONTRACT):
            return text("OK")
        with self.lock:
            if len(messages) > 2:  # a correction turn: the reply before was rejected
                self.corrections.append(str(messages[-1].get("content")))
            else:
                self.views.append(json.loads(messages[1]["content"]))
            item = self.moves.popleft() if self.moves else {"move": "stop", "why": "the script is finished"}
        return text(item if isinstance(item, str) else json.dumps(item))
