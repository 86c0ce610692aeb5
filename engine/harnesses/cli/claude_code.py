"""Claude Code (`@anthropic-ai/claude-code`): Anthropic Messages, streaming.

`claude -p PROMPT --output-format stream-json --verbose` with the endpoint as ANTHROPIC_BASE_URL,
the MCP server from `--mcp-config F --strict-mcp-config`, built-in tools off (`--tools ""`) and the
served tools allowed (`--allowedTools mcp__redagent`). The model sees them as `mcp__redagent__NAME`.
Later user turns resume the session (`--resume ID`); the transcript is the session's JSONL file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from redagent.engine.harnesses.cli.profile import Profile, Setup, clip, jsonl, newest_text


class ClaudeCode(Profile):
    name = "claude-code"
    version = "2.1.332"
    package = "@anthropic-ai/claude-code"
    kind = "npm"
    binary = "node_modules/.bin/claude"
    wire = "messages"
    cpu = 1.0  # per rollout: 0.49 s CPU over 0.61 s wall, 241 MB peak (benchmarks/harnesses.py)
    memory_mb = 384

    def config_files(self, setup: Setup) -> dict[str, str]:
        servers = {setup.server: {"type": "stdio", "command": setup.mcp_command, "args": list(setup.mcp_args)}}
        return {
            "mcp.json": json.dumps({"mcpServers": servers}, indent=2),
            ".claude/settings.json": json.dumps({"permissions": {"allow": [f"mcp__{setup.server}"]}}, indent=2),
        }

    def env(self, setup: Setup) -> dict[str, str]:
        return {
            "ANTHROPIC_BASE_URL": setup.base_url,
            "ANTHROPIC_API_KEY": setup.api_key,
            "CLAUDE_CONFIG_DIR": f"{setup.home}/.claude",
            "ANTHROPIC_MODEL": setup.model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": setup.model,
            "ANTHROPIC_SMALL_FAST_MODEL": setup.model,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "MCP_TIMEOUT": "30000",
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "8192",
        }

    def command(self, executable: str, prompt: str, turn: int, session: str | None, setup: Setup) -> list[str]:
        argv = [
            executable,
            "-p",
            prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            setup.model,
            "--mcp-config",
            f"{setup.home}/mcp.json",
            "--strict-mcp-config",
            "--tools",
            "",
            "--allowedTools",
            f"mcp__{setup.server}",
        ]
        if session:
            argv += ["--resume", session]
        return argv

    def session(self, home: Path, output: str) -> str | None:
        for row in jsonl(output):
            if isinstance(row, dict) and row.get("session_id"):
                return str(row["session_id"])
        return None

    def transcript(self, home: Path, stdout: str) -> Any:
        found = newest_text(home, ".claude/projects/*/*.jsonl")  # beneath the home: links are never followed
        if found is not None:
            return jsonl(clip(found))
        return jsonl(clip(stdout))
