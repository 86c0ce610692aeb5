"""The store's typed errors: what a caller can catch, and the one line a user reads."""

from __future__ import annotations

import re

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

# user:password@ in a string SQLAlchemy could not parse; the password part is masked all the same.
_USERINFO_PASSWORD = re.compile(r"(?<=:)[^:@/]*(?=@)")


def mask_url(url: str) -> str:
    """The URL with its password replaced by ***, safe to print (also when the URL does not parse)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return _USERINFO_PASSWORD.sub("***", url)


class StoreError(Exception):
    """The store cannot be opened, read or written. `str()` is one line naming the URL (password masked)."""

    def __init__(self, url: str, reason: str, *, doing: str = "open") -> None:
        self.url = url
        self.reason = reason
        self.doing = doing
        super().__init__(f"cannot {doing} store {mask_url(url)}: {reason}")


class WriteRejected(StoreError):
    """The database refused a batch; the transaction was rolled back, so nothing of the batch was written."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(url, reason, doing="write to")


class InvalidRecord(ValueError):
    """A record handed to the store breaks an invariant (checked before any SQL is sent)."""


class UnknownRun(LookupError):
    """No run with this id in the store."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run {run_id!r} in the store")
