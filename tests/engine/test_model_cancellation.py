"""A model call that takes too long, or is cancelled, lets go of the server: its connection is closed, and a retry
is sent only after that — never a second request beside one the server is still computing.

The stand-in (tests/engine/hanging_server.py) is a real server on loopback that reads each request and never
answers it; it notes, when each request arrives, how many earlier ones are still open. Backoff sleeps are
injected, so the retries follow each other as closely as they can; nothing here waits for a fixed time, and
the two-second timeouts are the model's own bound being exercised.
"""

from __future__ import annotations

import asyncio

import pytest

from redagent.llm.client import MODEL_TIMEOUT, LiteLLMModel, ModelFailure, ModelRequest
from tests.engine.hanging_server import HangingServer, Sleeps, loopback_api_key, warmed_litellm  # noqa: F401

ASK = ModelRequest(messages=[{"role": "user", "content": "hello"}])
HANG_S = 60  # far above any bound exercised here


def _model(server: HangingServer, *, retries: int, provider: str = "openai") -> LiteLLMModel:
    return LiteLLMModel(f"{provider}/stub-model", api_base=server.url, timeout=2, retries=retries, sleep=Sleeps())


def _all_closed(server: HangingServer) -> bool:
    return all(h.closed.wait(HANG_S) for h in server.held)


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm"])
def test_a_timed_out_attempt_is_closed_before_its_retry(provider):
    with HangingServer() as server:
        with pytest.raises(ModelFailure) as failure:
            asyncio.run(_model(server, retries=2, provider=provider).complete(ASK))
        assert failure.value.reason == MODEL_TIMEOUT
        assert failure.value.detail.startswith("after 3 attempts: ")
        assert len(server.held) == 3  # one request per attempt
        assert [h.open_at_arrival for h in server.held] == [0, 0, 0]  # each retry came after the last closed
        assert _all_closed(server)


def test_a_server_that_trickles_bytes_is_cut_at_the_timeout():
    """A timeout between reads never fires on a server that sends a byte now and then; the attempt's own bound
    does, and the connection is closed."""
    with HangingServer(trickle=True) as server:
        with pytest.raises(ModelFailure) as failure:
            asyncio.run(_model(server, retries=1).complete(ASK))
        assert failure.value.reason == MODEL_TIMEOUT
        assert len(server.held) == 2 and [h.open_at_arrival for h in server.held] == [0, 0]
        assert _all_closed(server)


def test_a_cancelled_call_closes_its_connection_and_is_not_sent_again():
    async def go(server: HangingServer) -> None:
        call = asyncio.create_task(
            LiteLLMModel("openai/stub-model", api_base=server.url, timeout=HANG_S, retries=3).complete(ASK)
        )
        await server.until_held(1, "the request reached the server", HANG_S, beside=call)  # the call is in flight
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    with HangingServer() as server:
        asyncio.run(go(server))
        assert server.held[0].closed.wait(HANG_S)  # the server saw the client go away
        assert len(server.held) == 1
