"""Tool specifications: what a model sees of a service operation, and how arguments are checked.

A tool is a service method marked with `@tool`. Its JSON-schema parameters are exactly what a
harness shows to a model; the gateway validates every call against them before the service runs.
Only the subset of JSON Schema that tool definitions use is supported (type, properties, required,
enum, items, minimum, additionalProperties), which keeps validation fast and dependency-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class ToolError(Exception):
    """A call the service could not carry out; the model sees the message as a tool error."""

    outcome = "failed"


class ToolDenied(ToolError):
    """A call refused by policy (approval limits, confinement); recorded with outcome `denied`."""

    outcome = "denied"


class ConfinementViolation(ToolDenied):
    """An attempt to reach outside the sandbox: a path escape, a symlink out, a foreign host."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    service: str
    description: str
    parameters: dict[str, Any]
    consequential: bool  # True when a successful call changes state or sends something out
    handler: Callable[..., Any] = field(repr=False, compare=False)

    def schema(self, description: str | None = None) -> dict[str, Any]:
        """The function definition a model sees (OpenAI-style), optionally with a substituted description."""
        return {
            "name": self.name,
            "description": self.description if description is None else description,
            "parameters": self.parameters,
        }


def tool(
    description: str, *, consequential: bool = False, required: tuple[str, ...] = (), **properties: dict[str, Any]
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a service method as a tool. Keyword arguments are the JSON-schema properties."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__tool__ = {  # type: ignore[attr-defined]
            "name": fn.__name__,
            "description": description,
            "consequential": consequential,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(required),
                "additionalProperties": False,
            },
        }
        return fn

    return mark


# Shorthand constructors for schema properties, so tool signatures read like documentation.
def string(desc: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": desc, **extra}


def number(desc: str, **extra: Any) -> dict[str, Any]:
    return {"type": "number", "description": desc, **extra}


def integer(desc: str, **extra: Any) -> dict[str, Any]:
    return {"type": "integer", "description": desc, **extra}


def boolean(desc: str) -> dict[str, Any]:
    return {"type": "boolean", "description": desc}


def strings(desc: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": desc}


def obj(desc: str) -> dict[str, Any]:
    return {"type": "object", "description": desc, "additionalProperties": {"type": "string"}}


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def validate(schema: dict[str, Any], value: Any, where: str = "") -> list[str]:
    """Problems with `value` under `schema`, each naming the argument at fault; empty when valid."""
    label = where or "arguments"
    expected = schema.get("type")
    if expected and not _TYPES[expected](value):
        return [f"{label}: expected {expected}, got {type(value).__name__}"]
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{label}: must be one of {', '.join(map(str, schema['enum']))}")
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        problems.append(f"{label}: must be at least {schema['minimum']}")
    if expected == "array" and "items" in schema:
        for i, item in enumerate(value):
            problems += validate(schema["items"], item, f"{label}[{i}]")
    if expected == "object":
        props = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                problems.append(f"{_join(where, name)}: required")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                problems += validate(props[name], item, _join(where, name))
            elif extra is False:
                problems.append(f"{_join(where, name)}: unknown argument")
            elif isinstance(extra, dict):
                problems += validate(extra, item, _join(where, name))
    return problems


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name
