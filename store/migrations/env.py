"""Alembic environment: migrate over the connection redagent hands in, or over a URL for alembic's own CLI.

redagent runs migrations programmatically (redagent.store.migrate): the connection, already inside
the one transaction that covers the whole upgrade, arrives through `config.attributes["connection"]`.
To write a new revision, point alembic at a scratch database instead:

    cfg = redagent.store.migrate.alembic_config(url="sqlite:///scratch.db")
    alembic.command.upgrade(cfg, "head")
    alembic.command.revision(cfg, "add judge labels", autogenerate=True)   # then review it
"""

from alembic import context
from sqlalchemy import Connection

from redagent.store.connect import create_store_engine, resolve_url
from redagent.store.tables import metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        # SQLite cannot ALTER most things in place; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
    )


def run_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option("sqlalchemy.url")
    engine = create_store_engine(resolve_url(url))
    try:
        with engine.connect() as connection:
            _configure(connection)
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
    finally:
        engine.dispose()


def run_offline() -> None:
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option("sqlalchemy.url")
    context.configure(url=resolve_url(url), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
