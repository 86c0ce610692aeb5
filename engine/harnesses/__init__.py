"""Three independently built harnesses that differ in tool mediation, turn construction and control.

  native  provider-native function calling; parallel tool calls; loop until a final answer
  react   tools described in the prompt; one JSON action per turn parsed from text; observations
          come back as user turns; malformed actions get a bounded correction turn
  shell   a coding-agent style: one `shell` tool; services reachable as commands (`mail send …`);
          output truncation; the workspace's AGENTS.md read into the context at start

The real agent CLIs are in cli/. `get_harness(name)` returns any of them by name; what they all share (the
rollout context, `Harness`, `HarnessError`, the names) is in engine/types.py, which imports none of them.
"""

from __future__ import annotations

from redagent.engine.types import CLI, HARNESSES, Harness


def get_harness(name: str) -> Harness:
    # Imported when asked for: a run loads only the harnesses it uses (the real CLIs' modules are large).
    from redagent.engine.harnesses.native import NativeHarness
    from redagent.engine.harnesses.react import ReactHarness
    from redagent.engine.harnesses.shell import ShellHarness

    harnesses: dict[str, type[Harness]] = {"native": NativeHarness, "react": ReactHarness, "shell": ShellHarness}
    if name in CLI:
        from redagent.engine.harnesses.cli import profile
        from redagent.engine.harnesses.cli.harness import CLIHarness

        return CLIHarness(profile(name))
    if name not in harnesses:
        raise KeyError(f"unknown harness {name!r} (known: {', '.join(HARNESSES)})")
    return harnesses[name]()
