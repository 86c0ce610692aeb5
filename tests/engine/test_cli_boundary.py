"""What a real agent CLI leaves in its private folders is read back beneath a held fd, never through a link:
a CLI turned adversarial by the attacks it meets may plant links, FIFOs and huge files there (issue 21)."""

from __future__ import annotations

import json
import os
import sqlite3

from redagent.engine.harnesses.cli.hermes import Hermes
from redagent.engine.harnesses.cli.isolation import Launch, turn_end
from redagent.engine.harnesses.cli.profile import newest_text


def test_the_cli_home_is_read_beneath_and_never_through_a_link(tmp_path):
    home = tmp_path / "home"
    sessions = home / ".codex" / "sessions" / "2026"
    sessions.mkdir(parents=True)
    (sessions / "rollout-1.jsonl").write_text('{"type": "mine"}\n')
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"type": "host secret"}\n')
    os.symlink(str(secret), sessions / "rollout-2.jsonl")
    os.mkfifo(sessions / "rollout-3.jsonl")
    os.symlink(str(tmp_path), home / ".codex" / "sessions" / "up")  # a folder link: never walked into
    text = newest_text(home, ".codex/sessions/**/rollout-*.jsonl")
    assert text == '{"type": "mine"}\n'
    os.utime(sessions / "rollout-1.jsonl", (1, 1))
    (home / ".codex" / "sessions" / "rollout-9.jsonl").write_text("x" * (20 << 20))
    clipped = newest_text(home, ".codex/sessions/**/rollout-*.jsonl")
    assert clipped is not None and len(clipped) < 17 << 20 and "bytes not read" in clipped


def test_usage_json_planted_as_a_link_is_not_read(tmp_path):
    sockets = tmp_path / "sockets"
    sockets.mkdir()
    os.symlink("/proc/self/environ", sockets / "usage.json")

    class Ended:
        cpu_ticks, peak_rss, killed_for, name = 0, 0, None, "cli"
        launch = Launch([], {}, tmp_path, tmp_path, sockets)

    finished = turn_end(Ended(), 0, b"", b"", 0.0, "")
    assert finished.cpu_seconds == 0 and not os.path.lexists(sockets / "usage.json")
    (sockets / "usage.json").write_text(json.dumps({"cpu_seconds": 2.5}))
    assert turn_end(Ended(), 0, b"", b"", 0.0, "").cpu_seconds == 2.5


def test_hermes_state_is_copied_out_beneath_the_home(tmp_path):
    home = tmp_path / "home"
    (home / ".hermes").mkdir(parents=True)
    host = tmp_path / "host.db"
    with sqlite3.connect(host) as con:
        con.execute("create table messages (content text)")
        con.execute("insert into messages values ('host secret')")
    os.symlink(str(host), home / ".hermes" / "state.db")
    assert Hermes().transcript(home, "the output") == "the output"
    os.unlink(home / ".hermes" / "state.db")
    with sqlite3.connect(home / ".hermes" / "state.db") as con:
        con.execute("create table messages (content text)")
        con.execute("insert into messages values ('the session')")
    rows = Hermes().transcript(home, "the output")
    assert rows == [{"table": "messages", "content": "the session"}]
