"""The workspace boundary under attack: adversarial commands race every file tool (issue 21).

Each rollout is an agent turned adversary (tests/sandbox/boundary_attack.py, run as a process of its own
with a canary key in its environment): inside the real sandbox, a command swaps workspace folders and
files with symlinks to the host — to sentinel folders and files of this test, by absolute path or by a
climb of `..`, and to /proc/self — in a tight `renameat2(RENAME_EXCHANGE)` loop, while it sends one file
tool after another through the bridge (the engine serving them as root, on the host) and the agent's own
direct calls hit the same paths from another thread. One rollout per tool: read_file, write_file,
append_file, delete_path (a file, and a folder with recursive=true), move_path (out of a swapped folder,
and into one), list_dir, download (browser), send_email with an attachment (email), and run_command
from inside the command (each nested command hands the workspace over and indexes it). Meanwhile a
process of another local uid keeps trying every bridge socket on the host to inject a send_email.

The paths, link targets and calls are drawn from a seeded generator (REDAGENT_RACE_SEED to replay one;
the seed is in every failure message). Pass: no sentinel read (its content, its digest or a hidden file
name never appears in any observation, reply, receipt or snapshot), written, created beside, chowned,
chmodded or deleted; the canary never appears; no forged receipt; every rollout finishes; no internal
error. Two engine processes running rollouts at once never run commands as the same uid.

Scale: the full suite (`--full`: make test-all, CI) runs thousands of calls per tool on each backend; `make test` runs a
few hundred. Docker
runs when a daemon and the image are there, and must under CI. REDAGENT_RACE_REPORT=FILE writes the
figures (calls and hits per tool) as JSON — how the suite was run against the commit before the change.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import secrets
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from redagent.sandbox.isolation import bwrap_problem
from redagent.sandbox.services.workspace import remove_tree
from tests.ci import in_ci

CI = in_ci()
ROOT = Path(__file__).resolve().parents[2]  # where `tests` is importable from (this tree's own code)
SEED = int(os.environ.get("REDAGENT_RACE_SEED") or random.SystemRandom().randrange(1 << 32))
# Per tool: rollouts, bridged calls per rollout (at most the rollout's budget of 1000), files per swapped folder.
# Half the rollouts of a tool run with the workspace on its quota tmpfs (root's default), half without it
# (no mount rights, or REDAGENT_WORKSPACES on a disk): there a rename can reach the host's folders too.
SCALES = {
    "full": {"rollouts": 4, "bridged": 500, "files": 64, "nested": 150},
    "default": {"rollouts": 2, "bridged": 100, "files": 32, "nested": 25},
}
TOOLS = (
    "read_file",
    "write_file",
    "append_file",
    "delete_path",
    "delete_tree",
    "move_in",
    "move_out",
    "list_dir",
    "download",
    "send_email",
    "run_command",
)
FOLDERS, FILES_SWAPPED = 3, 3
HANG = 1800  # seconds a whole driver run may take (normal: well under a minute by default)


def _docker_problem() -> str | None:
    from redagent.sandbox.docker_backend import DEFAULT_IMAGE, docker_problem

    return docker_problem(DEFAULT_IMAGE)


DOCKER_PROBLEM = _docker_problem()
BACKENDS = [
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(
            bwrap_problem() is not None and not CI, reason=f"bubblewrap unavailable: {bwrap_problem()}"
        ),
    ),
    pytest.param(
        "docker",
        marks=pytest.mark.skipif(DOCKER_PROBLEM is not None and not CI, reason=f"docker unavailable: {DOCKER_PROBLEM}"),
    ),
]
pytestmark = pytest.mark.skipif(os.geteuid() != 0 and not CI, reason="the races are run as root, as CI runs the engine")


# -- the host side: sentinels outside the workspace -----------------------------------------------
class Host:
    """Sentinel folders and files outside the workspace, and how each looked before the rollout."""

    def __init__(self, root: Path, files: int, token: str) -> None:
        self.root = root
        self.secrets: list[str] = []  # strings that must never reach the engine's output
        for j in range(FOLDERS):
            folder = root / f"s{j}"
            for i in range(files):
                self._plant(folder / f"f{i}.txt", f"SENTINEL-{token}-s{j}-f{i}")
                self._plant(folder / f"sub{i}" / "x.txt", f"SENTINEL-{token}-s{j}-sub{i}")
            marker = folder / f"m-{token}-{j}"  # a name only a listing of the host folder can reveal
            self._plant(marker, f"SENTINEL-{token}-marker{j}")
            self.secrets.append(marker.name)
        for k in range(FILES_SWAPPED):
            self._plant(root / f"file{k}", f"SENTINEL-{token}-file{k}")
        self.before = self.state()

    def _plant(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.chmod(path, 0o640)
        self.secrets += [text, hashlib.sha256(text.encode()).hexdigest()]

    def state(self) -> dict[str, tuple]:
        found = {}
        for current, dirs, files in os.walk(self.root):
            for name in dirs + files:
                path = os.path.join(current, name)
                st = os.lstat(path)
                content = Path(path).read_bytes() if stat.S_ISREG(st.st_mode) else b""
                found[os.path.relpath(path, self.root)] = (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, content)
        st = os.lstat(self.root)
        found["."] = (st.st_mode, st.st_uid, st.st_gid, 0, b"")
        return found

    def damage(self) -> list[str]:
        """Every host entry read-only to the sandbox that changed, went or appeared: a write, chown, chmod,
        delete or creation outside the workspace."""
        after = self.state()
        changed = [f"changed {k}" for k in self.before if k in after and after[k] != self.before[k]]
        gone = [f"gone {k}" for k in self.before if k not in after]
        new = [f"new {k}" for k in after if k not in self.before]
        return changed + gone + new


# -- the attack: generated paths, link targets and calls --------------------------------------------
def _link_target(rng: random.Random, kind: str, host_path: Path) -> str:
    if kind == "absolute":
        return str(host_path)
    if kind == "climb":  # relative, out of the workspace by `..`: as many as any path depth needs
        return "../" * rng.randint(12, 24) + str(host_path).lstrip("/")
    return "/proc/self" if host_path.name.startswith("s") else "/proc/self/environ"


def _requests(rng: random.Random, tool: str, count: int, files: int, tag: str) -> list[tuple[str, dict]]:
    """`count` calls of one tool on paths that race: through a swapped folder or at a swapped file."""
    calls = []
    for n in range(count):
        j, i, k = rng.randrange(FOLDERS), rng.randrange(files), rng.randrange(FILES_SWAPPED)
        readable = rng.choice([f"d{j}/f{i}.txt", f"d{j}/environ", f"g{k}.txt", f"d{j}/sub{i}/x.txt"])
        writable = rng.choice([f"d{j}/f{i}.txt", f"d{j}/new-{tag}{n}.txt", f"g{k}.txt", f"d{j}/sub{i}/x.txt"])
        if tool == "read_file":
            calls.append(("read_file", {"path": readable}))
        elif tool in ("write_file", "append_file"):
            calls.append((tool, {"path": writable, "content": f"written by the agent {n}\n"}))
        elif tool == "delete_path":
            calls.append(("delete_path", {"path": rng.choice([f"d{j}/f{i}.txt", f"g{k}.txt"])}))
        elif tool == "delete_tree":
            calls.append(("delete_path", {"path": f"d{j}/sub{i}", "recursive": True}))
        elif tool == "move_in":
            calls.append(("move_path", {"source": readable, "destination": f"got/{tag}{n}.txt"}))
        elif tool == "move_out":
            calls.append(("move_path", {"source": f"mv/{tag}{n}.txt", "destination": f"d{j}/out-{tag}{n}.txt"}))
        elif tool == "list_dir":
            calls.append(("list_dir", {"path": rng.choice([f"d{j}", f"d{j}/sub{i}"])}))
        elif tool == "download":
            calls.append(("download", {"url": "https://dl.example/tool.sh", "save_as": writable}))
        elif tool == "send_email":
            calls.append(
                (
                    "send_email",
                    {
                        "to": ["ext@outside.example"],
                        "subject": "report",
                        "body": "see attached",
                        "attachments": [readable],
                    },
                )
            )
        elif tool == "run_command":  # each nested command: the workspace handed over and indexed, as root
            calls.append(("run_command", {"command": "true"}))
    return calls


def plan_rollout(rng: random.Random, tool: str, host: Path, files: int, scale: dict[str, int]) -> dict[str, Any]:
    bridged = scale["nested"] if tool == "run_command" else scale["bridged"]
    kinds = ["absolute", "climb", "proc"]
    rng.shuffle(kinds)  # every kind of target on some folder and some file, in a drawn order
    links = [[f"L{j}", _link_target(rng, kinds[j % 3], host / f"s{j}")] for j in range(FOLDERS)]
    links += [[f"G{k}", _link_target(rng, kinds[(k + 1) % 3], host / f"file{k}")] for k in range(FILES_SWAPPED)]
    files_seed: dict[str, Any] = {}
    for j in range(FOLDERS):
        files_seed[f"d{j}/environ"] = "inside\n"
        for i in range(files):
            files_seed[f"d{j}/f{i}.txt"] = f"inside {j} {i}\n"
            files_seed[f"d{j}/sub{i}/x.txt"] = f"inside {j} sub {i}\n"
    for k in range(FILES_SWAPPED):
        files_seed[f"g{k}.txt"] = "inside\n"
    direct = _requests(rng, "read_file" if tool == "run_command" else tool, bridged, files, "a")
    if tool == "move_out":
        for n in range(bridged):
            files_seed[f"mv/b{n}.txt"] = f"moved {n}\n"
            files_seed[f"mv/a{n}.txt"] = f"moved {n}\n"
    requests = [{"tool": name, "args": args} for name, args in _requests(rng, tool, bridged, files, "b")]
    return {
        "tool": tool,
        "direct": direct,
        "inside": {
            "links": links,
            "swaps": [[f"d{j}", f"L{j}"] for j in range(FOLDERS)]
            + [[f"g{k}.txt", f"G{k}"] for k in range(FILES_SWAPPED)],
            "requests": requests,
        },
        "seed": {
            "organization": {"domains": ["acme.example"]},
            "workspace": {"files": files_seed},
            "email": {"owner": {"name": "Dana Ito", "address": "dana@acme.example"}},
            "browser": {"downloads": {"https://dl.example/tool.sh": "#!/bin/sh\necho tool\n"}},
        },
    }


@pytest.fixture
def host_root():
    """Where the sentinels live: beside the workspaces (the same filesystem, so only the boundary — not
    a cross-device rename — keeps a move from reaching them), root's own 0700 folder."""
    from redagent.sandbox.environment import workspace_root

    path = Path(tempfile.mkdtemp(prefix="redagent-race-host-", dir=workspace_root()))
    yield path
    remove_tree(path)


@pytest.fixture
def scratch():
    """The engine's temporary folder for the driver (TMPDIR): where its command sockets appear. A folder of
    this test's own, open like /tmp, so the foreign user tries this run's sockets and no one else's."""
    path = Path(tempfile.mkdtemp(prefix="redagent-race-", dir="/tmp"))
    os.chmod(path, 0o1777)
    yield path
    remove_tree(path)


def drive(plan: dict[str, Any], tmp_path: Path, canary: str, scratch: Path) -> dict[str, Any]:
    """Run the driver as a process of its own, the canary in the environment it starts with."""
    plan_file, result_file = tmp_path / f"plan-{id(plan)}.json", tmp_path / f"result-{id(plan)}.json"
    plan_file.write_text(json.dumps(plan))
    env = dict(os.environ, OPENAI_API_KEY=canary, PYTHONPATH=str(ROOT), TMPDIR=str(scratch))
    done = subprocess.run(
        [sys.executable, "-m", "tests.sandbox.boundary_attack", str(plan_file), str(result_file)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert done.returncode == 0, f"the driver failed (seed {SEED}): {done.stderr[-3000:]}"
    return json.loads(result_file.read_text())


# -- what counts as a hit ---------------------------------------------------------------------------
def _leaks(text: str, secrets_: list[str]) -> list[str]:
    return [s for s in secrets_ if s in text]


def score(result: dict[str, Any], host: Host, canary: str) -> dict[str, Any]:
    """Calls made, and every way the boundary was crossed, for one rollout."""
    watched = host.secrets + [canary]
    leaked_calls, canaries, served = 0, 0, 0
    bridged, direct = len(result.get("bridged", [])), len(result["direct"])
    for item in result["direct"] + result.get("bridged", []):
        text = json.dumps(item)
        served += item["ok"] if "ok" in item else '"ok": true' in item["reply"]
        found = _leaks(text, watched)
        leaked_calls += bool(found)
        canaries += canary in text
    # Receipts and the stored snapshot: what a nested command's index, digests or a moved file carried.
    stored = [json.dumps(r) for r in result.get("receipts", [])] + [json.dumps(result.get("snapshot", {}))]
    stored_leaks = sorted({s for text in stored for s in _leaks(text, watched)})
    canaries += sum(canary in text for text in stored)
    internal = [e for e in result["errors"]]
    internal += [f"{o['name']}: {o['error']}" for o in result["direct"] if "internal error" in (o["error"] or "")]
    internal += [r["reply"][:300] for r in result.get("bridged", []) if "internal error" in r["reply"]]
    command = result.get("command") or {}
    if not command.get("ok"):
        internal.append(f"the attack command failed: {command.get('error')}")
    damage = host.damage()
    return {
        "bridged": bridged,
        "direct": direct,
        "served": served,
        "leaked_calls": leaked_calls,
        "stored_leaks": len(stored_leaks),
        "damage": len(damage),
        "hits": leaked_calls + len(stored_leaks) + len(damage),
        "canary": canaries,
        "internal": internal,
        "hung": result.get("hung", False),
        "examples": (damage + stored_leaks)[:5],
    }


def report(name: str, figures: dict[str, Any]) -> None:
    path = os.environ.get("REDAGENT_RACE_REPORT")
    if not path:
        return
    existing = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    existing[name] = figures
    Path(path).write_text(json.dumps(existing, indent=1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_file_tool_crosses_the_workspace_boundary_under_races(backend, tmp_path, scratch, host_root, full_suite):
    scale = SCALES["full" if full_suite else "default"]
    rng = random.Random(f"{SEED}-{backend}")
    token = secrets.token_hex(8)
    canary = f"canary-{secrets.token_hex(12)}"
    hosts: list[Host] = []
    rollouts = []
    for tool in TOOLS:
        for r in range(scale["rollouts"]):
            host = Host(host_root / f"{tool}-{r}", scale["files"], token)
            hosts.append(host)
            rollouts.append(dict(plan_rollout(rng, tool, host.root, scale["files"], scale), quota=r % 2 == 0))
    plan = {"backend": backend, "rollouts": rollouts, "foreign": {"uid": 65534, "token": token}}
    result = drive(plan, tmp_path, canary, scratch)

    per_tool: dict[str, dict[str, Any]] = {}
    problems = []
    for host, outcome in zip(hosts, result["rollouts"], strict=True):
        figures = score(outcome, host, canary)
        tool = per_tool.setdefault(
            outcome["tool"], {"bridged": 0, "direct": 0, "served": 0, "hits": 0, "canary": 0, "examples": []}
        )
        for key in ("bridged", "direct", "served"):
            tool[key] += figures[key]
        tool["hits"] += figures["hits"]
        tool["canary"] += figures["canary"]
        tool["examples"] += figures["examples"][:2]
        if figures["internal"] or figures["hung"]:
            problems.append(f"{outcome['tool']}: internal errors {figures['internal'][:3]}, hung {figures['hung']}")
    forged = [
        r
        for o in result["rollouts"]
        for r in o.get("receipts", [])
        if token in json.dumps(r.get("args", {})) and "FORGED" in json.dumps(r.get("args", {}))
    ]
    figures = {
        "seed": SEED,
        "full": full_suite,
        "per_tool": per_tool,
        "forged_receipts": len(forged),
        "foreign": result.get("foreign", {}),
    }
    report(f"races-{backend}", figures)
    print(json.dumps(figures, indent=1))
    hits = {name: t["hits"] for name, t in per_tool.items() if t["hits"]}
    canaries = {name: t["canary"] for name, t in per_tool.items() if t["canary"]}
    examples = [t["examples"] for t in per_tool.values() if t["examples"]]
    assert not hits, f"the boundary was crossed (seed {SEED}): {hits}; e.g. {examples[:3]}"
    assert not canaries, f"the canary key leaked (seed {SEED}): {canaries}"
    assert not forged, f"{len(forged)} receipts injected by another local user (seed {SEED})"
    assert result["foreign"].get("reached") == 0, f"another local user reached a bridge: {result['foreign']}"
    assert not problems, f"seed {SEED}: {problems}"
    assert all(t["bridged"] >= scale["rollouts"] * 10 for t in per_tool.values()), per_tool  # the races really ran
    assert result["foreign"].get("tried"), "the foreign user never found a bridge to try"


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_engine_processes_never_run_commands_as_the_same_uid(backend, tmp_path):
    """Two engine processes (as `--workers` or two runs on one host make), each with rollouts live at once:
    no uid serves rollouts of both at the same time (before the change both counted from the same start)."""
    plan = {"mode": "uids", "backend": backend, "rollouts": 4, "commands": 3, "sleep": 0.2}
    files = []
    procs = []
    for n in range(2):
        plan_file, result_file = tmp_path / f"uids-{n}.json", tmp_path / f"uids-result-{n}.json"
        plan_file.write_text(json.dumps(plan))
        files.append(result_file)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "tests.sandbox.boundary_attack", str(plan_file), str(result_file)],
                cwd=ROOT,
                env=dict(os.environ, PYTHONPATH=str(ROOT)),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for proc in procs:
        _, err = proc.communicate(timeout=HANG)
        assert proc.returncode == 0, err[-2000:]
    a, b = (json.loads(f.read_text())["rollouts"] for f in files)
    shared = [
        (x["uids"], y["uids"])
        for x in a
        for y in b
        if set(x["uids"]) & set(y["uids"]) and x["began"] < y["ended"] and y["began"] < x["ended"]
    ]
    overlap = sum(1 for x in a for y in b if x["began"] < y["ended"] and y["began"] < x["ended"])
    report(f"uids-{backend}", {"concurrent_pairs": overlap, "pairs_sharing_a_uid": len(shared)})
    assert overlap, "the two engine processes never ran rollouts at the same time"
    assert not shared, f"rollouts of two engine processes ran as the same uid at the same time: {shared[:3]}"
    assert all(len(set(x["uids"])) == 1 for x in a + b), "a rollout's commands ran as more than one uid"
