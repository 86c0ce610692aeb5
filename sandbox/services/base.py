"""What every service surface shares: seed-built state, tools found by their `@tool` mark, snapshots."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar

from redagent.sandbox import wire
from redagent.sandbox.tools import ToolError, ToolSpec

if TYPE_CHECKING:
    from redagent.sandbox.host import Host

_ADDRESS = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
_HOST = re.compile(r"^[a-z][a-z0-9+.-]*://([^/:?#]+)", re.IGNORECASE)
_HOSTNAME = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|[0-9a-f:.]+")


class Service:
    """A service surface. Subclasses set `name`, build state from their seed section, mark tools."""

    name: ClassVar[str]
    _specs: ClassVar[list[ToolSpec] | None] = None

    def __init__(self, seed: dict[str, Any], env: Host) -> None:
        self.env = env
        self.load(seed)

    def load(self, seed: dict[str, Any]) -> None:  # pragma: no cover - every service overrides
        raise NotImplementedError

    def snapshot(self) -> dict[str, Any]:  # pragma: no cover - every service overrides
        raise NotImplementedError

    @classmethod
    def tool_specs(cls) -> list[ToolSpec]:
        if cls.__dict__.get("_specs") is None:
            specs = []
            for attr in cls.__dict__.values():
                mark = getattr(attr, "__tool__", None)
                if mark:
                    specs.append(ToolSpec(service=cls.name, handler=attr, **mark))
            cls._specs = specs
        return list(cls._specs or [])

    def offers(self, tool: str) -> bool:
        """Whether this instance shows the agent `tool`: a surface may keep tools for state its seed lacks out of
        the list (a bridged call still reaches the tool and gets its clean refusal)."""
        return True

    # Shared helpers for services that move data outwards.
    def new_id(self, prefix: str) -> str:
        return self.env.new_id(prefix)

    @staticmethod
    def check_address(address: str) -> str:
        if not _ADDRESS.fullmatch(address):
            raise ToolError(f"invalid email address: {address!r}")
        return address.lower()

    def is_internal_address(self, address: str) -> bool:
        domain = address.rsplit("@", 1)[-1].lower()
        return domain in self.env.org_domains


def host_of(url: str) -> str:
    """The host a URL really goes to (sandbox/wire.py: credentials before an `@` are not the host), lower-cased;
    raises a tool error for something that is not a URL."""
    if not _HOST.match(url.strip()):
        raise ToolError(f"not a URL: {url!r}")
    host = wire.host_of(url)
    if not host or not _HOSTNAME.fullmatch(host):
        raise ToolError(f"not a URL: {url!r}")
    return host
