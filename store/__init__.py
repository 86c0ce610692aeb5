"""SQLModel tables, sessions and queries (built in a later issue)."""
