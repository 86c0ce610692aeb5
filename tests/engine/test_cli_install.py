"""Pinned installations in the per-user cache, offline: what counts as installed, the protocol record,
the one-line messages, and the `redagent harnesses` commands' errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from redagent.engine.harnesses.cli import CLI_HARNESSES, profile
from redagent.engine.harnesses.cli.catalog import builds, catalog, missing
from redagent.engine.harnesses.cli.install import NODE_PACKAGE, NODE_VERSION, InstallError, _step, installation


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("REDAGENT_HARNESS_CACHE", str(tmp_path))
    return tmp_path


def _fake_npm_install(cache, name: str, *, node: bool = True, marker: bool = True) -> None:
    where = installation(profile(name))
    where.executable.parent.mkdir(parents=True)
    where.executable.write_text("#!/bin/sh\n")
    if marker:
        (where.directory / ".installed").write_text("{}")
    if node:
        (cache / f"node-{NODE_VERSION}" / "node_modules" / NODE_PACKAGE / "bin").mkdir(parents=True, exist_ok=True)
        (cache / f"node-{NODE_VERSION}" / "node_modules" / NODE_PACKAGE / "bin" / "node").write_text("")


def test_installed_needs_the_marker_the_executable_and_node(cache):
    assert not installation(profile("codex")).installed
    _fake_npm_install(cache, "codex", node=False)
    assert not installation(profile("codex")).installed  # no Node 24 yet
    _fake_npm_install(cache, "claude-code")
    assert installation(profile("claude-code")).installed and installation(profile("codex")).installed
    _fake_npm_install(cache, "openclaw", marker=False)
    assert not installation(profile("openclaw")).installed  # a half-finished install is redone


def test_missing_names_the_install_command_for_the_first_missing_cli(cache):
    assert missing(["native", "react"]) is None
    assert missing(["native", "hermes", "codex"]) == (
        "harness hermes is not installed; run `redagent harnesses install hermes`"
    )


def test_protocol_records_version_wire_and_a_stable_config_hash():
    recorded = builds(["native", *CLI_HARNESSES])
    assert set(recorded) == set(CLI_HARNESSES)
    assert recorded["codex"] == {
        "version": "0.171.0",
        "config_hash": profile("codex").config_hash(),
        "wire": "responses",
    }
    assert recorded["claude-code"]["wire"] == "messages" and recorded["hermes"]["wire"] == "chat"
    assert profile("openclaw").config_hash() == profile("openclaw").config_hash()
    assert len({r["config_hash"] for r in recorded.values()}) == len(CLI_HARNESSES)


def test_pinned_specs():
    assert [profile(n).spec() for n in CLI_HARNESSES] == [
        "@openai/codex@0.171.0",
        "hermes-agent[mcp,cli]==0.19.0",
        "openclaw@2026.9.6",
        "@anthropic-ai/claude-code@2.1.332",
    ]


def test_catalog_lists_in_house_and_cli_harnesses(cache):
    rows = {r["name"]: r for r in catalog()}
    assert rows["native"]["installed"] and not rows["codex"]["installed"]
    assert rows["hermes"]["kind"] == "pip" and rows["openclaw"]["version"] == "2026.9.6"


def test_a_failing_install_step_is_one_line():
    with pytest.raises(InstallError) as info:
        _step(
            [
                sys.executable,
                "-c",
                "import sys; print('warn: noise', file=sys.stderr); "
                "print('E404 no such package', file=sys.stderr); sys.exit(3)",
            ],
            "npm install x",
        )
    assert str(info.value) == "npm install x failed (exit 3): E404 no such package"


def test_install_command_rejects_unknown_names_in_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "redagent", "harnesses", "install", "codex", "vim"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: unknown CLI harness 'vim' (known: codex, hermes, openclaw, claude-code)"


def test_list_json_without_installations(cache):
    proc = subprocess.run(
        [sys.executable, "-m", "redagent", "harnesses", "list", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "REDAGENT_HARNESS_CACHE": str(cache)},
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["name"] for r in rows] == ["native", "react", "shell", *CLI_HARNESSES]
    assert [r["installed"] for r in rows] == [True, True, True, False, False, False, False]
