"""`redagent console --web`: the console served to a browser on localhost through textual-serve."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest

ANSI = re.compile(rb"\x1b\[[0-9;?$]*[A-Za-z]|\x1b\][^\x07]*\x07")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def console(*args: str, cwd: Path) -> subprocess.Popen[str]:
    # The console only reads a store, so it no longer creates a missing one: make the default store first.
    from redagent.store.db import open_store

    open_store(str(cwd / ".redagent" / "redagent.db")).close()
    return subprocess.Popen([sys.executable, "-m", "redagent", "console", "--web", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def served_url(server: subprocess.Popen[str], timeout: float = 30.0) -> str:
    """The URL (with the starter's token) the server prints, once the server accepts connections."""
    line = server.stdout.readline()
    match = re.search(r"(http://\S+:(\d+)/\?token=\S+)", line)
    assert match, f"no URL with a token in {line!r}"
    deadline = time.monotonic() + timeout
    while True:  # the line is printed just before the server binds: wait until it does
        try:
            socket.create_connection(("127.0.0.1", int(match.group(2))), timeout=2).close()
            return match.group(1)
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise
            time.sleep(0.05)


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


async def screen_words(url: str, wanted: set[str], timeout: float = 40.0) -> set[str]:
    """Open the page with its token (which sets the session cookie), then its websocket as the browser
    does, and read the terminal stream until `wanted` show."""
    seen: set[str] = set()
    stream = b""
    # unsafe: aiohttp's jar otherwise drops cookies set by an IP address such as 127.0.0.1.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.get(url) as response:
            assert response.status == 200
            assert "REDAgentBench" in await response.text()
        port = int(re.search(r":(\d+)/", url).group(1))
        ws_url = f"http://127.0.0.1:{port}/ws?width=120&height=34"
        async with session.ws_connect(ws_url) as ws:
            deadline = time.monotonic() + timeout
            while not wanted <= seen and time.monotonic() < deadline:
                try:
                    message = await ws.receive(timeout=1)
                except TimeoutError:
                    continue
                if message.type != aiohttp.WSMsgType.BINARY:
                    break
                stream += message.data
                seen = set(re.findall(r"[A-Za-z]{3,}", ANSI.sub(b"", stream).decode(errors="replace")))
    return seen


def stop(server: subprocess.Popen[str]) -> None:
    server.send_signal(signal.SIGINT)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        pytest.fail("the web console did not stop on Ctrl-C")


def test_the_console_needs_a_token_and_runs_per_tab_in_the_starters_role(tmp_path):
    port = free_port()
    server = console("--port", str(port), cwd=tmp_path)  # default store: ./.redagent/ under tmp_path
    try:
        url = served_url(server)
        assert url.startswith(f"http://localhost:{port}/?token=")
        assert status_of(f"http://127.0.0.1:{port}/") == 403  # no token, no page
        assert status_of(f"http://127.0.0.1:{port}/?token=wrong") == 403
        seen = asyncio.run(screen_words(url.replace("localhost", "127.0.0.1"), {"REDAgentBench", "researcher"}))
        assert {"REDAgentBench", "researcher"} <= seen
    finally:
        stop(server)


def test_a_terminal_without_a_session_is_refused(tmp_path):
    port = free_port()
    server = console("--port", str(port), cwd=tmp_path)
    try:
        served_url(server)

        async def connect() -> int:
            async with aiohttp.ClientSession() as session:
                try:
                    async with session.ws_connect(f"http://127.0.0.1:{port}/ws"):
                        return 101
                except aiohttp.WSServerHandshakeError as exc:
                    return exc.status

        assert asyncio.run(connect()) == 403
    finally:
        stop(server)


def test_a_team_members_token_opens_only_their_roles_screens(tmp_path):
    added = subprocess.run([sys.executable, "-m", "redagent", "team", "add", "bob", "--role", "reviewer", "--json"],
                           cwd=tmp_path, capture_output=True, text=True, check=True)
    token = json.loads(added.stdout)["token"]
    port = free_port()
    server = console("--port", str(port), cwd=tmp_path)
    try:
        served_url(server)
        seen = asyncio.run(screen_words(f"http://127.0.0.1:{port}/?token={token}", {"reviewer", "bob"}))
        assert {"reviewer", "bob"} <= seen
        assert "Runs" not in seen and "Statistics" not in seen  # never the researcher's screens
    finally:
        stop(server)


def test_a_busy_port_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = console("--port", str(taken.getsockname()[1]), cwd=tmp_path)
        _out, err = server.communicate(timeout=60)
    assert server.returncode == 2
    assert err.strip().count("\n") == 0 and "is not free on localhost" in err
