"""`redagent console --web`: the console in a browser, one console process per tab in its person's role, for the
people who hold a token — a service that can run on a shared host.

Each tab's console is a textual-serve `AppService` (a `redagent console` process in that person's role, never a
wider one); the page, the sign-in and the websocket are this module's own aiohttp application. What it
guarantees (docs/architecture.md, "The web console as a service"):

- A session opens only with a token: the one printed at start (the starter's, valid until the server stops) or,
  on a server started by an analyst, a team member's from `redagent team add` — and only through the sign-in form
  (POST /login from this server's own page: its Origin, and Sec-Fetch-Site where the browser sends it). An address
  with a token opens nothing: any page can navigate a tab to an address, and would sign the browser in as
  someone else, so what the person then labels would be saved as that someone.
- Sign-out (POST /logout, from this server's own page) ends the session on the server — its consoles close — and
  the browser's cookie and key with it.
- The session cookie is a session cookie (no Max-Age: gone when the browser closes), HttpOnly, SameSite=Strict,
  Path=/, Secure over TLS, and named after the port. A cookie for a host reaches every port of it, so the cookie
  alone opens nothing: the websocket address must carry the session's key, which the browser keeps in this
  origin's local storage (one scheme, host and port).
- What a console delivers (a screenshot, an exported report) reaches the browser as a download of that session's
  own console (GET /download/KEY, always an attachment, sandboxed): never a file on the server's disk.
- Sessions end after `lifetime` seconds, after `idle` seconds without a request or a key press, when the member
  is removed or their token or role changes (the store is asked on every page load and websocket open, and
  every `SWEEP_SECONDS` for sessions with a console open, whose consoles are then closed), and with the server.
- The websocket, the sign-in and every request with an Origin header accept only this server's own origin; the
  websocket refuses a missing one. On a loopback address the Host header must name loopback (DNS rebinding).
- Requests are bounded (request line, headers, bodies, websocket messages, terminal size, sessions, consoles);
  an oversized or malformed one gets a bare 414/431/413/411/400, one log line, no traceback, none of its bytes.
- No log line holds a token, a session key or a query string. No page asks another host for anything.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import secrets
import shlex
import signal
import ssl
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import textual_serve
from aiohttp import WSMsgType, web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from redagent.console import web_page
from redagent.store.access import Identity

TITLE = "REDAgentBench"
LIFETIME_HOURS = 12.0  # a session's longest life, whatever it does
IDLE_MINUTES = 30.0  # a session ends after this long without a request or a key press
SWEEP_SECONDS = 10.0  # how often open consoles are checked against the store and the clock

# Request bounds. The request line limit is kept apart from the header field limit so a refusal can say which
# (414 or 431); the pages' own URLs are well under 200 bytes.
MAX_REQUEST_LINE = 4096
MAX_HEADER_FIELD = 8190
MAX_HEADERS = 64
MAX_SIGN_IN_BODY = 4096
MAX_WS_MESSAGE = 256 * 1024  # one key press or paste
MAX_SESSIONS = 256
MAX_CONSOLES = 32  # console processes on the host at once
MAX_CONSOLES_PER_SESSION = 8
COLUMNS, ROWS = (10, 500), (5, 200)  # the terminal sizes a browser may ask for
FONT_SIZES = (6, 64)
PAGE_PARAMETERS = ("fontsize", "delay")  # what the console page reads from its address; anything else is dropped

STATIC = Path(textual_serve.__file__).parent / "static"
STATIC_FILES = (
    "css/xterm.css",
    "js/textual.js",
    "images/background.png",
    "fonts/RobotoMono-VariableFont_wght.ttf",
    "fonts/RobotoMono-Italic-VariableFont_wght.ttf",
)
_CONTENT_TYPES = {".css": "text/css", ".js": "text/javascript", ".png": "image/png", ".ttf": "font/ttf"}
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")

log = logging.getLogger("redagent.web")


def console_argv(identity: Identity, run_id: str | None) -> list[str]:
    """The console process for one person: their role and name, never a wider one."""
    role = "researcher" if identity.analyst else identity.role
    argv = [sys.executable, "-m", "redagent", "console", "--role", role]
    argv += ["--reviewer", identity.name] if identity.name and not identity.analyst else []
    argv += ["--run", run_id] if run_id and identity.analyst else []
    return argv


# ------------------------------------------------------------------ sessions


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(eq=False)
class Session:
    """One person's sign-in. `token` is a member's token, asked of the store again on every page load (None: the
    starter's, valid as long as the server runs); `key` is what the websocket address must carry."""

    identity: Identity
    token: str | None
    key: str
    opened: float
    seen: float
    digest: str = ""
    consoles: set[web.WebSocketResponse] = field(default_factory=set)
    services: set[AppService] = field(default_factory=set)  # the console processes, whose downloads are its own


class SessionsFull(Exception):
    """Every session slot holds a session with a console open."""


class Sessions:
    """The open sessions, by the SHA-256 of their cookie, with their lifetime and idle limits on `clock`."""

    def __init__(
        self, *, lifetime: float, idle: float, clock: Callable[[], float] = time.monotonic, limit: int = MAX_SESSIONS
    ) -> None:
        self.lifetime, self.idle, self.clock, self.limit = lifetime, idle, clock, limit
        self._by_digest: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._by_digest)

    def all(self) -> list[Session]:
        return list(self._by_digest.values())

    def open(self, identity: Identity, token: str | None) -> tuple[str, Session]:
        """A new session and its cookie value. Expired sessions go first; when every slot is taken, the one
        least recently used that has no console open; SessionsFull when each has one."""
        for stale in [s for s in self._by_digest.values() if self.expired(s) and not s.consoles]:
            self.end(stale)
        if len(self._by_digest) >= self.limit:
            idle = [s for s in self._by_digest.values() if not s.consoles]
            if not idle:
                raise SessionsFull
            self.end(min(idle, key=lambda s: s.seen))
        cookie, now = secrets.token_urlsafe(32), self.clock()
        session = Session(identity, token, secrets.token_urlsafe(32), now, now, _digest(cookie))
        self._by_digest[session.digest] = session
        return cookie, session

    def find(self, cookie: str | None) -> Session | None:
        return self._by_digest.get(_digest(cookie)) if cookie else None

    def expired(self, session: Session) -> bool:
        now = self.clock()
        return now - session.opened >= self.lifetime or now - session.seen >= self.idle

    def touch(self, session: Session) -> None:
        session.seen = self.clock()

    def end(self, session: Session) -> None:
        self._by_digest.pop(session.digest, None)


class StoreUnavailable(Exception):
    """The store could not say whether a member is still on the team."""


# ------------------------------------------------------------------ what is logged

_SECRETS = re.compile(r"(?i)((?:token|key|session)=)[^&\s\"';]+|(/ws/)[^\s\"'?]+|(redagent_\d+=)[^\s\"';]+")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069]")


def redact(text: str) -> str:
    """A log line without secrets (token, session key, cookie) or terminal control characters."""
    text = _SECRETS.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)) + "…", text)
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _shown_path(request: BaseRequest) -> str:
    """The path as logged: no query string (it may hold a token), no websocket key, at most 200 characters."""
    raw = request.raw_path
    path, query = raw.partition("?")[0], "?" in raw
    if path.startswith("/ws/"):
        path = "/ws/…"
    path = path if len(path) <= 200 else path[:200] + "…"
    return redact(path + ("?…" if query else ""))


class RedactedAccessLog(AbstractAccessLogger):
    """aiohttp's access log without query strings, keys, Referer or User-Agent: one short line a request."""

    def log(self, request: BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info(
            '%s "%s %s" %s %s %.3fs',
            request.remote,
            redact(request.method[:16]),
            _shown_path(request),
            response.status,
            response.body_length,
            time,
        )


class _RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def configure_logging() -> None:
    """Server logs to stderr, one line a record, redacted (`redact`). textual-serve's own setup shows tracebacks
    with their local variables — which held the bytes of the request that failed."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


# ------------------------------------------------------------------ bounded HTTP


def refusal(exc: BaseException | None, status: int, max_request_line: int) -> tuple[int, str]:
    """The status and one-line reason for a request aiohttp's parser refused (or a handler failed on)."""
    if isinstance(exc, LineTooLong):
        limit = exc.args[1] if len(exc.args) > 1 else None
        if str(limit) == str(max_request_line):
            return 414, f"request line longer than {max_request_line} bytes"
        return 431, f"a header longer than {limit} bytes"
    if isinstance(exc, HttpProcessingError):
        if "Too many headers" in str(exc.message):
            return 431, "too many headers"
        return 400, "malformed request"
    if status >= 500:
        return status, "internal error"
    return status, "refused"


class _BoundedRequestHandler(RequestHandler):
    """aiohttp's connection handler, answering a request its parser refused with a bare 414/431/400 and one log
    line — aiohttp's own answer is a 400 that quotes the request and a logged traceback."""

    def handle_error(
        self, request: BaseRequest, status: int = 500, exc: BaseException | None = None, message: str | None = None
    ) -> web.StreamResponse:
        status, reason = refusal(exc, status, self.max_line_size)
        if status >= 500:
            self.logger.error(
                "internal error answering %s %s: %s",
                request.method[:16],
                _shown_path(request),
                type(exc).__name__ if exc else "unknown",
            )
        else:
            self.logger.info("refused a request from %s: %s %s", request.remote, status, reason)
        if request.writer.output_size > 0:
            raise ConnectionError("the response was partly sent already")
        response = web.Response(status=status, text=f"{status}: {reason}\n")
        response.force_close()
        return response


class _BoundedServer(web.Server):
    def __init__(
        self, handler: Any, *, request_factory: Any, loop: asyncio.AbstractEventLoop, **handler_args: Any
    ) -> None:
        super().__init__(handler, request_factory=request_factory, loop=loop, **handler_args)
        self._bounded_loop, self._bounded_args = loop, handler_args

    def __call__(self) -> RequestHandler:
        return _BoundedRequestHandler(self, loop=self._bounded_loop, **self._bounded_args)


class _BoundedRunner(web.AppRunner):
    """An AppRunner whose connections use `_BoundedRequestHandler` (aiohttp takes the handler class from no
    parameter, so the server the runner makes is remade around the same application)."""

    def __init__(self, app: web.Application, *, shutdown_timeout: float, **handler_args: Any) -> None:
        super().__init__(app, shutdown_timeout=shutdown_timeout, **handler_args)
        self._handler_args = handler_args  # RequestHandler's parameters

    async def _make_server(self) -> web.Server:
        made = await super()._make_server()
        return _BoundedServer(
            made.request_handler,
            request_factory=made.request_factory,
            loop=asyncio.get_running_loop(),
            **self._handler_args,
        )


# ------------------------------------------------------------------ the server


def _clamp(value: Any, bounds: tuple[int, int], default: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return min(max(number, bounds[0]), bounds[1])


def _secure_headers(response: web.StreamResponse) -> None:
    headers = response.headers
    headers.setdefault("Cache-Control", "no-store")
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Referrer-Policy"] = "same-origin"  # "no-referrer" would make the Origin of its own form "null"
    headers["X-Frame-Options"] = "DENY"
    headers["Cross-Origin-Resource-Policy"] = "same-origin"
    headers["Cross-Origin-Opener-Policy"] = "same-origin"


def _html(text: str, status: int = 200, nonce: str | None = None) -> web.Response:
    response = web.Response(status=status, text=text, content_type="text/html")
    response.headers["Content-Security-Policy"] = web_page.policy(nonce or secrets.token_urlsafe(16))
    return response


class TokenServer:
    """The console's web application: sign-in, page, websocket and static files (see the module docstring)."""

    def __init__(
        self,
        *,
        starter: Identity,
        starter_token: str,
        member: Callable[[str], Identity | None],
        run_id: str | None,
        host: str,
        port: int,
        lifetime: float = LIFETIME_HOURS * 3600,
        idle: float = IDLE_MINUTES * 60,
        ssl_context: ssl.SSLContext | None = None,
        clock: Callable[[], float] = time.monotonic,
        sweep: float = SWEEP_SECONDS,
    ) -> None:
        self.starter, self.starter_token, self.member, self.run_id = starter, starter_token, member, run_id
        self.host, self.port, self.ssl_context, self.sweep = host, port, ssl_context, sweep
        self.sessions = Sessions(lifetime=lifetime, idle=idle, clock=clock)
        # Cookies ignore ports: a name of its own keeps two consoles on one host from overwriting each other's.
        self.cookie = f"redagent_{port}"
        self.downloads = DownloadManager()
        # Bound to loopback, the server answers only to loopback names: a page of another site whose name was
        # made to resolve to 127.0.0.1 (DNS rebinding) is refused before anything else is looked at.
        self.allowed_hosts: set[str] | None = None
        if host.strip("[]").lower() in LOOPBACK_HOSTS:
            names = ("localhost", "127.0.0.1", "[::1]")
            self.allowed_hosts = {f"{name}:{port}" for name in names}
            if port == (443 if ssl_context else 80):  # a default port is left out of the Host header
                self.allowed_hosts |= set(names)
        self._sweeper: asyncio.Task[None] | None = None
        self._stopping: asyncio.Event | None = None

    # ---- who is asking

    async def identity_for(self, token: str) -> Identity | None:
        if hmac.compare_digest(token.encode(), self.starter_token.encode()):
            return self.starter
        # Someone else's token only on a server whose starter may see every role's screens; a reviewer's
        # server serves that reviewer alone.
        if not self.starter.analyst:
            return None
        return await self._member(token)

    async def _member(self, token: str) -> Identity | None:
        try:
            return await asyncio.to_thread(self.member, token)
        except Exception as exc:  # the store's errors, whatever the dialect: the caller answers 503
            log.warning("the store could not be asked about a console token: %s", type(exc).__name__)
            raise StoreUnavailable from exc

    async def current(self, request: web.Request) -> Session | None:
        """The request's session if it is still good (time limits, and the member's token and role in the store
        now); a session that is not is ended here, its consoles closed."""
        session = self.sessions.find(request.cookies.get(self.cookie))
        if session is None:
            return None
        if self.sessions.expired(session) or not await self._still_member(session):
            await self.end(session, "session ended")
            return None
        self.sessions.touch(session)
        return session

    async def _still_member(self, session: Session) -> bool:
        return session.token is None or await self._member(session.token) == session.identity

    async def end(self, session: Session, why: str) -> None:
        self.sessions.end(session)
        consoles = list(session.consoles)
        if consoles:
            log.info(
                "closed %d console(s) of %s: %s", len(consoles), session.identity.name or session.identity.role, why
            )
        for websocket in consoles:
            await websocket.close(code=4001, message=why.encode())

    async def _sweep(self) -> None:
        """End the sessions that have expired or whose member is no longer the same, closing their consoles."""
        while True:
            await asyncio.sleep(self.sweep)
            for session in self.sessions.all():
                try:
                    if self.sessions.expired(session) or (session.consoles and not await self._still_member(session)):
                        await self.end(session, "session ended")
                except StoreUnavailable:
                    continue  # asked again at the next sweep
                except Exception as exc:  # a sweep that died would leave removed members' consoles open
                    log.error("the session sweep failed on one session: %s", type(exc).__name__)

    # ---- origin and shape of requests

    def own_origin(self, request: web.Request) -> str:
        return f"{request.scheme}://{request.host}".lower()

    def same_origin(self, request: web.Request, *, required: bool) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return not required
        return hmac.compare_digest(origin.strip().lower().encode(), self.own_origin(request).encode())

    @web.middleware
    async def guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Host, Origin and body checks for every request, and the headers every answer carries."""
        length = request.content_length
        if self.allowed_hosts is not None and request.host.lower() not in self.allowed_hosts:
            response: web.StreamResponse = web.Response(status=400, text="400: this server answers to localhost\n")
        elif not self.same_origin(request, required=False):
            response = web.Response(status=403, text="403: another site's page may not use this console\n")
        elif request.method == "POST" and length is None:
            response = web.Response(status=411, text="411: a length is required\n")
        elif request.method == "POST" and length is not None and length > MAX_SIGN_IN_BODY:
            response = web.Response(status=413, text="413: request body too large\n")
        elif request.method != "POST" and request.can_read_body:
            response = web.Response(status=413, text="413: this request takes no body\n")
        else:
            try:
                response = await handler(request)
            except web.HTTPException as exc:  # aiohttp's own answers (404, 405) get the same headers
                _secure_headers(exc)
                raise
            except StoreUnavailable:
                response = web.Response(status=503, text="503: the store cannot be read right now; try again\n")
            except SessionsFull:
                response = web.Response(status=503, text="503: too many sessions with a console open\n")
        if not response.prepared:  # a websocket's answer went out when it opened
            _secure_headers(response)
            if request.method == "POST" or response.status >= 400:
                response.force_close()  # an unread body is not left to be read as the next request
        return response

    # ---- pages

    def _page_target(self, request: web.Request) -> str:
        """The page's own address without the token or any parameter the page does not read (textual.js would
        fetch a `ping` address it was given)."""
        kept = [(name, value[:16]) for name, value in request.query.items() if name in PAGE_PARAMETERS]
        return "/" + ("?" + urlencode(kept) if kept else "")

    async def _open(self, request: web.Request, identity: Identity, token: str | None) -> web.Response:
        cookie, session = self.sessions.open(identity, None if identity is self.starter else token)
        log.info("session opened for %s (%s)", identity.name or identity.role, identity.role)
        nonce = secrets.token_urlsafe(16)
        response = _html(web_page.session_page(TITLE, nonce, session.key, "/"), nonce=nonce)
        # A session cookie (no Max-Age, no Expires): it goes with the browser, and the server's clock ends it sooner.
        response.set_cookie(self.cookie, cookie, httponly=True, samesite="Strict", path="/", secure=request.secure)
        return response

    def _sign_in(self, status: int, message: str | None = None, *, clean_address: bool = False) -> web.Response:
        nonce = secrets.token_urlsafe(16)
        page = web_page.sign_in_page(TITLE, message, nonce=nonce if clean_address else None)
        return _html(page, status=status, nonce=nonce)

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        if "token" in request.query:
            # A token in an address opens nothing: any page can send a tab to an address (and so sign the browser
            # in as whoever's token it chose). The answer takes the token out of the address bar.
            return self._sign_in(
                403,
                "A token in the address opens nothing here: paste it into this form.",
                clean_address=True,
            )
        session = await self.current(request)
        if session is None:
            return self._sign_in(403)
        if any(name not in PAGE_PARAMETERS for name in request.query):
            return web.Response(status=303, headers={"Location": self._page_target(request)})
        nonce = secrets.token_urlsafe(16)
        font_size = _clamp(request.query.get("fontsize"), FONT_SIZES, 16)
        return _html(web_page.console_page(TITLE, nonce, font_size), nonce=nonce)

    async def handle_sign_in_form(self, request: web.Request) -> web.StreamResponse:
        return self._sign_in(200)

    def _own_page(self, request: web.Request) -> bool:
        """A request this server's own page made: its Origin, and where the browser says so, Sec-Fetch-Site."""
        site = request.headers.get("Sec-Fetch-Site")
        return self.same_origin(request, required=True) and site in (None, "same-origin")

    async def handle_sign_in(self, request: web.Request) -> web.StreamResponse:
        """POST /login: the token in a form body, from this server's own page only."""
        if not self._own_page(request):
            return web.Response(status=403, text="403: sign in from this server's own page\n")
        if request.content_type != "application/x-www-form-urlencoded":
            return web.Response(status=400, text="400: a form is expected\n")
        try:
            form = await request.post()
        except ValueError:
            return web.Response(status=400, text="400: a form is expected\n")
        field_value = form.get("token")
        token = field_value.strip() if isinstance(field_value, str) else ""
        identity = await self.identity_for(token) if token else None
        if identity is None:
            return self._sign_in(403, "That token opens nothing here.")
        return await self._open(request, identity, token)

    async def handle_sign_out(self, request: web.Request) -> web.StreamResponse:
        """POST /logout, from this server's own page: the session ends on the server (its consoles close), and the
        answer takes the cookie and the key out of the browser. Without a session it only does the latter."""
        if not self._own_page(request):
            return web.Response(status=403, text="403: sign out from this server's own page\n")
        session = self.sessions.find(request.cookies.get(self.cookie))
        if session is not None:
            log.info("%s signed out", session.identity.name or session.identity.role)
            await self.end(session, "signed out")
        nonce = secrets.token_urlsafe(16)
        response = _html(web_page.signed_out_page(TITLE, nonce), nonce=nonce)
        response.del_cookie(self.cookie, path="/")
        return response

    async def handle_download(self, request: web.Request) -> web.StreamResponse:
        """GET /download/KEY: a file one of the session's own consoles delivers (a screenshot, an exported report),
        streamed from the console process — always an attachment, never shown in this origin."""
        session = await self.current(request)
        if session is None:
            return web.Response(status=403, text="403: no console session\n")
        try:
            download = await self.downloads.get_download_metadata(request.match_info["key"])
        except KeyError:
            download = None
        if download is None or download.app_service not in session.services:
            return web.Response(status=404, text="404: no such download\n")
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", download.file_name)[:120] or "download"
        response = web.StreamResponse(
            headers={
                "Content-Type": "application/octet-stream",
                "Content-Disposition": f'attachment; filename="{name}"',
                "Content-Security-Policy": "default-src 'none'; sandbox",
            }
        )
        _secure_headers(response)
        await response.prepare(request)
        async for chunk in self.downloads.download(download.delivery_key):
            await response.write(chunk)
        await response.write_eof()
        return response

    async def handle_static(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name not in STATIC_FILES:
            return web.Response(status=404, text="404: not found\n")
        response = web.FileResponse(STATIC / name, headers={"Content-Type": _CONTENT_TYPES[Path(name).suffix]})
        response.headers["Cache-Control"] = "private, max-age=3600"
        return response

    # ---- the terminal

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:
        # A browser always sends Origin with a websocket: one that is missing or someone else's is not this
        # server's page (a page of another port of the same host rides the same cookie).
        if not self.same_origin(request, required=True):
            return web.Response(status=403, text="403: only this server's own page opens a console\n")
        session = await self.current(request)
        if session is None or not hmac.compare_digest(request.match_info["key"].encode(), session.key.encode()):
            return web.Response(status=403, text="403: no console session\n")
        open_consoles = sum(len(s.consoles) for s in self.sessions.all())
        if len(session.consoles) >= MAX_CONSOLES_PER_SESSION or open_consoles >= MAX_CONSOLES:
            return web.Response(status=503, text="503: too many consoles open; close a tab\n")
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_WS_MESSAGE)
        width = _clamp(request.query.get("width"), COLUMNS, 80)
        height = _clamp(request.query.get("height"), ROWS, 24)
        await websocket.prepare(request)
        session.consoles.add(websocket)
        # textual-serve types `close` as returning None and passes aiohttp's close (returning a bool) itself, in
        # its own server: AppService awaits it and drops the result.
        service = AppService(
            shlex.join(console_argv(session.identity, self.run_id)),
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,  # type: ignore[arg-type]
            download_manager=self.downloads,
        )
        session.services.add(service)
        try:
            await service.start(width, height)
            await self._relay(websocket, service, session)
        finally:
            session.consoles.discard(websocket)
            session.services.discard(service)
            await service.stop()
        return websocket

    async def _relay(self, websocket: web.WebSocketResponse, service: AppService, session: Session) -> None:
        """The browser's messages to the console process; anything malformed is dropped, never logged."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "ping":
                await websocket.send_json(["pong", str(data)[:32]])
                continue
            self.sessions.touch(session)
            if kind == "stdin" and isinstance(data, str):
                await service.send_bytes(data.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(data, dict):
                await service.set_terminal_size(
                    _clamp(data.get("width"), COLUMNS, 80), _clamp(data.get("height"), ROWS, 24)
                )
            elif kind == "blur":
                await service.blur()
            elif kind == "focus":
                await service.focus()

    # ---- running

    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self.guard], client_max_size=MAX_SIGN_IN_BODY)
        app.add_routes(
            [
                web.get("/", self.handle_index),
                web.get("/login", self.handle_sign_in_form),
                web.post("/login", self.handle_sign_in),
                web.post("/logout", self.handle_sign_out),
                web.get("/download/{key}", self.handle_download),
                web.get("/ws/{key}", self.handle_websocket),
                web.get("/static/{name:.+}", self.handle_static),
            ]
        )
        app.on_startup.append(self._start)
        app.on_shutdown.append(self._stop)
        return app

    async def _start(self, app: web.Application) -> None:
        self._sweeper = asyncio.create_task(self._sweep())

    async def _stop(self, app: web.Application) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        for session in self.sessions.all():
            await self.end(session, "the server stopped")

    async def run(self, started: Callable[[], None] | None = None) -> None:
        """Serve until SIGINT, SIGTERM or `stop()`; every console is closed before this returns."""
        runner = _BoundedRunner(
            self.make_app(),
            access_log_class=RedactedAccessLog,
            access_log=logging.getLogger("aiohttp.access"),
            logger=logging.getLogger("aiohttp.server"),
            max_line_size=MAX_REQUEST_LINE,
            max_field_size=MAX_HEADER_FIELD,
            max_headers=MAX_HEADERS,
            shutdown_timeout=10.0,
        )
        await runner.setup()
        self._stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._stopping.set)
        try:
            await web.TCPSite(runner, self.host, self.port, ssl_context=self.ssl_context).start()
            if started is not None:
                started()
            await self._stopping.wait()
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
            await runner.cleanup()

    def stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()

    def serve(self, started: Callable[[], None] | None = None) -> None:
        configure_logging()
        asyncio.run(self.run(started))
