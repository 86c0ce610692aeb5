"""What the three wire formats share: a request translated into the engine's terms, and SSE framing.

Every format module (`chat_wire`, `responses_wire`, `messages_wire`) turns a CLI's HTTP request body
into a `WireRequest` — the CLI's system prompt, OpenAI-style chat messages, OpenAI function tools —
and a `ModelReply` back into that format's response (a JSON body, or a list of server-sent events).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

MAX_BODY = 16 << 20  # a request body larger than this is a protocol error, not a conversation


class ProtocolError(ValueError):
    """A request the endpoint cannot translate; the CLI gets a 400 and the rollout is invalid."""


@dataclass
class WireRequest:
    format: str  # chat | responses | messages
    model: str
    system: str  # the CLI's own system prompt (all of its system / developer / instructions text)
    messages: list[dict[str, Any]]  # OpenAI chat messages, without the leading system prompt
    tools: list[dict[str, Any]]  # OpenAI function tools: {"type": "function", "function": {...}}
    stream: bool
    options: dict[str, Any] = field(default_factory=dict)  # format-specific flags (include_usage, ...)

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def sse(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def text_of(content: Any) -> str:
    """Plain text of a content value: a string, or a list of text-bearing parts of any of the formats."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        raise ProtocolError(f"content of type {type(content).__name__} is neither text nor a list of parts")
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif part.get("type") in ("image", "image_url", "input_image", "input_file", "document"):
                parts.append(f"[{part['type']} omitted]")
            elif part.get("type") == "tool_result" or "content" in part:
                parts.append(text_of(part.get("content")))
    return "\n".join(p for p in parts if p)


def arguments_object(arguments: str) -> dict[str, Any]:
    """Tool-call arguments as a JSON object for formats that need one (Anthropic `input`)."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_value": value}


def need(body: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(body, dict) or key not in body:
        raise ProtocolError(f"{where}: missing {key!r}")
    value = body[key]
    if not isinstance(value, kind):
        raise ProtocolError(f"{where}: {key!r} has type {type(value).__name__}")
    return value
