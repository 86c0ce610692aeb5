"""Alembic revision scripts, oldest first; a package so setuptools installs them with the project."""
