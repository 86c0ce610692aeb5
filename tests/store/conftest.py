"""Store fixtures: an opened store on each database (via tests.dbs.store_url), closed after the test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from redagent.store import Store, open_store
from tests.dbs import store_url  # noqa: F401


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:  # noqa: F811
    opened = open_store(store_url)
    yield opened
    opened.close()
