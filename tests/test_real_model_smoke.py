"""benchmarks/real_model_smoke.py: skipped without a server; with one, its figures are those of the stored rollouts.

The server is the loopback OpenAI-compatible stand-in (tests/engine/openai_stub.py) answering like a model that
calls a tool once, then answers in text; the script runs `redagent run` as a user would and reads the store.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.engine.openai_stub import ChatServer, text, tool_call

SCRIPT = Path(__file__).parent.parent / "benchmarks" / "real_model_smoke.py"
CASE = "email-e2-migration-relay-forwarding-rule"
HANG_S = 900  # a hang, not a speed target: three CLI processes on a loaded 2-core machine


def smoke(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REDAGENT_SMOKE_")}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env={**clean, **env}, timeout=HANG_S
    )


def test_without_a_server_it_says_skipped_and_exits_0() -> None:
    done = smoke()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "skipped: no --api-base given (or REDAGENT_SMOKE_API_BASE)"


def calls_one_tool_then_answers(body: dict[str, Any]) -> dict[str, Any]:
    """A model that calls the first offered tool when the user has just spoken, and otherwise answers in text."""
    messages = body.get("messages") or []
    if body.get("tools") and messages and messages[-1].get("role") == "user":
        return tool_call(body["tools"][0]["function"]["name"], {})
    return text("Done.")


def test_a_server_given_by_the_environment_is_run_and_its_tool_calls_counted() -> None:
    with ChatServer(api_key="sk-smoke") as server:
        server.responder = calls_one_tool_then_answers
        done = smoke(
            "--harnesses",
            "native",
            "--cases",
            CASE,
            REDAGENT_SMOKE_API_BASE=server.url,
            REDAGENT_SMOKE_MODEL="openai/stub",
            REDAGENT_SMOKE_API_KEY="sk-smoke",
            # The key given to the script is the one sent, over one the environment already holds.
            OPENAI_API_KEY="sk-for-another-server",
        )
        asked = [r for r in server.requests if r.get("tools")]
    assert done.returncode == 0, done.stdout + done.stderr
    # The report's lines under a harness: "  <label padded to 18> <value>".
    shown = {line[:20].strip(): line[20:] for line in done.stdout.splitlines() if line.startswith("  ")}
    assert "native:" in done.stdout.splitlines()
    assert shown["rollouts"] == "1 (1 valid)"
    assert shown["invalid"] == "none"
    assert shown["tool-call share"] == "1/1 = 100% of valid rollouts"
    assert shown["tool calls"] == "1.00 per valid rollout (1 in all)"
    assert asked, "the harness never offered the stand-in its tools"
