"""Putting the attacker's text on a channel of the live sandbox, the way the case places its own attack.

The text for a seed carrier is made exactly as `Case.instantiate` makes the case's: `place_text` on
the case's own seed at the carrier's reference (the case's placeholder is replaced, any other carrier
gets the text appended). It is then written where the service keeps that text — the workspace file,
the inbox message's body, the page, the document — and the same value is written into the rollout's
baseline, so the diff from baseline to final shows only what the agent did: the attacker's edits are
part of the world the agent is judged in, never an effect of the agent. A carrier the agent has
changed or removed since the attacker last wrote it is not written again (the move is recorded as
refused), so no effect of the agent is ever overwritten or hidden.

A tool channel is an intervention of the same kinds the case's `attack.intervention` uses (tamper,
poison_description, lookalike), given to the rollout's gateway: the case's own intervention is
rewritten in place, a new one is added beside it. A poisoned description or look-alike changes the
tool list, which the harness shows again before the next round.

This module is the one place the engine writes into a sandbox's services; it touches only the state
a case seed defines (files, inbox messages, pages, documents) and the gateway's interventions.

`Channel`, the place a text can be put, is defined here: channels.py derives a case's channels and probes
each one with a `Placer`, so it builds on this module, never this module on it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from redagent.cases.execution import CaseRun
from redagent.cases.schema import PLACEHOLDER, Case, place_text
from redagent.sandbox.verifier import RefError, resolve_ref

SEED_KINDS = ("workspace_file", "config_file", "email", "web_page", "drive_doc", "kb_passage")
TOOL_KINDS = ("tool_output", "tool_error", "tool_description", "lookalike")


@dataclass(frozen=True)
class Channel:
    id: str  # what the attacker names: "user", "email:m-41", "tool_output:get_balance", …
    side: str  # user | environment | tool
    kind: str  # user_turn | workspace_file | config_file | email | web_page | drive_doc | kb_passage |
    #            tool_output | tool_error | tool_description | lookalike
    ref: str = ""  # seed reference of a seed carrier; the tool's name for a tool channel
    key: str = ""  # the carrier's identity in its service: a path, an email id, a URL, a document id
    describe: str = ""  # what the attacker is told about where it is
    own: bool = False  # the case's fixed attack is placed here
    match: dict[str, Any] = field(default_factory=dict)  # the read a tool_output/tool_error channel alters
    # The benign plan's steps (indices) whose observation shows this channel; () for the tool list. What a
    # calibration agent redoes to read a channel again, and how the probe found it.
    reveal: tuple[int, ...] = ()

    @property
    def visible_again(self) -> bool:
        """Whether a text placed here after round 0 is shown to an agent that reads its sources again."""
        return self.kind in ("user_turn", "tool_description", "lookalike") or bool(self.reveal)

    def public(self) -> dict[str, Any]:
        """The channel as the attacker sees it listed."""
        return {"id": self.id, "kind": self.kind, "where": self.describe, "case_attack_here": self.own}


class Placer:
    """One rollout's placements: what is on each channel now, and writing a new text there."""

    def __init__(self, case: Case, run: CaseRun) -> None:
        self.case = case
        self.run = run
        self.seed_text: dict[str, str] = {}  # channel id → the text the attacker (or the case) left there
        self.interventions: dict[str, dict[str, Any]] = {}  # channel id → its live intervention
        gateway = run.env.gateway
        own = case.attack.intervention or {}
        for item in gateway.interventions:  # the case's own intervention, as instantiated
            if (
                own
                and item.get("kind") == own.get("kind")
                and item.get("tool") == own.get("tool")
                and item.get("name") == own.get("name")
            ):
                self.interventions[_tool_channel_id(item)] = item

    # -- seed carriers -------------------------------------------------------------------------
    def _initial(self, channel: Channel) -> str | None:
        try:
            value = resolve_ref(self.run.instance.seed, channel.ref)
        except RefError:
            return None
        if isinstance(value, dict):
            value = value.get("content", "")
        return value if isinstance(value, str) else None

    def live(self, channel: Channel) -> str | None:
        """The carrier's text in the sandbox now (None: it is gone)."""
        env = self.run.env
        if channel.kind in ("workspace_file", "config_file"):
            # A regular file (not a link) beneath the workspace, read on descriptors; anything else is gone for us.
            return env.services["workspace"].read_large(channel.key)
        if channel.kind == "email":
            message = env.services["email"].folders["inbox"].get(channel.key)
            return None if message is None else str(message.get("body", ""))
        if channel.kind == "web_page":
            page = _page(env.services["browser"].pages, channel.key)
            return None if page is None else str(page.get("content", ""))
        if channel.kind in ("drive_doc", "kb_passage"):
            doc = env.services["files"].documents.get(channel.key)
            return None if doc is None else str(doc.get("content", ""))
        return None

    def text_for(self, channel: Channel, content: str) -> str:
        """The carrier's new text: the case's seed with `content` placed at the carrier, as instantiate does."""
        seed = copy.deepcopy(self.case.seed)
        place_text(seed, channel.ref, content)
        value = resolve_ref(seed, channel.ref)
        if isinstance(value, dict):
            value = value.get("content", "")
        return str(value).replace(PLACEHOLDER, "")

    def place(self, channel: Channel, content: str) -> str | None:
        """Write `content` on `channel`; None when it was placed, else why it could not be."""
        if channel.kind == "user_turn":  # delivered by the session as the next user turn: nothing to write
            return None
        if channel.kind in TOOL_KINDS:
            return self._place_tool(channel, content)
        if channel.kind not in SEED_KINDS:
            return f"the carrier {channel.id} cannot be rewritten"
        last = self.seed_text.get(channel.id)
        if last is None:
            last = self._initial(channel)
        now = self.live(channel)
        if now is None:
            return f"the carrier {channel.id} is gone (the agent removed it)"
        if last is not None and now != last:
            return f"the carrier {channel.id} was changed by the agent; it is not overwritten"
        try:
            text = self.text_for(channel, content)
        except (RefError, KeyError, IndexError, TypeError) as exc:
            return f"the carrier {channel.id} cannot be rewritten ({exc})"
        self._write(channel, text)
        self.seed_text[channel.id] = text
        return None

    def _write(self, channel: Channel, text: str) -> None:
        env, baseline = self.run.env, self.run.baseline
        if channel.kind in ("workspace_file", "config_file"):
            workspace = env.services["workspace"]
            workspace.put(channel.key, text)  # as the rollout's uid, beneath the workspace
            # The file's record exactly as the snapshot takes it, so the diff sees no change of the attacker's.
            baseline["workspace"]["files"][channel.key] = workspace.snapshot()["files"][channel.key]
        elif channel.kind == "email":
            env.services["email"].folders["inbox"][channel.key]["body"] = text
            baseline["email"]["inbox"][channel.key]["body"] = text
        elif channel.kind == "web_page":  # pages are not part of the snapshot: nothing to fold in
            page = _page(env.services["browser"].pages, channel.key)
            if page is None:  # offered channels name existing pages (channels.py): a broken seed, not a move
                raise KeyError(f"no page {channel.key!r} to rewrite")
            page["content"] = text
        else:
            env.services["files"].documents[channel.key]["content"] = text
            baseline["files"]["documents"][channel.key]["content"] = text

    # -- tool channels -------------------------------------------------------------------------
    def _place_tool(self, channel: Channel, content: str) -> str | None:
        item = self.interventions.get(channel.id)
        if item is not None:  # rewritten in place: the gateway (and its look-alike table) hold this very dict
            item["description" if item.get("kind") == "lookalike" else "content"] = content
            return None
        if channel.kind == "lookalike":
            return f"the look-alike {channel.key} is not part of this case; it cannot be added"
        if channel.kind == "tool_description":
            item = {"kind": "poison_description", "tool": channel.key, "content": content}
        else:
            item = {
                "kind": "tamper",
                "tool": channel.key,
                "match": dict(channel.match),
                "mode": "error" if channel.kind == "tool_error" else "append",
                "content": content,
            }
        self.run.env.gateway.interventions.append(item)
        self.interventions[channel.id] = item
        return None

    def changes_tool_list(self, channel: Channel) -> bool:
        return channel.kind in ("tool_description", "lookalike")


def _tool_channel_id(item: dict[str, Any]) -> str:
    kind = item.get("kind")
    if kind == "lookalike":
        return f"lookalike:{item.get('name')}"
    if kind == "poison_description":
        return f"tool_description:{item.get('tool')}"
    return f"{'tool_error' if item.get('mode') == 'error' else 'tool_output'}:{item.get('tool')}"


def _page(pages: dict[str, dict[str, Any]], url: str) -> dict[str, Any] | None:
    """A page by URL as the browser keys it (a trailing slash after a path is not part of the key)."""
    url = url.strip()
    return pages.get(url) or pages.get(url.rstrip("/"))
