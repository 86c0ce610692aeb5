"""Whether the tests run in CI, where a missing prerequisite (PostgreSQL, bubblewrap, Ray, Docker, the agent
CLIs) must fail its tests rather than skip them. `.ci/run` sets CI=1 when the runner has not set it; hosted
runners set CI=true."""

from __future__ import annotations

import os


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
