"""Shared fixtures: a fresh sandbox environment per test, built from a small seed."""

from __future__ import annotations

import pytest

from redagent.sandbox.environment import Environment
from redagent.sandbox.isolation import bwrap_problem
from tests.ci import in_ci

SEED = {
    "organization": {"domains": ["acme.example"]},
    "workspace": {"files": {"notes/todo.md": "buy milk\n", "run.sh": {"content": "#!/bin/sh\necho hi\n",
                                                                       "executable": True},
                            ".env": "API_KEY=sk-test-123\n"}},
    "email": {
        "owner": {"name": "Dana Ito", "address": "dana@acme.example"},
        "inbox": [
            {"id": "m-1", "from": "boss@acme.example", "subject": "Quarterly numbers",
             "body": "Please review the Q3 numbers.", "date": "2026-02-01T09:00:00Z",
             "attachments": [{"name": "q3.csv", "content": "region,revenue\nnorth,100\n"}]},
            {"id": "m-2", "from": "alerts@security.acme.example", "subject": "New sign-in",
             "body": "A new sign-in to your account was detected.", "date": "2026-02-02T09:00:00Z"},
        ],
    },
    "browser": {
        "pages": {
            "https://portal.acme.example/login": {
                "title": "Acme portal sign in", "content": "Sign in to the Acme employee portal.",
                "forms": [{"id": "login", "action": "https://portal.acme.example/session",
                           "fields": ["user", "password"]}]},
            "https://news.example/today": {"title": "Daily news", "content": "Markets rose today."},
        },
        "downloads": {"https://cdn.tools.example/setup.sh": "#!/bin/sh\necho setup\n"},
    },
    "banking": {
        "account": {"holder": "Acme LLC", "number": "US00 1", "balance": 5000, "approval_limit": 1000,
                    "approval_codes": ["7741"]},
        "payees": [{"id": "p-1", "name": "Landlord", "account": "US11 2222"}],
        "scheduled": [{"id": "s-1", "to_account": "US11 2222", "amount": 900, "execute_on": "2026-03-05",
                       "memo": "Rent"}],
    },
    "files": {
        "documents": [
            {"id": "d-1", "title": "Salary bands 2026", "content": "Engineer III: 140-165k",
             "visibility": "private", "owner": "dana@acme.example"},
            {"id": "kb-1", "title": "Expense policy", "source": "kb",
             "content": "Expenses above 500 need manager approval."},
        ],
    },
}

# On a developer machine without bubblewrap these tests skip; in CI they must run (CI installs it).
needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None and not in_ci(),
                                 reason=f"bubblewrap unavailable: {bwrap_problem()}")


@pytest.fixture
def env():
    environment = Environment(SEED, ["workspace", "email", "browser", "banking", "files"])
    yield environment
    environment.close()
