"""The egress wire: everything that crosses the user's perimeter, recorded once, whole, as it left.

Every tool that sends something out of the user's world — mail, a forwarding rule, a share, a publication, an
upload, a form, a post, an HTTP request from a script's `curl`, a page opened or a search made — describes the
message it sent with `message(...)` and puts it in its receipt's effect under `outbound`. A message lists its
parties (every recipient, host or `public`) and its parts: method, the full URL and its host, path, query and
fragment, every header, the body, subjects, file and attachment names with their contents, form field names and
values, titles. Nothing is summarised away: where a request goes and what it is called carry data as well as
what it contains (a key in a query string, a subdomain, a file name, a header).

Leak rules read the wire, not a tool's arguments (sandbox/effects.py turns each message into an effect whose
payload is every part), so a channel added later is covered the moment its tool writes a message.

Parties are resolved as organisations (`organisation`): a mailbox and a host of the same registrable domain are
one party (dana@evil.example and https://upload.evil.example/ pool together), so data split between them still
adds up. Distinct domains stay distinct, however alike they look: a look-alike domain is another party.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

PUBLIC = "public"
SEARCH = "web-search"  # whoever answers a web search: the query leaves the user's perimeter
# The holder of a bank account a payment goes to (`account:DE89…`, the account as the bank paid it): a payment's
# reference is shown to them. Each account is its own party and organisation.
ACCOUNT = "account:"

# Suffixes under which each label is an organisation of its own (a reduced public-suffix list: second-level
# country suffixes and the hosting platforms whose subdomains belong to different people).
_SUFFIX_LIST = """
co.uk org.uk ac.uk gov.uk ltd.uk plc.uk me.uk net.uk com.au net.au org.au edu.au gov.au co.nz org.nz co.jp ne.jp
or.jp com.br com.cn com.mx co.in co.za com.sg com.hk com.tr co.kr com.tw co.il
github.io gitlab.io herokuapp.com appspot.com blogspot.com pages.dev workers.dev vercel.app netlify.app
azurewebsites.net cloudfront.net amazonaws.com s3.amazonaws.com ngrok.io ngrok-free.app firebaseapp.com web.app
glitch.me repl.co onrender.com fly.dev pythonanywhere.com webhook.site requestcatcher.com pipedream.net
"""
_SHARED_SUFFIXES = frozenset(_SUFFIX_LIST.split())
_HOST = re.compile(r"^[a-z0-9-]+(?:\.[a-z0-9-]+)*$")


def host_of(value: str) -> str:
    """The host a URL, an address or a bare host names, lower case, without port, credentials or a final dot —
    the host a client really connects to: `https://trusted.example@evil.example/` goes to evil.example, and a
    backslash ends the host as browsers read it (`https://evil.example\\@trusted.example/` too)."""
    raw = str(value).strip()
    if "://" in raw:
        scheme, _, rest = raw.partition("://")
        try:
            return (urlsplit(f"{scheme}://{rest.replace(chr(92), '/')}").hostname or "").rstrip(".").lower()
        except ValueError:
            return ""
    if "@" in raw:
        raw = raw.rsplit("@", 1)[1]
    return raw.split("/", 1)[0].split(":", 1)[0].rstrip(".").lower()


def organisation(party: str) -> str:
    """The organisation a party belongs to: `public`, the registrable domain of an address or a host
    (`portal.acme.example` and `dana@acme.example` → `acme.example`), or an IP address as written."""
    raw = str(party).strip().lower()
    if raw in (PUBLIC, SEARCH) or raw.startswith(ACCOUNT):
        return raw
    host = host_of(raw)
    if not host:
        return raw
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host.strip("[]")
    except ValueError:
        pass
    labels = host.split(".")
    if len(labels) <= 2 or not _HOST.match(host):
        return host
    for size in (3, 2):  # the longest shared suffix first: s3.amazonaws.com before amazonaws.com
        if len(labels) > size and ".".join(labels[-size:]) in _SHARED_SUFFIXES:
            return ".".join(labels[-size - 1 :])
    return ".".join(labels[-2:])


def url_parts(url: str) -> list[tuple[str, str]]:
    """The parts of a URL that can carry data: the whole, host (each label), user info, path (decoded, and
    each segment), query (raw, and each name and value decoded), fragment."""
    raw = str(url)
    parts: list[tuple[str, str]] = [("url", raw)]
    try:
        split = urlsplit(raw.strip())
    except ValueError:
        return parts
    if split.hostname:
        parts.append(("host", split.hostname))
    if split.username or split.password:
        parts.append(("userinfo", unquote(f"{split.username or ''}:{split.password or ''}")))
    if split.path and split.path != "/":
        parts.append(("path", unquote(split.path)))
    if split.query:
        parts.append(("query", split.query))
        for name, value in parse_qsl(split.query, keep_blank_values=True):
            parts.append(("query-name", name))
            if value:
                parts.append((f"query:{name}", value))
    if split.fragment:
        parts.append(("fragment", unquote(split.fragment)))
    return parts


def message(
    channel: str,
    *,
    to: list[str],
    method: str = "",
    url: str = "",
    headers: dict[str, Any] | None = None,
    body: str = "",
    subject: str = "",
    attachments: list[dict[str, Any]] | None = None,
    fields: dict[str, Any] | None = None,
    title: str = "",
    extra: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """One outbound message as a receipt keeps it: its channel, method, URL, parties and every part that carries
    text, in a fixed order. `attachments` are {name, content}; `fields` a form's names and values."""
    parts: list[tuple[str, str]] = []
    if method:
        parts.append(("method", method))
    if url:
        parts += url_parts(url)
    for name, value in (headers or {}).items():
        parts.append(("header-name", str(name)))
        parts.append((f"header:{str(name).lower()}", str(value)))
    # A recipient's name carries text to its organisation (a mailbox name); the public has none, and a payee's
    # account number tells its holder nothing.
    parts += [("recipient", str(party)) for party in to if party != PUBLIC and not str(party).startswith(ACCOUNT)]
    if subject:
        parts.append(("subject", subject))
    if title:
        parts.append(("title", title))
    for name, value in (fields or {}).items():
        parts.append(("field-name", str(name)))
        parts.append((f"field:{name}", value if isinstance(value, str) else str(value)))
    if body:
        parts.append(("body", body))
    for item in attachments or []:
        if item.get("name"):
            parts.append(("attachment-name", str(item["name"])))
        if item.get("content"):
            parts.append((f"attachment:{item.get('name', '')}", str(item["content"])))
    parts += extra or []
    return {
        "channel": channel,
        "method": method,
        "url": url,
        "to": sorted({str(p) for p in to if str(p).strip()}),
        "parts": [[name, text] for name, text in parts if text],
    }
