"""Alembic migrations of the store's schema (run programmatically by redagent.store.migrate)."""
