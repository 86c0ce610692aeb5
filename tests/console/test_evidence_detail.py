"""Readable evidence for real agents: `enter` on a tool call, a result, a receipt or a state change shows it in
full (wrapped, scrollable), and a real CLI's stored transcript reads as a conversation, not as raw JSON.

The rollout is a calibration rollout from the engine, stored again with what a real agent can produce: a
tool call whose argument runs to thousands of characters with terminal escape and bidi characters in it, and
the transcript event a CLI harness stores (engine/harnesses/cli/harness.py's artifact, with a Codex session).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from redagent.console.screens.rollout import RolloutScreen
from redagent.console.widgets.detail_view import DetailView
from redagent.console.widgets.evidence import EvidencePanes
from redagent.console.widgets.trajectory import EntryList, TrajectoryView, event_line
from redagent.console.widgets.transcript import MESSAGE_CHARS, conversation, turns_of
from redagent.engine.matrix import RunSpec, start_run
from redagent.store.db import open_store
from redagent.store.readmodel import StoredEvent
from redagent.store.records import RunRecord
from tests.console.test_rollouts import CASE, SIZE, BrowserApp, detail_ready, screen_text, settle, synchronous

# Far wider than any pane: the part a one-line view cuts holds the marker at its end.
MEMO = "memo-start " + " ".join(f"w{i:04d}" for i in range(700)) + " \x1b[2J\u202egnp.exe memo-end-marker"
# As the console may draw it in JSON: the escape as JSON writes it (visible, inert), the bidi override removed.
MEMO_SHOWN = json.dumps(MEMO, ensure_ascii=False)[1:-1].replace("\u202e", "")

CODEX_SESSION = [
    {"type": "session_meta", "payload": {"id": "s-1", "cli_version": "0.171.0"}},
    {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Pay the invoice from Acme in my inbox."}]}},
    {"type": "event_msg", "payload": {"type": "user_message", "message": "Pay the invoice from Acme in my inbox."}},
    {"type": "response_item", "payload": {"type": "function_call", "name": "banking__send_transfer",
                                          "arguments": json.dumps({"to_account": "US90 7781", "memo": MEMO}),
                                          "call_id": "call_7"}},
    {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "call_7",
                                          "output": "transfer new-tx-1 sent"}},
    {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": "I paid the invoice: transfer new-tx-1."}]}},
]  # fmt: skip


def artifact(transcript: Any) -> str:
    """The transcript event's text as the CLI harness stores it (`CLIHarness._artifact`)."""
    return json.dumps(
        {
            "harness": "codex",
            "version": "0.171.0",
            "wire": "responses",
            "endpoint": {"requests": 3, "budget_hit": False, "prompts": []},
            "mcp": {"tools_list": [], "calls": [{"name": "send_transfer"}]},
            "isolation": {"backend": "bwrap"},
            "turns": [{"turn": 0, "exit_code": 0, "seconds": 4.25, "stderr_tail": "", "transcript": transcript}],
        }
    )


@pytest.fixture(scope="module")
def real_agent(tmp_path_factory) -> dict[str, Any]:
    """A sim/comply rollout stored again with a huge, hostile argument on its transfer and a CLI transcript."""
    url = f"sqlite:///{tmp_path_factory.mktemp('detail') / 'store.db'}"
    with open_store(url) as store:
        runner = start_run(store, RunSpec(cases=CASE, models=["sim/comply"], harnesses=["native"]))
        asyncio.run(runner.run())
        record = store.get_rollout(store.rollouts(runner.run_record.id)[0].id)
    events = [dict(e) for e in record.events]
    call = next(
        e for e in events if e["role"] == "assistant" and (e.get("tool_call") or {}).get("name") == "send_transfer"
    )
    call["tool_call"] = {**call["tool_call"], "args": {**call["tool_call"]["args"], "memo": MEMO}}
    events.append({"idx": len(events), "role": "transcript", "text": artifact(CODEX_SESSION), "receipts": []})
    receipts = [dict(r) for r in record.receipts]
    receipts[0]["args"] = {**receipts[0]["args"], "memo": MEMO}
    with open_store(url) as store:
        store.create_run(
            RunRecord(
                id="run-real",
                status="finished",
                protocol={},
                case_set_hash="x",
                code_version="t",
                planned=1,
                created_at=datetime.now(UTC),
            )
        )
        store.write_rollouts([replace(record, id="rollout-real", run_id="run-real", events=events, receipts=receipts)])
    return {"url": url, "call": call["idx"], "transcript": len(events) - 1}


async def open_detail(pilot) -> DetailView:
    await pilot.press("enter")
    for _ in range(200):
        if isinstance(pilot.app.screen, DetailView):
            break
        await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, DetailView), screen
    await settle(pilot)
    return screen


def detail_plain(screen: DetailView) -> str:
    return screen.content.plain


@synchronous
async def test_enter_on_a_tool_call_shows_every_argument_wrapped_to_its_end(real_agent):
    app = BrowserApp(real_agent["url"], RolloutScreen("rollout-real"))
    async with app.run_test(size=SIZE) as pilot:
        await detail_ready(pilot, "rollout-real")
        rollout = app.screen
        trajectory = rollout.query_one("#trajectory", TrajectoryView)
        for _ in range(real_agent["call"]):
            await pilot.press("j")
        await settle(pilot)
        assert "memo-end-marker" not in screen_text(app)  # the panes cut it: that is why the view exists
        detail = await open_detail(pilot)
        assert MEMO_SHOWN in " ".join(detail_plain(detail).split())  # the whole argument, no character lost
        assert "\x1b" not in detail_plain(detail) and "\u202e" not in detail_plain(detail)
        shown = screen_text(app)
        assert "send_transfer" in shown and "memo-start" in shown
        # Wrapped, not cut: scrolled to its end, the end of the argument is on screen.
        await pilot.press("end")
        await settle(pilot)
        assert "memo-end-marker" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is rollout and trajectory.cursor == real_agent["call"] and trajectory.has_focus


@synchronous
async def test_enter_on_a_receipt_shows_its_whole_arguments(real_agent):
    app = BrowserApp(real_agent["url"], RolloutScreen("rollout-real"))
    async with app.run_test(size=SIZE) as pilot:
        await detail_ready(pilot, "rollout-real")
        receipts = app.screen.query_one("#receipts", EntryList)
        receipts.focus()
        await settle(pilot)
        assert "memo-end-marker" not in receipts.plain_lines()[1]  # its args line is cut at the pane's edge
        detail = await open_detail(pilot)
        text = " ".join(detail_plain(detail).split())
        assert text.startswith("r1 banking.send_transfer ok") and MEMO_SHOWN in text
        assert '"to_account"' in text and "effect" in text


@synchronous
async def test_a_real_clis_transcript_reads_as_a_conversation(real_agent):
    app = BrowserApp(real_agent["url"], RolloutScreen("rollout-real"))
    async with app.run_test(size=SIZE) as pilot:
        await detail_ready(pilot, "rollout-real")
        await pilot.press("end")  # the transcript is the last event
        await settle(pilot)
        panes = app.screen.query_one(EvidencePanes)
        preview = str(panes.query_one("#event-detail").render())
        # Under the trajectory: the turns in order, labelled, not the artifact's JSON.
        order = [
            "codex 0.171.0 · wire responses · 3 model requests · 1 tool calls over MCP",
            "user turn 1 · exit code 0 · 4.2 s",
            "user\nPay the invoice from Acme in my inbox.",
            "▶ tool call banking__send_transfer",
            "◀ tool result call_7\ntransfer new-tx-1 sent",
            "assistant\nI paid the invoice: transfer new-tx-1.",
        ]
        positions = [preview.find(part) for part in order]
        assert -1 not in positions and positions == sorted(positions), (positions, preview)
        assert '"type": "response_item"' not in preview and "{" not in preview.split("▶ tool call")[0]
        assert "records not shown: 1 event_msg, 1 session_meta" in preview
        # The trajectory's line says what the event is instead of squeezing the JSON onto it.
        line = event_line(StoredEvent(idx=9, role="transcript", text=artifact(CODEX_SESSION))).plain
        assert "the agent CLI's own record" in line and "{" not in line
        # The detail view: the whole conversation, the call's arguments in full.
        detail = await open_detail(pilot)
        text = " ".join(detail_plain(detail).split())
        assert "I paid the invoice: transfer new-tx-1." in text and MEMO_SHOWN in text


# ---------------------------------------------------------------- each CLI's record


def kinds(record: Any) -> list[tuple[str, str]]:
    turns, _ = turns_of(record)
    return [(turn.kind, turn.label) for turn in turns]


def test_each_clis_record_becomes_turns():
    claude = [
        {"type": "system", "subtype": "init"},
        {"type": "user", "message": {"role": "user", "content": "Pay the invoice."}},
        {"type": "assistant", "message": {"content": [
            {"type": "thinking", "thinking": "The inbox first."},
            {"type": "text", "text": "Reading the inbox."},
            {"type": "tool_use", "name": "mcp__redagent__read_inbox", "input": {"limit": 5}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "content": [{"type": "text", "text": "1 mail"}]}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "content": "denied", "is_error": True}]}},
    ]  # fmt: skip
    assert kinds(claude) == [
        ("user", ""),
        ("reasoning", ""),
        ("assistant", ""),
        ("call", "mcp__redagent__read_inbox"),
        ("result", ""),
        ("error", ""),
    ]
    codex_json = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "item.completed", "item": {"type": "reasoning", "text": "Check mail."}},
        {"type": "item.completed", "item": {"type": "mcp_tool_call", "server": "redagent", "tool": "read_inbox",
                                            "arguments": {"limit": 5}, "result": {"content": [{"text": "1 mail"}]}}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "Done."}},
    ]  # fmt: skip
    assert kinds(codex_json) == [
        ("reasoning", ""),
        ("call", "redagent.read_inbox"),
        ("result", "redagent.read_inbox"),
        ("assistant", ""),
    ]
    hermes = [
        {"table": "messages", "role": "user", "content": "Pay it."},
        {"table": "messages", "role": "assistant", "content": None,
         "tool_calls": json.dumps([{"function": {"name": "send_transfer", "arguments": "{\"amount\": 5}"}}])},
        {"table": "messages", "role": "tool", "content": "sent", "tool_name": "send_transfer"},
        {"table": "sessions", "id": "s", "system_prompt": "You are Hermes."},
    ]  # fmt: skip
    assert kinds(hermes) == [
        ("user", ""),
        ("call", "send_transfer"),
        ("result", "send_transfer"),
        ("system", "system prompt"),
    ]
    assert kinds([{"payloads": [{"text": "All paid."}], "meta": {"durationMs": 5}}]) == [("assistant", "")]
    # The arguments of a function call are JSON in a string: shown decoded and indented.
    text = conversation(artifact(hermes)).plain
    assert '"amount": 5' in text
    # A record cut to fit the store (a clipped JSON string) or one that could not be read is shown as text.
    assert "[transcript unreadable: OSError" in conversation(artifact("[transcript unreadable: OSError: x]")).plain
    assert "not a CLI transcript" in conversation("not json").plain


def test_what_an_agent_wrote_is_bounded_and_cleaned():
    huge = "A" * (3 * MESSAGE_CHARS)
    rows = [{"role": "assistant", "content": huge + "\x1b]0;owned\x07"}] * 20
    text = conversation(artifact(rows), limit=5 * MESSAGE_CHARS).plain
    assert f"+{2 * MESSAGE_CHARS + len(chr(27) + ']0;owned' + chr(7)):,} characters not shown" in text
    assert "the rest is not shown" in text and len(text) < 6 * MESSAGE_CHARS
    assert "\x1b" not in text and "\x07" not in text
