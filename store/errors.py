"""The store's typed errors: what a caller can catch, and the one line a user reads."""

from __future__ import annotations

import re

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from redagent.errors import UserError

# user:password@ in a string SQLAlchemy could not parse; the password part is masked all the same.
_USERINFO_PASSWORD = re.compile(r"(?<=:)[^:@/]*(?=@)")


def mask_url(url: str) -> str:
    """The URL with its password replaced by ***, safe to print (also when the URL does not parse)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return _USERINFO_PASSWORD.sub("***", url)


class StoreError(UserError):
    """The store cannot be opened, read or written. `str()` is one line naming the URL (password masked)."""

    title = "Store error"

    def __init__(self, url: str, reason: str, *, doing: str = "open") -> None:
        self.url = url
        self.reason = reason
        self.doing = doing
        super().__init__(f"cannot {doing} store {mask_url(url)}: {reason}")


class WriteRejected(StoreError):
    """The database refused a batch; the transaction was rolled back, so nothing of the batch was written."""

    title = "Store write refused"

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(url, reason, doing="write to")


class InvalidRecord(UserError, ValueError):
    """A record handed to the store breaks an invariant (checked before any SQL is sent)."""

    title = "Invalid record"


class UnknownRun(UserError, LookupError):
    """No run with this id in the store."""

    title = "Unknown run"

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run {run_id!r} in the store")


class EvidenceDiffers(UserError):
    """A run's stored evidence differs from its hash chain (store/evidence.py): `line` names the first record."""

    title = "Evidence changed"

    def __init__(self, run_id: str, first: str, *, doing: str = "") -> None:
        self.run_id, self.first = run_id, first
        tail = f" ({doing}; `redagent runs verify {run_id}` lists every difference)" if doing else ""
        super().__init__(f"run {run_id}: its evidence differs from its chain at {first}{tail}")


# ---------------------------------------------------------------- human audit


class AuditError(UserError, ValueError):
    """A request about a human audit that cannot be honoured; `str()` is one line for the user.

    Messages never name another reviewer or show another reviewer's label: they may be read by a
    blinded reviewer.
    """

    title = "Audit error"


class UnknownAudit(AuditError, LookupError):
    def __init__(self, audit_id: str) -> None:
        self.audit_id = audit_id
        super().__init__(f"no audit {audit_id!r} in the store")


class UnknownReviewer(AuditError):
    def __init__(self, audit_id: str, name: str, role: str = "reviewer") -> None:
        self.audit_id, self.name, self.role = audit_id, name, role
        super().__init__(
            f"{name!r} is not {'the adjudicator' if role == 'adjudicator' else 'a reviewer'} of audit {audit_id}"
        )


class ItemNotInQueue(AuditError):
    def __init__(self, audit_id: str, item_id: object, name: str, queue: str = "review") -> None:
        self.audit_id, self.item_id, self.name, self.queue = audit_id, item_id, name, queue
        where = f"{name}'s queue" if queue == "review" else "the adjudication queue"
        super().__init__(f"item {item_id} is not in {where} for audit {audit_id}")


class LabelAlreadySubmitted(AuditError):
    def __init__(self, item_id: int, name: str) -> None:
        self.item_id, self.name = item_id, name
        super().__init__(
            f"item {item_id}: {name} already submitted a label (labels are write-once: correct it with a reason)"
        )


class BadLabel(AuditError):
    def __init__(self, value: object, allowed: tuple[str, ...]) -> None:
        self.value = value
        super().__init__(f"bad label {value!r} (one of {', '.join(allowed)})")


class CorrectionWithoutReason(AuditError):
    def __init__(self, item_id: int) -> None:
        self.item_id = item_id
        super().__init__(f"item {item_id}: a correction needs a reason")


class NothingToCorrect(AuditError):
    def __init__(self, item_id: int, name: str) -> None:
        self.item_id, self.name = item_id, name
        super().__init__(f"item {item_id}: {name} has no label to correct yet (submit one first)")


class LabelConflict(AuditError):
    def __init__(self, item_id: int, name: str) -> None:
        self.item_id, self.name = item_id, name
        super().__init__(f"item {item_id}: another label by {name} was saved at the same time; reload and retry")


class AuditClosed(AuditError):
    """A label, correction or decision for an audit that is closed (migration 0012: every item has its final label,
    or the owner closed it). The database refuses the write; this is its refusal as one line."""

    def __init__(self, audit_id: str) -> None:
        self.audit_id = audit_id
        super().__init__(
            f"audit {audit_id} is closed: every item has its final label, and nothing more is written to it "
            f"(the store's owner re-opens it: redagent audit reopen {audit_id} --reason …)"
        )


class AuditStateError(AuditError):
    """A close or re-open that cannot be made: the audit is already so, no reason, or not the owner."""


class EvidenceChanged(AuditError):
    """A label or decision on an item whose evidence changed (a recorded correction) after the audit was drawn: the
    database refuses it, since the reviewer would label a version the audit never showed anyone else."""

    def __init__(self, audit_id: str, item_id: int | None) -> None:
        self.audit_id, self.item_id = audit_id, item_id
        which = f"item {item_id}" if item_id is not None else "an item"
        super().__init__(
            f"audit {audit_id}: the evidence of {which} changed after the audit was drawn, so nothing is labelled on "
            "it (the owner draws the audit again)"
        )
