"""The `redagent` command line: the root app, which mounts one module per command group, and its entry point.

Every user-caused error takes cli_common's one path — one line on stderr, `error: …`, exit code 2; what
escapes as an exception is a bug, and `main` turns it into one line too (REDAGENT_DEBUG=1 shows it).

    run_cli        run, replay               runs_cli       runs list, runs show
    judge_cli      judge, recognize, stats, report, export
    console_cli    console                   cases_cli      cases … (and cases round …: rounds_cli)
    audit_cli      audit …                   team_cli       team …
    harnesses_cli  harnesses …               sandbox_cli    sandbox …
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import typer

from redagent.console.audit_cli import audit_app
from redagent.console.cases_cli import cases_app
from redagent.console.cli_common import err, examples
from redagent.console.console_cli import console_app
from redagent.console.harnesses_cli import harnesses_app
from redagent.console.judge_cli import judge_app
from redagent.console.run_cli import run_app
from redagent.console.runs_cli import runs_app
from redagent.console.sandbox_cli import sandbox_app
from redagent.console.team_cli import team_app

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="REDAgentBench: executable red-teaming and faithful measurement of LLM agents.",
                  epilog=examples("redagent run --cases surface:banking --models sim/comply",
                                  "redagent console --run run-3fa2"))
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


def main(argv: list[str] | None = None) -> None:
    """Entry point (`redagent`): runs the app; an exception that escapes it is a bug, shown as one line."""
    run: Callable[..., Any] = app
    try:
        # `redagent` in usage lines and messages also when started as `python -m redagent`.
        run(args=argv, prog_name="redagent", standalone_mode=True)
    except Exception as exc:
        if os.environ.get("REDAGENT_DEBUG"):
            raise
        err.print(f"error: internal error ({type(exc).__name__}: {exc}); rerun with REDAGENT_DEBUG=1 for the "
                  f"traceback and please report it", markup=False, highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
