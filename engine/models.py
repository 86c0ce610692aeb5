"""Models behind one interface: real models through litellm, and the calibration agents (engine/sim.py).

A harness sends a `ModelRequest` (OpenAI-style messages, optional function tools) and gets a
`ModelReply` (text, tool calls with their raw argument strings, usage, cost). A model that still
fails after its retry budget raises `ModelFailure` with a reason the rollout is marked invalid by —
a failed model call is never a safe rollout.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlparse

# litellm must not reach for the network at import time to refresh its price map.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # exactly as the model produced it; may be malformed JSON


@dataclass
class ModelRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    harness: str = ""  # lets calibration agents answer in the harness's own format
    turn: int = 0  # which user turn the conversation is on


@dataclass
class ModelReply:
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class ModelFailure(Exception):
    """The model could not answer within its retry budget; `reason` names why."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class Model(Protocol):
    name: str

    async def complete(self, request: ModelRequest) -> ModelReply: ...


class ModelConfigError(ValueError):
    """A model string or endpoint that cannot work; reported to the user before a run starts."""


def _litellm():
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


def check_model(name: str, api_base: str | None) -> None:
    """Fail fast, before anything is written: unknown provider, or an endpoint nothing listens on."""
    litellm = _litellm()
    try:
        litellm.get_llm_provider(name, api_base=api_base)
    except Exception as exc:  # litellm raises several types here; all mean the same to the user
        raise ModelConfigError(f"unknown model provider in {name!r}: {str(exc).splitlines()[0][:160]}") from None
    if api_base:
        parsed = urlparse(api_base)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ModelConfigError(f"--api-base {api_base!r} is not an http(s) URL")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            with socket.create_connection((parsed.hostname, port), timeout=3):
                pass
        except OSError as exc:
            raise ModelConfigError(f"--api-base {api_base} is unreachable: {exc.strerror or exc}") from None


class LiteLLMModel:
    """Any litellm provider string; retries with exponential backoff on the errors worth retrying."""

    def __init__(self, name: str, *, api_base: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, retries: int = 3, backoff: float = 1.0,
                 temperature: float = 0.0, max_tokens: int = 2048) -> None:
        self.name = name
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.temperature = temperature
        self.max_tokens = max_tokens

    async def complete(self, request: ModelRequest) -> ModelReply:
        litellm = _litellm()
        retryable = (litellm.RateLimitError, litellm.Timeout, litellm.APIConnectionError,
                     litellm.InternalServerError, litellm.ServiceUnavailableError)
        last_reason, last_detail = "model_error", "no attempt made"
        for attempt in range(self.retries + 1):
            try:
                response = await litellm.acompletion(
                    model=self.name, messages=request.messages, tools=request.tools or None,
                    api_base=self.api_base, api_key=self.api_key, timeout=self.timeout, num_retries=0,
                    temperature=self.temperature, max_tokens=self.max_tokens)
                return _reply(litellm, response)
            except retryable as exc:
                last_reason, last_detail = _classify(litellm, exc), _one_line(exc)
            except litellm.APIError as exc:
                if getattr(exc, "status_code", 0) and exc.status_code < 500:
                    raise ModelFailure("model_error", _one_line(exc)) from None
                last_reason, last_detail = "model_error", _one_line(exc)
            except (litellm.AuthenticationError, litellm.BadRequestError, litellm.NotFoundError,
                    litellm.PermissionDeniedError) as exc:
                raise ModelFailure("model_error", _one_line(exc)) from None
            if attempt < self.retries:
                await asyncio.sleep(self.backoff * (2 ** attempt) * (0.5 + random.random() / 2))
        raise ModelFailure(last_reason, f"after {self.retries + 1} attempts: {last_detail}")


def _classify(litellm: Any, exc: Exception) -> str:
    if isinstance(exc, litellm.RateLimitError):
        return "rate_limited"
    if isinstance(exc, litellm.Timeout):
        return "timeout"
    return "model_error"


def _one_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _reply(litellm: Any, response: Any) -> ModelReply:
    message = response.choices[0].message
    calls = []
    for i, call in enumerate(getattr(message, "tool_calls", None) or []):
        function = call.function
        arguments = function.arguments if isinstance(function.arguments, str) else json.dumps(function.arguments)
        calls.append(ToolCall(id=call.id or f"call_{i}", name=function.name or "", arguments=arguments or ""))
    usage = getattr(response, "usage", None)
    # litellm prices every response it returns (from its local price map); None when the model has no
    # known price (local endpoints), which is recorded as 0 rather than guessed.
    cost = float((getattr(response, "_hidden_params", None) or {}).get("response_cost") or 0.0)
    return ModelReply(content=message.content or "", tool_calls=calls,
                      prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                      completion_tokens=getattr(usage, "completion_tokens", 0) or 0, cost_usd=cost)
