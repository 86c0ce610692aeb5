"""Hermes agent (`hermes-agent[mcp,cli]` from PyPI, in its own virtualenv): chat completions, streaming.

`hermes chat -q PROMPT -Q -t mcp-redagent` (chat -q waits for MCP discovery; the one-shot `-z`
does not), the endpoint as a `custom` provider in `$HERMES_HOME/config.yaml`, the MCP server under
`mcp_servers`. Only the MCP toolset is enabled, so the built-in tools are off; `--ignore-rules`
keeps host rule files and memory out (the home is fresh anyway) and `--source tool` tags the session
as a third-party run. Hermes prints its session id on stderr; later user turns resume with
`--resume ID`. The transcript is the sessions and messages in `$HERMES_HOME/state.db`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from redagent.engine.harnesses.cli.profile import Profile, Setup, clip, jsonl
from redagent.sandbox.beneath import Beneath, private_directory
from redagent.sandbox.tools import ToolError

STATE_LIMIT = 64 << 20  # bytes of Hermes' session database (and its log) copied out of the CLI's home
SESSION = re.compile(r"^session_id:\s*([A-Za-z0-9_.:-]{6,})\s*$", re.MULTILINE)  # its last line, on stderr


class Hermes(Profile):
    name = "hermes"
    version = "0.19.0"
    package = "hermes-agent"
    extras = "[mcp,cli]"
    kind = "pip"
    binary = "venv/bin/hermes"
    wire = "chat"
    cpu = 0.75  # per rollout: 2.7 s CPU over 4.4 s wall, 194 MB peak (benchmarks/harnesses.py)
    memory_mb = 320

    def config_files(self, setup: Setup) -> dict[str, str]:
        config = {
            "model": {
                "provider": "custom",
                "base_url": f"{setup.base_url}/v1",
                "api_key": setup.api_key,
                "default": setup.model,
            },
            "mcp_servers": {
                setup.server: {
                    "command": setup.mcp_command,
                    "args": list(setup.mcp_args),
                    "timeout": 600,
                    "connect_timeout": 60,
                }
            },
            "mcp_discovery_timeout": 60,
            "agent": {"max_turns": 90},
        }
        # JSON is YAML: no YAML writer needed, and the file is exactly what is hashed.
        return {".hermes/config.yaml": json.dumps(config, indent=2)}

    def env(self, setup: Setup) -> dict[str, str]:
        return {"HERMES_HOME": f"{setup.home}/.hermes", "HERMES_ACCEPT_HOOKS": "0", "PYTHONUNBUFFERED": "1"}

    def command(self, executable: str, prompt: str, turn: int, session: str | None, setup: Setup) -> list[str]:
        argv = [
            executable,
            "chat",
            "-q",
            prompt,
            "-Q",
            "-t",
            f"mcp-{setup.server}",
            "--source",
            "tool",
            "--ignore-rules",
        ]
        if session:
            argv += ["--resume", session]
        return argv

    def session(self, home: Path, output: str) -> str | None:
        found = SESSION.findall(output)
        return found[-1] if found else None

    def transcript(self, home: Path, stdout: str) -> Any:
        with private_directory("redagent-hermes-state-") as folder:
            # The home is the CLI's: its database (and write-ahead log) is copied out beneath it, never
            # through a link, and only the private copy is opened.
            if _copy_state(home, Path(folder)):
                return _sessions(Path(folder) / "state.db") or clip(stdout)
        return clip(stdout)


def _copy_state(home: Path, into: Path) -> bool:
    """Copy `.hermes/state.db` and its `-wal` out of the CLI's home (regular files only, each at most
    STATE_LIMIT bytes); False when there is no database to read."""
    with Beneath(home, alias=None, label="CLI home") as tree:
        for name in ("state.db", "state.db-wal"):
            try:
                data, size = tree.read(f".hermes/{name}", STATE_LIMIT + 1, follow=False)
            except (ToolError, OSError):
                if name == "state.db":
                    return False
                continue
            if size > STATE_LIMIT:
                return False
            (into / name).write_bytes(data)
    return True


def _sessions(path: Path) -> list[Any]:
    """The messages of the sessions in Hermes' state database (read-only, bounded)."""
    import sqlite3

    rows: list[Any] = []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        for table in ("messages", "sessions"):
            if table in tables:
                cursor = con.execute(f"select * from {table} limit 500")
                names = [d[0] for d in cursor.description]
                rows += [{"table": table, **dict(zip(names, r, strict=True))} for r in cursor]
    finally:
        con.close()
    return jsonl(clip("\n".join(json.dumps(r, default=str) for r in rows)))
