"""What the console hands to a browser instead of writing on the server's disk (`console --web`).

In a browser the console runs as the server's account on the server's machine: a path typed into it names the
server's disk, not the reader's, and a report written there lands wherever that account may write. So an export
made in a browser is delivered to it as a download (Textual's `deliver_binary`, which the web server streams to
that session's own browser, console/web.py), and nothing is written but a temporary folder that is gone after.
"""

from __future__ import annotations

import io
import re
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App


def report_archive(write: Callable[[Path], list[Path]]) -> bytes:
    """The files `write` puts into a fresh temporary folder, as one zip archive (the folder is removed after)."""
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="redagent-report-") as folder:
        root = Path(folder)
        written = write(root)
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(written):
                archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


def deliver(app: App[Any], data: bytes, name: str, mime_type: str = "application/zip") -> str:
    """Send `data` to the browser as the download `name` (called from a worker thread); returns the name given."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "download"
    app.call_from_thread(app.deliver_binary, io.BytesIO(data), save_filename=safe, mime_type=mime_type)
    return safe
