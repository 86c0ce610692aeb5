"""What the workspace boundary costs: host CPU per file-tool call, per sandboxed command and per snapshot,
and the default matrix's rollouts/s — for this checkout and, side by side, for another one (the commit
before the boundary was rebuilt: realpath checks, path-based reads and writes, a chown walk per command).

    python benchmarks/sandbox_boundary.py [--before TREE] [--calls 2000] [--commands 40] [--rounds 3]

TREE is a checkout of another commit (`git worktree add /tmp/pre COMMIT`); each measurement runs in a
fresh interpreter importing `redagent` from that tree (its own sandbox/, engine/, …), alternating between
the trees round by round, and the median of the rounds is printed (the machine may be shared). CPU is the
engine process's own (user + system, every thread); a command's line adds its children's (prlimit,
setpriv, bwrap and what runs inside). The file tools act on a workspace of 200 files, two folders deep,
as the agent (root: with the rollout's filesystem uid where the tree has one).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent


def _use_tree(tree: str) -> None:
    """Import `redagent` (and every subpackage: `redagent.sandbox` is TREE/sandbox) from `tree`, whatever
    is installed."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "redagent", f"{tree}/redagent/__init__.py", submodule_search_locations=[f"{tree}/redagent", tree]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["redagent"] = package
    spec.loader.exec_module(package)
    package.__path__ = [f"{tree}/redagent", tree]  # a pre-change tree's own __init__ may not say so
    sys.path.insert(0, str(HERE))


def _cpu() -> float:
    return time.process_time()


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_tools(calls: int, commands: int) -> dict[str, float]:
    """Microseconds of this process's CPU per call of each file tool, per command and per snapshot."""
    from redagent.sandbox.environment import Environment

    files = {f"notes/d{i % 10}/f{i}.txt": f"line {i}\n" * 20 for i in range(200)}
    env = Environment(
        {
            "workspace": {"files": files},
            "browser": {"downloads": {"https://dl.example/x": "x\n"}},
            "email": {"owner": {"name": "Dana", "address": "dana@acme.example"}},
            "organization": {"domains": ["acme.example"]},
        },
        ["workspace", "browser", "email"],
    )
    results: dict[str, float] = {}
    try:

        def per_call(name: str, make_args) -> None:
            for i in range(20):  # warm: caches, imports, the first open of each folder
                env.gateway.call(name, make_args(i), step=1)
            started = _cpu()
            for i in range(calls):
                outcome = env.gateway.call(name, make_args(i), step=1)
                assert outcome.ok, (name, outcome.error)
            results[name] = (_cpu() - started) / calls * 1e6

        per_call("read_file", lambda i: {"path": f"notes/d{i % 10}/f{i % 200}.txt"})
        per_call("list_dir", lambda i: {"path": f"notes/d{i % 10}"})
        per_call("write_file", lambda i: {"path": f"out/d{i % 10}/w{i % 300}.txt", "content": "written\n" * 10})
        per_call("append_file", lambda i: {"path": f"out/d{i % 10}/a{i % 300}.txt", "content": "more\n"})
        per_call(
            "move_path",
            lambda i: {
                "source": f"out/d{i % 10}/w{i % 300}.txt" if i % 2 == 0 else f"moved/{i - 1}.txt",
                "destination": f"moved/{i}.txt" if i % 2 == 0 else f"out/d{(i - 1) % 10}/w{(i - 1) % 300}.txt",
            },
        )
        per_call("download", lambda i: {"url": "https://dl.example/x", "save_as": f"dl/{i % 50}.txt"})
        per_call(
            "send_email",
            lambda i: {
                "to": ["a@acme.example"],
                "subject": "s",
                "body": "b",
                "attachments": [f"notes/d{i % 10}/f{i % 200}.txt"],
            },
        )
        for i in range(calls):  # what delete_path removes is made outside the measurement
            env.gateway.call("write_file", {"path": f"gone/g{i}.txt", "content": "x"}, step=1)
        started = _cpu()
        for i in range(calls):
            assert env.gateway.call("delete_path", {"path": f"gone/g{i}.txt"}, step=1).ok
        results["delete_path"] = (_cpu() - started) / calls * 1e6
        started = _cpu()
        for _ in range(20):
            env.snapshot()
        results["snapshot (600 files)"] = (_cpu() - started) / 20 * 1e6
        env.gateway.call("run_command", {"command": "true"}, step=1)  # the first pays for the quota mount
        own, children = _cpu(), _children()
        for _ in range(commands):
            outcome = env.gateway.call("run_command", {"command": "true"}, step=1)
            assert json.loads(outcome.observation)["exit_code"] == 0, outcome.observation
        results["run_command: engine"] = (_cpu() - own) / commands * 1e6
        results["run_command: engine + sandbox"] = (_cpu() - own + _children() - children) / commands * 1e6
    finally:
        env.close()
    return results


def measure_matrix(concurrency: int) -> dict[str, float]:
    from engine_throughput import measure

    with tempfile.TemporaryDirectory() as folder:
        whole = measure(f"sqlite:///{folder}/bench.db", concurrency)
    return {
        "rollouts": whole.done,
        "seconds": whole.elapsed,
        "rollouts/s": whole.done / whole.elapsed,
        "wrong": whole.wrong,
    }


def worker(tree: str, what: str, options: argparse.Namespace) -> None:
    _use_tree(tree)
    result = measure_tools(options.calls, options.commands) if what == "tools" else measure_matrix(options.concurrency)
    print(json.dumps(result))


def run(tree: Path, what: str, options: argparse.Namespace) -> dict[str, float]:
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--worker",
            str(tree),
            "--what",
            what,
            "--calls",
            str(options.calls),
            "--commands",
            str(options.commands),
            "--concurrency",
            str(options.concurrency),
        ],
        capture_output=True,
        text=True,
        cwd=tree,
    )
    if done.returncode != 0:
        raise SystemExit(f"measuring {what} in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout of the commit to compare with")
    parser.add_argument("--calls", type=int, default=2000, help="calls per file tool")
    parser.add_argument("--commands", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-matrix", action="store_true", help="file tools and commands only")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--what", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:
        worker(options.worker, options.what, options)
        return
    trees = {"after": CHECKOUT} | ({"before": options.before.resolve()} if options.before else {})
    kinds = ["tools"] + ([] if options.no_matrix else ["matrix"])
    rounds: dict[tuple[str, str], list[dict[str, float]]] = {}
    for number in range(options.rounds):
        for what in kinds:
            for name in list(trees) if number % 2 == 0 else list(reversed(trees)):  # alternate who goes first
                rounds.setdefault((name, what), []).append(run(trees[name], what, options))
    print(
        f"host CPU (this machine, {os.cpu_count()} cores; median of {options.rounds} rounds); "
        f"trees: {', '.join(f'{k} = {v}' for k, v in trees.items())}"
    )
    tools = {
        name: {key: statistics.median(r[key] for r in rounds[(name, "tools")]) for key in rounds[(name, "tools")][0]}
        for name in trees
    }
    header = f"{'':42s}" + "".join(f"{name:>12s}" for name in trees) + ("      change" if len(trees) == 2 else "")
    print(header)
    for key in tools["after"]:
        values = [tools[name][key] for name in trees]
        change = f"{values[0] / values[1] - 1:+11.1%}" if len(values) == 2 and values[1] else ""
        print(f"{key + ' (µs CPU/call)':42s}" + "".join(f"{v:12.1f}" for v in values) + f" {change}")
    if "matrix" in kinds:
        matrix = {name: [r["rollouts/s"] for r in rounds[(name, "matrix")]] for name in trees}
        values = [statistics.median(matrix[name]) for name in trees]
        change = f"{values[0] / values[1] - 1:+11.1%}" if len(values) == 2 else ""
        print(f"{'default matrix (rollouts/s)':42s}" + "".join(f"{v:12.1f}" for v in values) + f" {change}")
        for name in trees:
            runs = rounds[(name, "matrix")]
            print(
                f"  {name}: {runs[0]['rollouts']:.0f} rollouts, E != expected_E: "
                f"{max(r['wrong'] for r in runs):.0f}; each round: {', '.join(f'{v:.1f}' for v in matrix[name])}"
            )


if __name__ == "__main__":
    main()
