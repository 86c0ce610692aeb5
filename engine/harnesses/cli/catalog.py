"""What is known about every harness: what `redagent harnesses list` shows and a run's protocol records."""

from __future__ import annotations

from typing import Any

from redagent.engine.harnesses.cli import profile
from redagent.engine.harnesses.cli.harness import missing_message
from redagent.engine.harnesses.cli.install import installation
from redagent.engine.types import CLI, IN_HOUSE


def catalog() -> list[dict[str, Any]]:
    from redagent import __version__

    rows = [
        {
            "name": n,
            "kind": "in-house",
            "version": __version__,
            "installed": True,
            "wire": "-",
            "config_hash": "-",
            "where": "built in",
        }
        for n in IN_HOUSE
    ]
    for name in CLI:
        p = profile(name)
        where = installation(p)
        rows.append(
            {
                "name": name,
                "kind": p.kind,
                "version": p.version,
                "installed": where.installed,
                "wire": p.wire,
                "config_hash": p.config_hash(),
                "where": str(where.directory),
            }
        )
    return rows


def builds(harnesses: list[str]) -> dict[str, dict[str, str]]:
    """For a run's protocol: each CLI harness's pinned version and configuration hash."""
    return {
        name: {"version": profile(name).version, "config_hash": profile(name).config_hash(), "wire": profile(name).wire}
        for name in harnesses
        if name in CLI
    }


def missing(harnesses: list[str]) -> str | None:
    """One line naming the install command for the first CLI harness that is not installed, else None."""
    for name in harnesses:
        if name in CLI and not installation(profile(name)).installed:
            return missing_message(name)
    return None
