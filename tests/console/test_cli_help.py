"""Every command and group of `redagent` — found by walking the real click tree, so one added later is
held to it too — has a --help that exits 0 and ends with an example of that very command, and every
example parses: its options and arguments are ones the command has."""

from __future__ import annotations

import re
import shlex

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from redagent.console.cli import app

ROOT = typer.main.get_command(app)


def _walk(command, path: tuple[str, ...] = ()):
    yield path, command
    if isinstance(command, TyperGroup):
        for name, sub in command.commands.items():
            yield from _walk(sub, (*path, name))


COMMANDS = dict(_walk(ROOT))


def _help(path: tuple[str, ...]):
    return CliRunner().invoke(app, [*path, "--help"], prog_name="redagent", env={"COLUMNS": "120"})


def _examples(output: str, path: tuple[str, ...]) -> list[str]:
    """The help's lines that are an invocation of the command at `path` (or of one below it)."""
    prefix = " ".join(("redagent", *path))
    return [
        line.strip() for line in output.splitlines() if line.strip() == prefix or line.strip().startswith(prefix + " ")
    ]


def test_the_walk_finds_every_group_and_their_commands():
    # A floor, not a census: the walk really descends (groups inside groups included).
    assert {
        ("run",),
        ("judge",),
        ("export",),
        ("console",),
        ("runs", "show"),
        ("cases", "round", "status"),
        ("audit", "adjudications"),
        ("team", "list"),
        ("sandbox", "image", "use"),
    } <= set(COMMANDS)


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=lambda path: " ".join(path) or "redagent")
def test_help_exits_0_and_shows_an_example_of_that_command(path):
    result = _help(path)
    assert result.exit_code == 0, result.output
    found = _examples(result.output, path)
    assert found, f"`redagent {' '.join(path)} --help` shows no example line `redagent {' '.join(path)} …`"
    for example in found:
        _parses(example)


def _parses(example: str) -> None:
    """Resolve the example's command path from the root, then let the command parse the rest (no call)."""
    words = shlex.split(example)[1:]
    command, parent = ROOT, typer.Context(ROOT, info_name="redagent")
    while isinstance(command, TyperGroup) and words and words[0] in command.commands:
        name, words = words[0], words[1:]
        command = command.commands[name]
        if isinstance(command, TyperGroup):
            parent = typer.Context(command, info_name=name, parent=parent)
    assert not isinstance(command, TyperGroup), f"{example!r} names a group, not a command"
    try:
        command.make_context(name, list(words), parent=parent)
    except typer.TyperException as exc:  # typer's click: a usage error, a bad or missing parameter
        pytest.fail(f"the example {example!r} does not parse: {exc}")


# What Rich's markup (Typer's help renderer) reads as a style tag and drops from the page: `pip install -e
# '.[inspect]'` was printed as `pip install -e '.'`, an install line that installs no extra.
_MARKUP_TAG = re.compile(r"(?<!\\)\[[a-zA-Z#/@][^\[\]\n]*\]")


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=lambda path: " ".join(path) or "redagent")
def test_help_keeps_its_brackets(path):
    command = COMMANDS[path]
    texts = [command.help or "", command.epilog or "", *(getattr(p, "help", None) or "" for p in command.params)]
    swallowed = [m.group() for text in texts for m in _MARKUP_TAG.finditer(text)]
    assert not swallowed, f"write \\[ for a bracket in help text; Rich drops {swallowed}"
    escaped = [m.group()[1:] for text in texts for m in re.finditer(r"\\\[[^\[\]\n]*\]", text)]
    if escaped:
        shown = " ".join(_help(path).output.split())
        assert all(bracket in shown for bracket in escaped), shown
