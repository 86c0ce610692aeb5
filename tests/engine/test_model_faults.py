"""The model client against a loopback endpoint that fails the way real ones do (no network beyond loopback).

502, 503 with Retry-After, 429 with an HTTP-date Retry-After, 408, 409, 422, bodies that are not JSON
(for openai/ and hosted_vllm/, which litellm reports differently), dropped connections, 401 and 404:
each ends as a retried success or as the invalid reason that names the cause. Backoff sleeps are
injected and recorded, so no test waits for time.
"""

from __future__ import annotations

import asyncio
from email.utils import formatdate

import pytest

from redagent.cases.loader import load_cases
from redagent.engine.rollout import execute_rollout
from redagent.engine.types import RolloutKey
from redagent.llm.client import (
    MODEL_AUTH,
    MODEL_BAD_REQUEST,
    MODEL_BAD_RESPONSE,
    MODEL_NOT_FOUND,
    MODEL_RATE_LIMITED,
    MODEL_SERVER_ERROR,
    MODEL_TIMEOUT,
    LiteLLMModel,
    ModelFailure,
    ModelRequest,
)
from tests.engine.openai_stub import ChatServer, drop, error, malformed, text

ASK = ModelRequest(messages=[{"role": "user", "content": "hello"}])
NOW = 1_900_000_000.0  # the injected clock: HTTP-date Retry-After is relative to it


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test")


class Sleeps(list):
    """An injected asyncio.sleep that records what it was asked to wait and returns at once."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client(
    server: ChatServer, sleeps: Sleeps, *, provider: str = "openai", retries: int = 3, **options
) -> LiteLLMModel:
    return LiteLLMModel(
        f"{provider}/stub-model",
        api_base=server.url,
        retries=retries,
        timeout=10,
        sleep=sleeps,
        now=lambda: NOW,
        **options,
    )


def ask(model: LiteLLMModel):
    return asyncio.run(model.complete(ASK))


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm"])
@pytest.mark.parametrize(
    "fault",
    [error(502), error(503), error(500), error(409), error(408), error(429), malformed(), drop()],
    ids=["502", "503", "500", "409", "408", "429", "malformed-json", "dropped"],
)
def test_a_transient_fault_is_retried_to_success(provider, fault):
    sleeps = Sleeps()
    with ChatServer() as server:
        server.script.extend([fault, fault, text("recovered")])
        reply = ask(client(server, sleeps, provider=provider))
        assert len(server.requests) == 3
    assert reply.content == "recovered"
    # Exponential backoff with jitter: attempt i waits between half and all of 1 s · 2^i.
    assert len(sleeps) == 2 and 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm"])
@pytest.mark.parametrize(
    "fault, reason",
    [
        (error(502, "Bad Gateway"), MODEL_SERVER_ERROR),
        (error(503), MODEL_SERVER_ERROR),
        (error(409), MODEL_SERVER_ERROR),
        (drop(), MODEL_SERVER_ERROR),
        (error(429), MODEL_RATE_LIMITED),
        (error(408), MODEL_TIMEOUT),
        (malformed(), MODEL_BAD_RESPONSE),
        (malformed('{"id": "x", "object": "chat.completion", "choices": []}'), MODEL_BAD_RESPONSE),
    ],
    ids=["502", "503", "409", "dropped", "429", "408", "malformed-json", "no-choices"],
)
def test_a_fault_that_persists_ends_as_its_own_reason(provider, fault, reason):
    sleeps = Sleeps()
    with ChatServer() as server:
        server.default = fault
        with pytest.raises(ModelFailure) as failure:
            ask(client(server, sleeps, provider=provider, retries=2))
        assert len(server.requests) == 3  # every attempt reached the server
    assert failure.value.reason == reason and failure.value.detail.startswith("after 3 attempts: ")
    assert len(sleeps) == 2


@pytest.mark.parametrize(
    "fault, reason",
    [
        (error(422, "messages: field required"), MODEL_BAD_REQUEST),
        (error(400), MODEL_BAD_REQUEST),
        (error(400, "Invalid JSON in the request body"), MODEL_BAD_REQUEST),  # our request, not its answer
        (error(401, "Incorrect API key provided"), MODEL_AUTH),
        (error(403), MODEL_AUTH),
        (error(404, "The model `x` does not exist."), MODEL_NOT_FOUND),
    ],
    ids=["422", "400", "400-json", "401", "403", "404"],
)
def test_a_fault_retrying_cannot_fix_fails_at_once(fault, reason):
    sleeps = Sleeps()
    with ChatServer() as server:
        server.script.append(fault)
        with pytest.raises(ModelFailure) as failure:
            ask(client(server, sleeps))
        assert len(server.requests) == 1
    assert failure.value.reason == reason and sleeps == []
    assert failure.value.detail.startswith(f"HTTP {fault['status']}: {fault['error']}")  # what the server said


def test_retry_after_in_seconds_is_honoured():
    sleeps = Sleeps()
    with ChatServer() as server:
        server.script.extend([error(503, headers={"Retry-After": "7"}), text("ok")])
        assert ask(client(server, sleeps)).content == "ok"
    assert sleeps == [7.0]


def test_retry_after_as_an_http_date_is_honoured():
    sleeps = Sleeps()
    with ChatServer() as server:
        server.script.extend([error(429, headers={"Retry-After": formatdate(NOW + 30, usegmt=True)}), text("ok")])
        assert ask(client(server, sleeps)).content == "ok"
    assert sleeps == [30.0]


def test_retry_after_ms_and_the_bound_on_waiting():
    sleeps = Sleeps()
    with ChatServer() as server:
        server.script.extend(
            [error(429, headers={"retry-after-ms": "1500"}), error(503, headers={"Retry-After": "86400"}), text("ok")]
        )
        assert ask(client(server, sleeps, max_retry_after=120)).content == "ok"
    assert sleeps == [1.5, 120.0]  # a day's Retry-After is waited out only up to the bound


def test_backoff_grows_exponentially_up_to_its_bound():
    sleeps = Sleeps()
    with ChatServer() as server:
        server.default = error(500)
        with pytest.raises(ModelFailure):
            ask(client(server, sleeps, retries=6, backoff=1.0, max_backoff=8.0))
    assert len(sleeps) == 6
    for attempt, waited in enumerate(sleeps):
        ceiling = min(8.0, 2.0**attempt)
        assert ceiling / 2 <= waited <= ceiling


def test_the_per_model_limit_holds_calls_not_backoffs(monkeypatch):
    """max_connections bounds calls in flight; a call waiting out its backoff holds no slot."""
    import litellm

    in_flight, peak = 0, 0
    release = None
    calls = []

    async def fake_completion(**kwargs):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        calls.append(kwargs["messages"][0]["content"])
        try:
            if kwargs["messages"][0]["content"] == "fails first" and calls.count("fails first") == 1:
                raise litellm.ServiceUnavailableError("busy", llm_provider="openai", model="stub-model")
            await release.wait()
            return litellm.ModelResponse(choices=[{"message": {"role": "assistant", "content": "ok"}}])
        finally:
            in_flight -= 1

    monkeypatch.setattr(litellm, "acompletion", fake_completion)

    async def go():
        nonlocal release
        release = asyncio.Event()
        waited = asyncio.Event()

        async def backoff(seconds: float) -> None:
            waited.set()  # the failed call is in its backoff: it must not hold the one slot
            await asyncio.sleep(0)

        model = LiteLLMModel("openai/stub-model", api_base="http://127.0.0.1:9/v1", max_connections=1, sleep=backoff)
        first = asyncio.create_task(model.complete(ModelRequest(messages=[{"role": "user", "content": "fails first"}])))
        await waited.wait()
        second = asyncio.create_task(model.complete(ModelRequest(messages=[{"role": "user", "content": "second"}])))
        while len(calls) < 2:
            await asyncio.sleep(0)
        release.set()
        return await asyncio.gather(first, second)

    replies = asyncio.run(go())
    assert [r.content for r in replies] == ["ok", "ok"] and peak == 1 and len(calls) == 3


CASE = next(c for c in load_cases() if c.id == "banking-e2-invoice-bank-details-change")


@pytest.mark.parametrize(
    "fault, reason",
    [(error(502), MODEL_SERVER_ERROR), (error(422), MODEL_BAD_REQUEST), (malformed(), MODEL_BAD_RESPONSE)],
)
def test_a_rollout_that_meets_a_fault_is_invalid_for_that_reason_not_harness_error(fault, reason):
    sleeps = Sleeps()
    with ChatServer() as server:
        server.default = fault
        model = client(server, sleeps, retries=1)
        key = RolloutKey(CASE.id, model.name, "native", "clean", "none", 1)
        record = asyncio.run(execute_rollout("run-faults", CASE, key, lambda name, case: model))
    assert not record.valid and record.invalid_reason == reason and record.E is None
    assert record.invalid_detail
