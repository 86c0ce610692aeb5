"""`redagent console`: open the Textual console in a terminal, or serve it to browsers (`--web`, one process
per tab, token required). It only reads: a missing store is "no store at …", never created. Errors take
cli_common's one-line path."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from redagent.console.cli_common import DB_OPTION, Commands, err, examples, fail, opened_store, out, single_file_note

# Mounted without a name (console/cli.py): its command is top-level, `redagent console`.
console_app = typer.Typer(cls=Commands)

ROLES = ("researcher", "reviewer", "adjudicator", "expert")  # the roles the console opens in


@console_app.command(
    "console",
    epilog=examples(
        "redagent console --run run-3fa2",
        "redagent console --db postgresql+psycopg://alice:pw@db:5432/audits",
        "redagent console --web --port 8000",
        "redagent console --web --host 0.0.0.0 --port 8443 --tls-cert cert.pem --tls-key key.pem",
    ),
)
def console_command(
    db: str | None = DB_OPTION,
    reviewer: str | None = typer.Option(
        None, "--reviewer", help="your name (reviewer, adjudicator, expert); on a team store it comes from your login"
    ),
    role: str | None = typer.Option(
        None, "--role", help="researcher | reviewer | adjudicator | expert; on a team store it comes from your login"
    ),
    run_id: str | None = typer.Option(None, "--run", help="open on this run"),
    web: bool = typer.Option(False, "--web", help="serve the console to a browser (textual-serve), token required"),
    host: str = typer.Option("localhost", "--host", help="with --web: the address to bind (default: localhost only)"),
    port: int = typer.Option(8000, "--port", help="with --web: the port"),
    tls_cert: Path | None = typer.Option(
        None, "--tls-cert", help="with --web: serve HTTPS with this certificate (PEM; needs --tls-key)"
    ),
    tls_key: Path | None = typer.Option(None, "--tls-key", help="with --web: the certificate's private key (PEM)"),
    session_hours: float = typer.Option(12.0, "--session-hours", help="with --web: a session's longest life"),
    idle_minutes: float = typer.Option(
        30.0, "--idle-minutes", help="with --web: a session ends after this long without a page load or a key press"
    ),
) -> None:
    """Open the audit console (Textual): runs, rollouts, statistics, blinded audit, adjudication, case review.

    A reviewer on a team store opens it with their own login's URL as --db; role and name come from it.
    """
    from redagent.store.access import Identity

    if role is not None and role not in ROLES:
        fail(f"unknown role {role!r} (known: {', '.join(ROLES)})")
    # create=False: the console reads (runs it starts need a store that exists already), and a typo in --db
    # must not leave an empty store behind.
    with opened_store(db, roles=("owner", *ROLES), create=False) as store:
        identity = store.identity()
        note = single_file_note(store)
    if identity.enforced:
        # The database holds this login to its role: the flags may only repeat it.
        if role is not None and role != identity.role:
            fail(f"you are logged in as {identity.name} ({identity.role}); --role {role} is not yours")
        if reviewer is not None and reviewer != identity.name:
            fail(f"you are logged in as {identity.name}; --reviewer {reviewer} would be someone else")
        role, reviewer = identity.role, (None if identity.role == "researcher" else identity.name)
    else:
        role = role or "researcher"
        if role != "researcher" and not reviewer:
            fail(f"the {role} role needs --reviewer NAME")
    if role != "researcher" and note:
        err.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    if web:
        starter = identity if role == "researcher" else Identity(role, reviewer, identity.login, identity.enforced)
        _serve_console(db, starter, run_id, host, port, tls=(tls_cert, tls_key), limits=(session_hours, idle_minutes))
        return
    from redagent.console.app import RedAgentApp

    RedAgentApp(db, reviewer=reviewer, role=role, run_id=run_id, note=note if role != "researcher" else None).run()


def _serve_console(
    db: str | None,
    starter,
    run_id: str | None,
    host: str,
    port: int,
    *,
    tls: tuple[Path | None, Path | None],
    limits: tuple[float, float],
) -> None:
    """Each browser tab gets its own console process (textual-serve) in the role of the token it came
    with; no page or terminal without one (console/web.py says what else the server guarantees). Bound to
    localhost unless --host says otherwise."""
    import secrets
    import socket
    import ssl

    from redagent.console.web import IDLE_MINUTES, LIFETIME_HOURS, LOOPBACK_HOSTS, TokenServer
    from redagent.store.connect import resolve_url
    from redagent.store.urls import absolute_url

    if not 0 < port < 65536:
        fail(f"--port {port} is not a TCP port")
    session_hours, idle_minutes = limits
    if not 0 < session_hours <= 24 * 30:
        fail(f"--session-hours {session_hours:g} is not between 0 and 720 (default {LIFETIME_HOURS:g})")
    if not 0 < idle_minutes <= session_hours * 60:
        fail(f"--idle-minutes {idle_minutes:g} is not between 0 and the session's life (default {IDLE_MINUTES:g})")
    tls_cert, tls_key = tls
    context = None
    if (tls_cert is None) != (tls_key is None):
        fail("--tls-cert and --tls-key go together")
    if tls_cert is not None and tls_key is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(tls_cert, tls_key)
        except (OSError, ssl.SSLError) as exc:
            fail(f"--tls-cert {tls_cert} / --tls-key {tls_key}: {getattr(exc, 'strerror', None) or exc}")
    elif host.strip("[]").lower() not in LOOPBACK_HOSTS:
        err.print(
            f"note: serving plain HTTP on {host}: tokens and session cookies cross the network unencrypted; "
            "give --tls-cert and --tls-key, or keep it on localhost and reach it over SSH port forwarding",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1" if host == "localhost" else host, port))
        except OSError as exc:
            fail(f"--port {port} is not free on {host}: {exc.strerror or exc}")
    # Every tab opens the same store: a relative SQLite path made absolute, and the URL handed over in
    # the environment rather than on a command line that `ps` shows (it may hold a password).
    os.environ["REDAGENT_DB"] = absolute_url(resolve_url(db))
    with opened_store(os.environ["REDAGENT_DB"], roles=("owner", *ROLES), create=False) as store:
        token = secrets.token_urlsafe(24)
        who = starter.name or starter.role
        scheme = "https" if context is not None else "http"

        def started() -> None:  # printed once the server listens, so the address works when it shows
            # The address and the token apart: a token is taken only by the sign-in form, never from an address
            # (console/web.py), so no link can sign a browser in.
            out.print(
                f"serving the console ({starter.role}, {who}) at {scheme}://{host}:{port}/ — sign in there with "
                f"the token {token} (yours alone; teammates sign in with their own from `redagent team add`); "
                f"sessions end after {session_hours:g} h or {idle_minutes:g} min idle, or at sign-out; Ctrl-C stops",
                highlight=False,
                soft_wrap=True,
            )

        server = TokenServer(
            starter=starter,
            starter_token=token,
            member=store.member_for_token,
            run_id=run_id,
            host=host,
            port=port,
            lifetime=session_hours * 3600,
            idle=idle_minutes * 60,
            ssl_context=context,
        )
        try:
            server.serve(started)
        except OSError as exc:
            fail(f"could not serve on {host}:{port}: {exc.strerror or exc}")
