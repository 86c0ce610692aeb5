"""A real agent CLI's stored transcript as a conversation: user, assistant, tool call and tool result turns.

The CLI harnesses (engine/harnesses/cli/harness.py) keep one `transcript` event per rollout: a JSON document
with the CLI's name and version, its wire format, what the engine's endpoint and MCP bridge counted, and per
CLI invocation (`turns`) the CLI's own record — Codex's session file (`response_item` rows) or its `--json`
events (`item.completed`), Claude Code's session JSONL (`message.content` blocks), Hermes' message rows
(chat-completions messages with `tool_calls`), OpenClaw's result envelope (`payloads`). Each is read here
into turns; a row of no known shape is counted by its type under the turn, never dropped silently.

Everything in it came from the agent or the model: each shown string is cleaned of control and bidi characters
(`clean`, as the CLI's printers do), each message is cut at `MESSAGE_CHARS`, and the whole at `limit`
characters with a line saying how much was left out.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from redagent.console.cli_common import clean

MESSAGE_CHARS = 20_000  # of one message, call or result
CONVERSATION_CHARS = 200_000  # of a whole conversation (the artifact itself is bounded when stored)
PREVIEW_CHARS = 6_000  # what the event pane under the trajectory shows; the detail view shows the rest

_STYLE = {
    "user": "bold cyan",
    "assistant": "bold green",
    "system": "dim bold",
    "reasoning": "dim italic",
    "call": "bold yellow",
    "result": "bold magenta",
    "error": "bold red",
    "note": "dim",
}


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of the conversation: its kind (a key of _STYLE), a label (a tool's name) and its text."""

    kind: str
    body: str
    label: str = ""


def cut(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text` up to `limit` characters, and how many more there were."""
    return text if len(text) <= limit else text[:limit] + f"… (+{len(text) - limit:,} characters not shown)"


def shown(value: Any, limit: int = MESSAGE_CHARS) -> str:
    """Text from outside as it may be drawn: bounded (`cut`), then control and bidi characters removed (`clean`)."""
    return clean(cut(value if isinstance(value, str) else str(value), limit))


def pretty(value: Any, limit: int = MESSAGE_CHARS) -> str:
    """A stored value (arguments, an effect, a state) as indented JSON, bounded and cleaned."""
    return shown(_pretty(value), limit)


def _pretty(value: Any) -> str:
    """Arguments as indented JSON; a JSON string is decoded first (function-call arguments are strings)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
        if isinstance(value, str):
            return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of content blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                text = block.get("text", block.get("content"))
                parts.append(_text_of(text) if text is not None else f"[{block.get('type', 'block')}]")
        return "\n".join(part for part in parts if part)
    if isinstance(content, dict):
        return _text_of(content.get("text", content.get("content", content.get("output"))))
    return str(content)


# ---------------------------------------------------------------- one row of a CLI's record → turns


def _codex_item(item: dict[str, Any]) -> Iterator[Turn]:
    """Codex `--json` output: an `item.completed` event's item."""
    kind = item.get("type")
    if kind == "agent_message":
        yield Turn("assistant", _text_of(item.get("text")))
    elif kind == "reasoning":
        yield Turn("reasoning", _text_of(item.get("text")))
    elif kind == "mcp_tool_call":
        name = ".".join(str(part) for part in (item.get("server"), item.get("tool")) if part)
        yield Turn("call", _pretty(item.get("arguments")), name or "tool")
        if item.get("error"):
            yield Turn("error", _text_of(item["error"]), name)
        elif item.get("result") is not None:
            yield Turn("result", _text_of(item["result"]) or _pretty(item["result"]), name)
    elif kind == "command_execution":
        yield Turn("call", _text_of(item.get("command")), "command")
        yield Turn(
            "result", f"{_text_of(item.get('aggregated_output'))}\n(exit code {item.get('exit_code')})", "command"
        )
    elif kind == "error":
        yield Turn("error", _text_of(item.get("message")))
    else:
        yield Turn("note", _pretty(item), str(kind or "item"))


def _codex_payload(payload: dict[str, Any]) -> Iterator[Turn]:
    """Codex's session file: a `response_item` row's payload."""
    kind = payload.get("type")
    if kind == "message":
        role = str(payload.get("role") or "assistant")
        yield Turn(role if role in ("user", "assistant") else "system", _text_of(payload.get("content")), role)
    elif kind in ("function_call", "custom_tool_call"):
        yield Turn("call", _pretty(payload.get("arguments", payload.get("input"))), str(payload.get("name") or "tool"))
    elif kind in ("function_call_output", "custom_tool_call_output"):
        yield Turn("result", _text_of(payload.get("output")), str(payload.get("call_id") or ""))
    elif kind == "local_shell_call":
        yield Turn("call", _pretty(payload.get("action")), "shell")
    elif kind == "reasoning":
        yield Turn("reasoning", _text_of(payload.get("summary")) or _text_of(payload.get("content")))
    else:
        yield Turn("note", _pretty(payload), str(kind or "item"))


def _blocks(role: str, content: Any) -> Iterator[Turn]:
    """Claude Code's (Anthropic's) message content: a string or text, thinking, tool_use and tool_result blocks."""
    if not isinstance(content, list):
        yield Turn(role, _text_of(content))
        return
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(block, dict) or kind == "text":
            yield Turn(role, _text_of(block.get("text") if isinstance(block, dict) else block))
        elif kind in ("thinking", "redacted_thinking"):
            yield Turn("reasoning", _text_of(block.get("thinking")) or "[redacted]")
        elif kind in ("tool_use", "server_tool_use"):
            yield Turn("call", _pretty(block.get("input")), str(block.get("name") or "tool"))
        elif kind == "tool_result":
            yield Turn("error" if block.get("is_error") else "result", _text_of(block.get("content")))
        else:
            yield Turn("note", _pretty(block), str(kind))


def _chat_message(row: dict[str, Any]) -> Iterator[Turn]:
    """A chat-completions message (Hermes' message rows): role, content, tool_calls, a tool result's name."""
    role = str(row.get("role"))
    if role == "tool":
        yield Turn("result", _text_of(row.get("content")), str(row.get("tool_name") or row.get("name") or ""))
        return
    content = row.get("content")
    if content not in (None, "", []):
        yield from _blocks(role if role in ("user", "assistant") else "system", content)
    calls = row.get("tool_calls")
    if isinstance(calls, str):
        try:
            calls = json.loads(calls)
        except ValueError:
            calls = [{"function": {"name": "tool", "arguments": calls}}]
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function", call) if isinstance(call, dict) else {}
        yield Turn("call", _pretty(function.get("arguments")), str(function.get("name") or "tool"))


def _row(row: Any, skipped: Counter[str]) -> Iterator[Turn]:
    if not isinstance(row, dict):
        yield Turn("note", _text_of(row))
        return
    kind = row.get("type")
    if kind == "response_item" and isinstance(row.get("payload"), dict):
        yield from _codex_payload(row["payload"])
    elif kind == "item.completed" and isinstance(row.get("item"), dict):
        yield from _codex_item(row["item"])
    elif kind in ("error", "turn.failed"):
        yield Turn("error", _text_of(row.get("message") or (row.get("error") or {}).get("message")))
    elif kind in ("user", "assistant") and isinstance(row.get("message"), dict):
        yield from _blocks(kind, row["message"].get("content"))
    elif kind == "result" and row.get("is_error"):
        yield Turn("error", _text_of(row.get("result")))
    elif "role" in row and ("content" in row or "tool_calls" in row):
        yield from _chat_message(row)
    elif isinstance(row.get("payloads"), list):  # OpenClaw's result envelope
        for payload in row["payloads"]:
            yield Turn("assistant", _text_of(payload.get("text") if isinstance(payload, dict) else payload))
    elif row.get("system_prompt"):  # Hermes' sessions table
        yield Turn("system", _text_of(row["system_prompt"]), "system prompt")
    else:
        skipped[str(kind or row.get("table") or "record")] += 1


def turns_of(record: Any) -> tuple[list[Turn], Counter[str]]:
    """One CLI invocation's own record as turns, and the rows of no shown kind counted by their type."""
    skipped: Counter[str] = Counter()
    if isinstance(record, str):
        try:  # cut to fit the store: a JSON document in a string, whole or clipped
            record = json.loads(record)
        except ValueError:
            return [Turn("note", record, "the CLI's record, as text")], skipped
    rows = record if isinstance(record, list) else [record]
    found = [turn for row in rows for turn in _row(row, skipped)]
    return [turn for turn in found if turn.body.strip() or turn.kind == "call"], skipped


# ---------------------------------------------------------------- the whole artifact → Text


def _summary(artifact: dict[str, Any]) -> str:
    found_endpoint, found_mcp = artifact.get("endpoint"), artifact.get("mcp")
    endpoint: dict[str, Any] = found_endpoint if isinstance(found_endpoint, dict) else {}
    mcp: dict[str, Any] = found_mcp if isinstance(found_mcp, dict) else {}
    parts = [
        " ".join(str(artifact[key]) for key in ("harness", "version") if artifact.get(key)) or "agent CLI",
        f"wire {artifact['wire']}" if artifact.get("wire") else "",
        f"{endpoint['requests']} model requests" if isinstance(endpoint.get("requests"), int) else "",
        "request budget hit" if endpoint.get("budget_hit") else "",
        f"{len(mcp['calls'])} tool calls over MCP" if isinstance(mcp.get("calls"), list) else "",
    ]
    return " · ".join(part for part in parts if part)


def conversation(text: str, limit: int = CONVERSATION_CHARS) -> Text:
    """The stored transcript artifact `text` as a conversation, at most about `limit` characters of it."""
    try:
        artifact = json.loads(text)
    except ValueError:
        artifact = None
    if not isinstance(artifact, dict) or not isinstance(artifact.get("turns"), list):
        shown = Text("not a CLI transcript the console can read; as stored:\n", style="dim")
        shown.append(clean(cut(text, limit)))
        return shown
    out = Text()
    out.append(clean(_summary(artifact)), style="bold")
    budget = limit
    for number, invocation in enumerate(artifact["turns"]):
        invocation = invocation if isinstance(invocation, dict) else {"transcript": invocation}
        index = invocation["turn"] if isinstance(invocation.get("turn"), int) else number
        head = f"\n\n── user turn {index + 1}"  # one CLI invocation per user turn
        if "exit_code" in invocation:
            head += f" · exit code {invocation['exit_code']}"
        if isinstance(invocation.get("seconds"), int | float):
            head += f" · {invocation['seconds']:.1f} s"
        out.append(clean(head) + " ──", style="bold blue")
        turns, skipped = turns_of(invocation.get("transcript"))
        for turn in turns:
            if budget <= 0:
                break
            body = clean(cut(turn.body, min(MESSAGE_CHARS, budget)))
            budget -= len(body)
            out.append("\n\n")
            out.append(_label(turn), style=_STYLE.get(turn.kind, ""))
            out.append("\n")
            out.append(body)
        if budget <= 0:
            out.append(f"\n\n… the rest is not shown (more than {limit:,} characters)", style="bold yellow")
            break
        if skipped:
            listed = ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items()))
            out.append(clean(f"\n\n(records not shown: {listed})"), style="dim")
        if invocation.get("exit_code") not in (0, None) and invocation.get("stderr_tail"):
            out.append("\n\nstderr (last lines)\n", style="bold red")
            out.append(clean(cut(str(invocation["stderr_tail"]), 4000)))
    return out


def _label(turn: Turn) -> str:
    if turn.kind == "call":
        return clean(f"▶ tool call {turn.label}")
    if turn.kind == "result":
        return clean(f"◀ tool result {turn.label}".rstrip())
    if turn.kind == "note":
        return clean(f"· {turn.label or 'note'}")
    return turn.kind if not turn.label or turn.label == turn.kind else clean(f"{turn.kind} ({turn.label})")
