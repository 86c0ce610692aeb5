"""`redagent console --web` in a real browser: Debian's Chromium, headless, driven by Playwright.

What a browser does and a plain HTTP client does not — send a host's cookie to every port of it, run a
hostile page's scripts, keep history, fetch fonts — is what these tests are about. Each test gets a fresh
profile (its own --user-data-dir) and records every request the browser makes: none may leave loopback.

Needs /usr/bin/chromium (`apt-get install chromium`) and the `browser` extra (`pip install -e '.[browser]'`;
never `playwright install`, which downloads a browser of its own): `.ci/install-browser` installs both. On a
developer machine without them these tests skip, saying why; under CI they fail instead.
"""

from __future__ import annotations

import asyncio
import re
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp import web

from tests.ci import in_ci
from tests.console.web_server import WebConsole, add_member, assert_clean_logs, free_port, make_store, redagent

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOOPBACK = {"localhost", "127.0.0.1", "::1"}
WAIT_MS = 90_000  # far above what any step takes here; only a hang reaches it
ANSI = re.compile(r"\x1b\[[0-9;?$]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _problem() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install chromium; .ci/install-browser does it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is missing (pip install -e '.[browser]'; .ci/install-browser does it)"
    return None


PROBLEM = _problem()
pytestmark = pytest.mark.skipif(PROBLEM is not None and not in_ci(), reason=f"no browser to test with: {PROBLEM}")


@pytest.fixture(scope="module")
def playwright():
    if PROBLEM is not None:  # reached under CI only: there a missing browser is a failure, not a skip
        pytest.fail(PROBLEM)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        yield driver


class Browser:
    """A Chromium with a profile of its own (`profile`), every request it makes kept in `requests`."""

    def __init__(self, driver, profile: Path) -> None:
        self.profile = profile
        self.context = driver.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        self.context.set_default_timeout(WAIT_MS)
        self.requests: list[str] = []
        self.context.on("request", lambda request: self.requests.append(request.url))
        self.page = self.context.pages[0] if self.context.pages else self.context.new_page()
        self.page.on("websocket", lambda ws: self.requests.append(ws.url))
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.context.close()
            self.closed = True

    def files_holding(self, secret: str) -> list[str]:
        """The profile's files (the browser closed, so written out) that hold `secret`."""
        assert self.closed
        return sorted(
            str(path.relative_to(self.profile))
            for path in self.profile.rglob("*")
            if path.is_file() and secret.encode() in path.read_bytes()
        )


@pytest.fixture
def browser(playwright, tmp_path):
    opened = Browser(playwright, tmp_path / "profile")
    yield opened
    opened.close()
    # No request to another host, in any test: the page's fonts and scripts come from the server itself.
    away = [
        url
        for url in opened.requests
        if urlsplit(url).scheme in ("http", "https", "ws", "wss") and urlsplit(url).hostname not in LOOPBACK
    ]
    assert not away, f"the browser asked another host: {away}"


@pytest.fixture
def serve(tmp_path):
    make_store(tmp_path)
    started: list[WebConsole] = []

    def start() -> WebConsole:
        started.append(WebConsole(tmp_path))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def open_console(page, server: WebConsole, wanted: set[str], token: str | None = None) -> str:
    """Sign in as a person does — the server's address, the token pasted into its form — and wait until the
    console's websocket has brought `wanted` words to the page; the text seen."""
    stream: list[str] = []

    def shows(payload: str | bytes) -> bool:
        stream.append(payload.decode(errors="replace") if isinstance(payload, bytes) else payload)
        return wanted <= set(re.findall(r"[A-Za-z]{3,}", ANSI.sub("", "".join(stream))))

    page.goto(server.url)
    page.fill("#token", token or server.token)
    with page.expect_websocket(timeout=WAIT_MS) as opened:
        page.click("button[type=submit]")
    opened.value.wait_for_event("framereceived", predicate=shows, timeout=WAIT_MS)
    page.wait_for_selector("body.-first-byte", state="attached")
    return "".join(stream)


def tab_history(page) -> list[str]:
    session = page.context.new_cdp_session(page)
    try:
        return [entry["url"] for entry in session.send("Page.getNavigationHistory")["entries"]]
    finally:
        session.detach()


def test_no_address_signs_the_browser_in_typed_or_navigated_to_by_another_page(serve, browser):
    """Issue 34: a page of another site (here another local port) sends the tab to `/?token=…` and submits a sign-in
    form of its own; the person types such an address too. None of it opens a session: 0 sign-ins by navigation."""
    server = serve()
    hostile = HostilePage(navigate_to=f"http://localhost:{server.port}/?token={server.token}", post_token=server.token)
    sockets: list[str] = []
    browser.page.on("websocket", lambda ws: sockets.append(ws.url))
    try:
        for how in ("navigate", "form"):
            browser.page.goto(f"http://localhost:{hostile.port}/{how}?port={server.port}")
            browser.page.wait_for_url(f"http://localhost:{server.port}/**", timeout=WAIT_MS)
            answer = browser.page.goto(f"http://localhost:{server.port}/")
            assert answer.status == 403 and browser.page.locator("#token").count() == 1, how  # the sign-in form
    finally:
        hostile.close()
    typed = browser.page.goto(f"http://localhost:{server.port}/?token={server.token}")
    assert typed.status == 403 and browser.page.url == f"http://localhost:{server.port}/login"  # token out of the bar
    assert sockets == [] and browser.context.cookies() == []
    server.stop()
    assert "session opened" not in server.err
    assert_clean_logs(server.logs_after_the_url(), server.token)


def test_the_sign_in_form_leaves_the_token_in_no_address_and_no_file_of_the_browser(serve, browser):
    server = serve()
    answer = browser.page.goto(f"http://localhost:{server.port}/")
    assert answer.status == 403
    browser.page.fill("#token", server.token)
    stream: list[str] = []

    def shows(payload: str | bytes) -> bool:
        stream.append(payload.decode(errors="replace") if isinstance(payload, bytes) else payload)
        return "researcher" in ANSI.sub("", "".join(stream))

    with browser.page.expect_websocket(timeout=WAIT_MS) as opened:
        browser.page.click("button[type=submit]")
    opened.value.wait_for_event("framereceived", predicate=shows, timeout=WAIT_MS)
    assert browser.page.url == f"http://localhost:{server.port}/"
    assert not [url for url in browser.requests + tab_history(browser.page) if server.token in url]
    browser.close()
    assert browser.files_holding(server.token) == []
    server.stop()
    assert_clean_logs(server.logs_after_the_url(), server.token)


class HostilePage:
    """A page served from another port of the same host (a tiny aiohttp server in a thread) whose script tries
    to open the console's websocket and read its page with the visitor's cookie; it records the cookies the
    browser sends it."""

    SCRIPT = """
      const params = new URLSearchParams(location.search);
      const console_ = "localhost:" + params.get("port");
      function tryWebsocket(url) {
        return new Promise((resolve) => {
          let ws;
          try { ws = new WebSocket(url); } catch (e) { resolve("threw"); return; }
          ws.binaryType = "arraybuffer";
          ws.onopen = () => { ws.send(JSON.stringify(["stdin", "q"])); resolve("opened"); };
          ws.onerror = () => resolve("refused");
        });
      }
      async function tryFetch(mode) {
        try {
          const response = await fetch("http://" + console_ + "/", {credentials: "include", mode: mode});
          return response.type === "opaque" ? "opaque" : "read " + (await response.text()).length + " bytes";
        } catch (e) { return "blocked"; }
      }
      (async () => {
        window.results = {
          websocket_with_the_key: await tryWebsocket("ws://" + console_ + "/ws/" + params.get("key") + "?width=80"),
          websocket_of_textual_serve: await tryWebsocket("ws://" + console_ + "/ws?width=80&height=24"),
          fetch: await tryFetch("cors"),
          fetch_no_cors: await tryFetch("no-cors"),
        };
      })();
    """

    # Pages that try to sign the visitor in as someone else: by sending the tab to an address with a token, and by
    # submitting a sign-in form of their own to the console.
    NAVIGATE = "<script>window.location.href = {target};</script>"
    FORM = (
        "<form id='f' method='post' action='http://localhost:{port}/login'>"
        "<input name='token' value='{token}'></form><script>document.getElementById('f').submit();</script>"
    )

    def __init__(self, navigate_to: str = "", post_token: str = "") -> None:
        self.port = free_port()
        self.navigate_to, self.post_token = navigate_to, post_token
        self.cookies: list[str] = []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self.thread.start()
        assert ready.wait(30), "the hostile page's server did not start"

    async def page(self, request: web.Request) -> web.Response:
        self.cookies.append(request.headers.get("Cookie", ""))
        return web.Response(
            text=f"<!DOCTYPE html><html><body><script>{self.SCRIPT}</script>"
            "<iframe id='framed'></iframe></body></html>",
            content_type="text/html",
        )

    async def navigate(self, request: web.Request) -> web.Response:
        import json

        return web.Response(text=self.NAVIGATE.format(target=json.dumps(self.navigate_to)), content_type="text/html")

    async def form(self, request: web.Request) -> web.Response:
        port = int(request.query["port"])
        return web.Response(text=self.FORM.format(port=port, token=self.post_token), content_type="text/html")

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_get("/", self.page)
        app.router.add_get("/navigate", self.navigate)
        app.router.add_get("/form", self.form)
        self.runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.TCPSite(self.runner, "localhost", self.port).start())
        ready.set()
        self.loop.run_forever()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def test_a_page_of_another_local_port_can_neither_open_nor_read_the_console(serve, browser):
    server = serve()
    open_console(browser.page, server, {"REDAgentBench", "researcher"})
    key = browser.page.evaluate("localStorage.getItem('redagent-console-key')")
    hostile = HostilePage()
    try:
        # Even given the session's key, the other port's page is refused: its Origin is not the console's.
        other = browser.context.new_page()
        other.goto(f"http://localhost:{hostile.port}/?port={server.port}&key={key}")
        other.wait_for_function("window.results !== undefined", timeout=WAIT_MS)
        results = other.evaluate("window.results")
        framed = other.evaluate(f"""new Promise((resolve) => {{
            const frame = document.getElementById("framed");
            frame.onload = () => {{ try {{ resolve(frame.contentDocument ? "readable" : "not readable"); }}
                                   catch (e) {{ resolve("not readable"); }} }};
            frame.src = "http://localhost:{server.port}/";
        }})""")
    finally:
        hostile.close()
    assert results == {
        "websocket_with_the_key": "refused",
        "websocket_of_textual_serve": "refused",
        "fetch": "blocked",
        "fetch_no_cors": "blocked",
    }, results
    assert framed == "not readable"
    assert key
    # The browser did hand the console's cookie to the other port (cookies ignore ports) ...
    stolen = next(c for c in hostile.cookies if f"redagent_{server.port}=" in c)
    cookie = re.search(rf"redagent_{server.port}=([^;\s]+)", stolen).group(1)
    # ... yet, replayed by a program that forges the console's Origin, it opens no console: the page it reads
    # carries no key, and the websocket wants the key the browser keeps for the console's origin only.
    headers = {"Cookie": f"redagent_{server.port}={cookie}", "Origin": f"http://localhost:{server.port}"}
    with urllib.request.urlopen(
        urllib.request.Request(f"http://localhost:{server.port}/", headers=headers), timeout=10
    ) as answer:
        assert answer.status == 200 and key not in answer.read().decode()
    upgrade = headers | {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    for guess in ("x" * 43, cookie):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(
                urllib.request.Request(f"http://localhost:{server.port}/ws/{guess}", headers=upgrade), timeout=10
            )
        assert refused.value.code == 403
    browser.close()
    server.stop()
    # One console was opened — the researcher's own tab's.
    assert len(re.findall(r'"GET /ws/…\?…" 101 ', server.err)) == 1, server.err
    assert_clean_logs(server.logs_after_the_url(), server.token, key, cookie)


def test_a_removed_members_open_console_closes_and_their_cookie_opens_none(serve, browser, tmp_path):
    make_store(tmp_path)
    token = add_member("bob", "reviewer", tmp_path)
    server = serve()
    open_console(browser.page, server, {"reviewer", "bob"}, token=token)
    redagent("team", "remove", "bob", cwd=tmp_path)
    browser.page.wait_for_selector("body.-closed", state="attached", timeout=WAIT_MS)  # "Session ended."
    sockets: list[str] = []
    browser.page.on("websocket", lambda ws: sockets.append(ws.url))
    answer = browser.page.reload()
    assert answer.status == 403 and browser.page.locator("#token").count() == 1  # the sign-in form
    assert sockets == []
    server.stop()
    assert_clean_logs(server.logs_after_the_url(), server.token, token)


def test_a_100_kb_address_gets_a_bare_414_and_one_log_line(serve, browser):
    server = serve()
    answer = browser.page.goto(f"http://localhost:{server.port}/?token=" + "A" * 100_000)
    assert answer.status == 414
    assert browser.page.inner_text("body").startswith("414")
    server.stop()
    assert_clean_logs(server.logs_after_the_url(), server.token)
    assert len(re.findall(r"refused a request from \S+: 414", server.err)) == 1


def test_at_800_by_600_the_console_takes_keys_from_the_first_one(serve, browser):
    # No click anywhere: the terminal has the keyboard once the console's first output is in, so the footer
    # shows the screen's keys (Textual draws none while its app is unfocused) and `?` opens help.
    server = serve()
    page = browser.page
    page.set_viewport_size({"width": 800, "height": 600})
    stream: list[str] = []

    def shows(*wanted: str):
        def seen(payload: str | bytes) -> bool:
            stream.append(payload.decode(errors="replace") if isinstance(payload, bytes) else payload)
            text = " ".join(ANSI.sub("", "".join(stream)).split())
            return all(part in text for part in wanted)

        return seen

    page.goto(server.url)
    page.fill("#token", server.token)
    with page.expect_websocket(timeout=WAIT_MS) as opened:
        page.click("button[type=submit]")
    socket = opened.value
    socket.wait_for_event("framereceived", predicate=shows("REDAgentBench", "Resume"), timeout=WAIT_MS)  # footer
    assert page.title() == "REDAgentBench"
    page.wait_for_function("document.activeElement.classList.contains('xterm-helper-textarea')", timeout=WAIT_MS)
    # The size the browser gave the console is the one tests/console/test_browser_size.py lays out.
    assert "width=88&height=28" in socket.url, socket.url
    stream.clear()
    page.keyboard.press("?")
    socket.wait_for_event("framereceived", predicate=shows("Every run in the store"), timeout=WAIT_MS)


def test_sign_out_ends_the_session_and_leaves_the_browser_no_key_and_no_cookie(serve, browser):
    server = serve()
    open_console(browser.page, server, {"REDAgentBench", "researcher"})
    assert browser.page.evaluate("localStorage.getItem('redagent-console-key')")
    assert [c for c in browser.context.cookies() if c["name"] == f"redagent_{server.port}"][0]["expires"] == -1
    browser.page.click("#sign-out")
    browser.page.wait_for_url(f"http://localhost:{server.port}/login", timeout=WAIT_MS)
    assert browser.page.evaluate("localStorage.getItem('redagent-console-key')") is None
    assert browser.context.cookies() == []
    answer = browser.page.goto(f"http://localhost:{server.port}/")
    assert answer.status == 403 and browser.page.locator("#token").count() == 1
    server.stop()
    assert "signed out" in server.err
    assert_clean_logs(server.logs_after_the_url(), server.token)


class Screen:
    """What a console's websocket has shown since the last `clear`."""

    def __init__(self, socket) -> None:
        self.socket, self.stream = socket, []

    def wait_for(self, *wanted: str) -> None:
        def shows(payload: str | bytes) -> bool:
            self.stream.append(payload.decode(errors="replace") if isinstance(payload, bytes) else payload)
            text = " ".join(ANSI.sub("", "".join(self.stream)).split())
            return all(part in text for part in wanted)

        if not shows(""):
            self.socket.wait_for_event("framereceived", predicate=shows, timeout=WAIT_MS)
        self.stream.clear()


# textual.js opens a delivered file's address in a new tab (window.open), which saves it and closes before a test
# could watch it. The test's pages keep the address instead, and read it as that tab would: a same-origin request
# with the session's cookie.
KEEP_OPENED = "window.__opened = []; window.open = (url) => { window.__opened.push(url); return null; };"
READ_OPENED = """async (url) => {
    const answer = await fetch(url, {credentials: "same-origin"});
    const bytes = new Uint8Array(await answer.arrayBuffer());
    let text = ""; for (const b of bytes) text += String.fromCharCode(b);
    return {status: answer.status, headers: Object.fromEntries(answer.headers.entries()), body: btoa(text)};
}"""


def download_after(page, keys: list[str]) -> tuple[dict[str, str], bytes]:
    """What the console delivers once `keys` are pressed: the address textual.js opens, read as the browser would."""
    import base64

    before = page.evaluate("window.__opened.length")
    for key in keys:
        page.keyboard.press(key)
    for _ in range(WAIT_MS // 100):  # until textual.js opens it (a hang bound far above the second it takes; the
        if page.evaluate("window.__opened.length") > before:  # page's CSP forbids wait_for_function's evaluation)
            break
        page.wait_for_timeout(100)
    url = page.evaluate(f"window.__opened[{before}]")
    assert url.startswith(page.url.rstrip("/") + "/download/"), url
    answer = page.evaluate(READ_OPENED, url)
    assert answer["status"] == 200, answer
    return answer["headers"], base64.b64decode(answer["body"])


def test_the_palettes_screenshot_and_the_report_export_arrive_as_downloads_and_nothing_is_written_on_the_server(
    tmp_path, playwright, browser
):
    """The palette's "Screenshot" opened a 404 (the server had no download route), and "Export report" wrote
    files wherever the typed path pointed on the server's disk. Both now reach the browser as downloads of the
    session's own console, and the server's folder gains no file."""
    import io
    import zipfile

    make_store(tmp_path)
    redagent(
        "run",
        "--cases",
        "banking-t2-express-transfer-shadow-tool",
        "--models",
        "sim/comply",
        "--harnesses",
        "native",
        "--no-benign-arm",
        cwd=tmp_path,
    )
    run_id = __import__("json").loads(redagent("runs", "list", "--json", cwd=tmp_path).stdout)[0]["run_id"]
    before = sorted(str(path) for path in tmp_path.rglob("*"))
    server = WebConsole(tmp_path, "--run", run_id)
    try:
        page = browser.page
        page.add_init_script(KEEP_OPENED)
        page.goto(server.url)
        page.fill("#token", server.token)
        with page.expect_websocket(timeout=WAIT_MS) as opened:
            page.click("button[type=submit]")
        screen = Screen(opened.value)
        screen.wait_for("REDAgentBench")
        page.keyboard.press("Control+p")
        for key in "screenshot":
            page.keyboard.press(key)
        screen.wait_for("creenshot")
        headers, body = download_after(page, ["Enter"])
        assert headers["content-disposition"].startswith("attachment;") and ".svg" in headers["content-disposition"]
        assert body.lstrip().startswith(b"<svg") and headers["content-security-policy"] == "default-src 'none'; sandbox"
        page.keyboard.press("s")
        screen.wait_for("beside execution ASR", "sim/comply")  # the figures are in: there is a report to export
        headers, body = download_after(page, ["e"])
        assert headers["content-disposition"] == f'attachment; filename="report-{run_id}.zip"'
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            assert "report.json" in archive.namelist() and "report.md" in archive.namelist()
    finally:
        server.stop()
    written = sorted(str(path) for path in tmp_path.rglob("*") if str(path) not in before)
    assert [path for path in written if not path.endswith(("web.out", "web.err")) and "/profile" not in path] == []
    assert_clean_logs(server.logs_after_the_url(), server.token)
