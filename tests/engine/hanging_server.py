"""A model server on loopback that takes a request and does not answer: it watches the connection instead.

It stands in for a server busy computing (a slow local model, an overloaded endpoint): a request it is told
to hold is read whole and then left unanswered until the client closes the connection, or until the test
lets it answer. What it records is what a server would see: every request, and for each one whether and
when its client went away. At each request's arrival it looks (without blocking) at every connection it is
still holding, so `open_at_arrival` says how many earlier requests of the same client were still open when
the next came — a client that re-sends a timed-out request beside the first one shows up there, whatever
the threads of this server happen to be doing.

`trickle` holds a request differently: it sends the status line and headers at once and then one byte of
the body at a time, never finishing it — a server that keeps a connection busy without ever answering, which
a timeout between reads never ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.engine.loopback import LoopbackServer

CHAT = "/v1/chat/completions"


@dataclass
class Held:
    """One request as the server saw it."""

    body: dict[str, Any]
    key: str  # whose request it is (a rollout's task), as the test's `key` names it
    open_at_arrival: int  # earlier requests with the same key whose connection was still open
    connection: socket.socket | None = field(default=None, repr=False)
    closed: threading.Event = field(default_factory=threading.Event)  # the client closed the connection


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the client has closed its side (a FIN is waiting), without blocking or consuming data."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def completion(body: dict[str, Any], content: str = "Done.") -> dict[str, Any]:
    return {
        "id": "chatcmpl-held",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "stub"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def warm_litellm() -> None:
    """litellm's first call in a process imports and builds its provider machinery on the event loop (seconds on
    a busy machine, all inside the first attempt's timeout): one call here, so a test's short timeouts time
    requests and not that."""
    import asyncio
    import os

    from redagent.llm.client import LiteLLMModel, ModelRequest

    # The key is set for the warm-up only: left behind, it would be every later test's key in this worker
    # (a subprocess that copies the environment then sent it to a server expecting another: HTTP 401).
    before = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = "sk-loopback-test"
    try:
        with HangingServer(hold=lambda body: False) as server:
            for provider in ("openai", "hosted_vllm"):
                model = LiteLLMModel(f"{provider}/stub-model", api_base=server.url, timeout=60, retries=0)
                reply = asyncio.run(model.complete(ModelRequest(messages=[{"role": "user", "content": "hello"}])))
                assert reply.content == "Done.", reply
    finally:
        if before is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = before


class HangingServer(LoopbackServer):
    """`hold(body)` says which requests to hold (default: all); `key(body)` whose they are (default: one client).
    Requests not held are answered at once; `answer()` makes held requests (and all later ones) be answered."""

    def __init__(
        self,
        *,
        hold: Callable[[dict[str, Any]], bool] = lambda body: True,
        key: Callable[[dict[str, Any]], str] = lambda body: "",
        trickle: bool = False,
    ) -> None:
        self.hold = hold
        self.key = key
        self.trickle = trickle
        self.held: list[Held] = []
        self.answered: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._arrival = threading.Condition(self._lock)  # notified as each held request arrives
        self._answering = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models: the pre-flight checks the model name against it
                self._json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path != CHAT:
                    return self._json(404, {"detail": "Not Found"})
                if server._answering.is_set() or not server.hold(body):
                    with server._lock:
                        server.answered.append(body)
                    return self._json(200, completion(body))
                held = server._arrive(body, self.connection)
                if server.trickle:
                    return self._trickle(held)
                while not held.closed.is_set():
                    readable, _, _ = select.select([self.connection], [], [], 0.05)
                    if (readable and _closed_by_peer(self.connection)) or held.closed.is_set():
                        held.closed.set()
                        self.close_connection = True
                        return
                    if server._answering.is_set():
                        return self._json(200, completion(body))

            def _trickle(self, held: Held) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                self.close_connection = True
                while not held.closed.wait(0.2):
                    try:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    except OSError:
                        held.closed.set()
                    if _closed_by_peer(self.connection):
                        held.closed.set()

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(data)

        self.serve(Handler)

    def _arrive(self, body: dict[str, Any], connection: socket.socket) -> Held:
        key = self.key(body)
        with self._lock:
            still_open = 0
            for earlier in self.held:
                if earlier.key != key or earlier.closed.is_set():
                    continue
                if earlier.connection is not None and _closed_by_peer(earlier.connection):
                    earlier.closed.set()
                else:
                    still_open += 1
            held = Held(body=body, key=key, open_at_arrival=still_open, connection=connection)
            self.held.append(held)
            self._arrival.notify_all()
        return held

    def wait_held(self, count: int, timeout: float) -> bool:
        """Blocks until `count` requests are held (woken by their arrival); False if `timeout` passes first."""
        with self._arrival:
            return self._arrival.wait_for(lambda: len(self.held) >= count, timeout)

    async def until_held(self, count: int, what: str, timeout: float, beside: asyncio.Task[Any] | None = None) -> None:
        """From a test's event loop: returns once `count` requests are held; fails if `beside` (the call meant to
        send them) ends first, or if none arrives within `timeout` (a hang bound)."""
        arrived = asyncio.ensure_future(asyncio.to_thread(self.wait_held, count, timeout))
        await asyncio.wait({arrived, *([beside] if beside else [])}, return_when=asyncio.FIRST_COMPLETED)
        if beside is not None and beside.done() and not arrived.done():
            pytest.fail(f"the call ended before {what}: {beside!r}")
        if not await arrived:
            pytest.fail(f"never {what}")

    def answer(self) -> None:
        self._answering.set()

    def holding(self) -> list[Held]:
        """The held requests whose client has not gone away."""
        with self._lock:
            return [h for h in self.held if not h.closed.is_set()]

    def __exit__(self, *exc: object) -> None:
        self.answer()  # held handlers answer and end; none is left waiting on a connection
        super().__exit__(*exc)


class Sleeps(list[float]):
    """A stand-in for the client's backoff sleep that records the waits instead of waiting them."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


# Fixtures for the modules that drive the real model client against this server (imported there, autouse).
@pytest.fixture(autouse=True)
def loopback_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test")


@pytest.fixture(autouse=True, scope="module")
def warmed_litellm() -> None:
    warm_litellm()
