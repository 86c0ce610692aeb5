"""Loopback stand-ins for the model servers people run, each with its documented quirks (real HTTP on 127.0.0.1).

A toy model answers the way a small tool-using model does — a tool call when it is shown tools, a final
answer after a tool result, a ReAct action when the prompt lists tools as text — so every harness can
make tool calls through it. What differs is the server in front of it:

- `LlamaCppPython` — llama-cpp-python's OpenAI-compatible server with a function-calling chat format.
  It renders `tools` into the prompt only when `tool_choice` is set (its chatml-function-calling
  handler takes the plain chat path when `tool_choice` is None: found with SmolLM2 in issue 25 of this
  project, see also abetlen/llama-cpp-python#1338 on its tool_choice handling); its Jinja chat
  template reads `message.content` and answers HTTP 500 for a message without it (langchain4j#1958:
  llama.cpp needs `"content": null` on an assistant tool-call message); it answers any model name
  and lists its own at /v1/models with `owned_by: "me"`.
- `VLLM` — vLLM's OpenAI server with a tool parser. Without --enable-auto-tool-choice it answers
  `tool_choice: "auto"` with 400 `"auto" tool choice requires --enable-auto-tool-choice and
  --tool-call-parser to be set` (vllm-project/vllm#9986, QwenLM/Qwen-Agent#344); "required" works
  (guided decoding). It serves only its own model name (404 otherwise), `owned_by: "vllm"`.
- `Ollama` — Ollama's own API, `/api/chat` and `/api/tags`, which litellm's `ollama_chat/` speaks: a
  model without tool support answers 400 `… does not support tools` (ollama/ollama#6027,
  kenlasko/monize#405); `tool_choice` is ignored (ollama/ollama#8421; litellm drops it for Ollama);
  a tool call's `arguments` must be a JSON object (Go's unmarshal refuses a string); a reply cut by
  `num_predict` has `done_reason: "length"`.
- `LMStudio` — LM Studio's OpenAI-compatible server: `tool_choice` only as a string, an object is
  400 `Invalid tool_choice type: 'object'. Supported string values: none, auto, required`
  (lmstudio-ai/docs#177, can1357/llm-git#13).

Every server cuts a reply longer than `max_tokens` (in words) and says `length`; `long_answers` makes the
toy model's final answers long. `requests` keeps every chat request's body; `shown_tools` whether the model
saw tools in each answered request.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.engine.loopback import LoopbackServer

LONG = " ".join(f"word{i}" for i in range(200))
INVENTED = "\nObservation: " + " ".join(f"invented{i}" for i in range(3000))


class Refusal(Exception):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


def toy_model(messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, long: bool) -> dict[str, Any]:
    """A small tool-using model: {"content": str} or {"tool_calls": [(name, args)]}."""
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return {"content": LONG if long else "Done: the task is complete."}
    if tools:
        names = [t["function"]["name"] for t in tools]
        if "shell" in names:
            return {"tool_calls": [("shell", {"command": "ls"})]}
        if "ping" in names:
            return {"tool_calls": [("ping", {})]}
        readers = [n for n in names if n.startswith(("list_", "read_", "get_", "search_"))]
        return {"tool_calls": [((readers or names)[0], {})]}
    system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")
    listed = re.findall(r"^- (\w+):", system, re.MULTILINE)
    if listed and "Action:" in system:  # a ReAct prompt: tools as text, one JSON action per reply
        if str(last.get("content") or "").startswith("Observation:"):
            return {"content": "Thought: I have what I need.\nFinal Answer: " + (LONG if long else "done")}
        # As a real model does without a stop sequence: after its action it writes the observation itself, and
        # goes on inventing steps, past any token limit (INVENTED is longer than the default --max-tokens).
        return {"content": f'Thought: look first.\nAction: {{"tool": "{listed[0]}", "args": {{}}}}' + INVENTED}
    return {"content": LONG if long else "I have no tools to do that."}


def _stop(text: str, stops: Any) -> str:
    """The text up to the first of the request's stop sequences (a string or a list, as OpenAI's `stop`)."""
    for stop in [stops] if isinstance(stops, str) else list(stops or []):
        if stop and stop in text:
            text = text[: text.index(stop)]
    return text


def _cut(text: str, limit: int | None) -> tuple[str, bool]:
    words = text.split(" ")
    if limit is not None and len(words) > limit:
        return " ".join(words[:limit]), True
    return text, False


class StandIn(LoopbackServer):
    """A real HTTP server on loopback; subclasses answer in their server's protocol with its quirks."""

    server_name = ""

    def __init__(self, *, model: str = "toy", long_answers: bool = False) -> None:
        self.model = model
        self.long_answers = long_answers
        self.requests: list[dict[str, Any]] = []
        self.shown_tools: list[bool] = []
        self.lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer(lambda: stand_in.get(self.path))

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))

                def post() -> Any:
                    return stand_in.post(self.path, json.loads(raw or b"{}"))

                self._answer(post)

            def _answer(self, work: Callable[[], Any]) -> None:
                try:
                    status, payload = 200, work()
                except Refusal as refusal:
                    status, payload = refusal.status, refusal.body
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

        self.serve(Handler)

    @property
    def litellm_model(self) -> str:
        return f"openai/{self.model}"

    def received(self, body: dict[str, Any]) -> None:
        """Keep a chat request's body (what `requests` lists)."""
        with self.lock:
            self.requests.append(body)

    def get(self, path: str) -> Any:
        raise Refusal(404, {"detail": "Not Found"})

    def post(self, path: str, body: dict[str, Any]) -> Any:
        raise Refusal(404, {"detail": "Not Found"})


class OpenAICompatible(StandIn):
    """The OpenAI chat-completions protocol; `visible_tools` and `check` are each server's quirks."""

    owned_by = ""
    any_name = False  # answers any model name with its own model

    def get(self, path: str) -> Any:
        if path.rstrip("/") != "/v1/models":
            raise Refusal(404, {"detail": "Not Found"})
        return {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": self.owned_by}]}

    def post(self, path: str, body: dict[str, Any]) -> Any:
        if path.rstrip("/") != "/v1/chat/completions":
            raise Refusal(404, {"detail": "Not Found"})
        self.received(body)
        if not self.any_name and body.get("model") != self.model:
            raise Refusal(
                404,
                {"error": {"message": f"The model `{body.get('model')}` does not exist.", "code": 404}},
            )
        self.check(body)
        tools = self.visible_tools(body)
        with self.lock:
            self.shown_tools.append(bool(tools))
        answer = toy_model(body.get("messages") or [], tools, long=self.long_answers)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if "tool_calls" in answer:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, (n, a) in enumerate(answer["tool_calls"])
            ]
            finish = "tool_calls"
        else:
            message["content"], cut = _cut(_stop(answer["content"], body.get("stop")), body.get("max_tokens"))
            finish = "length" if cut else "stop"
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def check(self, body: dict[str, Any]) -> None:
        """Refuse what this server refuses (Refusal)."""

    def visible_tools(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The tools the server renders into the model's prompt."""
        return list(body.get("tools") or [])


class LlamaCppPython(OpenAICompatible):
    server_name = "llama-cpp-python"
    owned_by = "me"
    any_name = True

    def check(self, body: dict[str, Any]) -> None:
        for message in body.get("messages") or []:
            if "content" not in message:
                # jinja2's UndefinedError from the chat template, as the server reports it
                raise Refusal(500, {"error": {"message": "'dict object' has no attribute 'content'"}})

    def visible_tools(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if body.get("tool_choice") in (None, "none"):
            return []  # the plain chat path: the tools never reach the prompt
        return list(body.get("tools") or [])


class VLLM(OpenAICompatible):
    server_name = "vLLM"
    owned_by = "vllm"

    def __init__(self, *, auto_tool_choice: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.auto_tool_choice = auto_tool_choice  # started with --enable-auto-tool-choice --tool-call-parser

    def check(self, body: dict[str, Any]) -> None:
        choice = body.get("tool_choice")
        if body.get("tools") and choice in (None, "auto") and not self.auto_tool_choice:
            raise Refusal(
                400,
                {
                    "object": "error",
                    "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
                    "type": "BadRequestError",
                    "code": 400,
                },
            )

    def visible_tools(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return [] if body.get("tool_choice") == "none" else list(body.get("tools") or [])


class LMStudio(OpenAICompatible):
    server_name = "LM Studio"
    owned_by = "organization_owner"

    @property
    def litellm_model(self) -> str:
        return f"lm_studio/{self.model}"

    def check(self, body: dict[str, Any]) -> None:
        choice = body.get("tool_choice")
        if choice is not None and not isinstance(choice, str):
            raise Refusal(
                400,
                {
                    "error": f"Invalid tool_choice type: '{type(choice).__name__.replace('dict', 'object')}'. "
                    "Supported string values: none, auto, required"
                },
            )


class Ollama(StandIn):
    """Ollama's own API (`ollama_chat/` in litellm): /api/chat and /api/tags."""

    server_name = "Ollama"

    def __init__(self, *, tools_capable: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tools_capable = tools_capable

    @property
    def url(self) -> str:
        return self.root  # Ollama's API is at the root; litellm adds /api/chat

    @property
    def litellm_model(self) -> str:
        return f"ollama_chat/{self.model}"

    def get(self, path: str) -> Any:
        if path.rstrip("/") != "/api/tags":
            raise Refusal(404, {"error": "not found"})
        return {"models": [{"name": f"{self.model}:latest", "model": f"{self.model}:latest"}]}

    def post(self, path: str, body: dict[str, Any]) -> Any:
        if path.rstrip("/") != "/api/chat":
            raise Refusal(404, {"error": "not found"})  # litellm also asks /api/show about the model
        self.received(body)
        name = str(body.get("model") or "")
        if name.removesuffix(":latest") != self.model:
            raise Refusal(404, {"error": f"model '{name}' not found"})
        if body.get("tools") and not self.tools_capable:
            raise Refusal(400, {"error": f"registry.ollama.ai/library/{name} does not support tools"})
        for message in body.get("messages") or []:
            for call in message.get("tool_calls") or []:
                if not isinstance((call.get("function") or {}).get("arguments"), dict):
                    raise Refusal(
                        400,
                        {
                            "error": "json: cannot unmarshal string into Go struct field "
                            "ChatRequest.messages.tool_calls.function.arguments of type api.ToolCallFunctionArguments"
                        },
                    )
        tools = list(body.get("tools") or [])
        with self.lock:
            self.shown_tools.append(bool(tools))
        answer = toy_model(body.get("messages") or [], tools, long=self.long_answers)
        message: dict[str, Any] = {"role": "assistant", "content": ""}
        done = "stop"
        if "tool_calls" in answer:
            message["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a in answer["tool_calls"]]
        else:
            options = body.get("options") or {}
            message["content"], cut = _cut(_stop(answer["content"], options.get("stop")), options.get("num_predict"))
            done = "length" if cut else "stop"
        return {
            "model": name,
            "created_at": "2026-01-01T00:00:00Z",
            "message": message,
            "done": True,
            "done_reason": done,
            "prompt_eval_count": 10,
            "eval_count": 5,
        }


SERVERS: dict[str, Callable[..., StandIn]] = {
    "llama-cpp-python": LlamaCppPython,
    "vllm": VLLM,
    "ollama": Ollama,
    "lm-studio": LMStudio,
}
