"""The service bridge and the gateway survive any request: an error reply or a failed receipt, never a
dead thread — and the next request is served as if nothing had happened."""

from __future__ import annotations

import dataclasses
import json
import shlex
import socket
import threading

import orjson
import pytest

from redagent.sandbox import isolation
from redagent.sandbox.isolation import BridgeAnswer, _BridgeServer
from tests.conftest import needs_bwrap

VALID = b'{"tool": "read_file", "args": {"path": "notes/todo.md"}}\n'


def ask(path, payload: bytes, *, shut: bool = True) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(30)
        client.connect(str(path))
        try:
            client.sendall(payload)
            if shut:
                client.shutdown(socket.SHUT_WR)
        except BrokenPipeError:  # refused before it was all sent: the reply is waiting all the same
            pass
        data = b""
        while not data.endswith(b"\n"):
            chunk = client.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


@pytest.fixture
def server(env, tmp_path):
    bridge = _BridgeServer(tmp_path / "svc.sock", lambda request: env.gateway._bridged(request, 4))
    yield bridge
    bridge.close()
    assert not bridge._thread.is_alive()


@pytest.mark.parametrize(
    "payload, says",
    [
        (b"[]\n", "need {"),
        (b"null\n", "need {"),
        (b"not json at all\n", "not JSON"),
        (b"\xff\xfe\x00binary\x00\n", "not JSON"),
        (b"", "not JSON"),
        (b'{"tool": 1, "args": {}}\n', "need {"),
        (b'{"tool": "read_file", "args": []}\n', "need {"),
        (b'{"cli": ["fs", 3]}\n', "need {"),
        (b'{"cli": "fs read x"}\n', "need {"),
        (b'{"tool": "no_such_tool", "args": {}}\n', "unknown tool"),
        (b'{"tool": "read_file", "args": {"path": "\\ud800"}}\n', "not JSON"),  # a lone surrogate
        (b'{"tool": "read_file", "args": {"path": NaN}}\n', "not JSON"),
        (b"[" * 5000 + b"]" * 5000 + b"\n", "not JSON"),  # nesting past any parser's depth
        (b'{"tool": "read_file", "args": {"path": 7}}\n', "invalid arguments"),
        (b'{"tool": "read_file", "args": {"path": "a\\u0000b"}}\n', "NUL"),
        (b'{"cli": ["fs", "--help"]}\n', ""),
    ],
)
def test_a_malformed_request_gets_an_error_and_the_bridge_goes_on(server, payload, says):
    reply = ask(server.path, payload)
    assert reply["ok"] is False and says in reply["output"], reply
    assert ask(server.path, VALID) == {
        "ok": True,
        "output": orjson.dumps({"path": "notes/todo.md", "content": "buy milk\n"}).decode(),
    }


def test_a_huge_line_is_refused_without_reading_it_all(server):
    reply = ask(server.path, b'{"tool": "read_file", "args": {"path": "' + b"a" * (6 << 20) + b'"}}\n')
    assert reply == {"ok": False, "output": "bad request: larger than 4 MiB"}
    assert ask(server.path, VALID)["ok"]


def test_a_client_that_never_finishes_is_cut_off(monkeypatch, env, tmp_path):
    monkeypatch.setattr(isolation, "BRIDGE_REQUEST_SECONDS", 0.3)
    bridge = _BridgeServer(tmp_path / "svc.sock", lambda request: env.gateway._bridged(request, 1))
    try:
        reply = ask(bridge.path, b'{"tool": "read_file"', shut=False)  # and then silence
        assert reply == {"ok": False, "output": "bad request: not received within 0.3 s"}
        assert ask(bridge.path, VALID)["ok"]
    finally:
        bridge.close()


def test_a_bridge_that_raises_is_an_error_reply(tmp_path):
    def broken(request):
        raise AttributeError("'list' object has no attribute 'get'")

    bridge = _BridgeServer(tmp_path / "svc.sock", broken)
    try:
        for _ in range(3):
            reply = ask(bridge.path, VALID)
            assert reply["ok"] is False and reply["output"].startswith("service error: AttributeError")
    finally:
        bridge.close()
    assert not bridge._thread.is_alive()


def test_calls_per_command_are_bounded(monkeypatch, tmp_path):
    monkeypatch.setattr(isolation, "BRIDGE_CALL_LIMIT", 3)
    bridge = _BridgeServer(tmp_path / "svc.sock", lambda request: BridgeAnswer(ok=True, output="fine"))
    try:
        assert [ask(bridge.path, VALID)["ok"] for _ in range(5)] == [True, True, True, False, False]
        assert "too many service calls" in ask(bridge.path, VALID)["output"]
        assert len(bridge.answers) == 3
    finally:
        bridge.close()


def test_close_wakes_a_connection_in_progress(tmp_path):
    bridge = _BridgeServer(tmp_path / "svc.sock", lambda request: BridgeAnswer(ok=True, output="fine"))
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(bridge.path))
    client.sendall(b'{"tool"')  # the server is now waiting for the rest
    closer = threading.Thread(target=bridge.close)
    closer.start()
    closer.join(isolation.BRIDGE_REQUEST_SECONDS / 2)  # well before the request deadline would end it
    assert not closer.is_alive() and not bridge._thread.is_alive()
    client.close()


# -- the gateway ---------------------------------------------------------------------------------
def test_gateway_survives_any_call(env):
    cases = [
        ({"x": 1}, {}, "tool name must be a string"),
        (None, {}, "tool name must be a string"),
        ("read_file", [], "arguments must be a JSON object"),
        ("read_file", "path", "arguments must be a JSON object"),
        ("write_file", {"path": "a", "content": "\ud800"}, "arguments cannot be stored"),
        ("run_command", {"command": "true", "timeout": 10**30}, "arguments cannot be stored"),
        ("write_file", {"path": "a", "content": float("nan")}, "invalid arguments"),
    ]
    for name, args, says in cases:
        outcome = env.gateway.call(name, args, step=1)
        assert not outcome.ok and says in outcome.error, (name, args, outcome.error)
        orjson.dumps([r.to_dict() for r in env.receipts])  # every receipt stays storable

    def broken(self, fx, path, content):
        raise KeyError("boom")

    env.gateway.specs["write_file"] = dataclasses.replace(env.gateway.specs["write_file"], handler=broken)
    outcome = env.gateway.call("write_file", {"path": "a", "content": "b"}, step=2)
    assert not outcome.ok and outcome.error == "internal error in write_file: KeyError: 'boom'"
    receipt = list(env.receipts)[-1]
    assert receipt.action == "write_file" and receipt.outcome == "failed" and receipt.step == 2
    assert env.gateway.call("read_file", {"path": "notes/todo.md"}, step=3).ok


# -- through the sandbox -------------------------------------------------------------------------
SCRIPT = r"""
import socket, sys
def send(data, close=True):
    s = socket.socket(socket.AF_UNIX); s.connect('/run/redagent/svc.sock'); s.sendall(data)
    if close: s.shutdown(socket.SHUT_WR)
    out = b''
    while not out.endswith(b'\n'):
        c = s.recv(65536)
        if not c: break
        out += c
    print(out.decode().strip()[:80])
send(b'[]\n'); send(b'\xff\x00garbage\n'); send(b'{"tool": 5}\n'); send(b'')
send(b'{"tool": "run_command", "args": {"command": "echo nested"}}\n')
"""


@needs_bwrap
def test_hostile_clients_inside_the_sandbox_do_not_stop_the_next_call(env):
    env.gateway.call("write_file", {"path": "hostile.py", "content": SCRIPT}, step=1)
    outcome = env.gateway.call(
        "run_command",
        {"command": 'python3 hostile.py; rtool read_file \'{"path": "notes/todo.md"}\'', "timeout": 30},
        step=2,
    )
    result = orjson.loads(outcome.observation)
    assert not result["timed_out"] and result["exit_code"] == 0, result
    lines = result["stdout"].splitlines()
    assert all('"ok": false' in line for line in lines[:4]), lines
    assert '"ok": true' in lines[4] and "nested" in lines[4]  # one level of run_command through the bridge
    assert orjson.loads(lines[5])["content"] == "buy milk\n"


@needs_bwrap
def test_commands_through_the_bridge_nest_one_level_and_end_with_their_parent(env):
    inner = {"command": 'rtool run_command \'{"command": "echo too deep"}\'; sleep 30', "timeout": 60}
    script = f"rtool run_command {shlex.quote(json.dumps(inner))}"
    outcome = env.gateway.call("run_command", {"command": script, "timeout": 2}, step=1)
    assert orjson.loads(outcome.observation)["timed_out"] is True
    # The nested `sleep 30` was killed at its parent's 2 s deadline (timed out, 124), not left to finish.
    nested = [r for r in env.receipts if r.action == "run_command" and r.via == "run_command"]
    assert len(nested) == 1 and nested[0].effect["timed_out"] is True
    assert nested[0].effect["exit_code"] == 124 and nested[0].effect["bridged_calls"] == []
    # The third level never ran.
    assert not any((r.effect or {}).get("command") == "echo too deep" for r in env.receipts)
