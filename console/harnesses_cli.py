"""`redagent harnesses …`: the real agent CLIs — which are installed, and installing the pinned versions.

A typer sub-app (registered by console/cli.py as `harnesses`). Errors take cli_common's one path: one
line on stderr, `error: …`, exit code 2.
"""

from __future__ import annotations

import typer
from rich.table import Table

from redagent.console.cli_common import Commands, err, examples, fail, out, print_json

harnesses_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="Real agent CLIs as harnesses (codex, hermes, openclaw, claude-code).",
    epilog=examples("redagent harnesses list", "redagent harnesses install codex"),
)


@harnesses_app.command("list", epilog=examples("redagent harnesses list --json"))
def list_cmd(as_json: bool = typer.Option(False, "--json", help="print as JSON")) -> None:
    """Every harness: built in, or a CLI with its pinned version, whether it is installed, and where."""
    from redagent.engine.harnesses.cli.catalog import catalog
    from redagent.engine.harnesses.cli.install import cache_root

    rows = catalog()
    if as_json:
        print_json(rows)
        return
    table = Table(title="harnesses")
    for column in ("name", "kind", "version", "installed", "wire", "config"):
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(
            row["name"],
            row["kind"],
            row["version"],
            "yes" if row["installed"] else "no",
            row["wire"],
            row["config_hash"][:8],
        )
    out.print(table)
    out.print(
        f"CLI installations: {cache_root()} (install: redagent harnesses install NAME…)", markup=False, highlight=False
    )


@harnesses_app.command(
    "install", epilog=examples("redagent harnesses install codex claude-code", "redagent harnesses install all")
)
def install_cmd(names: list[str] = typer.Argument(..., help="codex, hermes, openclaw, claude-code (or all)")) -> None:
    """Install the pinned versions into the per-user cache (Node 24 for the npm-installed CLIs included)."""
    from redagent.engine.harnesses.cli import CLI_HARNESSES, profile
    from redagent.engine.harnesses.cli.install import install

    chosen = list(CLI_HARNESSES) if names == ["all"] else names
    unknown = [n for n in chosen if n not in CLI_HARNESSES]
    if unknown:
        fail(f"unknown CLI harness {unknown[0]!r} (known: {', '.join(CLI_HARNESSES)})")
    for name in chosen:
        install(profile(name), log=lambda line: err.print(line, markup=False, highlight=False))
