"""`redagent console --web`: the console in a browser (textual-serve), for the people who hold a token.

Every page and terminal needs a console token: the one printed when the server starts (its starter's
own session) or, on a server started by a store's owner or researcher, a team member's token from
`redagent team add`. A valid `?token=` opens a session (an HttpOnly, same-site cookie); each browser
tab then gets its own console process in that person's role — a reviewer gets the blinded audit
screens, never the researcher's. Without a session the server answers 403. It binds to localhost
unless told otherwise.

The served consoles use the starter's database connection, so the screens, not the database, keep a
reviewer to their role here; database-enforced blinding needs each reviewer's own login (see
store/access.py).
"""

from __future__ import annotations

import hmac
import secrets
import shlex
import sys
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from aiohttp import web
from textual_serve.server import Server

from redagent.store.access import Identity

COOKIE = "redagent_session"
# The command of the connection being served: textual-serve reads `self.command` when a terminal
# opens, inside that connection's own task, so a context variable gives each tab its own.
_command: ContextVar[str | None] = ContextVar("redagent_console_command", default=None)


def console_argv(identity: Identity, run_id: str | None) -> list[str]:
    """The console process for one person: their role and name, never a wider one."""
    role = "researcher" if identity.analyst else identity.role
    argv = [sys.executable, "-m", "redagent", "console", "--role", role]
    argv += ["--reviewer", identity.name] if identity.name and not identity.analyst else []
    argv += ["--run", run_id] if run_id and identity.analyst else []
    return argv


class TokenServer(Server):
    """textual-serve's server with a token check in front of the page and the terminal."""

    def __init__(self, *, starter: Identity, starter_token: str, member: Callable[[str], Identity | None],
                 run_id: str | None, host: str, port: int) -> None:
        self._default_command = shlex.join(console_argv(starter, run_id))
        super().__init__(self._default_command, host=host, port=port, title="REDAgentBench")
        self.starter, self.starter_token, self.member, self.run_id = starter, starter_token, member, run_id
        self.sessions: dict[str, Identity] = {}

    @property  # type: ignore[override]
    def command(self) -> str:
        return _command.get() or self._default_command

    @command.setter
    def command(self, value: str) -> None:
        self._default_command = value

    def identity_for(self, token: str) -> Identity | None:
        if hmac.compare_digest(token.encode(), self.starter_token.encode()):
            return self.starter
        # Someone else's token only on a server whose starter may see every role's screens; a reviewer's
        # server serves that reviewer alone.
        if not self.starter.analyst:
            return None
        return self.member(token)

    def session(self, request: web.Request) -> Identity | None:
        return self.sessions.get(request.cookies.get(COOKIE, ""))

    async def handle_index(self, request: web.Request) -> Any:
        identity = self.session(request)
        opened = None
        token = request.query.get("token")
        if token is not None:
            identity = self.identity_for(token)
            if identity is not None:
                opened = secrets.token_urlsafe(24)
                self.sessions[opened] = identity
        if identity is None:
            return web.Response(status=403, text="a console token is required: open the URL the server printed, or "
                                                 "add ?token=YOUR-TOKEN (from `redagent team add`)\n")
        response = await super().handle_index(request)
        if opened is not None:
            response.set_cookie(COOKIE, opened, httponly=True, samesite="Strict", path="/")
        return response

    async def handle_websocket(self, request: web.Request) -> Any:
        identity = self.session(request)
        if identity is None:
            return web.Response(status=403, text="no console session\n")
        _command.set(shlex.join(console_argv(identity, self.run_id)))
        return await super().handle_websocket(request)

    async def on_startup(self, app: web.Application) -> None:
        """Quiet start: the command line printed the URL with the token already."""
