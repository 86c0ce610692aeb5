"""The CLI endpoint's upstream call: the run's per-call timeout and retry budget, and one request of a rollout in
flight at a time — a CLI that gives up on a request and sends it again does not leave the first computing.

Driven over the endpoint's real Unix socket (no CLI needed, as in test_cli_endpoint.py) with the run's real
model client, against the loopback stand-in that holds requests unanswered (tests/engine/hanging_server.py)
and notes how many of a client's earlier requests were still open when each arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from redagent.engine.harnesses.cli.endpoint import Endpoint
from redagent.llm.client import MODEL_TIMEOUT, LiteLLMModel, ModelFailure
from tests.engine.hanging_server import HangingServer, Sleeps, loopback_api_key, warmed_litellm  # noqa: F401
from tests.engine.test_cli_endpoint import _ctx, _tools

HANG_S = 60  # far above any bound exercised here


def _request(ctx) -> dict[str, Any]:
    """A chat-completions request as a CLI sends it: the served tools under its prefix."""
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "Send it."}],
        "tools": _tools("mcp__redagent__", ctx),
    }


@contextlib.asynccontextmanager
async def _serving(ctx) -> AsyncIterator[tuple[Endpoint, aiohttp.ClientSession]]:
    """The endpoint on a socket in a temporary folder and a client of it; both closed, the folder removed."""
    with tempfile.TemporaryDirectory() as folder:
        endpoint = Endpoint(ctx, "test", Path(folder) / "model.sock")
        await endpoint.start()
        http = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(endpoint.path)))
        try:
            yield endpoint, http
        finally:
            await http.close()
            await endpoint.close()


async def _post(http: aiohttp.ClientSession, body: dict[str, Any]) -> tuple[int, Any]:
    async with http.post("http://endpoint/v1/chat/completions", data=json.dumps(body)) as response:
        return response.status, json.loads(await response.text())


def test_the_upstream_call_has_the_runs_timeout_and_retries():
    """A model that never answers: two attempts (retries=1) of the timeout each, each closed before the next,
    then the CLI gets a 500 and the rollout fails with the model's reason."""

    async def go(server: HangingServer) -> tuple[int, Any, Endpoint]:
        model = LiteLLMModel("openai/stub-model", api_base=server.url, timeout=2, retries=1, sleep=Sleeps())
        ctx = _ctx(model)
        async with _serving(ctx) as (endpoint, http):
            status, answer = await _post(http, _request(ctx))
        return status, answer, endpoint

    with HangingServer() as server:
        status, answer, endpoint = asyncio.run(go(server))
        assert status == 500 and answer["error"]["message"].startswith("after 2 attempts: ")
        assert isinstance(endpoint.failure, ModelFailure) and endpoint.failure.reason == MODEL_TIMEOUT
        assert len(server.held) == 2 and [h.open_at_arrival for h in server.held] == [0, 0]
        assert all(h.closed.wait(HANG_S) for h in server.held)


def test_a_request_the_cli_gives_up_on_is_cancelled_upstream_not_left_beside_its_resend():
    """The CLI closes its connection on a request the model has not answered and sends it again at once: the
    first upstream request is closed before the second is sent, and the second is answered."""

    async def go(server: HangingServer) -> tuple[int, Any, Endpoint]:
        model = LiteLLMModel("openai/stub-model", api_base=server.url, timeout=HANG_S, retries=3)
        ctx = _ctx(model)
        async with _serving(ctx) as (endpoint, http):
            first = asyncio.create_task(_post(http, _request(ctx)))
            await server.until_held(1, "the first request sent upstream", HANG_S, beside=first)
            first.cancel()  # the CLI's own timeout: it drops the connection
            with pytest.raises(asyncio.CancelledError):
                await first
            again = asyncio.create_task(_post(http, _request(ctx)))
            await server.until_held(2, "the second request sent upstream", HANG_S, beside=again)
            server.answer()
            status, answer = await asyncio.wait_for(again, HANG_S)
        return status, answer, endpoint

    with HangingServer() as server:
        status, answer, endpoint = asyncio.run(go(server))
        assert status == 200 and answer["choices"][0]["message"]["content"] == "Done."
        assert endpoint.failure is None
        assert [h.open_at_arrival for h in server.held] == [0, 0]  # never two of the rollout's requests open
        assert server.held[0].closed.wait(HANG_S)


def test_closing_the_endpoint_cancels_a_model_call_in_flight():
    """The rollout ends (a stop cancelled it) while the model computes: closing the endpoint closes the upstream
    request instead of waiting for an answer that may never come."""

    async def go(server: HangingServer) -> None:
        model = LiteLLMModel("openai/stub-model", api_base=server.url, timeout=HANG_S, retries=3)
        ctx = _ctx(model)
        async with _serving(ctx) as (endpoint, http):
            pending = asyncio.create_task(_post(http, _request(ctx)))
            await server.until_held(1, "the request sent upstream", HANG_S, beside=pending)
            await asyncio.wait_for(endpoint.close(), HANG_S)
            with pytest.raises(aiohttp.ClientError):
                await asyncio.wait_for(pending, HANG_S)

    with HangingServer() as server:
        asyncio.run(go(server))
        assert server.held[0].closed.wait(HANG_S) and len(server.held) == 1
