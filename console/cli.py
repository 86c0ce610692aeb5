"""The `redagent` command line: the root app, which mounts one module per command group, and its entry point.

Every user-caused error takes cli_common's one path — one line on stderr, `error: …`, exit code 2 (a
`UserError` from any command is caught once, by the group class `Commands`); what escapes as any other
exception is a bug: `main` writes its traceback to a log file (redagent/errors.py `record_bug`) and prints one
line naming that file, exit code 1 (REDAGENT_DEBUG=1 lets the traceback through instead).

    run_cli        run, replay               runs_cli       runs list, runs show
    judge_cli      judge, recognize, stats, report, export
    console_cli    console                   cases_cli      cases … (and cases round …: rounds_cli)
    audit_cli      audit …                   team_cli       team …
    harnesses_cli  harnesses …               sandbox_cli    sandbox …
    kb_cli         kb …
"""

from __future__ import annotations

import gc
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import typer

from redagent.console.audit_cli import audit_app
from redagent.console.cases_cli import cases_app
from redagent.console.cli_common import Commands, err, examples
from redagent.console.console_cli import console_app
from redagent.console.harnesses_cli import harnesses_app
from redagent.console.import_cli import import_app
from redagent.console.judge_cli import judge_app
from redagent.console.kb_cli import kb_app
from redagent.console.run_cli import run_app
from redagent.console.runs_cli import runs_app
from redagent.console.sandbox_cli import sandbox_app
from redagent.console.team_cli import team_app
from redagent.errors import bug_line, record_bug

app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="REDAgentBench: executable red-teaming and faithful measurement of LLM agents.",
    epilog=examples("redagent run --cases surface:banking --models sim/comply", "redagent console --run run-3fa2"),
)
# Unnamed: their commands are top-level (`redagent run`, `redagent judge`, …), in this order in --help.
app.add_typer(run_app)
app.add_typer(judge_app)
app.add_typer(console_app)
app.add_typer(cases_app, name="cases")
app.add_typer(audit_app, name="audit")
app.add_typer(harnesses_app, name="harnesses")
app.add_typer(team_app, name="team")
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(runs_app, name="runs")
app.add_typer(import_app, name="import")
app.add_typer(kb_app, name="kb")


# A password in a URL (`--db postgresql://me:secret@host/db`) is not written to a bug's log file.
_URL_PASSWORD = re.compile(r"(?<=://)([^:/@\s]*):[^@/\s]*@")


def main(argv: list[str] | None = None) -> None:
    """Entry point (`redagent`): runs the app; an exception that escapes it is a bug, logged with its
    traceback and shown as one line naming the log file, exit code 1."""
    run: Callable[..., Any] = app
    try:
        # `redagent` in usage lines and messages also when started as `python -m redagent`.
        run(args=argv, prog_name="redagent", standalone_mode=True)
    except Exception as exc:
        if os.environ.get("REDAGENT_DEBUG"):
            raise
        command = " ".join(["redagent", *(sys.argv[1:] if argv is None else argv)])
        log = record_bug(exc, _URL_PASSWORD.sub(r"\1:***@", command))
        err.print(f"error: {bug_line(exc, log)}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(1)
    finally:
        if argv is None:  # the process's own command line (tests pass argv and go on living)
            # Everything alive now lives until the process ends: frozen, the interpreter's last collections at
            # exit skip it and the OS takes it with the process — 0.2 CPU-s of every command, ~2 once litellm is
            # loaded. Only cyclic garbage misses its finalizers; what must be written is written and closed above.
            gc.freeze()


if __name__ == "__main__":
    main()
