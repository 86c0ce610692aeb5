"""What every `redagent` sub-command shares: its consoles, the --db option, JSON output, comma lists, the
examples its --help ends with, and the one error path: a user-caused error ends as one line on stderr,
`error: …`, with exit code 2 — a command's own check calls `fail`, and a `UserError` (redagent/errors.py) raised
anywhere below a command is caught once, by `Commands`, the group class every `redagent` command group uses.

Text from outside — case files, agents, model replies, stored runs — is printed as text: the two consoles
pass every string and every rendered segment through `clean` (no control or bidi character reaches a
terminal or a pipe), and read no Rich markup unless a printer asks for it with `markup=True` and escapes
what it embeds. `--json` output (`print_json`) is written exactly as stored.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import orjson
import typer
from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment
from rich.text import Text
from typer.core import TyperGroup

from redagent.errors import UserError

if TYPE_CHECKING:
    from redagent.store.db import Store

# What a terminal would act on rather than show: C0 controls but tab and newline (ESC starts every escape
# sequence: colours, cursor moves, the window title, hyperlinks), DEL, the C1 controls (U+009B is a one-byte
# CSI), line and paragraph separators, and the Unicode format characters (category Cf) — bidi embeddings,
# overrides and isolates (U+202A-U+202E, U+2066-U+2069), marks (U+200E/F, U+061C), zero-width and invisible
# characters, the tag block (U+E0000-U+E007F, invisible "ASCII"). Zero-width (non-)joiners stay: scripts and
# emoji need them to render, and they reorder and hide nothing. Lone surrogates (no encoder takes them) are
# shown as U+FFFD. tests/console/test_clean_output.py checks the list against unicodedata's Cf.
_UNSHOWN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\ud800-\udfff]"
)


def _unshown(match: re.Match[str]) -> str:
    return "\ufffd" if "\ud800" <= match.group() <= "\udfff" else ""


def clean(text: object) -> str:
    """`text` as it may be shown in a terminal or a log: control, bidi and other format characters removed
    (tab and newline kept), lone surrogates replaced. Every string the CLI's consoles print passes here."""
    shown = text if isinstance(text, str) else str(text)
    return _UNSHOWN.sub(_unshown, shown) if _UNSHOWN.search(shown) else shown


class _CleanConsole(Console):
    """A Rich console that shows text from outside as text. Strings are cleaned before Rich lays them out
    (so table columns keep their widths), and every segment once more as it is rendered, which also covers
    `Text` objects built elsewhere; Rich's own control segments (a progress bar's cursor moves) pass."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(clean(text), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not _UNSHOWN.search(segment.text):
                yield segment
            else:
                yield Segment(clean(segment.text), segment.style, segment.control)


# Markup off: a case title "[/bold]" is text, not a tag (it was an internal error) and "[link=…]" no link.
# A printer that styles with markup passes markup=True and escapes (`escape`) every value it embeds.
out = _CleanConsole(markup=False, emoji=False)
err = _CleanConsole(stderr=True, markup=False, emoji=False)  # "x.yaml:100:" is no emoji

DB_OPTION = typer.Option(
    None,
    "--db",
    help="store: a SQLite file path, pg:SERVICE (a pg_service entry) or a URL "
    "(sqlite:///…, postgresql+psycopg://user@host/db, password from ~/.pgpass); "
    "default $REDAGENT_DB or .redagent/redagent.db. Only commands that write create a "
    "missing store",
)


def examples(*invocations: str) -> str:
    """The epilog of a command's or group's --help: its example invocations, one a line, each a whole
    `redagent …` command line (tests/console/test_cli_help.py holds every command to having one)."""
    if not invocations or not all(line.startswith("redagent ") for line in invocations):
        raise ValueError(f"an example is a whole `redagent …` command line, not {invocations!r}")
    title = "Example:" if len(invocations) == 1 else "Examples:"
    # Rich markup mode reads the epilog as markup: a literal `[` in an example must stay literal.
    return title + "\n" + "\n".join(f"  {escape(line)}" for line in invocations)


def fail(message: str) -> NoReturn:
    err.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(2)


class Commands(TyperGroup):
    """The group class of every `redagent` command group (`typer.Typer(cls=Commands)`): the one place a
    `UserError` from any command becomes its one line and exit code 2. It is here rather than only in
    `main` so that a group invoked on its own (typer's test runner) ends the same way. Any other exception
    passes: it is a bug, and `cli.main` logs its traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UserError as exc:
            fail(exc.line())


class Stopped(BaseException):
    """SIGINT or SIGTERM reached a command inside `stoppable`. A BaseException, like KeyboardInterrupt: no
    `except Exception` swallows it, and every `finally` on the way out runs (sandboxes are removed)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def stoppable(what: str) -> Iterator[None]:
    """SIGINT and SIGTERM end the block at the next Python instruction, through its cleanup, as one line
    (`stopped by SIGTERM: …`) and exit code 128 + the signal. A second signal while that cleanup runs ends
    the process at once: a command is always killable. SIGTERM's default (die with no cleanup) would leave
    sandboxes behind, and Ctrl-C's KeyboardInterrupt ended in no line at all."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread receives signals (and may set their handlers): a caller's thread is stopped by it
        return
    received: list[int] = []

    from redagent.sandbox import lifecycle
    from redagent.sandbox.environment import close_made_here

    def handler(signum: int, _frame: Any) -> None:
        received.append(signum)
        if len(received) > 1:
            err.print(f"stopped by {signal.Signals(signum).name} again: ended at once", highlight=False)
            os._exit(128 + signum)
        # Raised now, or — while a sandbox is being made or removed — as soon as that is done (sandbox/lifecycle.py).
        lifecycle.interrupt(Stopped(signum))

    signums = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.signal(signum, handler) for signum in signums}
    try:
        yield
    except Stopped as exc:
        close_made_here()  # whatever the cleanup on the way out did not reach (it is done before the line is said)
        err.print(f"stopped by {signal.Signals(exc.signum).name}: {what}", highlight=False, soft_wrap=True)
        raise typer.Exit(128 + exc.signum) from None
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def print_json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=str).decode() + "\n")


def split(value: str) -> list[str]:
    """`a, b,,c` → ['a', 'b', 'c']."""
    return [v.strip() for v in value.split(",") if v.strip()]


# Who may run a command that opens the store. The default is the analysts': a command that does not
# say otherwise shows unblinded data, so reviewers, adjudicators and experts may not run it.
ANALYSTS = ("owner", "researcher")


def command_name() -> str:
    """`redagent audit status`, for messages (the running command's path)."""
    # typer 0.29 runs on a click of its own (typer._click): the installed click package never holds its context.
    from typer._click.globals import get_current_context

    context = get_current_context(silent=True)
    return f"`{context.command_path}`" if context is not None else "this command"


def check_role(store: Store, roles: tuple[str, ...]) -> None:
    """Refuse (one line, exit 2) a command the store's user may not run in their role."""
    identity = store.identity()
    if identity.role not in roles:
        allowed = ", ".join("the owner" if role == "owner" else f"{role}s" for role in roles)
        fail(f"{command_name()} is open to {allowed}, not to {identity.describe()}")


def acting_as(store: Store, flag: str | None, role: str, option: str = "--reviewer") -> str:
    """The name a reviewer, adjudicator or expert command acts as: the login's on a team store (a
    flag naming someone else is refused), else the flag (the owner of a single-file store may act
    for anyone, and is told that nothing is blinded against them)."""
    identity = store.identity()
    if identity.enforced:
        if flag is not None and flag != identity.name:
            fail(f"you are logged in as {identity.name}; {option} {flag} would act as someone else")
        if identity.role != role:
            fail(f"{command_name()} acts as a {role}; you are {identity.describe()}")
        assert identity.name is not None
        return identity.name
    if flag is None:
        fail(f"{command_name()} needs {option} NAME (on a team store it is taken from your login)")
    return flag


def single_file_note(store: Store) -> str | None:
    """What an unenforced store tells anyone using a blinded role, or None on a team login."""
    identity = store.identity()
    if identity.enforced:
        return None
    if store.dialect == "sqlite":
        return (
            "a single-file store cannot blind its owner: whoever can read the file can read every rollout "
            "and label; blinded audits need a PostgreSQL team store (`redagent team add`)"
        )
    return (
        "you are this store's owner: nothing is blinded against you; reviewers log in with the URL "
        "`redagent team add` gives them"
    )


@contextmanager
def opened_store(db: str | None, roles: tuple[str, ...] = ANALYSTS, *, create: bool = True) -> Iterator[Store]:
    """An opened store for one command that the user's role may run, closed when the command ends (its user
    errors, a store that cannot be opened among them, reach `Commands` as they are). A reader passes
    `create=False`: a missing store is "no store at …", not made."""
    from redagent.store.db import open_store

    store = open_store(db, create=create)
    try:
        check_role(store, roles)
        yield store
    finally:
        store.close()
