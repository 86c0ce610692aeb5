"""The store: the only part of redagent that speaks SQL (SQLite by default, PostgreSQL by URL).

`open_store(url)` opens and migrates a database and returns a `Store` that writes runs and rollout
batches and answers the engine's and console's queries; `records` holds the plain dataclasses that
cross this boundary, `tables` the schema, `migrations` its Alembic history.
"""

from redagent.store.db import DEFAULT_URL, Store, open_store, resolve_url
from redagent.store.errors import InvalidRecord, StoreError, UnknownRun, WriteRejected
from redagent.store.records import RolloutRecord, RolloutSummary, RunRecord

__all__ = [
    "DEFAULT_URL",
    "InvalidRecord",
    "RolloutRecord",
    "RolloutSummary",
    "RunRecord",
    "Store",
    "StoreError",
    "UnknownRun",
    "WriteRejected",
    "open_store",
    "resolve_url",
]
