"""What every store table builds on: the one metadata with its naming convention (`StoreModel`), the column types
both dialects read alike (`UTCDateTime`, `JSONDocument`) and `table_of`.

The tables are in tables.py (runs, rollouts and what a rollout recorded) and tables_*.py (judging, reviews, the
team, workers); each builds on this module, which imports none of them, and tables.py imports the others so that
whatever reads `StoreModel.metadata` sees the whole schema.
"""

from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import JSON, DateTime, MetaData, Table, Text, TypeDecorator
from sqlalchemy.engine import Dialect
from sqlmodel import SQLModel

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware datetime, stored and returned in UTC on both dialects.

    SQLite has no timezone type (SQLAlchemy stores naive text there), so the value is normalised to
    UTC before it is written and tagged as UTC when read; PostgreSQL's timestamptz returns the
    session's zone, which is converted back to UTC so both dialects hand out the same values.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()} given to the store: pass a timezone-aware one")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class JSONDocument(TypeDecorator[Any]):
    """A JSON value: JSON on PostgreSQL, TEXT holding orjson output on SQLite.

    SQLite gives a column declared JSON numeric affinity, which turns the stored text `10.0` into
    the integer 10 and a 20-digit integer into a rounded float; TEXT affinity keeps the document
    exactly as written (SQLite's JSON functions read TEXT all the same). Python None is SQL NULL on
    both dialects, never the JSON literal null, so `IS NULL` finds absent values.
    """

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(Text())
        return dialect.type_descriptor(JSON(none_as_null=True))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if dialect.name == "sqlite" and value is not None:
            return orjson.dumps(value).decode()
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if dialect.name == "sqlite" and value is not None:
            return orjson.loads(value)
        return value


class StoreModel(SQLModel):
    """Base of every store table: one metadata (with the naming convention) that migrations compare against."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def table_of(model: type[SQLModel]) -> Table:
    """A table model's Table: SQLModel sets `__table__` on every table=True class; its stubs do not declare it."""
    table = model.__table__  # type: ignore[attr-defined]  # a sqlmodel typing gap, not a missing attribute
    assert isinstance(table, Table)
    return table
