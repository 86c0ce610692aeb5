"""The receipts and diff panes are laid out from line counts before entries are drawn: counts and drawings agree."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Offset
from textual.selection import Selection

from redagent.console.widgets.evidence import diff_line_count, diff_lines, receipt_line_count, receipt_lines
from redagent.console.widgets.trajectory import EntryList
from redagent.store.readmodel import StoredDiffEntry, StoredReceipt

values = (
    st.none() | st.integers() | st.text(max_size=20) | st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)
)
documents = st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)
receipts = st.builds(
    StoredReceipt,
    id=st.from_regex(r"r[0-9]{1,3}", fullmatch=True),
    seq=st.integers(1, 99),
    service=st.sampled_from(["email", "banking"]),
    action=st.sampled_from(["send_email", "send_transfer"]),
    outcome=st.sampled_from(["ok", "failed"]),
    actor=st.sampled_from(["agent", "setup"]),
    step=st.none() | st.integers(0, 99),
    args=documents,
    effect=documents,
    error=st.none() | st.text(max_size=20),
    via=st.none() | st.just("run_command"),
)
entries = st.builds(
    StoredDiffEntry,
    op=st.sampled_from(["added", "removed", "changed"]),
    path=st.text(max_size=30),
    before=values,
    after=values,
)


@given(receipts, st.sampled_from(["", "◆", "⚠"]))
def test_receipt_line_count_matches_its_drawing(receipt, mark):
    assert len(receipt_lines(receipt, mark)) == receipt_line_count(receipt)


@given(entries, st.sampled_from(["", "◆"]))
def test_diff_line_count_matches_its_drawing(entry, mark):
    assert len(diff_lines(entry, mark)) == diff_line_count(entry)


def test_copying_a_selection_over_an_entry_list_does_not_call_its_entry_drawer():
    # EntryList kept its drawer in `_render`, shadowing Widget._render, which Textual calls with no argument
    # to copy selected text (Screen.get_selected_text): a mouse selection and the copy key crashed the console.
    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield EntryList(id="entries")

    async def scenario() -> None:
        app = Host()
        async with app.run_test(size=(80, 12)) as pilot:
            entries = app.query_one("#entries", EntryList)
            entries.load(["first", "second"], lambda entry: [Text(entry)], lambda entry: 1)
            await pilot.pause()
            assert entries.plain_lines() == ["first", "second"]
            app.screen.selections = {entries: Selection(Offset(0, 0), Offset(5, 1))}
            app.screen.get_selected_text()  # raised TypeError: <lambda>() missing 1 required positional argument

    asyncio.run(scenario())
