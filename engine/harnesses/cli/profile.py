"""What a CLI harness profile says: package and pinned version, wire format, config, command line, transcript.

A profile is data plus four small functions; everything else (sandbox, endpoint, MCP bridge,
trajectory) is shared. Paths in a profile are the ones inside the sandbox (`Setup`), which are the
same for every rollout, so a profile's configuration hash is a constant of (profile, version).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redagent.engine.harnesses.cli.isolation import HOME, PORT, RELAY, SOCKETS, WORKDIR
from redagent.sandbox.beneath import Beneath, read_newest

TRANSCRIPT_CHARS = 200_000  # of the CLI's own transcript kept per invocation
READ_LIMIT = 16 << 20  # bytes of a session file read back from a CLI's home (head and tail beyond)


@dataclass(frozen=True)
class Setup:
    """Where things are inside the sandbox, as a profile writes them into configs and command lines."""

    base_url: str = f"http://127.0.0.1:{PORT}"
    mcp_command: str = "/usr/bin/python3"
    mcp_args: tuple[str, ...] = (f"{RELAY}/mcp_stdio.py", f"{SOCKETS}/tools.sock")
    home: str = HOME
    workdir: str = WORKDIR
    server: str = "redagent"
    model: str = "redagent-model"
    api_key: str = "redagent-local-key"


class Profile:
    name: str
    version: str
    package: str  # npm package or pip requirement, without the version
    kind: str  # npm | pip
    binary: str  # the executable, relative to the installation directory
    wire: str  # chat | responses | messages
    extras: str = ""  # pip extras, e.g. "[mcp,cli]"
    # What one rollout of this CLI needs while it runs (the executors schedule by it, engine/executors/
    # resources.py): CPU in cores and resident memory in MB, from benchmarks/harnesses.py on this machine's
    # kind with headroom (the CLI's process tree, not the engine's share).
    cpu: float = 1.0
    memory_mb: int = 512

    def spec(self) -> str:
        if self.kind == "pip":
            return f"{self.package}{self.extras}=={self.version}"
        return f"{self.package}@{self.version}"

    def config_files(self, setup: Setup) -> dict[str, str]:
        """Files to write into the private home before the CLI starts: {path relative to home: text}."""
        return {}

    def directories(self) -> list[str]:
        """Directories (relative to the home) the CLI expects to exist before it starts."""
        return []

    def env(self, setup: Setup) -> dict[str, str]:
        return {}

    def command(self, executable: str, prompt: str, turn: int, session: str | None, setup: Setup) -> list[str]:
        raise NotImplementedError

    def session(self, home: Path, output: str) -> str | None:
        """The CLI's session id after a turn (so the next user turn resumes it), from its home or its
        output (asked with stdout, then with stderr), if it has one."""
        return None

    def transcript(self, home: Path, stdout: str) -> Any:
        """The CLI's own record of the conversation (its session file, or its JSON output)."""
        return clip(stdout)

    def config_hash(self, setup: Setup | None = None) -> str:
        setup = setup or Setup()
        text = json.dumps(
            {
                "name": self.name,
                "version": self.version,
                "wire": self.wire,
                "files": self.config_files(setup),
                "env": self.env(setup),
                "argv": self.command("{executable}", "{prompt}", 0, None, setup),
                "resume": self.command("{executable}", "{prompt}", 1, "{session}", setup),
            },
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def clip(text: str, limit: int = TRANSCRIPT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 2] + f"\n…[{len(text) - limit} chars cut]…\n" + text[-limit // 2 :]


def jsonl(text: str) -> list[Any]:
    """The JSON objects of a JSON-lines text (lines that are not JSON are kept as strings)."""
    rows: list[Any] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            rows.append(line)
    return rows


def newest_text(home: Path, pattern: str) -> str | None:
    """The text of the newest file in the CLI's home matching `pattern` (fnmatch per folder, `**` any
    depth), None if there is none. The home belongs to the CLI's uid, and a CLI turned adversarial may
    plant links in it: it is walked beneath a held descriptor, no link is followed, only a regular file
    is read, and at most READ_LIMIT bytes of it (its head and tail when larger)."""
    with Beneath(home, alias=None, label="CLI home") as tree:
        return read_newest(tree, pattern, READ_LIMIT)
