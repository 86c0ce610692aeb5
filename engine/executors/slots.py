"""Per-model connection limits shared by every worker of a run: a slot server the driver runs, and its client.

`--per-model N` bounds a model's calls in flight. In one process that is a semaphore (llm/client.py);
across worker processes or Ray nodes it has to be one count, so the driver serves it: a worker opens a TCP
connection per model call, names the model, and holds the slot from the server's "ok" until it closes the
connection. Tying a slot to a connection means a worker that dies — a killed process, a lost node — gives
its slots back the moment its sockets close, rather than leaking them for the rest of the run.
The client is the `Limiter` the litellm model holds around each request (and only the request).

The server listens on loopback, or on the node's address for a Ray cluster, where any local user (or any
host on the cluster's network) could connect: a request must carry the run's secret (a random token the
driver hands its workers inside the shard job, never printed) and name one of the run's models, within a
few seconds and one short line. Anything else is closed at once, so nobody outside the run can hold its
slots and stall it, and the server keeps one semaphore per model of the run, not per name it is sent.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress


class SlotServerGone(BaseException):
    """The driver's slot server cannot be reached: the run's driver is gone. A BaseException on purpose: it must
    abort the shard (nothing stored for the rollouts in flight, so a resume redoes them), not be recorded as a
    failed model call or a harness error of one rollout."""


REQUEST_SECONDS = 10.0  # a connection must send its request line within this
REQUEST_BYTES = 1024  # and in no more than this


class SlotServer:
    """Serves `limit` slots for each of `models` on (host, port) from a thread of its own."""

    def __init__(self, limit: int, models: list[str], host: str = "127.0.0.1") -> None:
        self.limit = limit
        self.models = frozenset(models)
        self.host = host
        self.port = 0
        self.secret = secrets.token_hex(16)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self.granted = 0
        self.refused = 0

    @property
    def address(self) -> tuple[str, int, str]:
        """What a worker needs to reach it: host, port and the run's secret."""
        return self.host, self.port, self.secret

    def start(self) -> tuple[str, int, str]:
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
            server = loop.run_until_complete(
                asyncio.start_server(self._client, self.host, 0, backlog=1024, limit=REQUEST_BYTES)
            )
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            loop.run_forever()
            server.close()
            # Connections still open (holders, waiters) end here rather than as coroutines left to the collector.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()

            async def drained() -> None:
                await asyncio.gather(*pending, return_exceptions=True)

            loop.run_until_complete(drained())
        finally:
            self._ready.set()
            loop.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), REQUEST_SECONDS)
            secret, _, model = line.decode(errors="replace").strip().partition(" ")
            if not hmac.compare_digest(secret.encode(), self.secret.encode()) or model not in self.models:
                self.refused += 1
                return
            semaphore = self._semaphores.setdefault(model, asyncio.Semaphore(self.limit))
            async with semaphore:
                self.granted += 1
                writer.write(b"ok\n")
                await writer.drain()
                await reader.read()  # until the worker closes the connection: the call is over (or it died)
        except (ConnectionError, OSError, TimeoutError, ValueError):  # ValueError: a line over REQUEST_BYTES
            self.refused += 1
        finally:
            writer.close()


class SlotClient:
    """The worker's side: `slot(model)` holds one of the driver's slots for that model (a `Limiter`)."""

    def __init__(self, address: tuple[str, int, str]) -> None:
        self.host, self.port, self._secret = address

    @asynccontextmanager
    async def slot(self, model: str) -> AsyncIterator[None]:
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        except OSError as exc:
            raise SlotServerGone(
                f"the run's model slot server at {self.host}:{self.port} is unreachable "
                f"({exc.strerror or exc}); the driver is gone"
            ) from None
        try:
            writer.write(f"{self._secret} {model}\n".encode())
            await writer.drain()
            if await reader.readline() != b"ok\n":
                raise SlotServerGone(
                    f"the run's model slot server at {self.host}:{self.port} closed the "
                    f"connection (the driver is gone, or this shard is not of its run)"
                )
            yield
        finally:
            writer.close()
            with suppress(ConnectionError, OSError):
                await writer.wait_closed()
