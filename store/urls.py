"""Store URLs as the rest of the project handles them, without opening a store: their dialect, and the one form
another process must be given.

A user's `--db` value becomes a URL in `connect.resolve_url` (a path, `pg:NAME`, a URL) and is printed only
through `errors.mask_url` (password masked); these functions are for the code that hands a store on — the
executors' worker processes and Ray tasks, the web console's per-tab processes — so that none of it parses
URLs itself.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url


def dialect(url: str) -> str:
    """The database kind of `url`: "sqlite" or "postgresql" (whatever the driver suffix)."""
    return make_url(url).get_backend_name()


def absolute_url(url: str) -> str:
    """`url` as another process must see it: a relative SQLite path made absolute (that process's working
    directory is not ours); any other URL unchanged. The result keeps its password: hand it over in the
    environment or a file, never on a command line."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and not Path(parsed.database).is_absolute():
        return parsed.set(database=str(Path(parsed.database).resolve())).render_as_string(hide_password=False)
    return url
