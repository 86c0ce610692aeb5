"""Whether the tests run in CI, where a missing prerequisite (PostgreSQL, bubblewrap, Ray, Docker, the agent
CLIs) must fail its tests rather than skip them. `.ci/run` sets CI=1 when the runner has not set it; hosted
runners set CI=true."""

from __future__ import annotations

import os


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_module(module: str, message: str) -> None:
    """Skip when `module` cannot be imported on a developer machine; fail in CI, which installs every extra."""
    import importlib

    import pytest

    try:
        importlib.import_module(module)
    except ImportError:
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)


_FULL = False  # set by tests/conftest.py's pytest_configure from --full, before any test module is imported


def full_suite_run() -> bool:
    """Whether this is the full suite (`pytest --full`), for what is fixed when a module is imported (a property
    test's number of examples); tests mark themselves `sampled` when it changes what they run."""
    return _FULL
