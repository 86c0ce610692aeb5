"""Store URLs handed to other processes (store/urls.py): a relative SQLite path made absolute, the rest as given."""

from __future__ import annotations

from pathlib import Path

from redagent.store.urls import absolute_url, dialect


def test_a_relative_sqlite_path_is_made_absolute_against_this_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert absolute_url("sqlite:///.redagent/redagent.db") == f"sqlite:///{tmp_path / '.redagent' / 'redagent.db'}"
    assert absolute_url("sqlite+pysqlite:///x.db") == f"sqlite+pysqlite:///{Path(tmp_path, 'x.db')}"


def test_absolute_sqlite_paths_and_other_databases_are_left_as_given():
    assert absolute_url("sqlite:////srv/stores/a.db") == "sqlite:////srv/stores/a.db"
    # The password stays: the URL is handed to a process that must connect with it.
    assert absolute_url("postgresql+psycopg://u:s3cret@db:5432/r") == "postgresql+psycopg://u:s3cret@db:5432/r"


def test_dialect_names_the_database_whatever_the_driver():
    assert dialect("sqlite:///a.db") == dialect("sqlite+pysqlite:///a.db") == "sqlite"
    assert dialect("postgresql+psycopg://u@h/d") == "postgresql"
