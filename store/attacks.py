"""The adaptive attacker's moves of a run, as the statistics read them.

Exposed as a method of `Store` (this module's `AttackQueries` is one of its mixins). An attacker move is
an ordinary event (role "attacker", free text like every role, so no migration): its text in `text`,
the move itself (move, channel, why, claimed_success, placed, round, usage) in the JSON column
`tool_call`. The rows come back per valid rollout of the run, oldest move first.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select

from redagent.store import tables as t

ATTACKER_ROLE = "attacker"


class AttackQueries:
    """Store methods for the attacker's move events (mixed into `Store`, which provides the plumbing)."""

    if TYPE_CHECKING:
        _reading: Callable[[], AbstractContextManager[Connection]]

    def attacker_moves(self, run_id: str) -> dict[str, list[dict[str, Any]]]:
        """rollout id → its attacker events in order ({idx, text, move: the event's JSON}), for the run's valid
        rollouts that have any; a valid rollout of an adaptive run without one made no move."""
        e, r = t.event, t.rollout
        query = (
            select(e.c.rollout_id, e.c.idx, e.c.text, e.c.tool_call)
            .join(r, r.c.id == e.c.rollout_id)
            .where(r.c.run_id == run_id, r.c.valid, e.c.role == ATTACKER_ROLE)
            .order_by(e.c.rollout_id, e.c.idx)
        )
        out: dict[str, list[dict[str, Any]]] = {}
        with self._reading() as conn:
            for row in conn.execute(query):
                out.setdefault(row.rollout_id, []).append(
                    {"idx": row.idx, "text": row.text, "move": row.tool_call or {}}
                )
        return out
