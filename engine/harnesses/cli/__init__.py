"""Real agent CLIs as harnesses: Codex CLI, Hermes agent, OpenClaw and Claude Code.

wire, chat_wire, responses_wire, messages_wire   the three wire formats ↔ ModelRequest / ModelReply
endpoint      the engine-run model endpoint (Unix socket): cue, defense, step budget, prompt records
mcp_bridge    the engine side of the MCP server: the rollout's tools through the ToolGateway
inside/       what runs inside the CLI's sandbox: the loopback relay (entry.py), the stdio MCP relay
isolation     bubblewrap for the CLI: no network, private home and workdir, time and memory limits
profile       what a profile is; codex, hermes, openclaw, claude_code are the four profiles
install       pinned installations in the per-user cache
harness       CLIHarness: one rollout through a CLI
"""

from __future__ import annotations

from redagent.engine.harnesses.cli.profile import Profile

CLI_HARNESSES = ("codex", "hermes", "openclaw", "claude-code")


def profile(name: str) -> Profile:
    from redagent.engine.harnesses.cli.claude_code import ClaudeCode
    from redagent.engine.harnesses.cli.codex import Codex
    from redagent.engine.harnesses.cli.hermes import Hermes
    from redagent.engine.harnesses.cli.openclaw import OpenClaw

    profiles = {"codex": Codex, "hermes": Hermes, "openclaw": OpenClaw, "claude-code": ClaudeCode}
    if name not in profiles:
        raise KeyError(f"unknown CLI harness {name!r} (known: {', '.join(CLI_HARNESSES)})")
    return profiles[name]()


def profiles() -> list[Profile]:
    return [profile(name) for name in CLI_HARNESSES]
