"""A `redagent console --web` server in a subprocess for the web console's tests: its printed URL and token, its
logs (stdout and stderr, kept in files so a long test never fills a pipe), and a clean stop."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

# The session page hands the browser its key: `localStorage.setItem("redagent-console-key", "…")`.
KEY_IN_PAGE = re.compile(r'setItem\("redagent-console-key", "([A-Za-z0-9_-]+)"\)')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_store(cwd: Path) -> None:
    """The default store under `cwd` (the console only reads a store, so it no longer creates a missing one)."""
    from redagent.store.db import open_store

    open_store(str(cwd / ".redagent" / "redagent.db")).close()


def redagent(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redagent", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=True
    )


def add_member(name: str, role: str, cwd: Path) -> str:
    """`redagent team add` on the default store; the member's console token."""
    return json.loads(redagent("team", "add", name, "--role", role, "--json", cwd=cwd).stdout)["token"]


class WebConsole:
    """`redagent console --web` started in `cwd` on a free port; `url` is the address it printed and `token` the
    starter's token it printed beside it (an address never carries a token)."""

    def __init__(self, cwd: Path, *args: str, timeout: float = 60.0) -> None:
        self.port = free_port()
        self.out_path, self.err_path = cwd / "web.out", cwd / "web.err"
        with self.out_path.open("w") as out, self.err_path.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "redagent", "console", "--web", "--port", str(self.port), *args],
                cwd=cwd,
                stdout=out,
                stderr=err,
                text=True,
            )
        deadline = time.monotonic() + timeout
        # The address, and the token printed beside it (a server before issue 34 printed it in the address).
        printed = r"(https?://\S+?:\d+/)(?: — sign in there with the token (\S+) |\?token=(\S+))"
        while not (match := re.search(printed, self.out)):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the web console printed no URL: {self.out!r} {self.err!r}")
            time.sleep(0.05)
        self.url, self.token = match.group(1), match.group(2) or match.group(3)
        # The line is printed once the server listens.
        socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
        self.origin = f"http://127.0.0.1:{self.port}"

    @property
    def out(self) -> str:
        return self.out_path.read_text(errors="replace")

    @property
    def err(self) -> str:
        return self.err_path.read_text(errors="replace")

    def logs_after_the_url(self) -> str:
        """Everything the server wrote but the line that gives the starter their URL."""
        return self.out.split("\n", 1)[1] + self.err

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                pytest.fail("the web console did not stop on Ctrl-C")


def assert_clean_logs(logs: str, *secrets: str) -> None:
    """No secret, no traceback, no run of request bytes in the server's logs."""
    for secret in secrets:
        assert secret not in logs, f"a token is in the server's log: {logs[-2000:]}"
    assert "Traceback" not in logs, logs[-4000:]
    assert not re.search(r"(.)\1{63}", logs), "a request's bytes are in the server's log"


async def sign_in(session, origin: str, token: str, **headers: str) -> str:
    """Sign in as the sign-in form does (a POST from the server's own page, which sets the session cookie); the
    session's key, which the answer hands the browser."""
    form = {"Content-Type": "application/x-www-form-urlencoded", "Origin": origin, **headers}
    async with session.post(f"{origin}/login", data=f"token={token}", headers=form) as response:
        assert response.status == 200, response.status
        match = KEY_IN_PAGE.search(await response.text())
    assert match, "the session page hands the browser no key"
    return match.group(1)
