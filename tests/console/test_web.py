"""`redagent console --web`: the console served to a browser on localhost through textual-serve."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import subprocess
import sys
import time
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
    return subprocess.Popen([sys.executable, "-m", "redagent", "console", "--web", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def page(port: int, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                return response.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


async def screen_words(port: int, wanted: set[str], timeout: float = 40.0) -> set[str]:
    """Open the page's websocket as the browser does and read the terminal stream until `wanted` show."""
    seen: set[str] = set()
    stream = b""
    url = f"http://127.0.0.1:{port}/ws?width=120&height=34"
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        deadline = time.monotonic() + timeout
        while not wanted <= seen and time.monotonic() < deadline:
            try:
                message = await ws.receive(timeout=1)
            except TimeoutError:
                continue
            if message.type != aiohttp.WSMsgType.BINARY:
                break
            stream += message.data
            seen = set(re.findall(r"[A-Za-z]{4,}", ANSI.sub(b"", stream).decode(errors="replace")))
    return seen


def test_the_console_is_served_on_localhost_and_runs_per_tab(tmp_path):
    port = free_port()
    server = console("--port", str(port), cwd=tmp_path)  # default store: ./.redagent/ under tmp_path
    try:
        html = page(port)
        assert f"ws://localhost:{port}/ws" in html and "REDAgentBench" in html
        seen = asyncio.run(screen_words(port, {"REDAgentBench", "researcher"}))
        assert {"REDAgentBench", "researcher"} <= seen
        assert (tmp_path / ".redagent" / "redagent.db").exists()  # the tab opened the server's store
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            pytest.fail("the web console did not stop on Ctrl-C")
    assert "serving the console (researcher) at http://localhost:" in server.stdout.read()


def test_a_busy_port_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = console("--port", str(taken.getsockname()[1]), cwd=tmp_path)
        _out, err = server.communicate(timeout=60)
    assert server.returncode == 2
    assert err.strip().count("\n") == 0 and "is not free on localhost" in err
