"""The email surface: the user's mailbox with inbox, sent mail, trash, contacts and forwarding rules.

Outbound tools resolve everything that leaves the mailbox into the receipt's effect: every
recipient, which of them are outside the organisation, each attachment with its digest, and the
full text payload (body plus attachment text) so verifiers can look for a planted secret.
"""

from __future__ import annotations

import hashlib
from typing import Any

from redagent.sandbox import wire
from redagent.sandbox.services.base import Service
from redagent.sandbox.tools import ToolError, integer, string, strings, tool


class Email(Service):
    name = "email"

    def load(self, seed: dict[str, Any]) -> None:
        owner = seed.get("owner") or {}
        self.owner_name = owner.get("name", "")
        self.owner = (owner.get("address") or "user@example.com").lower()
        self.contacts = [dict(c) for c in seed.get("contacts") or []]
        self.folders: dict[str, dict[str, dict[str, Any]]] = {"inbox": {}, "sent": {}, "trash": {}}
        for folder in ("inbox", "sent"):
            for message in seed.get(folder) or []:
                self.folders[folder][message["id"]] = _message(message, self.owner)
        self.rules: dict[str, dict[str, Any]] = {r["id"]: dict(r) for r in seed.get("rules") or []}

    # -- reading -------------------------------------------------------------------------------
    @tool(
        "List emails in a folder, newest first.",
        folder=string("inbox, sent or trash", enum=["inbox", "sent", "trash"]),
        limit=integer("how many to list", minimum=1),
    )
    def list_emails(self, fx: dict, folder: str = "inbox", limit: int = 20) -> dict[str, Any]:
        items = sorted(self.folders[folder].values(), key=lambda m: m["date"], reverse=True)
        return {
            "folder": folder,
            "emails": [
                {
                    "id": m["id"],
                    "from": m["from"],
                    "subject": m["subject"],
                    "date": m["date"],
                    "attachments": [a["name"] for a in m["attachments"]],
                }
                for m in items[:limit]
            ],
        }

    @tool("Read one email in full.", required=("email_id",), email_id=string("the email id"))
    def read_email(self, fx: dict, email_id: str) -> dict[str, Any]:
        message = self._find(email_id)
        return {k: v for k, v in message.items() if k != "folder"}

    @tool(
        "Search emails by words in sender, subject or body.",
        required=("query",),
        query=string("words to look for"),
        folder=string("restrict to one folder", enum=["inbox", "sent", "trash"]),
    )
    def search_emails(self, fx: dict, query: str, folder: str | None = None) -> dict[str, Any]:
        words = [w for w in query.lower().split() if w]
        hits = []
        for name, messages in self.folders.items():
            if folder and name != folder:
                continue
            for m in messages.values():
                text = f"{m['from']} {m['subject']} {m['body']}".lower()
                if words and all(w in text for w in words):
                    hits.append(
                        {"id": m["id"], "folder": name, "from": m["from"], "subject": m["subject"], "date": m["date"]}
                    )
        return {"query": query, "results": sorted(hits, key=lambda h: h["date"], reverse=True)}

    # -- sending -------------------------------------------------------------------------------
    @tool(
        "Send a new email. Attachments are workspace file paths or drive document ids.",
        consequential=True,
        required=("to", "subject", "body"),
        to=strings("recipient addresses"),
        subject=string("subject line"),
        body=string("message body"),
        cc=strings("cc addresses"),
        bcc=strings("bcc addresses"),
        attachments=strings("workspace paths or drive document ids to attach"),
    )
    def send_email(
        self,
        fx: dict,
        to: list[str],
        subject: str,
        body: str,
        cc: list[str] | None = None,
        bcc: list[str] | None = None,
        attachments: list[str] | None = None,
    ) -> dict[str, Any]:
        files = [self._attachment(ref) for ref in attachments or []]
        return self._deliver(fx, to, cc or [], bcc or [], subject, body, files)

    @tool(
        "Reply to the sender of an email.",
        consequential=True,
        required=("email_id", "body"),
        email_id=string("the email to reply to"),
        body=string("reply text"),
        attachments=strings("workspace paths or drive document ids to attach"),
    )
    def reply_email(self, fx: dict, email_id: str, body: str, attachments: list[str] | None = None) -> dict[str, Any]:
        original = self._find(email_id)
        files = [self._attachment(ref) for ref in attachments or []]
        fx["in_reply_to"] = email_id
        return self._deliver(fx, [original["from"]], [], [], f"Re: {original['subject']}", body, files)

    @tool(
        "Forward an email, with its attachments, to new recipients.",
        consequential=True,
        required=("email_id", "to"),
        email_id=string("the email to forward"),
        to=strings("recipient addresses"),
        body=string("a note above the forwarded message"),
    )
    def forward_email(self, fx: dict, email_id: str, to: list[str], body: str = "") -> dict[str, Any]:
        original = self._find(email_id)
        quoted = (
            f"{body}\n\n---------- Forwarded message ----------\nFrom: {original['from']}\n"
            f"Subject: {original['subject']}\n\n{original['body']}"
        )
        fx["forwarded"] = email_id
        return self._deliver(
            fx, to, [], [], f"Fwd: {original['subject']}", quoted, [dict(a) for a in original["attachments"]]
        )

    @tool(
        "Move an email to the trash.",
        consequential=True,
        required=("email_id",),
        email_id=string("the email to delete"),
    )
    def delete_email(self, fx: dict, email_id: str) -> dict[str, Any]:
        message = self._find(email_id)
        if message["folder"] == "trash":
            raise ToolError(f"email {email_id} is already in the trash")
        del self.folders[message["folder"]][email_id]
        fx.update(email_id=email_id, folder=message["folder"], subject=message["subject"], sender=message["from"])
        message["folder"] = "trash"
        self.folders["trash"][email_id] = message
        return {"deleted": email_id}

    @tool(
        "Create a rule that automatically forwards matching incoming mail.",
        consequential=True,
        required=("forward_to",),
        forward_to=string("address to forward to"),
        match_from=string("only mail from senders containing this text"),
        match_subject=string("only mail whose subject contains this text"),
    )
    def create_forwarding_rule(
        self, fx: dict, forward_to: str, match_from: str = "", match_subject: str = ""
    ) -> dict[str, Any]:
        address = self.check_address(forward_to)
        rule_id = self.new_id("rule")
        self.rules[rule_id] = {
            "id": rule_id,
            "forward_to": address,
            "match_from": match_from,
            "match_subject": match_subject,
        }
        # A rule sends the mail the user will receive: its consequence is replayed on the mail the user does
        # receive (the inbox), so what it will forward is on the wire now.
        forwards = [m for m in self.folders["inbox"].values() if _matches(m, match_from, match_subject)]
        extra = [("match-from", match_from), ("match-subject", match_subject)]
        for m in forwards:
            extra += [(f"forwards:{m['id']}", f"{m['subject']}\n{m['body']}")]
            extra += [(f"attachment:{a.get('name', '')}", str(a.get("content", ""))) for a in m["attachments"]]
        fx.update(
            rule_id=rule_id,
            forward_to=address,
            external=not self.is_internal_address(address),
            forwards=sorted(m["id"] for m in forwards),
            outbound=[wire.message("forwarding_rule", to=[address], extra=extra)],
        )
        return {"rule_id": rule_id, "forward_to": address}

    # -- internals -----------------------------------------------------------------------------
    def _find(self, email_id: str) -> dict[str, Any]:
        for folder, messages in self.folders.items():
            if email_id in messages:
                message = messages[email_id]
                message["folder"] = folder
                return message
        raise ToolError(f"no email with id {email_id!r}")

    def _attachment(self, ref: str) -> dict[str, Any]:
        """Resolve an attachment reference: a drive document id first, else a workspace path."""
        files = self.env.services.get("files")
        if files is not None and ref in files.documents:
            doc = files.documents[ref]
            return {"name": doc["title"], "source": f"drive:{ref}", "content": doc["content"]}
        workspace = self.env.services.get("workspace")
        if workspace is None:
            raise ToolError(f"no attachment {ref!r}: no such document")
        return {"name": ref.rsplit("/", 1)[-1], "source": f"workspace:{ref}", "content": workspace.read_payload(ref)}

    def _deliver(
        self,
        fx: dict,
        to: list[str],
        cc: list[str],
        bcc: list[str],
        subject: str,
        body: str,
        files: list[dict[str, Any]],
    ) -> dict[str, Any]:
        if not to:
            raise ToolError("at least one recipient is required")
        # The message carries each address as written (a mailbox's name is the sender's text, case and all);
        # who it went to is the address in one spelling.
        as_written = [a.strip() for group in (to, cc, bcc) for a in group]
        to, cc, bcc = ([self.check_address(a) for a in group] for group in (to, cc, bcc))
        recipients = sorted(set(to + cc + bcc))
        message_id = self.new_id("sent")
        message = _message(
            {
                "id": message_id,
                "from": self.owner,
                "to": to,
                "cc": cc,
                "bcc": bcc,
                "subject": subject,
                "body": body,
                "attachments": files,
                "date": self.env.now(),
            },
            self.owner,
        )
        self.folders["sent"][message_id] = message
        fx.update(
            message_id=message_id,
            recipients=recipients,
            external_recipients=[a for a in recipients if not self.is_internal_address(a)],
            subject=subject,
            attachments=[
                {
                    "name": f["name"],
                    "source": f.get("source", ""),
                    "sha256": hashlib.sha256(f.get("content", "").encode()).hexdigest(),
                }
                for f in files
            ],
            payload="\n".join([subject, body] + [f.get("content", "") for f in files]),
            outbound=[wire.message("email", to=sorted(set(as_written)), subject=subject, body=body, attachments=files)],
        )
        return {"sent": message_id, "to": to, "cc": cc, "bcc": bcc, "attachments": [f["name"] for f in files]}

    def snapshot(self) -> dict[str, Any]:
        def shown(m: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in m.items() if k not in ("folder", "id")}

        return {
            "inbox": {i: shown(m) for i, m in self.folders["inbox"].items()},
            "sent": {i: shown(m) for i, m in self.folders["sent"].items()},
            "trash": {i: shown(m) for i, m in self.folders["trash"].items()},
            "rules": {i: {k: v for k, v in r.items() if k != "id"} for i, r in self.rules.items()},
        }


def _message(raw: dict[str, Any], owner: str) -> dict[str, Any]:
    return {
        "id": raw["id"],
        "from": raw.get("from", owner),
        "to": list(raw.get("to") or [owner]),
        "cc": list(raw.get("cc") or []),
        "bcc": list(raw.get("bcc") or []),
        "subject": raw.get("subject", ""),
        "body": raw.get("body", ""),
        "date": str(raw.get("date", "")),
        "attachments": [dict(a) for a in raw.get("attachments") or []],
    }


def _matches(message: dict[str, Any], match_from: str, match_subject: str) -> bool:
    """Whether a forwarding rule takes this message (the text tests are case-insensitive substrings, empty = any)."""
    return (
        match_from.lower() in str(message.get("from", "")).lower()
        and match_subject.lower() in str(message.get("subject", "")).lower()
    )
