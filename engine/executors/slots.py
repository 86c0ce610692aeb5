"""Per-model connection limits shared by every worker of a run: a slot server the driver runs, and its client.

`--per-model N` bounds a model's calls in flight. In one process that is a semaphore (engine/models.py);
across worker processes or Ray nodes it has to be one count, so the driver serves it: a worker opens a TCP
connection per model call, names the model, and holds the slot from the server's "ok" until it closes the
connection. Tying a slot to a connection means a worker that dies — a killed process, a lost node — gives
its slots back the moment its sockets close, rather than leaking them for the rest of the run.
The client is the `Limiter` the litellm model holds around each request (and only the request).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress


class SlotServerGone(BaseException):
    """The driver's slot server cannot be reached: the run's driver is gone. A BaseException on purpose: it must
    abort the shard (nothing stored for the rollouts in flight, so a resume redoes them), not be recorded as a
    failed model call or a harness error of one rollout."""


class SlotServer:
    """Serves `limit` slots per model on (host, port) from a thread of its own."""

    def __init__(self, limit: int, host: str = "127.0.0.1") -> None:
        self.limit = limit
        self.host = host
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self.granted = 0

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def start(self) -> tuple[str, int]:
        self._thread = threading.Thread(target=self._serve, name="model-slots", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if not self.port:
            raise OSError(f"the model slot server could not listen on {self.host}")
        return self.address

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _serve(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            server = loop.run_until_complete(asyncio.start_server(self._client, self.host, 0, backlog=1024))
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            loop.run_forever()
            server.close()
        finally:
            self._ready.set()
            loop.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            model = (await reader.readline()).decode(errors="replace").strip()
            if not model:
                return
            semaphore = self._semaphores.setdefault(model, asyncio.Semaphore(self.limit))
            async with semaphore:
                self.granted += 1
                writer.write(b"ok\n")
                await writer.drain()
                await reader.read()  # until the worker closes the connection: the call is over (or it died)
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()


class SlotClient:
    """The worker's side: `slot(model)` holds one of the driver's slots for that model (a `Limiter`)."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.host, self.port = address

    @asynccontextmanager
    async def slot(self, model: str) -> AsyncIterator[None]:
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        except OSError as exc:
            raise SlotServerGone(f"the run's model slot server at {self.host}:{self.port} is unreachable "
                                 f"({exc.strerror or exc}); the driver is gone") from None
        try:
            writer.write(model.encode() + b"\n")
            await writer.drain()
            if await reader.readline() != b"ok\n":
                raise SlotServerGone(f"the run's model slot server at {self.host}:{self.port} closed the "
                                     f"connection; the driver is gone")
            yield
        finally:
            writer.close()
            with suppress(ConnectionError, OSError):
                await writer.wait_closed()
