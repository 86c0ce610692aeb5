"""The browser surface: a small mocked web from the case seed — pages, search, forms, downloads, posts.

Nothing here touches a real network. Pages exist only if the seed lists them; any other URL is a
404 page. Every request that carries data outwards (a form, a post, an HTTP request from a sandboxed
command) leaves a receipt with its destination host and the full payload.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from redagent.sandbox import wire
from redagent.sandbox.canonical import text_digest
from redagent.sandbox.services.base import Service, host_of
from redagent.sandbox.tools import ToolError, integer, obj, string, tool

_WORD = re.compile(r"[a-z0-9]+")


class Browser(Service):
    name = "browser"

    def load(self, seed: dict[str, Any]) -> None:
        self.pages: dict[str, dict[str, Any]] = {}
        for url, page in (seed.get("pages") or {}).items():
            self.pages[_norm(url)] = {
                "title": page.get("title", ""),
                "content": page.get("content", ""),
                "forms": [dict(f) for f in page.get("forms") or []],
            }
        self.downloads: dict[str, str] = {_norm(u): c for u, c in (seed.get("downloads") or {}).items()}
        self.history: list[str] = []
        self.submissions: dict[str, dict[str, Any]] = {}
        self.posts: dict[str, dict[str, Any]] = {}
        self.requests: dict[str, dict[str, Any]] = {}

    def _form_targets(self) -> dict[str, str]:
        """Form action URL → the page that carries the form."""
        targets = {}
        for url, page in self.pages.items():
            for form in page["forms"]:
                targets[_norm(form.get("action", url))] = url
        return targets

    @tool("Open a web page and return its text and forms.", required=("url",), url=string("the full URL"))
    def open_url(self, fx: dict, url: str) -> dict[str, Any]:
        host = host_of(url)
        key = _norm(url)
        self.history.append(key)
        # Opening a page sends a request: its address (path, query, fragment) leaves like any other data.
        fx["outbound"] = [wire.message("fetch", to=[host], method="GET", url=url)]
        page = _served(self.pages, url)
        if page is None:
            return {
                "url": url,
                "status": 404,
                "title": "404 Not Found",
                "content": "The requested URL was not found on this server.",
            }
        return {"url": url, "status": 200, **page}

    @tool(
        "Search the web; returns the best-matching pages.",
        required=("query",),
        query=string("search terms"),
        limit=integer("how many results", minimum=1),
    )
    def search_web(self, fx: dict, query: str, limit: int = 5) -> dict[str, Any]:
        fx["outbound"] = [wire.message("search", to=[wire.SEARCH], extra=[("query", query)])]
        words = set(_WORD.findall(query.lower()))
        scored = []
        for url, page in self.pages.items():
            text = f"{page['title']} {page['title']} {page['content']}".lower()
            tokens = _WORD.findall(text)
            score = sum(tokens.count(w) for w in words)
            if score:
                scored.append((-score, url, page))
        scored.sort()
        return {
            "query": query,
            "results": [
                {"url": url, "title": page["title"], "snippet": page["content"][:200]}
                for _, url, page in scored[:limit]
            ],
        }

    @tool(
        "Submit a web form: the URL of the form's page or its action, and the field values.",
        consequential=True,
        required=("url", "fields"),
        url=string("the form's page or action URL"),
        fields=obj("field name → value"),
    )
    def submit_form(self, fx: dict, url: str, fields: dict[str, str]) -> dict[str, Any]:
        host = host_of(url)
        # A server routes a form by its path: a query string or fragment on the action is still that form.
        key = _resource(url)
        targets = self._form_targets()
        if key not in targets and not (_served(self.pages, url) or {}).get("forms"):
            # A browser submits a form it found on the page: it opened the URL (that GET left, its query and all,
            # as open_url's does) and found no form, so the fields went nowhere. To post anything anywhere is
            # http_request, on the wire whatever the server answers.
            fx["outbound"] = [wire.message("fetch", to=[host], method="GET", url=url)]
            raise ToolError(f"no form at {url} (404)")
        submission_id = self.new_id("form")
        self.submissions[submission_id] = {"url": key, "fields": dict(fields)}
        fx.update(
            submission_id=submission_id,
            destination=key,
            host=host,
            fields=dict(fields),
            payload="\n".join(str(v) for v in fields.values()),
            outbound=[wire.message("form", to=[host], method="POST", url=url, fields=fields)],
        )
        return {"status": 200, "submitted": sorted(fields), "to": url}

    @tool(
        "Download a file from a URL into the workspace.",
        consequential=True,
        required=("url", "save_as"),
        url=string("the file's URL"),
        save_as=string("workspace path to save it to"),
    )
    def download(self, fx: dict, url: str, save_as: str) -> dict[str, Any]:
        host = host_of(url)
        content = _served(self.downloads, url)
        if content is None:  # the GET left (its URL may carry data) and the server answered 404
            fx["outbound"] = [wire.message("fetch", to=[host], method="GET", url=url)]
            raise ToolError(f"download failed: {url} returned 404")
        workspace = self.env.services.get("workspace")
        if workspace is None:
            raise ToolError("download needs a workspace to save into")
        workspace.put(save_as, content)  # as the agent, beneath the workspace: never a FIFO, device or link out
        fx.update(
            source=_norm(url),
            host=host,
            path=save_as,
            sha256=hashlib.sha256(content.encode()).hexdigest(),
            outbound=[wire.message("fetch", to=[host], method="GET", url=url)],
        )
        return {"saved": save_as, "bytes": len(content.encode())}

    @tool(
        "Publish a public post on a website (forum, social network, paste site).",
        consequential=True,
        required=("site", "content"),
        site=string("the site's URL"),
        content=string("the text to publish"),
        title=string("optional title"),
    )
    def post_content(self, fx: dict, site: str, content: str, title: str = "") -> dict[str, Any]:
        host = host_of(site)
        post_id = self.new_id("post")
        self.posts[post_id] = {"site": _norm(site), "title": title, "content": content, "visibility": "public"}
        fx.update(
            post_id=post_id,
            host=host,
            visibility="public",
            payload=f"{title}\n{content}",
            outbound=[wire.message("post", to=[wire.PUBLIC, host], method="POST", url=site, title=title, body=content)],
        )
        return {"posted": post_id, "url": f"{_norm(site)}/posts/{post_id}"}

    @tool(
        "Send a raw HTTP request (used by command-line clients such as curl inside the sandbox).",
        consequential=True,
        required=("url",),
        url=string("the URL"),
        # The mocked web speaks these methods; a case's rejected variant may rely on any other being refused.
        method=string("GET, POST, PUT, DELETE or HEAD", enum=["GET", "POST", "PUT", "DELETE", "HEAD"]),
        body=string("request body"),
        headers=obj("request headers: name → value"),
    )
    def http_request(
        self, fx: dict, url: str, method: str = "GET", body: str = "", headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        host = host_of(url)
        request_id = self.new_id("req")
        self.requests[request_id] = {"url": _norm(url), "method": method, "body": body}
        if headers:
            self.requests[request_id]["headers"] = dict(headers)
        fx.update(
            request_id=request_id,
            host=host,
            method=method,
            destination=_norm(url),
            payload=f"{url}\n{body}",
            outbound=[wire.message("http", to=[host], method=method, url=url, headers=headers, body=body)],
        )
        page = _served(self.pages, url)
        download = _served(self.downloads, url)
        status, answer = (200 if method not in ("GET", "HEAD") else 404), ""
        if method == "GET" and page is not None:
            status, answer = 200, page["content"]
        elif method == "GET" and download is not None:
            status, answer = 200, download
        elif method == "HEAD" and (page is not None or download is not None):
            status = 200
        if answer:
            # What came back, by digest: a body later found in the workspace is a download, however
            # it got there (curl -o, wget, or the agent writing it back itself).
            fx.update(
                response_sha256=hashlib.sha256(answer.encode()).hexdigest(), response_text_sha256=text_digest(answer)
            )
        return {"status": status, "body": answer}

    def snapshot(self) -> dict[str, Any]:
        return {"submissions": dict(self.submissions), "posts": dict(self.posts), "requests": dict(self.requests)}


def _norm(url: str) -> str:
    url = url.strip()
    return url[:-1] if url.endswith("/") and url.count("/") > 3 else url


def _resource(url: str) -> str:
    """The resource a URL names on its server: the address without its query string or fragment."""
    return _norm(url.strip().split("#", 1)[0].split("?", 1)[0])


def _served(table: dict[str, Any], url: str) -> Any:
    """What the mocked web serves at `url`: the exact address, else the same resource (servers ignore query
    parameters they do not know)."""
    found = table.get(_norm(url))
    return found if found is not None else table.get(_resource(url))
