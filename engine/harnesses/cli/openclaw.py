"""OpenClaw (`openclaw`, on Node 24): chat completions, streaming.

`openclaw agent exec --config F --model redagent/redagent-model --json --code-mode direct PROMPT`
with the endpoint as `models.providers.redagent` (`api: "openai-completions"`), the MCP server
under `mcp.servers`, `tools.toolSearch: false` (else the MCP tools hide behind `tool_search`) and
`tools.profile: minimal` (the built-ins off) with `alsoAllow: ["bundle-mcp"]` (the MCP tools on; the model
sees them as `redagent__NAME`). Later user turns continue the session with `openclaw agent --local --session-id ID`
(`agent exec` is one isolated turn). The transcript is its result JSON envelope.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from redagent.engine.harnesses.cli.profile import Profile, Setup, clip, jsonl


class OpenClaw(Profile):
    name = "openclaw"
    version = "2026.9.6"
    package = "openclaw"
    kind = "npm"
    binary = "node_modules/.bin/openclaw"
    wire = "chat"
    cpu = 1.0  # per rollout: 9.3 s CPU over 8.8 s wall (more than a core), 1,056 MB peak (benchmarks/harnesses.py)
    memory_mb = 1200

    def config_files(self, setup: Setup) -> dict[str, str]:
        config = {
            "models": {
                "providers": {
                    setup.server: {
                        "baseUrl": f"{setup.base_url}/v1",
                        "apiKey": setup.api_key,
                        "api": "openai-completions",
                        "models": [{"id": setup.model, "name": setup.model}],
                    }
                }
            },
            "mcp": {"servers": {setup.server: {"command": setup.mcp_command, "args": list(setup.mcp_args)}}},
            "tools": {"toolSearch": False, "profile": "minimal", "alsoAllow": ["bundle-mcp"]},
        }
        return {"openclaw.json": json.dumps(config, indent=2)}

    def directories(self) -> list[str]:
        return [".openclaw"]

    def env(self, setup: Setup) -> dict[str, str]:
        return {
            "OPENCLAW_STATE_DIR": f"{setup.home}/.openclaw",
            "OPENCLAW_CONFIG_PATH": f"{setup.home}/openclaw.json",
            "OPENCLAW_NO_UPDATE_CHECK": "1",
        }

    def command(self, executable: str, prompt: str, turn: int, session: str | None, setup: Setup) -> list[str]:
        model = f"{setup.server}/{setup.model}"
        if session:  # `agent exec` is one isolated turn; a later user turn continues the session embedded
            return [
                executable,
                "agent",
                "--local",
                "--session-id",
                session,
                "--model",
                model,
                "--json",
                "--message",
                prompt,
            ]
        return [
            executable,
            "agent",
            "exec",
            "--config",
            f"{setup.home}/openclaw.json",
            "--model",
            model,
            "--json",
            "--code-mode",
            "direct",
            "--state-dir",
            f"{setup.home}/.openclaw",
            prompt,
        ]

    def session(self, home: Path, output: str) -> str | None:
        for row in reversed(_objects(output)):  # `exec` puts it on top; `agent --local` under meta.agentMeta
            for where in (row, (row.get("meta") or {}).get("agentMeta") or {}):
                if isinstance(where.get("sessionId"), str) and where["sessionId"]:
                    return where["sessionId"]
        return None

    def transcript(self, home: Path, stdout: str) -> Any:
        return _objects(stdout) or jsonl(clip(stdout))


def _objects(text: str) -> list[dict[str, Any]]:
    """The JSON envelope(s) in the output: the whole text as one document, else one per line."""
    try:
        value = json.loads(text)
    except ValueError:
        return [r for r in jsonl(text) if isinstance(r, dict)]
    return [value] if isinstance(value, dict) else []
