"""A threaded HTTP server on 127.0.0.1 (port 0) for the tests' model stand-ins: started by `with`, shut down and
closed on exit. Subclasses build their request handler class and hand it to `serve`."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    httpd: ThreadingHTTPServer
    thread: threading.Thread

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def root(self) -> str:
        """The server without the /v1 path (what a mistyped --api-base names)."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def url(self) -> str:
        """What --api-base names."""
        return f"{self.root}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
