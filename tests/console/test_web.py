"""`redagent console --web`: the console served to a browser through textual-serve, over plain HTTP clients.

The same guarantees in a real browser (Chromium) are in test_web_browser.py."""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import aiohttp
import pytest

from redagent.console.web import MAX_REQUEST_LINE, Sessions, SessionsFull, TokenServer, redact
from redagent.store.access import Identity
from tests.console.web_server import (
    KEY_IN_PAGE,
    WebConsole,
    add_member,
    assert_clean_logs,
    free_port,
    make_store,
    redagent,
    sign_in,
)

ANSI = re.compile(rb"\x1b\[[0-9;?$]*[A-Za-z]|\x1b\][^\x07]*\x07")


@pytest.fixture
def serve(tmp_path):
    """Start a web console in tmp_path (default store there); every one started is stopped after the test."""
    make_store(tmp_path)
    started: list[WebConsole] = []

    def start(*args: str) -> WebConsole:
        started.append(WebConsole(tmp_path, *args))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def status_of(url: str, **headers: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def jar() -> aiohttp.CookieJar:
    return aiohttp.CookieJar(unsafe=True)  # aiohttp's jar otherwise drops cookies set by an IP address


async def read_screen(ws: aiohttp.ClientWebSocketResponse, wanted: set[str], timeout: float) -> set[str]:
    seen: set[str] = set()
    stream = b""
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


async def screen_words(server: WebConsole, token: str, wanted: set[str], timeout: float = 300.0) -> set[str]:
    """Sign in with `token` (the form), then open the websocket as the console's page does (its own Origin, the
    session's key in the path) and read the terminal stream until `wanted` show."""
    async with aiohttp.ClientSession(cookie_jar=jar()) as session:
        key = await sign_in(session, server.origin, token)
        ws_url = f"{server.origin}/ws/{key}?width=120&height=34"
        async with session.ws_connect(ws_url, headers={"Origin": server.origin}) as ws:
            return await read_screen(ws, wanted, timeout)


async def read_until_closed(ws: aiohttp.ClientWebSocketResponse) -> int | None:
    """Read (and so answer the server's pings) until the console closes; its close code."""
    while not ws.closed:
        await ws.receive()
    return ws.close_code


async def ws_status(session: aiohttp.ClientSession, url: str, **headers: str) -> int:
    try:
        async with session.ws_connect(url, headers=headers):
            return 101
    except aiohttp.WSServerHandshakeError as exc:
        return exc.status


def test_the_console_needs_a_token_and_runs_per_tab_in_the_starters_role(serve):
    server = serve()
    assert server.url == f"http://localhost:{server.port}/" and server.token not in server.url
    assert status_of(f"{server.origin}/") == 403  # no token, no page
    assert status_of(f"{server.origin}/?token=wrong") == 403
    seen = asyncio.run(screen_words(server, server.token, {"REDAgentBench", "researcher"}))
    assert {"REDAgentBench", "researcher"} <= seen


def test_a_terminal_without_a_session_is_refused(serve):
    server = serve()

    async def connect() -> int:
        async with aiohttp.ClientSession() as session:
            return await ws_status(session, f"{server.origin}/ws/anything", Origin=server.origin)

    assert asyncio.run(connect()) == 403


def test_a_team_members_token_opens_only_their_roles_screens(serve, tmp_path):
    make_store(tmp_path)
    token = add_member("bob", "reviewer", tmp_path)
    server = serve()
    seen = asyncio.run(screen_words(server, token, {"reviewer", "bob"}))
    assert {"reviewer", "bob"} <= seen
    assert "Runs" not in seen and "Statistics" not in seen  # never the researcher's screens
    # The token `team add` shows once is in no log line; the starter's only in the line that gives it to them.
    assert_clean_logs(server.logs_after_the_url(), token, server.token)


def test_the_websocket_takes_only_its_own_origin_and_the_sessions_key(serve):
    server = serve()
    other = f"http://127.0.0.1:{free_port()}"

    async def attempts() -> dict[str, int]:
        async with aiohttp.ClientSession(cookie_jar=jar()) as session:
            key = await sign_in(session, server.origin, server.token)
            ws = f"{server.origin}/ws/{key}"
            return {
                "no origin": await ws_status(session, ws),
                "another port's page": await ws_status(session, ws, Origin=other),
                "the cookie without the key": await ws_status(
                    session, f"{server.origin}/ws/{'x' * 43}", Origin=server.origin
                ),
                "textual-serve's address": await ws_status(
                    session, f"{server.origin}/ws?width=80", Origin=server.origin
                ),
                "another port's fetch": (await session.get(f"{server.origin}/", headers={"Origin": other})).status,
                "its own page": await ws_status(session, ws, Origin=server.origin),
            }

    assert asyncio.run(attempts()) == {
        "no origin": 403,
        "another port's page": 403,
        "the cookie without the key": 403,
        "textual-serve's address": 404,
        "another port's fetch": 403,
        "its own page": 101,
    }


def test_an_address_with_a_token_opens_nothing_whoever_opens_it(serve):
    """Issue 34: any page could navigate a tab to `/?token=…` and sign the browser in as that token's member. An
    address with a token — typed, clicked or navigated to, top-level or not — opens no session, sets no cookie,
    and the answer takes the token out of the address bar."""
    server = serve()
    url = f"{server.origin}/?token={server.token}"
    navigations = {
        "typed": {"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"},
        "from another site": {
            "Sec-Fetch-Site": "cross-site",
            "Sec-Fetch-Mode": "navigate",
            "Sec-Fetch-Dest": "document",
        },
        "from its own page": {
            "Sec-Fetch-Site": "same-origin",
            "Sec-Fetch-Mode": "navigate",
            "Sec-Fetch-Dest": "document",
        },
        "an image": {"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"},
        "no fetch metadata": {},
    }

    async def open_address(headers: dict[str, str]) -> tuple[int, str | None, str, int]:
        async with aiohttp.ClientSession(cookie_jar=jar()) as session:
            async with session.get(url, headers=headers) as response:
                answer = (response.status, response.headers.get("Set-Cookie"), await response.text())
            async with session.get(f"{server.origin}/") as after:
                return (*answer, after.status)

    for how, headers in navigations.items():
        status, cookie, page, after = asyncio.run(open_address(headers))
        assert (status, cookie, after) == (403, None, 403), how
        assert server.token not in page and 'replaceState(null, "", "/login")' in page, how

    async def parameters() -> str:
        async with aiohttp.ClientSession(cookie_jar=jar()) as session:
            await sign_in(session, server.origin, server.token)
            async with session.get(
                f"{server.origin}/?ping=http://203.0.113.9/&fontsize=18", allow_redirects=False
            ) as response:
                assert response.status == 303
                return response.headers["Location"]

    location = asyncio.run(parameters())
    assert location == "/?fontsize=18"  # the page drops what it does not read (textual.js would fetch `ping`)
    server.stop()
    assert_clean_logs(server.logs_after_the_url(), server.token)


def test_the_sign_in_form_takes_a_token_from_the_servers_own_page_only(serve):
    server = serve()

    async def post(origin: str | None, body: str, **more: str) -> tuple[int, str, str]:
        headers = {"Content-Type": "application/x-www-form-urlencoded", **more} | ({"Origin": origin} if origin else {})
        async with (
            aiohttp.ClientSession(cookie_jar=jar()) as session,
            session.post(f"{server.origin}/login", data=body, headers=headers) as response,
        ):
            return response.status, await response.text(), response.headers.get("Set-Cookie", "")

    assert asyncio.run(post(None, f"token={server.token}"))[0] == 403
    assert asyncio.run(post(f"http://127.0.0.1:{free_port()}", f"token={server.token}"))[0] == 403
    assert asyncio.run(post(server.origin, "token=wrong"))[0] == 403
    # Fetch metadata: a browser says where a request comes from; another site's form is refused whatever it claims.
    assert asyncio.run(post(server.origin, f"token={server.token}", **{"Sec-Fetch-Site": "cross-site"}))[0] == 403
    assert asyncio.run(post(server.origin, f"token={server.token}", **{"Sec-Fetch-Site": "same-site"}))[0] == 403
    status, page, cookie = asyncio.run(
        post(server.origin, f"token={server.token}", **{"Sec-Fetch-Site": "same-origin"})
    )
    assert status == 200 and KEY_IN_PAGE.search(page)
    # A session cookie: HttpOnly, SameSite=Strict, and neither Max-Age nor Expires, so it leaves with the browser.
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie, cookie
    assert "Max-Age" not in cookie and "expires" not in cookie.lower() and "Secure" not in cookie, cookie
    assert_clean_logs(server.logs_after_the_url(), server.token)


def test_oversized_and_malformed_requests_are_refused_in_one_log_line(serve):
    server = serve()

    def raw(request: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(request)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
            return answer

    host = f"Host: 127.0.0.1:{server.port}\r\n".encode()
    answers = {
        "100 KB URL": raw(b"GET /?token=" + b"A" * 100_000 + b" HTTP/1.1\r\n" + host + b"\r\n"),
        "20 KB header": raw(b"GET / HTTP/1.1\r\n" + host + b"X-Big: " + b"B" * 20_000 + b"\r\n\r\n"),
        "100 headers": raw(b"GET / HTTP/1.1\r\n" + host + b"".join(b"X-%d: c\r\n" % i for i in range(100)) + b"\r\n"),
        "not HTTP": raw(b"\x16\x03\x01 hello " + b"D" * 100 + b"\r\n\r\n"),
        "a body on GET": raw(b"GET / HTTP/1.1\r\n" + host + b"Content-Length: 5\r\n\r\nEEEEE"),
        "a large sign-in": raw(b"POST /login HTTP/1.1\r\n" + host + b"Content-Length: 100000\r\n\r\n" + b"F" * 100_000),
        "a foreign Host": raw(b"GET / HTTP/1.1\r\nHost: rebound.example:80\r\n\r\n"),
    }
    statuses = {what: int(answer.split(b" ", 2)[1]) for what, answer in answers.items()}
    assert statuses == {
        "100 KB URL": 414,
        "20 KB header": 431,
        "100 headers": 431,
        "not HTTP": 400,
        "a body on GET": 413,
        "a large sign-in": 413,
        "a foreign Host": 400,
    }
    assert all(len(answer) < 4000 and not re.search(rb"(.)\1{63}", answer) for answer in answers.values())
    assert f"request line longer than {MAX_REQUEST_LINE} bytes".encode() in answers["100 KB URL"]
    server.stop()
    assert_clean_logs(server.logs_after_the_url(), server.token)
    assert "414" in server.err and "431" in server.err


def test_a_removed_member_is_signed_out(serve, tmp_path):
    make_store(tmp_path)
    token = add_member("bob", "reviewer", tmp_path)
    server = serve()

    async def before_and_after() -> tuple[int, int, int, int]:
        async with aiohttp.ClientSession(cookie_jar=jar()) as session:
            key = await sign_in(session, server.origin, token)
            page = (await session.get(f"{server.origin}/")).status
            redagent("team", "remove", "bob", cwd=tmp_path)
            return (
                page,
                (await session.get(f"{server.origin}/")).status,
                await ws_status(session, f"{server.origin}/ws/{key}", Origin=server.origin),
                status_of(f"{server.origin}/?token={token}"),
            )

    assert asyncio.run(before_and_after()) == (200, 403, 403, 403)


def test_sessions_end_after_their_lifetime_or_when_idle():
    now = [0.0]
    sessions = Sessions(lifetime=3600, idle=600, clock=lambda: now[0])
    cookie, session = sessions.open(Identity("owner"), None)
    assert sessions.find(cookie) is session and sessions.find("other") is None and sessions.find(None) is None
    now[0] = 599
    assert not sessions.expired(session)
    sessions.touch(session)  # a request or a key press
    now[0] = 599 + 599
    assert not sessions.expired(session)
    now[0] += 1
    assert sessions.expired(session)  # idle for 600 s
    for t in range(0, 3600, 500):  # busy all along, yet not past its lifetime
        now[0] = t
        sessions.touch(session)
    now[0] = 3600
    assert sessions.expired(session)


def test_sessions_past_the_limit_drop_the_least_recently_used_without_a_console():
    now = [0.0]
    sessions = Sessions(lifetime=3600, idle=600, clock=lambda: now[0], limit=3)
    opened = []
    for t in range(3):
        now[0] = t
        opened.append(sessions.open(Identity("owner"), None))
    opened[0][1].consoles.add(object())  # a console open: kept
    now[0] = 10
    opened.append(sessions.open(Identity("owner"), None))
    assert [sessions.find(cookie) is not None for cookie, _ in opened] == [True, False, True, True]
    for session in sessions.all():
        session.consoles.add(object())
    with pytest.raises(SessionsFull):
        sessions.open(Identity("owner"), None)


def test_log_lines_lose_tokens_keys_and_control_characters():
    line = redact('127.0.0.1 "GET /?token=s3cret&x=1 /ws/k3y?width=80" Cookie: redagent_8000=c00kie \x1b]0;t\x07')
    assert not {"s3cret", "k3y", "c00kie", "\x1b", "\x07"} & set(re.findall(r"\w+|\x1b|\x07", line)), line


def test_open_consoles_close_when_the_member_is_removed_or_the_session_idles(tmp_path, monkeypatch):
    """In-process, with a team the test controls and a clock it moves: the sweep closes open consoles."""
    make_store(tmp_path)
    monkeypatch.setenv("REDAGENT_DB", str(tmp_path / ".redagent" / "redagent.db"))
    team = {"tok-bob": Identity("reviewer", "bob"), "tok-ann": Identity("reviewer", "ann")}
    now = [0.0]
    port = free_port()
    server = TokenServer(
        starter=Identity("owner"),
        starter_token="tok-owner",
        member=team.get,
        run_id=None,
        host="127.0.0.1",
        port=port,
        idle=600,
        clock=lambda: now[0],
        sweep=0.1,
    )
    origin = f"http://127.0.0.1:{port}"

    async def closed_when(token: str, wanted: str, change) -> int | None:
        async with aiohttp.ClientSession(cookie_jar=jar()) as session:
            key = await sign_in(session, origin, token)
            ws = await session.ws_connect(f"{origin}/ws/{key}?width=100&height=30", headers={"Origin": origin})
            assert wanted in await read_screen(ws, {wanted}, 60)
            change()
            deadline = time.monotonic() + 120  # a hang bound: the sweep closes it within a second
            while not ws.closed and time.monotonic() < deadline:  # what else the console sends is read past
                await ws.receive(timeout=60)
            return ws.close_code

    async def scenario() -> tuple[int | None, int | None]:
        runner_task = asyncio.create_task(server.run())
        for _ in range(200):
            try:
                (await asyncio.open_connection("127.0.0.1", port))[1].close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        try:
            removed = await closed_when("tok-bob", "bob", lambda: team.pop("tok-bob"))
            idled = await closed_when("tok-ann", "ann", lambda: now.__setitem__(0, now[0] + 601))
        finally:
            server.stop()
            await runner_task
        return removed, idled

    assert asyncio.run(scenario()) == (4001, 4001)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test's certificate")
def test_over_tls_the_cookie_is_secure_and_the_address_https(serve, tmp_path):
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
            str(tmp_path / "key.pem"),
            "-out",
            str(tmp_path / "cert.pem"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    server = serve("--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "key.pem"))
    assert server.url == f"https://localhost:{server.port}/"

    async def cookie() -> str:
        origin = f"https://localhost:{server.port}"
        form = {"Content-Type": "application/x-www-form-urlencoded", "Origin": origin}
        async with (
            aiohttp.ClientSession(cookie_jar=jar()) as session,
            session.post(f"{origin}/login", data=f"token={server.token}", headers=form, ssl=False) as response,
        ):
            assert response.status == 200
            return response.headers["Set-Cookie"]

    assert "Secure" in asyncio.run(cookie())


def test_a_busy_port_is_one_line_and_exit_2(tmp_path):
    make_store(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = subprocess.run(
            [sys.executable, "-m", "redagent", "console", "--web", "--port", str(taken.getsockname()[1])],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert server.returncode == 2
    assert server.stderr.strip().count("\n") == 0 and "is not free on localhost" in server.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--idle-minutes", "0"], "--idle-minutes 0 is not between 0 and the session's life"),
        (["--session-hours", "1", "--idle-minutes", "90"], "--idle-minutes 90 is not between 0 and the session's life"),
        (["--tls-cert", "cert.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-cert", "missing.pem", "--tls-key", "missing.pem"], "--tls-cert missing.pem / --tls-key missing.pem"),
    ],
)
def test_bad_session_and_tls_options_are_one_line_and_exit_2(tmp_path, args, message):
    make_store(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "redagent", "console", "--web", "--port", str(free_port()), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr, result.stderr


def test_sign_out_ends_the_session_on_the_server_and_only_its_own_page_may_ask(serve):
    server = serve()

    async def scenario() -> dict[str, object]:
        async with aiohttp.ClientSession(cookie_jar=jar()) as session:
            key = await sign_in(session, server.origin, server.token)
            ws = await session.ws_connect(
                f"{server.origin}/ws/{key}?width=100&height=30", headers={"Origin": server.origin}
            )
            assert "REDAgentBench" in await read_screen(ws, {"REDAgentBench"}, 300)
            # From here the console is read as a browser reads it, all the time: a client that stops reading leaves
            # the server's pings unanswered, and on a loaded machine the server then drops it (1006) before the
            # sign-out could close it.
            closing = asyncio.create_task(read_until_closed(ws))
            empty = {"Content-Type": "application/x-www-form-urlencoded"}
            foreign = (
                await session.post(
                    f"{server.origin}/logout", data="", headers={**empty, "Origin": f"http://127.0.0.1:{free_port()}"}
                )
            ).status
            still = (await session.get(f"{server.origin}/")).status
            async with session.post(
                f"{server.origin}/logout", data="", headers={**empty, "Origin": server.origin}
            ) as out:
                signed_out = (out.status, out.headers.get("Set-Cookie", ""), await out.text())
            close_code = await asyncio.wait_for(closing, 120)  # a hang bound: the server closes it within a second
            return {
                "another site's sign-out": foreign,
                "page after it": still,
                "sign-out": signed_out[0],
                "cookie cleared": "redagent_" in signed_out[1]
                and ("Max-Age=0" in signed_out[1] or "expires" in signed_out[1].lower()),
                "key removed": "localStorage.removeItem" in signed_out[2],
                "console closed": close_code,
                "page after sign-out": (await session.get(f"{server.origin}/")).status,
                "the old key": await ws_status(session, f"{server.origin}/ws/{key}", Origin=server.origin),
            }

    assert asyncio.run(scenario()) == {
        "another site's sign-out": 403,
        "page after it": 200,
        "sign-out": 200,
        "cookie cleared": True,
        "key removed": True,
        "console closed": 4001,
        "page after sign-out": 403,
        "the old key": 403,
    }


def test_a_download_goes_only_to_the_session_whose_console_delivered_it(tmp_path, monkeypatch):
    """In-process: what a console delivers (a screenshot, a report) is registered with the session's console
    process; another session — another member's browser — gets 404 for its key, no session 403, and the owner an
    attachment that no page can run."""
    from textual_serve.app_service import AppService

    make_store(tmp_path)
    monkeypatch.setenv("REDAGENT_DB", str(tmp_path / ".redagent" / "redagent.db"))
    port = free_port()
    server = TokenServer(
        starter=Identity("owner"),
        starter_token="tok-owner",
        member={"tok-bob": Identity("reviewer", "bob")}.get,
        run_id=None,
        host="127.0.0.1",
        port=port,
    )
    origin = f"http://127.0.0.1:{port}"

    class Console(AppService):  # the console process's side of a delivery, without the process
        def __init__(self) -> None:
            super().__init__("true", write_bytes=None, write_str=None, close=None, download_manager=server.downloads)

        async def send_meta(self, data: dict) -> bool:
            await server.downloads.chunk_received(data["key"], b"" if self.sent else b"<svg>screen</svg>")
            self.sent = True
            return True

        sent = False

    async def scenario() -> dict[str, object]:
        runner_task = asyncio.create_task(server.run())
        for _ in range(200):
            try:
                (await asyncio.open_connection("127.0.0.1", port))[1].close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        try:
            async with (
                aiohttp.ClientSession(cookie_jar=jar()) as owner,
                aiohttp.ClientSession(cookie_jar=jar()) as bob,
                aiohttp.ClientSession(cookie_jar=jar()) as nobody,
            ):
                await sign_in(owner, origin, "tok-owner")
                await sign_in(bob, origin, "tok-bob")
                console = Console()
                next(s for s in server.sessions.all() if s.identity.role == "owner").services.add(console)
                await server.downloads.create_download(
                    app_service=console,
                    delivery_key="k-1",
                    file_name='screen"shot\r\n.svg',
                    open_method="browser",
                    mime_type="image/svg+xml",
                )
                found = {
                    "no session": (await nobody.get(f"{origin}/download/k-1")).status,
                    "another session": (await bob.get(f"{origin}/download/k-1")).status,
                    "an unknown key": (await owner.get(f"{origin}/download/nope")).status,
                }
                async with owner.get(f"{origin}/download/k-1") as response:
                    found["its own session"] = response.status
                    found["body"] = await response.read()
                    found["headers"] = {
                        name: response.headers.get(name)
                        for name in ("Content-Type", "Content-Disposition", "Content-Security-Policy")
                    }
                return found
        finally:
            server.stop()
            await runner_task

    found = asyncio.run(scenario())
    assert {k: found[k] for k in ("no session", "another session", "an unknown key", "its own session")} == {
        "no session": 403,
        "another session": 404,
        "an unknown key": 404,
        "its own session": 200,
    }
    assert found["body"] == b"<svg>screen</svg>"
    assert found["headers"] == {
        "Content-Type": "application/octet-stream",
        "Content-Disposition": 'attachment; filename="screen_shot_.svg"',
        "Content-Security-Policy": "default-src 'none'; sandbox",
    }
