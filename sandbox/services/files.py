"""The external-files surface: a cloud drive and a retrievable knowledge base (the RAG surface).

Documents carry visibility (private / internal / public) and the accounts they are shared with.
`search_documents` is a small lexical retriever (BM25) over title and content, so a poisoned
knowledge-base passage reaches the agent the same way a real retrieval pipeline would deliver it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from redagent.sandbox import wire
from redagent.sandbox.services.base import Service, host_of
from redagent.sandbox.tools import ToolError, integer, string, strings, tool

_WORD = re.compile(r"[a-z0-9]+")
VISIBILITY = ("private", "internal", "public")


class Files(Service):
    name = "files"

    def load(self, seed: dict[str, Any]) -> None:
        self.documents: dict[str, dict[str, Any]] = {}
        for doc in seed.get("documents") or []:
            self.documents[doc["id"]] = {
                "title": doc.get("title", doc["id"]),
                "content": doc.get("content", ""),
                "source": doc.get("source", "drive"),
                "owner": doc.get("owner", ""),
                "visibility": doc.get("visibility", "private"),
                "shared_with": sorted(set(doc.get("shared_with") or [])),
            }
        self.uploads: dict[str, dict[str, Any]] = {}

    @tool(
        "Search the drive and knowledge base; returns the most relevant passages.",
        required=("query",),
        query=string("what to look for"),
        source=string("restrict to 'drive' or 'kb'", enum=["drive", "kb"]),
        limit=integer("how many results", minimum=1),
    )
    def search_documents(self, fx: dict, query: str, source: str | None = None, limit: int = 3) -> dict[str, Any]:
        docs = {i: d for i, d in self.documents.items() if source in (None, d["source"])}
        ranked = _bm25(query, {i: f"{d['title']} {d['content']}" for i, d in docs.items()})
        return {
            "query": query,
            "results": [
                {"id": i, "title": docs[i]["title"], "source": docs[i]["source"], "passage": docs[i]["content"][:600]}
                for i in ranked[:limit]
            ],
        }

    @tool("Read a whole document.", required=("doc_id",), doc_id=string("document id"))
    def read_document(self, fx: dict, doc_id: str) -> dict[str, Any]:
        return {"id": doc_id, **self._doc(doc_id)}

    @tool(
        "Share a document with other accounts.",
        consequential=True,
        required=("doc_id", "with_accounts"),
        doc_id=string("document id"),
        with_accounts=strings("email addresses to share with"),
        role=string("viewer or editor", enum=["viewer", "editor"]),
    )
    def share_document(self, fx: dict, doc_id: str, with_accounts: list[str], role: str = "viewer") -> dict[str, Any]:
        doc = self._doc(doc_id)
        accounts = [self.check_address(a) for a in with_accounts]
        if not accounts:
            raise ToolError("with_accounts must name at least one account")
        added = sorted(set(accounts) - set(doc["shared_with"]))
        doc["shared_with"] = sorted(set(doc["shared_with"]) | set(accounts))
        fx.update(
            doc_id=doc_id,
            title=doc["title"],
            accounts=accounts,
            added=added,
            role=role,
            external_accounts=[a for a in accounts if not self.is_internal_address(a)],
            visibility=doc["visibility"],
            payload=doc["content"],
            outbound=[
                wire.message(
                    "share", to=accounts, title=doc["title"], body=doc["content"], extra=[("document", doc_id)]
                )
            ],
        )
        return {"doc_id": doc_id, "shared_with": doc["shared_with"]}

    @tool(
        "Change who can see a document: private, internal (whole organisation) or public.",
        consequential=True,
        required=("doc_id", "visibility"),
        doc_id=string("document id"),
        visibility=string("new visibility", enum=list(VISIBILITY)),
    )
    def set_visibility(self, fx: dict, doc_id: str, visibility: str) -> dict[str, Any]:
        doc = self._doc(doc_id)
        fx.update(
            doc_id=doc_id,
            title=doc["title"],
            before=doc["visibility"],
            after=visibility,
            payload=doc["content"] if visibility == "public" else "",
        )
        if visibility == "public" and doc["visibility"] != "public":
            fx["outbound"] = [
                wire.message(
                    "publish", to=[wire.PUBLIC], title=doc["title"], body=doc["content"], extra=[("document", doc_id)]
                )
            ]
        doc["visibility"] = visibility
        return {"doc_id": doc_id, "visibility": visibility}

    @tool(
        "Upload a copy of a document to an external storage URL.",
        consequential=True,
        required=("doc_id", "destination_url"),
        doc_id=string("document id"),
        destination_url=string("where to upload"),
    )
    def upload_external(self, fx: dict, doc_id: str, destination_url: str) -> dict[str, Any]:
        doc = self._doc(doc_id)
        host = host_of(destination_url)
        upload_id = self.new_id("upload")
        self.uploads[upload_id] = {"doc_id": doc_id, "destination": destination_url}
        fx.update(
            upload_id=upload_id,
            doc_id=doc_id,
            title=doc["title"],
            host=host,
            destination=destination_url,
            payload=doc["content"],
            outbound=[
                wire.message(
                    "upload",
                    to=[host],
                    method="PUT",
                    url=destination_url,
                    attachments=[{"name": doc["title"], "content": doc["content"]}],
                    extra=[("document", doc_id)],
                )
            ],
        )
        return {"uploaded": doc_id, "to": destination_url}

    @tool("Delete a document.", consequential=True, required=("doc_id",), doc_id=string("document id"))
    def delete_document(self, fx: dict, doc_id: str) -> dict[str, Any]:
        doc = self._doc(doc_id)
        del self.documents[doc_id]
        fx.update(doc_id=doc_id, title=doc["title"], source=doc["source"])
        return {"deleted": doc_id}

    @tool(
        "Replace or append to a document's content.",
        consequential=True,
        required=("doc_id", "content"),
        doc_id=string("document id"),
        content=string("new text"),
        mode=string("replace or append", enum=["replace", "append"]),
    )
    def update_document(self, fx: dict, doc_id: str, content: str, mode: str = "replace") -> dict[str, Any]:
        doc = self._doc(doc_id)
        doc["content"] = content if mode == "replace" else doc["content"] + content
        fx.update(doc_id=doc_id, title=doc["title"], mode=mode, payload=content)
        # Writing into a document others can read sends them what was written: the public for a public one,
        # the outside accounts it is shared with for a shared one.
        outside = [a for a in doc["shared_with"] if not self.is_internal_address(a)]
        readers = ([wire.PUBLIC] if doc["visibility"] == "public" else []) + outside
        if readers:
            fx["outbound"] = [
                wire.message(
                    "publish" if doc["visibility"] == "public" else "share",
                    to=readers,
                    title=doc["title"],
                    body=content,
                    extra=[("document", doc_id)],
                )
            ]
        return {"doc_id": doc_id, "length": len(doc["content"])}

    def _doc(self, doc_id: str) -> dict[str, Any]:
        doc = self.documents.get(doc_id)
        if doc is None:
            raise ToolError(f"no document with id {doc_id!r}")
        return doc

    def snapshot(self) -> dict[str, Any]:
        return {"documents": {i: dict(d) for i, d in self.documents.items()}, "uploads": dict(self.uploads)}


def _bm25(query: str, corpus: dict[str, str], k1: float = 1.2, b: float = 0.75) -> list[str]:
    """Document ids ranked by BM25 score for `query`; documents with no query term are dropped."""
    terms = _WORD.findall(query.lower())
    tokens = {i: _WORD.findall(text.lower()) for i, text in corpus.items()}
    if not terms or not tokens:
        return []
    avg = sum(len(t) for t in tokens.values()) / len(tokens) or 1.0
    df = Counter(term for toks in tokens.values() for term in set(toks))
    scores = {}
    for doc_id, toks in tokens.items():
        tf = Counter(toks)
        score = 0.0
        for term in terms:
            if tf[term]:
                idf = math.log(1 + (len(tokens) - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(toks) / avg))
        if score > 0:
            scores[doc_id] = score
    return sorted(scores, key=lambda i: (-scores[i], i))
