"""Three independently built harnesses that differ in tool mediation, turn construction and control.

  native  provider-native function calling; parallel tool calls; loop until a final answer
  react   tools described in the prompt; one JSON action per turn parsed from text; observations
          come back as user turns; malformed actions get a bounded correction turn
  shell   a coding-agent style: one `shell` tool; services reachable as commands (`mail send …`);
          output truncation; the workspace's AGENTS.md read into the context at start
"""

from redagent.engine.harnesses.base import HARNESSES, Harness, HarnessError, RolloutContext, get_harness

__all__ = ["HARNESSES", "Harness", "HarnessError", "RolloutContext", "get_harness"]
