"""Text from outside reaches a terminal or a pipe as text: no control, bidi or format character, no Rich markup.

A case title with an escape sequence could clear the screen, retitle the terminal or print a fake "all checks
passed" in green; a right-to-left override could reorder what a reviewer reads; "[/bold]" in a title was an
internal error. The CLI's two consoles clean every string they print (console/cli_common.py `clean`), and
`--json` output stays exact. The Textual console renders text through its own widgets and is not touched.
"""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
import unicodedata

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.table import Table
from rich.text import Text

from redagent.cases.loader import library_dir
from redagent.console.cli_common import _CleanConsole, clean

HANG_S = 120
BASE = yaml.safe_load((library_dir() / "banking" / "e2-invoice-bank-details-change.yaml").read_text())
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[1;32mall checks passed\x1b[0m\x9b31m\r"
BIDI = "\u202egnp.exe\u202c \u2066isolated\u2069 \u200e\u200f\u061c"
TITLE = f"Pay the invoice {ESCAPES} {BIDI} [/bold] [link=https://evil.example]x[/link]"
TASK = "Please pay it.\n\x1b[31mRED\x1b[0m and \u202eright-to-left\u202c, tab\there. \U000e0041\U000e0042 tags"

# What must never reach the output: controls (tab and newline are layout), format characters other than the
# zero-width (non-)joiners scripts need, line separators, surrogates.
KEPT = {"\t", "\n", "\u200c", "\u200d"}


def unshown(text: str) -> set[str]:
    return {ch for ch in text if ch not in KEPT and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")}


def test_clean_removes_every_format_character_unicodedata_knows():
    every = "".join(chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp"))
    assert unshown(clean(every)) == set()
    assert set(clean(every)) <= KEPT


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_clean_keeps_what_is_shown_and_drops_the_rest(text):
    cleaned = clean(text)
    assert unshown(cleaned) == set()
    assert clean(cleaned) == cleaned
    shown = [ch for ch in text if not unshown(ch) and ch not in ("\u200b", "\u00ad")]
    assert [ch for ch in cleaned if ch != "\ufffd"] == [ch for ch in shown if ch != "\ufffd"]


def test_a_lone_surrogate_is_shown_as_the_replacement_character():
    assert clean("a\ud800b") == "a\ufffdb"


def _rendered(*renderables, terminal: bool) -> str:
    buffer = io.StringIO()
    console = _CleanConsole(file=buffer, force_terminal=terminal, width=100, markup=False, emoji=False)
    for renderable in renderables:
        console.print(renderable)
    return buffer.getvalue()


def test_the_console_cleans_strings_tables_and_text_objects_but_keeps_its_own_styles():
    table = Table(title=TITLE)
    table.add_column("title")
    table.add_row(TITLE)
    piped = _rendered(TITLE, table, Text(TASK), terminal=False)
    assert unshown(piped) == set() and "\x1b" not in piped
    assert "[/bold]" in piped and "[link=https://evil.example]" in piped  # text, not markup
    styled = _rendered(Text("pass", style="green"), Text(TASK, style="red"), terminal=True)
    assert "\x1b[32m" in styled  # Rich's own colour codes still reach a terminal
    assert "\x1b[2J" not in styled and "\x1b]0;" not in styled and "\u202e" not in styled


def _hostile_case(tmp_path):
    data = copy.deepcopy(BASE)
    data["id"] = "hostile-escapes"
    data["title"] = TITLE
    data["task"] = TASK
    data["attack"]["content"] += f" {ESCAPES}{BIDI}"
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "hostile.yaml").write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return folder, data


def _redagent(*args, cwd) -> subprocess.CompletedProcess:
    # Piped (capture_output): what a log file, `less` or a CI console would receive.
    return subprocess.run([sys.executable, "-m", "redagent", *args], capture_output=True, timeout=HANG_S, cwd=cwd)


def test_cases_list_and_show_print_no_escape_or_bidi_character_when_piped(tmp_path):
    folder, _ = _hostile_case(tmp_path)
    for args in (("cases", "list", "--path", str(folder)), ("cases", "show", "hostile-escapes", "--path", str(folder))):
        done = _redagent(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        text = done.stdout.decode("utf-8")
        assert unshown(text) == set(), (args, unshown(text))
    show = _redagent("cases", "show", "hostile-escapes", "--path", str(folder), cwd=tmp_path).stdout.decode()
    # The words stay (as text, markup too); only what a terminal would act on goes.
    assert "all checks passed" in show and "right-to-left" in show and "[/bold]" in show


def test_json_output_keeps_the_text_exactly(tmp_path):
    folder, data = _hostile_case(tmp_path)
    listed = json.loads(_redagent("cases", "list", "--path", str(folder), "--json", cwd=tmp_path).stdout)
    assert listed[0]["title"] == data["title"]
    shown = json.loads(
        _redagent("cases", "show", "hostile-escapes", "--path", str(folder), "--json", cwd=tmp_path).stdout
    )
    assert (shown["title"], shown["task"], shown["attack"]["content"]) == (
        data["title"],
        data["task"],
        data["attack"]["content"],
    )


def test_a_problem_line_escapes_what_it_would_otherwise_print(tmp_path):
    folder, data = _hostile_case(tmp_path)
    data["surfaces"] = ["bank\u202eing\x1b[2J"]
    (folder / "hostile.yaml").write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    done = _redagent("cases", "validate", str(folder), cwd=tmp_path)
    assert done.returncode == 2
    text = done.stderr.decode("utf-8")
    assert unshown(text) == set()
    assert "bank\\u202eing\\x1b[2J" in text  # shown escaped, so the author sees what is there
