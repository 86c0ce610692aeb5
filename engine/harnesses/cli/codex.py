"""Codex CLI (`@openai/codex`): the Responses API, SSE only.

`codex exec --json --skip-git-repo-check PROMPT` with the endpoint as a model provider
(`wire_api = "responses"`) and the MCP server in `$CODEX_HOME/config.toml` with `required = true`
(else Codex asks the model before a slow stdio server is up) and `default_tools_approval_mode =
"approve"` (else it refuses MCP calls without a human). The shell tool is off (`--disable
shell_tool`, and the other built-ins), analytics and OTEL export are off (else every exit waits out a
DNS failure). Not `--ephemeral`: the session file is the transcript (`rollout-*.jsonl`) and what
`codex exec resume ID PROMPT` continues on a later user turn. MCP tools arrive in a Responses
`namespace` tool (`mcp__redagent`), which the wire translation flattens to `mcp__redagent__NAME`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from redagent.engine.harnesses.cli.profile import Profile, Setup, clip, jsonl, newest_text

# Built-ins off, so the model sees the served tools only (and requests stay uncompressed JSON).
DISABLED = (
    "shell_tool",
    "multi_agent",
    "image_generation",
    "apps",
    "plugins",
    "browser_use",
    "computer_use",
    "in_app_browser",
    "sleep_tool",
    "tool_suggest",
    "goals",
    "skill_search",
    "shell_snapshot",
    "enable_request_compression",
)


def _toml(value: Any) -> str:
    return json.dumps(value)  # TOML basic strings, arrays and booleans are JSON-compatible


class Codex(Profile):
    name = "codex"
    version = "0.171.0"
    package = "@openai/codex"
    kind = "npm"
    binary = "node_modules/.bin/codex"
    wire = "responses"
    cpu = 0.5  # per rollout: 0.27 s CPU over 0.65 s wall, 170 MB peak (benchmarks/harnesses.py)
    memory_mb = 256

    def config_files(self, setup: Setup) -> dict[str, str]:
        lines = [
            f"model = {_toml(setup.model)}",
            f"model_provider = {_toml(setup.server)}",
            'approval_policy = "never"',
            'sandbox_mode = "read-only"',
            "check_for_update_on_startup = false",
            "",
            f"[model_providers.{setup.server}]",
            f"name = {_toml(setup.server)}",
            f"base_url = {_toml(setup.base_url + '/v1')}",
            'wire_api = "responses"',
            'env_key = "REDAGENT_API_KEY"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "stream_idle_timeout_ms = 600000",
            "",
            f"[mcp_servers.{setup.server}]",
            f"command = {_toml(setup.mcp_command)}",
            f"args = {_toml(list(setup.mcp_args))}",
            "required = true",
            'default_tools_approval_mode = "approve"',
            "startup_timeout_sec = 60",
            "tool_timeout_sec = 600",
            "",
            "[history]",
            'persistence = "none"',
            "",
            "[analytics]",  # else it exports metrics to the network on exit and waits out the DNS failure
            "enabled = false",
            "",
            "[otel]",
            'exporter = "none"',
            'metrics_exporter = "none"',
            'trace_exporter = "none"',
        ]
        return {".codex/config.toml": "\n".join(lines) + "\n"}

    def env(self, setup: Setup) -> dict[str, str]:
        return {"CODEX_HOME": f"{setup.home}/.codex", "REDAGENT_API_KEY": setup.api_key, "RUST_LOG": "error"}

    def command(self, executable: str, prompt: str, turn: int, session: str | None, setup: Setup) -> list[str]:
        argv = [executable, "exec"]
        if session:
            argv += ["resume", session]
        argv += ["--json", "--skip-git-repo-check"]
        for feature in DISABLED:
            argv += ["--disable", feature]
        return [*argv, "--", prompt]

    def session(self, home: Path, output: str) -> str | None:
        for row in jsonl(output):
            if isinstance(row, dict) and row.get("type") == "thread.started" and row.get("thread_id"):
                return str(row["thread_id"])
        return None

    def transcript(self, home: Path, stdout: str) -> Any:
        found = newest_text(home, ".codex/sessions/**/rollout-*.jsonl")  # beneath the home: links are never followed
        if found is not None:
            return jsonl(clip(found))
        return jsonl(clip(stdout))
