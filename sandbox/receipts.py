"""Service receipts: the append-only record of every consequential effect and every attempt at one.

A receipt is written by the sandbox, never by the agent: it is the evidence from which the verifier
decides E. Failed and denied attempts are receipts too (an auditor wants to see them), but
`Receipt.is_effect` is False for them, so no verifier rule counts them unless it asks to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OUTCOMES = ("ok", "failed", "denied")
ACTORS = ("agent", "setup", "system")


@dataclass(frozen=True)
class Receipt:
    id: str
    seq: int
    service: str
    action: str
    args: dict[str, Any]
    outcome: str
    actor: str
    step: int | None  # the trajectory step whose tool call caused it; None for setup
    effect: dict[str, Any] = field(default_factory=dict)  # what the service did, resolved
    error: str | None = None
    via: str | None = None  # the route when not a direct call: "run_command", a look-alike tool name

    @property
    def is_effect(self) -> bool:
        return self.outcome == "ok"

    def to_dict(self) -> dict[str, Any]:
        # Shallow on purpose: receipts are immutable once written, and asdict's deep copy is costly.
        return {
            "id": self.id,
            "seq": self.seq,
            "service": self.service,
            "action": self.action,
            "args": self.args,
            "outcome": self.outcome,
            "actor": self.actor,
            "step": self.step,
            "effect": self.effect,
            "error": self.error,
            "via": self.via,
        }


class ReceiptLog:
    """Append-only: receipts can be added and read, never changed or removed."""

    def __init__(self) -> None:
        self._items: list[Receipt] = []

    def append(
        self,
        *,
        service: str,
        action: str,
        args: dict[str, Any],
        outcome: str,
        actor: str,
        step: int | None,
        effect: dict[str, Any] | None = None,
        error: str | None = None,
        via: str | None = None,
    ) -> Receipt:
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown receipt outcome {outcome!r}")
        if actor not in ACTORS:
            raise ValueError(f"unknown receipt actor {actor!r}")
        seq = len(self._items) + 1
        receipt = Receipt(
            id=f"r{seq}",
            seq=seq,
            service=service,
            action=action,
            args=dict(args),
            outcome=outcome,
            actor=actor,
            step=step,
            effect=dict(effect or {}),
            error=error,
            via=via,
        )
        self._items.append(receipt)
        return receipt

    def __iter__(self):
        return iter(tuple(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def since(self, seq: int) -> list[Receipt]:
        """Receipts written after sequence number `seq` (used to tie receipts to the call that made them)."""
        return self._items[seq:]

    def to_list(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self._items]
