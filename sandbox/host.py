"""What the services and the tool gateway use of the environment that holds them.

`environment.Environment` builds the five services and the gateway and hands itself to each; they see it only
through `Host`, so neither imports environment.py and the sandbox's modules form no cycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from redagent.sandbox.isolation import Backend, Bridge
from redagent.sandbox.receipts import ReceiptLog


class Host(Protocol):
    workspace_dir: Path
    isolation: Backend
    org_domains: set[str]  # the organisation's own domains (lower case): mail there stays inside
    receipts: ReceiptLog
    bridge: Bridge | None  # set by the gateway while a command runs: the command's way back to the services
    services: dict[str, Any]  # name → service (services/base.py `Service`)

    def new_id(self, prefix: str) -> str: ...

    def now(self) -> str: ...
