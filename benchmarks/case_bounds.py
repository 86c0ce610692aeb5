"""What a case file can make the engine do, timed: the real libraries' maxima beside the loader's limits, the
verifier regex matcher's worst case at its size cap, and the hostile files of issue 21 through the real CLI —
validate and check times, how long a run and a check take to stop on a signal.

    python benchmarks/case_bounds.py [--skip-library] [--pythonpath DIR] [--cap SECONDS]

--pythonpath runs the CLI from another tree (a folder holding a `redagent` package laid out as installed,
e.g. symlinks to an older checkout's folders) to time the same files before a change; a command still
running after --cap seconds is stopped and shown as "> cap".
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the hostile corpus lives with the tests

from redagent.cases import loader  # noqa: E402
from redagent.sandbox import pattern  # noqa: E402
from tests.cases.hostile.corpus import CHECKED, CORPUS, plan_bomb, write  # noqa: E402


def library_maxima() -> None:
    """The real maxima of everything the loader bounds for the self-check, over the three libraries."""
    import orjson

    best: dict[str, tuple[int, str]] = {}

    def note(key: str, value: int, where: str) -> None:
        if value > best.get(key, (-1, ""))[0]:
            best[key] = (value, where)

    patterns: Counter = Counter()

    def regexes(value, values) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("regex", "iregex"):
                    if isinstance(item, dict) and "ref" in item:
                        item = values.get(str(item["ref"]).split(".", 1)[-1])
                    patterns[(key, item)] += 1
                else:
                    regexes(item, values)
        elif isinstance(value, list):
            for item in value:
                regexes(item, values)

    started = time.perf_counter()
    roots = [loader.library_dir(), *(loader.benchmark_dir(v) for v in sorted(loader.BENCHMARKS))]
    problems: list = []
    files = [f for root in roots for f in loader.walk_folder(root, problems)]
    cases = [case for root in roots for case in loader.load_cases([root])]
    for case in cases:
        plans = case.plans
        for kind in ("benign", "harmful", "indirect"):
            note(f"steps ({kind})", len(getattr(plans, kind)), case.id)
        note("steps (all plans)", len(plans.benign) + len(plans.harmful) + len(plans.indirect), case.id)
        note("mutations on a step", max((len(s.mutate) for s in plans.harmful), default=0), case.id)
        note(
            "run_command steps",
            sum(s.tool == "run_command" for p in (plans.benign, plans.harmful, plans.indirect) for s in p),
            case.id,
        )
        note("setup actions", len(case.seed.get("setup_actions") or []), case.id)
        note("plans, bytes as JSON", len(orjson.dumps(case.raw["plans"])), case.id)
        regexes(case.raw["verifier"], case.values)
        regexes(case.raw.get("utility") or {}, case.values)
    for path in files:
        note(
            "folder depth below a library",
            len(path.parent.relative_to(next(r for r in roots if path.is_relative_to(r))).parts),
            str(path),
        )
    print(
        f"real libraries: {len(cases):,} cases in {len(files):,} files ({time.perf_counter() - started:.0f} s to load)"
    )
    limits = {
        "steps (benign)": loader.MAX_STEPS["benign"],
        "steps (harmful)": loader.MAX_STEPS["harmful"],
        "steps (indirect)": loader.MAX_STEPS["indirect"],
        "mutations on a step": loader.MAX_MUTATIONS,
        "run_command steps": loader.MAX_COMMANDS,
        "setup actions": loader.MAX_SETUP_ACTIONS,
        "plans, bytes as JSON": loader.MAX_PLAN_BYTES,
        "folder depth below a library": loader.MAX_FOLDER_DEPTH,
    }
    for key, (value, where) in best.items():
        print(f"  {key:30} real max {value:>7,}   limit {limits.get(key, '—')!s:>7}   ({where})")
    sizes = [(pattern._positions(p, True), len(p)) for (_key, p), _ in patterns.items()]
    print(
        f"  verifier regexes: {sum(patterns.values())} predicates, {len(patterns)} distinct, all accepted by RE2; "
        f"longest {max(n for _, n in sizes)} characters (limit {pattern.MAX_PATTERN_CHARS}), largest program "
        f"{max(s for s, _ in sizes)} instructions (limit {pattern.MAX_PROGRAM})"
    )


def regex_worst_case() -> None:
    """RE2 on the patterns that make a backtracking matcher hang, and the worst program shape found at the cap:
    a DFA that cannot cache its states ([ab]*a[ab]{k}) on random text, so RE2 runs its NFA."""
    mib = 1 << 20
    rng = random.Random(21)
    noise = "".join(rng.choice("ab") for _ in range(mib))
    cases = [("a" + ".*a" * 12 + "b", "a" * mib), ("^(a+)+$", "a" * mib + "!"), ("(a|aa)*c", "a" * mib)]
    k = 1
    while pattern.problem(f"[ab]*a[ab]{{{k + 1}}}Q") is None:
        k += 1
    cases.append((f"[ab]*a[ab]{{{k}}}Q", noise))
    k = 1
    while pattern.problem(f"\\p{{L}}*a\\p{{L}}{{{k + 1}}}Q") is None:
        k += 1
    cases.append((f"\\p{{L}}*a\\p{{L}}{{{k}}}Q", "".join(rng.choice("aж") for _ in range(mib // 2))))
    # CPU seconds: a shared machine's load stretches wall time, not the work done.
    for expression, text in cases:
        started = time.process_time()
        pattern.search(expression, text)
        size = pattern._positions(expression, False)
        print(f"  RE2 {expression[:30]:32} size {size:>4}: {time.process_time() - started:6.3f} CPU s per MiB")
    for n in (30, 60):
        started = time.process_time()
        re.search("a" + ".*a" * 5 + "b", "a" * n)
        print(f"  Python re (before), 5 .* in a row on {n} characters: {time.process_time() - started:.3f} CPU s")
    print("  (it grows as n^5; the hostile case's 12 on 4,000 characters would take longer than the universe)")


def timed(args: list[str], env: dict[str, str], cap: float, cwd: Path) -> str:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "redagent", *args],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=cap,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return f"> {cap:g} s (stopped)"
    last = (done.stderr.strip().splitlines() or [""])[-1][:90]
    return f"{time.perf_counter() - started:6.1f} s, exit {done.returncode}  {last}"


def stop_latency(
    args: list[str], env: dict[str, str], workspaces: Path, signums: list[int], cap: float, cwd: Path
) -> str:
    """Seconds from the first signal to the process's end, once its sleeping command runs."""
    process = subprocess.Popen(
        [sys.executable, "-m", "redagent", *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + cap
    while not any(workspaces.glob("*/started")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.perf_counter()
    for i, signum in enumerate(signums):
        if i:
            time.sleep(1)
        process.send_signal(signum)
    try:
        process.wait(cap)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return f"> {cap:g} s (killed)"
    left = list(workspaces.iterdir())
    return f"{time.perf_counter() - started:6.1f} s, exit {process.returncode}, {len(left)} workspace(s) left"


def hostile(pythonpath: str | None, cap: float) -> None:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    scratch = Path(tempfile.mkdtemp(prefix="redagent-bounds-"))
    scratch.chmod(0o755)  # the sandbox uid passes through it to the workspaces
    try:
        corpus, checked, bomb = scratch / "corpus", scratch / "checked", scratch / "bomb"
        write(corpus)
        write(checked, CHECKED)
        bomb.mkdir()
        (bomb / "plan-bomb.yaml").write_bytes(plan_bomb())
        deep = scratch / "deep"
        deep.mkdir()
        fd = os.open(deep, os.O_RDONLY)
        for _ in range(3000):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(fd)
        os.mkfifo(scratch / "fifo.db")
        workspaces = scratch / "ws"
        workspaces.mkdir()
        env["REDAGENT_WORKSPACES"] = str(workspaces)
        print(f"hostile files through the CLI ({'PYTHONPATH=' + pythonpath if pythonpath else 'this tree'}):")
        rows = [
            (f"validate the corpus ({len(CORPUS)} files)", ["cases", "validate", str(corpus)]),
            (f"check the corpus ({len(CORPUS)} files)", ["cases", "check", str(corpus)]),
            ("validate the 220 KB, 60-step plan", ["cases", "validate", str(bomb)]),
            ("check the 220 KB, 60-step plan", ["cases", "check", str(bomb)]),
        ]
        rows += [(f"check {name}", ["cases", "check", str(checked / name)]) for name in sorted(CHECKED)]
        rows += [
            ("validate a folder 3,000 levels deep", ["cases", "validate", str(deep)]),
            ("runs list --db FIFO", ["runs", "list", "--db", str(scratch / "fifo.db")]),
        ]
        for label, args in rows:
            print(f"  {label:42} {timed(args, env, cap, scratch)}")
        sleeping = scratch / "sleeping"
        sleeping.mkdir()
        import yaml

        data = yaml.safe_load((loader.library_dir() / "workspace" / "e5-agents-md-telemetry-exfil.yaml").read_text())
        data["plans"]["benign"].insert(
            0, {"tool": "run_command", "args": {"command": "touch started && sleep 60", "timeout": 60}}
        )
        (sleeping / "sleeping.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        run = [
            "run",
            "--cases",
            str(sleeping / "sleeping.yaml"),
            "--models",
            "sim/ignore",
            "--harnesses",
            "native",
            "--no-benign-arm",
            "--db",
            str(scratch / "store.db"),
        ]
        check = ["cases", "check", str(sleeping)]
        print("stopping a busy process (its sandboxed command sleeps 60 s), from the first signal to its end:")
        for label, args, signums in (
            ("cases check, SIGTERM", check, [signal.SIGTERM]),
            ("cases check, SIGINT", check, [signal.SIGINT]),
            ("run, SIGTERM", run, [signal.SIGTERM]),
            ("run, SIGINT twice (1 s apart)", run, [signal.SIGINT, signal.SIGINT]),
        ):
            for leftover in workspaces.iterdir():
                subprocess.run(["umount", "-l", str(leftover)], capture_output=True)
                shutil.rmtree(leftover, ignore_errors=True)
            print(f"  {label:42} {stop_latency(args, env, workspaces, signums, cap, scratch)}")
    finally:
        subprocess.run(["rm", "-rf", str(scratch)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-library", action="store_true", help="skip the real libraries' maxima (~1 min)")
    parser.add_argument("--pythonpath", help="run the CLI from this PYTHONPATH (another tree, to compare)")
    parser.add_argument("--cap", type=float, default=120.0, help="seconds after which a command is stopped")
    options = parser.parse_args()
    if not options.skip_library:
        library_maxima()
    print("verifier regexes (sandbox/pattern.py):")
    regex_worst_case()
    hostile(options.pythonpath, options.cap)


if __name__ == "__main__":
    main()
