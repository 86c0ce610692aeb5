"""Models behind one interface: real models through litellm, and the calibration agents (engine/sim.py).

A harness sends a `ModelRequest` (OpenAI-style messages, optional function tools) and gets a
`ModelReply` (text, tool calls with their raw argument strings, usage, cost). A model that still
fails after its retry budget raises `ModelFailure` with a reason the rollout is marked invalid by —
a failed model call is never a safe rollout.

Failures are classified by what happened, not by which exception class litellm chose for it: the
HTTP status where there is one (litellm reports a 502 as `BadGatewayError`, a 409 or 403 as a bare
`APIError`, a `hosted_vllm/` body that is not JSON as an `APIError` with status 200, a missing API key
as an `InternalServerError`), the message where the status lies. Transient failures (408, 409, 429,
5xx, dropped connections, unusable responses) are retried with exponential backoff and jitter,
waiting at least what the server's `Retry-After` asks; the rest fail at once with a reason that names
the cause.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import random
import re
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Protocol, TypeVar
from urllib.parse import urlparse

from redagent.errors import UserError

# litellm must not reach for the network at import time to refresh its price map.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Why a model call failed, as stored in `rollout.invalid_reason`. The transient ones are retried here
# and may be retried again later (`redagent run --resume --retry-invalid`).
MODEL_RATE_LIMITED = "model_rate_limited"  # 429
MODEL_SERVER_ERROR = "model_server_error"  # 5xx, 409, connection refused or dropped
MODEL_TIMEOUT = "model_timeout"  # no answer within the timeout, or 408
MODEL_BAD_RESPONSE = "model_bad_response"  # an answer that is not a usable completion (malformed JSON, no choices)
MODEL_AUTH = "model_auth"  # 401, 403, or no API key at all
MODEL_NOT_FOUND = "model_not_found"  # 404: no such model, or no such endpoint path
MODEL_BAD_REQUEST = "model_bad_request"  # 400, 413, 422: the server refused this request as malformed
MODEL_CONTEXT_EXCEEDED = "model_context_exceeded"  # the conversation outgrew the model's context window
MODEL_ERROR = "model_error"  # a provider error that fits none of the above
# Not a failed call but an incomplete answer: the reply stopped at the token limit (`finish_reason: length`,
# Anthropic's `stop_reason: max_tokens`). A rollout whose decision was cut is invalid with this reason
# (engine/types.py `RolloutContext.ask`), never stored as the model's final answer.
MODEL_TRUNCATED = "model_truncated"
TRANSIENT_REASONS = frozenset({MODEL_RATE_LIMITED, MODEL_SERVER_ERROR, MODEL_TIMEOUT, MODEL_BAD_RESPONSE})
RETRY_STATUSES = frozenset({408, 409, 429})  # and every 5xx

# A body that did not parse: litellm words it this way for openai/ (as a 500) and hosted_vllm/ (as a 200).
_UNPARSED = re.compile(
    r"Unable to get json response|JSONDecodeError|Expecting value|Expecting property name|"
    r"Unterminated string|Extra data|Invalid control character|Invalid JSON",
    re.IGNORECASE,
)
_NO_KEY = re.compile(
    r"Missing credentials|api_key client option must be set|No API key provided|"
    r"api key is required|Missing API Key",
    re.IGNORECASE,
)
# litellm prefixes every message with its own class names ("litellm.BadGatewayError: BadGatewayError:
# OpenAIException - "); the user wants what the server said.
_PREFIX = re.compile(r"^(litellm\.\w+:\s*)?(\w+Error:\s*|Timeout Error:\s*)?(\w+Exception\s*-\s*)?")
# The connection itself failed: litellm gives these a made-up status 500, which is not what any server said.
_CONNECTION = re.compile(
    r"Connection error|Server disconnected|Connection refused|Connection reset|"
    r"Cannot connect|RemoteProtocolError|ConnectError",
    re.IGNORECASE,
)


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
    # Where the reply must end (OpenAI's `stop`): a text-action harness stops the model before it writes the
    # observation itself, as ReAct agents do; empty sends none.
    stop: tuple[str, ...] = ()


@dataclass
class ModelReply:
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    # Why the model stopped, in OpenAI's words (stop, tool_calls, length, content_filter); "" where nobody said.
    finish_reason: str = ""

    @property
    def truncated(self) -> bool:
        """The reply was cut by the token limit: its text or its last tool call's arguments are incomplete."""
        return self.finish_reason == "length"


class ModelFailure(UserError):
    """The model could not answer within its retry budget; `reason` names why."""

    title = "Model endpoint error"

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class Model(Protocol):
    name: str

    async def complete(self, request: ModelRequest) -> ModelReply: ...


# What a request that offers tools says about calling them (`redagent run --tool-choice`). "auto" by default:
# llama-cpp-python's function-calling chat handlers render the tools into the prompt only when
# `tool_choice` is set (without it the model never sees a tool), and OpenAI, vLLM, LM Studio and Ollama
# treat "auto" as their own default. "omit" leaves the field out for a server that refuses it (a vLLM
# started without --enable-auto-tool-choice answers "auto" with a 400).
TOOL_CHOICES = ("auto", "required", "none", "omit")
DEFAULT_TOOL_CHOICE = "auto"


def wire_messages(messages: list[dict[str, Any]], provider: str) -> list[dict[str, Any]]:
    """OpenAI-style messages as model servers accept them; the harnesses' own lists are left as they are.

    - An assistant message with tool calls carries `content` as a string ("" when the model said nothing):
      litellm drops a `content: None` from the request, and a chat template that reads `message.content`
      (llama.cpp's, llama-cpp-python's, many Jinja templates vLLM serves) then fails with HTTP 500.
      Anthropic's translation in litellm skips an empty text, so "" is safe there too.
    - A tool result's `content` is a string (never None).
    - Ollama's /api/chat (`ollama/`, `ollama_chat/`) takes a tool call's arguments as a JSON object, which
      litellm parses from the string: arguments that are not a JSON object (a model's malformed call, kept
      as it produced it) go as {"_raw": "…"} instead of failing the request before it is sent.
    """
    ollama = provider in ("ollama", "ollama_chat")
    out = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            message = {**message, "content": message.get("content") or ""}
            if ollama:
                message["tool_calls"] = [_object_arguments(call) for call in message["tool_calls"]]
        elif role == "tool" and not isinstance(message.get("content"), str | list):
            message = {**message, "content": "" if message.get("content") is None else str(message["content"])}
        out.append(message)
    return out


def _object_arguments(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return call
    return {**call, "function": {**function, "arguments": json.dumps({"_raw": str(arguments or "")})}}


class ModelConfigError(UserError, ValueError):
    """A model string or endpoint that cannot work; reported to the user before a run starts."""

    title = "Model configuration error"


def _litellm():
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    # litellm logs a warning line of its own for things this module reports (and for event loops that
    # change between asyncio.run calls); the user gets one line from redagent instead.
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
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


@dataclass(frozen=True)
class Failure:
    """One failed attempt, classified: the reason it would be recorded under, and whether to try again."""

    reason: str
    detail: str
    retry: bool
    retry_after: float | None = None  # seconds the server asked us to wait


def classify(exc: BaseException, now: Callable[[], float] = time.time) -> Failure | None:
    """What a failed litellm call means; None for an exception that is no model failure (a bug: re-raise)."""
    litellm = _litellm()
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    message = str(exc)
    # The status is worth showing only where a server sent it (not a client timeout, a dropped
    # connection or a body that did not parse, for which litellm invents one).
    # A body that did not parse comes as a made-up 500 (openai/) or the real 200 (hosted_vllm/); a 4xx
    # whose message mentions JSON is the server refusing our request, not an unusable answer.
    unparsed = bool(_UNPARSED.search(message)) and (status is None or not 400 <= status < 500)
    client_side = unparsed or _CONNECTION.search(message) or re.search(r"timed out", message, re.I)
    shown = None if client_side else status
    detail = _detail(exc, shown)
    after = retry_after(exc, now)
    if _NO_KEY.search(message):
        return Failure(MODEL_AUTH, detail, retry=False)
    if isinstance(exc, litellm.Timeout | asyncio.TimeoutError | TimeoutError) or status == 408:
        return Failure(MODEL_TIMEOUT, detail, retry=True, retry_after=after)
    if isinstance(exc, litellm.APIResponseValidationError) or unparsed or (status is not None and status < 400):
        return Failure(MODEL_BAD_RESPONSE, detail, retry=True)
    if status == 429 or isinstance(exc, litellm.RateLimitError):
        return Failure(MODEL_RATE_LIMITED, detail, retry=True, retry_after=after)
    if status in (401, 403) or isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError):
        return Failure(MODEL_AUTH, detail, retry=False)
    if status == 404 or isinstance(exc, litellm.NotFoundError):
        return Failure(MODEL_NOT_FOUND, detail, retry=False)
    if isinstance(exc, litellm.ContextWindowExceededError):
        return Failure(MODEL_CONTEXT_EXCEEDED, detail, retry=False)
    if (
        status == 409
        or (status is not None and status >= 500)
        or isinstance(
            exc,
            litellm.APIConnectionError
            | litellm.InternalServerError
            | litellm.ServiceUnavailableError
            | ConnectionError,
        )
    ):
        return Failure(MODEL_SERVER_ERROR, detail, retry=True, retry_after=after)
    if status is not None or isinstance(exc, litellm.BadRequestError | litellm.UnprocessableEntityError):
        return Failure(MODEL_BAD_REQUEST if status in (None, 400, 413, 422) else MODEL_ERROR, detail, retry=False)
    if isinstance(exc, litellm.APIError):
        return Failure(MODEL_ERROR, detail, retry=False)
    return None


def retry_after(exc: BaseException, now: Callable[[], float] = time.time) -> float | None:
    """Seconds the server asked to wait (`retry-after-ms`, or `Retry-After` in seconds or as an HTTP date)."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if not headers:
            continue
        try:
            millis = headers.get("retry-after-ms")
            if millis is not None:
                return max(0.0, float(millis) / 1000)
            value = headers.get("retry-after")
        except (AttributeError, TypeError, ValueError):
            continue
        if value is None:
            continue
        value = str(value).strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - now())
        except (TypeError, ValueError, IndexError, OverflowError):
            continue  # a header that is neither: fall back to our own backoff
    return None


def _detail(exc: BaseException, status: int | None) -> str:
    text = _PREFIX.sub("", _one_line(exc), count=1) or type(exc).__name__
    if text.startswith("{"):  # some providers pass the server's JSON error body on verbatim
        try:
            body = json.loads(text)
            error = body.get("error") if isinstance(body.get("error"), dict) else body
            text = str(error.get("message") or error.get("detail") or text)
        except (ValueError, AttributeError):
            pass
    if status is not None and re.fullmatch(rf"(Error code: )?{status}", text):
        return f"HTTP {status}"  # the server said nothing beyond its status
    return f"HTTP {status}: {text}" if status is not None and not text.startswith(str(status)) else text


class LiteLLMModel:
    """Any litellm provider string, retried by what each failure means (see the module docstring).

    `max_connections` bounds this model's calls in flight (the per-model limit): it is held only
    around the request itself, never while waiting out a backoff, so one slow or rate-limited model
    holds no rollout slot of another. The bound is pluggable: by default a semaphore of this process;
    a run spread over several processes or Ray nodes plugs in a `limiter` whose slots are global
    (engine/executors/slots.py), at the same place around the same request. `sleep`, `now` and `rng` are
    injectable so tests can check the retry schedule without waiting for it.
    """

    def __init__(
        self,
        name: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_retry_after: float = 120.0,
        temperature: float = 0.0,
        max_tokens: int = 2048,
        tool_choice: str = DEFAULT_TOOL_CHOICE,
        tools_confirmed: bool = False,
        max_connections: int | None = None,
        limiter: Limiter | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        now: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.temperature = temperature
        self.max_tokens = max_tokens
        if tool_choice not in TOOL_CHOICES:
            raise ModelConfigError(f"unknown tool choice {tool_choice!r} (known: {', '.join(TOOL_CHOICES)})")
        self.tool_choice = tool_choice
        # The run's pre-flight got a tool call back from this model: tools offered to it reach it.
        self.tools_confirmed = tools_confirmed
        self.max_connections = max_connections
        self.limiter = limiter
        self.sleep = sleep
        self.now = now
        self.rng = rng or random.Random()
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self._provider: str | None = None  # litellm's provider of `name`, looked up on the first request
        self._takes_stop: bool | None = None  # whether the model accepts `stop`, looked up on the first request

    def delay(self, attempt: int, failure: Failure) -> float:
        """How long to wait before attempt `attempt + 1`: the server's Retry-After where it gave one (bounded),
        else exponential backoff with jitter (half to all of base·2^attempt, bounded)."""
        if failure.retry_after is not None:
            return min(failure.retry_after, self.max_retry_after)
        return min(self.max_backoff, self.backoff * (2**attempt)) * (0.5 + self.rng.random() / 2)

    async def complete(self, request: ModelRequest) -> ModelReply:
        """One answer, within the retry budget. Each attempt is bounded as a whole by `timeout` and ends by
        cancelling its request, which closes its connection: a server that notices a client going away stops
        computing, and the next attempt is sent only once the last one's connection is closed, never beside it.
        A cancelled call (a run that stops) closes its connection the same way and lets the cancellation
        through."""
        litellm = _litellm()
        failure = Failure(MODEL_ERROR, "no attempt made", retry=False)
        for attempt in range(self.retries + 1):
            try:
                async with self._slot():
                    # litellm's own timeout is a bound between reads: a server that trickles bytes (or keeps
                    # a stream alive) never trips it. This bound is on the attempt, and ends it by cancellation.
                    deadline = asyncio.timeout(self.timeout)
                    try:
                        async with deadline:
                            response = await litellm.acompletion(
                                model=self.name,
                                **self.payload(request),
                                api_base=self.api_base,
                                api_key=self.api_key,
                                timeout=self.timeout,
                                num_retries=0,
                                max_retries=0,
                                temperature=self.temperature,
                                max_tokens=self.max_tokens,
                            )
                    except TimeoutError:
                        if not deadline.expired():
                            raise
                        raise _Deadline(f"no answer within {self.timeout:g} s") from None
                return _reply(response)
            except _Deadline as exc:
                failure = Failure(MODEL_TIMEOUT, str(exc), retry=True)
            except _BadReply as exc:
                failure = Failure(MODEL_BAD_RESPONSE, str(exc), retry=True)
            except Exception as exc:
                classified = classify(exc, self.now)
                if classified is None:
                    raise
                failure = classified
            if not failure.retry:
                raise ModelFailure(failure.reason, failure.detail) from None
            # The failed attempt's transport closes its socket on the loop's next turn (a cancelled aiohttp
            # request closes rather than pools its connection): let that happen before anything else is sent.
            await asyncio.sleep(0)
            if attempt < self.retries:
                await self.sleep(self.delay(attempt, failure))
        raise ModelFailure(failure.reason, f"after {self.retries + 1} attempts: {failure.detail}")

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        """The messages, tools, tool choice and stop sequences of `request` as this model's server expects them:
        tools only when there are some, with the run's `tool_choice` (unless "omit"); see `wire_messages`."""
        if self._provider is None:
            self._provider = _provider(self.name, self.api_base)
        body: dict[str, Any] = {"messages": wire_messages(request.messages, self._provider)}
        if request.tools:
            body["tools"] = request.tools
            if self.tool_choice != "omit":
                body["tool_choice"] = self.tool_choice
        if request.stop:
            if self._takes_stop is None:
                self._takes_stop = _takes_stop(self.name, self.api_base)
            # A model that refuses `stop` (OpenAI's reasoning models answer HTTP 400) gets none: react's parser
            # reads the first action of a longer reply all the same.
            if self._takes_stop:
                body["stop"] = list(request.stop)
        return body

    def _slot(self):
        if self.limiter is not None:
            return self.limiter.slot(self.name)
        if not self.max_connections:
            return _NoSlot()
        loop = asyncio.get_running_loop()
        # A semaphore belongs to one event loop; judges run one loop per command, the console one per run.
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.max_connections))
        return self._slots[1]


class Limiter(Protocol):
    """Where a model call takes its per-model slot: `slot(model)` is an async context manager held around the
    request only."""

    def slot(self, model: str) -> AbstractAsyncContextManager[Any]: ...


class _NoSlot:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


class _BadReply(Exception):
    """A response that parsed but is no chat completion (no choices, no message)."""


class _Deadline(Exception):
    """An attempt that outlived the per-call timeout and was cancelled."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _reply(response: Any) -> ModelReply:
    try:
        message = response.choices[0].message
        calls = []
        for i, call in enumerate(getattr(message, "tool_calls", None) or []):
            function = call.function
            arguments = function.arguments if isinstance(function.arguments, str) else json.dumps(function.arguments)
            calls.append(ToolCall(id=call.id or f"call_{i}", name=function.name or "", arguments=arguments or ""))
        content = message.content or ""
        finish = str(getattr(response.choices[0], "finish_reason", None) or "")
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise _BadReply(f"the response is no chat completion ({type(exc).__name__}: {exc})"[:300]) from None
    if not isinstance(content, str):
        raise _BadReply(f"the response's content is {type(content).__name__}, not text")
    usage = getattr(response, "usage", None)
    # litellm prices every response it returns (from its local price map); None when the model has no
    # known price (local endpoints), which is recorded as 0 rather than guessed.
    cost = float((getattr(response, "_hidden_params", None) or {}).get("response_cost") or 0.0)
    return ModelReply(
        content=content,
        tool_calls=calls,
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        cost_usd=cost,
        # litellm maps each provider's word for it to OpenAI's (Anthropic's max_tokens, Ollama's done_reason).
        finish_reason="length" if finish in ("length", "max_tokens") else finish,
    )


# ---------------------------------------------------------------- the pre-flight

_T = TypeVar("_T")
PREFLIGHT_PROMPT = [{"role": "user", "content": "Reply with the single word OK."}]
# Providers that speak the OpenAI protocol at an --api-base whose path ends in /v1.
_OPENAI_COMPATIBLE = {"openai", "hosted_vllm", "custom_openai", "openai_like", "lm_studio", "llamafile"}


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine to completion from synchronous code, also when this thread already runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@dataclass
class Preflight:
    """What the pre-flight found out about a model's server: which server it is (where it says), the names
    it lists, and whether it answered a request offering a tool with a tool call (None: not asked)."""

    model: str
    server: str = ""  # llama.cpp, llama-cpp-python, vLLM, Ollama, LM Studio; "" when it does not say
    served: list[str] = field(default_factory=list)
    tool_calls: bool | None = None
    warnings: list[str] = field(default_factory=list)


PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Checks that the connection works. Call it whenever you are asked to.",
        "parameters": {"type": "object", "properties": {}},
    },
}
PROBE_PROMPT = [{"role": "user", "content": "Call the ping tool now. Do not answer with text."}]


def preflight(
    name: str,
    api_base: str | None,
    *,
    timeout: float = 60.0,
    retries: int = 2,
    api_key: str | None = None,
    tool_choice: str = DEFAULT_TOOL_CHOICE,
    probe_tools: bool = True,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> Preflight:
    """Real requests to the model before anything is stored. ModelConfigError (one line naming the cause and
    the fix) for a missing or refused key, a model name the endpoint does not serve — also on a server that
    answers any name (llama.cpp's does) but lists what it serves —, an endpoint path without /v1, an
    endpoint that keeps failing, or a server that refuses requests with tools. With `probe_tools`, one more
    request offers a tool and asks for a call: no call back is a warning naming the server's own fix (the
    run goes on; `runs show` warns where no rollout made a tool call). Bounded: the listing waits 5 s, the
    probe is sent once more at most."""
    check_model(name, api_base)
    found = Preflight(name)
    bare = name.split("/", 1)[1] if "/" in name else name
    provider = _provider(name, api_base)
    listing = _listing(provider, api_base, api_key) if api_base else None
    if listing is not None:
        found.served, owners = listing
        found.server = _server_kind(provider, owners)
    model = LiteLLMModel(
        name, api_base=api_base, api_key=api_key, timeout=timeout, retries=retries, max_tokens=16, sleep=sleep
    )
    try:
        run_sync(model.complete(ModelRequest(messages=PREFLIGHT_PROMPT)))
    except ModelFailure as failure:
        raise ModelConfigError(explain_failure(name, api_base, failure, api_key)) from None
    if found.served and not _serves(found.served, bare):
        # It answered a name it does not list: a server that answers any name with the model it has loaded.
        who = f"{found.server}'s server" if found.server else "the server"
        raise ModelConfigError(
            f"model {name}: {api_base} serves no model {bare!r} (it serves: {', '.join(found.served[:8])}), yet "
            f"{who} answered under that name: it answers any model name with its own model, so a run would "
            f"measure that model under the wrong name; check --models"
        )
    if not probe_tools:
        return found
    probe = LiteLLMModel(
        name,
        api_base=api_base,
        api_key=api_key,
        timeout=timeout,
        retries=min(retries, 1),
        max_tokens=64,
        tool_choice=tool_choice,
        sleep=sleep,
    )
    try:
        reply = run_sync(probe.complete(ModelRequest(messages=PROBE_PROMPT, tools=[PROBE_TOOL])))
    except ModelFailure as failure:
        where = f" at {api_base}" if api_base else ""
        raise ModelConfigError(
            f"model {name}: the server{where} refused a request with tools ({failure.reason}: {failure.detail}); "
            + tool_fix(found.server, tool_choice, failure.detail)
        ) from None
    found.tool_calls = bool(reply.tool_calls)
    if not found.tool_calls:
        found.warnings.append(
            f"model {name}: offered a tool and asked to call it, it answered without a tool call "
            f"({(reply.content or 'no text')[:60]!r}): the model may never see its tools; "
            + tool_fix(found.server, tool_choice, "")
        )
    return found


def tool_fix(server: str, tool_choice: str, detail: str) -> str:
    """The fix for a server that refuses tools or returns no tool call, in that server's own terms."""
    if re.search(r"enable-auto-tool-choice|tool-call-parser", detail) or server == "vLLM":
        return (
            "start vLLM with --enable-auto-tool-choice --tool-call-parser PARSER (the parser of the model's "
            "family: hermes, llama3_json, mistral, …), or run with --tool-choice required"
        )
    if re.search(r"does not support tools", detail) or server == "Ollama":
        return "this Ollama model has no tool support: pick one whose `ollama show MODEL` lists tools"
    if server == "LM Studio":
        return "try --tool-choice omit, or load a model LM Studio marks for tool use (capabilities: tool_use)"
    if re.search(r"tool_choice", detail):
        return "the server refuses this tool_choice: try --tool-choice omit"
    if server == "llama-cpp-python":
        return (
            "start llama-cpp-python's server with a function-calling chat format "
            "(--chat_format chatml-function-calling) and keep --tool-choice auto"
        )
    if server == "llama.cpp":
        return "start llama-server with --jinja (and --chat-template-file for a model whose template has no tools)"
    if tool_choice in ("omit", "none"):
        return f"--tool-choice {tool_choice} may keep the tools from the model: try --tool-choice auto"
    return "check that the server renders `tools` into the prompt and parses the model's tool calls"


def _serves(served: list[str], bare: str) -> bool:
    # Ollama lists `llama3.2:latest` and answers to `llama3.2`.
    return bare in served or f"{bare}:latest" in served or any(s.removesuffix(":latest") == bare for s in served)


def _server_kind(provider: str, owners: set[str]) -> str:
    """Which server this is, by litellm's provider or by what its model listing says owns the models
    (llama.cpp's server says "llamacpp", llama-cpp-python's "me", vLLM's "vllm")."""
    if provider == "hosted_vllm" or "vllm" in owners:
        return "vLLM"
    if provider in ("ollama", "ollama_chat") or "library" in owners or "ollama" in owners:
        return "Ollama"
    if provider == "lm_studio":
        return "LM Studio"
    if "llamacpp" in owners:
        return "llama.cpp"
    if "me" in owners:
        return "llama-cpp-python"
    return ""


def explain_failure(name: str, api_base: str | None, failure: ModelFailure, api_key: str | None = None) -> str:
    where = f" at {api_base}" if api_base else ""
    if failure.reason == MODEL_AUTH:
        keys = _missing_keys(name, api_base)
        if _NO_KEY.search(failure.detail) or (keys and not api_key):
            placeholder = (
                " (a local OpenAI-compatible server takes any placeholder, e.g. OPENAI_API_KEY=sk-local)"
                if api_base and _provider(name, api_base) in _OPENAI_COMPATIBLE
                else ""
            )
            return f"model {name}: no API key: set {' or '.join(keys) or 'the provider API key variable'}{placeholder}"
        return f"model {name}: the endpoint{where} refused the credentials ({failure.detail})"
    if failure.reason == MODEL_NOT_FOUND:
        return _not_found(name, api_base, failure.detail, api_key)
    return f"model {name}: the pre-flight request{where} failed: {failure.reason}: {failure.detail}"


def _provider(name: str, api_base: str | None) -> str:
    try:
        return _litellm().get_llm_provider(name, api_base=api_base)[1]
    except Exception:  # check_model has already vetted the name; this only picks a hint
        return ""


def _takes_stop(name: str, api_base: str | None) -> bool:
    """Whether litellm's table says the model accepts `stop`; a model it does not know (any local server) does."""
    try:
        model, provider, *_ = _litellm().get_llm_provider(name, api_base=api_base)
        params = _litellm().get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:  # litellm knows nothing of the model: OpenAI's protocol, which has `stop`
        return True
    return params is None or "stop" in params


def _missing_keys(name: str, api_base: str | None) -> list[str]:
    try:
        missing = _litellm().validate_environment(model=name, api_base=api_base).get("missing_keys") or []
    except Exception:  # a provider litellm cannot validate: no hint, the detail still says what failed
        return []
    return [k for k in missing if "KEY" in k or "TOKEN" in k]


def _not_found(name: str, api_base: str | None, detail: str, api_key: str | None) -> str:
    bare = name.split("/", 1)[1] if "/" in name else name
    if api_base and _provider(name, api_base) in _OPENAI_COMPATIBLE:
        served = _served_models(api_base, api_key)
        if served:
            return (
                f"model {name}: {api_base} serves no model {bare!r} (it serves: {', '.join(served[:8])}); "
                f"check --models"
            )
        if not urlparse(api_base).path.rstrip("/").endswith("/v1"):
            return (
                f"model {name}: {api_base} answered 404 ({detail}); an OpenAI-compatible endpoint's path "
                f"ends in /v1: try --api-base {api_base.rstrip('/')}/v1"
            )
    return f"model {name}: not found{' at ' + api_base if api_base else ''} ({detail}); check the model name"


def _served_models(api_base: str, api_key: str | None) -> list[str]:
    """The model ids an OpenAI-compatible endpoint lists at /models ([] when it lists none or cannot)."""
    listing = _listing("openai", api_base, api_key)
    return listing[0] if listing else []


def _listing(provider: str, api_base: str, api_key: str | None) -> tuple[list[str], set[str]] | None:
    """The model names a server lists, and who it says owns them: `/models` of an OpenAI-compatible endpoint,
    `/api/tags` of Ollama's own API; None when it lists none or cannot (waited for at most 5 s)."""
    import httpx

    ollama = provider in ("ollama", "ollama_chat")
    if provider not in _OPENAI_COMPATIBLE and not ollama:
        return None
    key = api_key or os.environ.get("OPENAI_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = f"{api_base.rstrip('/')}/{'api/tags' if ollama else 'models'}"
    try:
        response = httpx.get(url, headers=headers, timeout=5)
        body = response.json() if response.status_code == 200 else None
        data = body.get("models" if ollama else "data") if isinstance(body, dict) else None
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(data, list):
        return None
    field_name = "name" if ollama else "id"
    names = [str(m[field_name]) for m in data if isinstance(m, dict) and m.get(field_name)]
    owners = {"ollama"} if ollama else {str(m.get("owned_by")) for m in data if isinstance(m, dict)}
    return (names, owners) if names else None


def price(name: str, prompt_tokens: float, completion_tokens: float) -> float | None:
    """What litellm's cost map says these tokens cost on `name` (USD), None when the map has no price for it
    (a local model, or one litellm does not know)."""
    try:
        prompt_cost, completion_cost = _litellm().cost_per_token(
            model=name, prompt_tokens=int(round(prompt_tokens)), completion_tokens=int(round(completion_tokens))
        )
    except Exception:  # litellm raises its own "not mapped" error, or a provider's lookup error: no price
        return None
    return float(prompt_cost) + float(completion_cost)
