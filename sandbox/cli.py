"""The services' command-line face inside the sandbox: `mail send --to … --subject … --body …`.

A shell-style agent reaches the mocked services through commands: `fs`, `mail`, `web`, `bank` and
`drive`, one per surface, whose subcommands are the surface's tools (by a short alias or the full
tool name, so a planted look-alike tool is a subcommand too). Arguments are `--name value`
(underscores may be dashes), repeated for lists (`--to a --to b`), `key=value` for mappings
(`--fields user=dana`), bare flags for booleans. Values are converted to the types the tool's JSON
schema asks for, so the gateway validates exactly what a function-calling agent would send.
"""

from __future__ import annotations

import shlex
from typing import Any

from redagent.sandbox.tools import ToolSpec

COMMANDS = {"workspace": "fs", "email": "mail", "browser": "web", "banking": "bank", "files": "drive"}
SERVICE_OF_COMMAND = {command: service for service, command in COMMANDS.items()}

ALIASES: dict[str, str] = {
    # workspace
    "list_dir": "ls",
    "read_file": "read",
    "write_file": "write",
    "append_file": "append",
    "delete_path": "rm",
    "move_path": "mv",
    # email
    "list_emails": "list",
    "read_email": "read",
    "search_emails": "search",
    "send_email": "send",
    "reply_email": "reply",
    "forward_email": "forward",
    "delete_email": "delete",
    "create_forwarding_rule": "forward-rule",
    # browser
    "open_url": "open",
    "search_web": "search",
    "submit_form": "submit",
    "download": "download",
    "post_content": "post",
    "http_request": "request",
    # banking
    "get_balance": "balance",
    "list_transactions": "transactions",
    "list_payees": "payees",
    "list_scheduled_transfers": "scheduled",
    "add_payee": "add-payee",
    "send_transfer": "transfer",
    "schedule_transfer": "schedule",
    "update_scheduled_transfer": "update-scheduled",
    "cancel_scheduled_transfer": "cancel-scheduled",
    # files
    "search_documents": "search",
    "read_document": "read",
    "share_document": "share",
    "set_visibility": "visibility",
    "upload_external": "upload",
    "delete_document": "delete",
    "update_document": "update",
}


class CommandLineError(ValueError):
    """The command line does not name a tool or its arguments do not parse; shown to the agent."""


def resolve(argv: list[str], tools: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """`["bank", "transfer", "--to-account", "X", "--amount", "5"]` → ("send_transfer", {...}).

    `tools` maps tool name → {"service", "parameters"} for every tool this command may reach.
    """
    if len(argv) < 2 or argv[0] not in SERVICE_OF_COMMAND:
        raise CommandLineError(f"usage: {argv[0] if argv else 'COMMAND'} SUBCOMMAND [--arg value ...]")
    service = SERVICE_OF_COMMAND[argv[0]]
    sub = argv[1]
    name = next(
        (t for t, spec in tools.items() if spec["service"] == service and (t == sub or ALIASES.get(t) == sub)), None
    )
    if name is None:
        known = sorted(ALIASES.get(t, t) for t, spec in tools.items() if spec["service"] == service)
        raise CommandLineError(f"{argv[0]}: unknown subcommand {sub!r} (try: {', '.join(known)})")
    return name, parse_args(argv[2:], tools[name]["parameters"], f"{argv[0]} {sub}")


def parse_args(argv: list[str], schema: dict[str, Any], label: str) -> dict[str, Any]:
    props = schema.get("properties", {})
    args: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        if not token.startswith("--"):
            raise CommandLineError(f"{label}: unexpected argument {token!r} (use --name value)")
        key, has_value, inline = token[2:].partition("=")
        key = key.replace("-", "_")
        if key not in props:
            raise CommandLineError(f"{label}: unknown option --{key.replace('_', '-')}")
        kind = props[key].get("type")
        if kind == "boolean" and not has_value:
            args[key] = True
            i += 1
            continue
        if has_value:
            raw = inline
            i += 1
        else:
            if i + 1 >= len(argv):
                raise CommandLineError(f"{label}: --{key.replace('_', '-')} needs a value")
            raw = argv[i + 1]
            i += 2
        args[key] = _convert(kind, raw, args.get(key), key, label)
    return args


def _convert(kind: str | None, raw: str, current: Any, key: str, label: str) -> Any:
    try:
        if kind == "number":
            return float(raw)
        if kind == "integer":
            return int(raw)
    except ValueError:
        raise CommandLineError(f"{label}: --{key} expects a {kind}, got {raw!r}") from None
    if kind == "boolean":
        if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise CommandLineError(f"{label}: --{key} expects true or false")
        return raw.lower() in ("true", "1", "yes")
    if kind == "array":
        return [*(current or []), raw]
    if kind == "object":
        name, sep, value = raw.partition("=")
        if not sep:
            raise CommandLineError(f"{label}: --{key} expects name=value")
        return {**(current or {}), name: value}
    return raw


def render(tool: str, service: str, args: dict[str, Any]) -> str:
    """The command line that calls `tool` with `args` (the inverse of `resolve`)."""
    words = [COMMANDS[service], ALIASES.get(tool, tool)]
    for key, value in args.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            words.append(f"{flag}={'true' if value else 'false'}")
        elif isinstance(value, list):
            for item in value:
                words += [flag, str(item)]
        elif isinstance(value, dict):
            for name, item in value.items():
                words += [flag, f"{name}={item}"]
        else:
            words += [flag, str(value)]
    return " ".join(shlex.quote(w) for w in words)


def usage(specs: list[dict[str, Any]], service_of: dict[str, str]) -> str:
    """Help text for the commands, from the tool definitions the agent is shown."""
    lines = []
    for spec in specs:
        service = service_of[spec["name"]]
        props = spec["parameters"].get("properties", {})
        required = set(spec["parameters"].get("required", []))
        options = " ".join(
            (
                f"--{k.replace('_', '-')} {v.get('type', 'value').upper()}"
                if k in required
                else f"[--{k.replace('_', '-')} {v.get('type', 'value').upper()}]"
            )
            for k, v in props.items()
        )
        lines.append(f"{COMMANDS[service]} {ALIASES.get(spec['name'], spec['name'])} {options}".rstrip())
        lines.append(f"    {spec['description']}")
    return "\n".join(lines)


def specs_by_name(specs: list[ToolSpec]) -> dict[str, dict[str, Any]]:
    return {s.name: {"service": s.service, "parameters": s.parameters} for s in specs}
