"""Console latency on a large store: first paint of the rollout list, moving to the next rollout's detail,
scrolling a 5,000-event trajectory, and peak resident memory — headless, under the Textual pilot.

    python benchmarks/console_latency.py [--store PATH] [--regenerate]

The store (100,000 rollouts, 1,000,000 trajectory events, one rollout with 5,000 of them) is written
through the store's own bulk path (`Store.write_rollouts`, batches of 500) by a child process, and
kept in /tmp under a version key so later runs reuse it. The measuring process only opens it, so its
peak RSS is the console's. Targets: first paint < 500 ms, next detail < 50 ms, no UI stall > 50 ms
while scrolling, RSS < 400 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

VERSION = "1"  # bump when the generated store's shape changes
DEFAULT_STORE = Path(f"/tmp/redagent-console-latency-v{VERSION}.db")
RUN_ID = "run-console-latency"
ROLLOUTS = 100_000
EVENTS = 1_000_000
BIG_EVENTS = 5_000
BATCH = 500
MODELS = ("sim/comply", "sim/ignore", "sim/recognize-comply", "sim/claim-only", "openai/gpt-4o-mini")
HARNESSES = ("native", "react", "shell")


def big_rollout_id() -> str:
    return "bench-000000"


def _events(rollout_number: int, count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    events, receipts = [], []
    for idx in range(count):
        kind = idx % 3
        if idx == 0:
            events.append(
                {
                    "idx": 0,
                    "role": "user",
                    "text": f"Task {rollout_number}: pay the open invoice.",
                    "tool_call": None,
                    "original": None,
                    "observation": None,
                    "receipts": [],
                    "tampered": False,
                }
            )
        elif kind == 1:
            events.append(
                {
                    "idx": idx,
                    "role": "assistant",
                    "text": "",
                    "tool_call": {
                        "id": f"c{idx}",
                        "name": "send_transfer",
                        "args": {"to_account": f"US{idx:04d}", "amount": idx},
                    },
                    "original": None,
                    "observation": None,
                    "receipts": [],
                    "tampered": False,
                }
            )
        else:
            rid = f"r{len(receipts) + 1}"
            result = f'{{"transaction_id":"tx-{idx}"}}'
            events.append(
                {
                    "idx": idx,
                    "role": "tool",
                    "text": "",
                    "tool_call": {"id": f"c{idx - 1}", "name": "send_transfer"},
                    "original": result,
                    "observation": result,
                    "receipts": [rid],
                    "tampered": False,
                }
            )
            receipts.append(
                {
                    "id": rid,
                    "seq": len(receipts) + 1,
                    "service": "banking",
                    "action": "send_transfer",
                    "args": {"to_account": f"US{idx - 1:04d}", "amount": idx - 1},
                    "outcome": "ok",
                    "actor": "agent",
                    "step": idx - 1,
                    "effect": {"transaction_id": f"tx-{idx}"},
                    "error": None,
                    "via": None,
                }
            )
    return events, receipts


def generate(path: Path) -> None:
    """Write the synthetic store through Store.write_rollouts (run in a child process)."""
    from redagent.cases.loader import load_cases
    from redagent.store.db import open_store
    from redagent.store.records import RolloutRecord, RunRecord

    cases = load_cases()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rest = (EVENTS - BIG_EVENTS) // (ROLLOUTS - 1)  # 9
    extra = (EVENTS - BIG_EVENTS) - rest * (ROLLOUTS - 1)  # the first `extra` small rollouts get one more
    tmp = path.with_suffix(".partial")
    tmp.unlink(missing_ok=True)
    with open_store(f"sqlite:///{tmp}") as store:
        store.create_run(
            RunRecord(
                id=RUN_ID,
                status="finished",
                protocol={"synthetic": True},
                case_set_hash="x",
                code_version="benchmark",
                planned=ROLLOUTS,
                created_at=start,
            )
        )
        batch: list[RolloutRecord] = []
        written = 0
        for n in range(ROLLOUTS):
            case = cases[n % len(cases)]
            count = BIG_EVENTS if n == 0 else rest + (1 if n <= extra else 0)
            events, receipts = _events(n, count)
            e = None if n % 50 == 49 else (n // len(cases)) % 2
            batch.append(
                RolloutRecord(
                    id=f"bench-{n:06d}",
                    run_id=RUN_ID,
                    case_id=case.id,
                    case_version=case.version,
                    case_hash=case.content_hash,
                    strategy=case.strategy,
                    vulnerability=case.vulnerability,
                    constraint=case.constraint,
                    surfaces=list(case.surfaces),
                    channel=case.channel,
                    model=MODELS[n % len(MODELS)],
                    harness=HARNESSES[(n // len(MODELS)) % len(HARNESSES)],
                    cue="clean" if n % 2 else "disclosed",
                    defense="none",
                    attempt=n,
                    valid=e is not None,
                    invalid_reason=None if e is not None else "model_error",
                    invalid_detail=None,
                    E=e,
                    evidence={},
                    expected_E=e,
                    reached=True,
                    final_text="I have completed the task.",
                    started_at=start + timedelta(seconds=n),
                    finished_at=start + timedelta(seconds=n + 1),
                    duration_ms=1000.0,
                    prompt_tokens=100,
                    completion_tokens=20,
                    cost_usd=0.0,
                    baseline_rollout_id=None,
                    events=events,
                    receipts=receipts,
                    baseline={"banking": {"balance": 1000}},
                    final={"banking": {"balance": 900}},
                    diff=[{"path": "banking.balance", "op": "changed", "before": 1000, "after": 900}]
                    + [
                        {
                            "path": f"banking.transactions.tx-{r['step'] + 1}",
                            "op": "added",
                            "before": None,
                            "after": {"amount": -r["args"]["amount"]},
                        }
                        for r in receipts
                    ],
                )
            )
            if len(batch) == BATCH:
                written += store.write_rollouts(batch)
                batch = []
                if written % 10_000 == 0:
                    print(f"  {written:,} rollouts written", file=sys.stderr, flush=True)
        written += store.write_rollouts(batch)
    tmp.rename(path)


class Host:
    """Builds the minimal host app (a store and `show`) the screens run in, as the console app provides them."""

    @staticmethod
    def make(url: str, first: Any) -> Any:
        from textual.app import App

        from redagent.console import heap
        from redagent.console.screens.rollout import RolloutScreen
        from redagent.store.db import open_store

        class BenchApp(heap.CollectsWhenIdle, App):
            def __init__(self) -> None:
                super().__init__()
                self.store = open_store(url)

            def on_mount(self) -> None:
                self.push_screen(first() if callable(first) else first)
                self.call_after_refresh(self.settle_heap)  # as RedAgentApp does once its first screen is up

            def show(self, name: str, **kwargs: Any) -> None:
                if name == "rollout":
                    if isinstance(self.screen, RolloutScreen):
                        self.screen.reopen(**kwargs)
                    else:
                        self.push_screen(RolloutScreen(**kwargs))

        return BenchApp()


async def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("the console did not get there in time")
        await asyncio.sleep(0.0005)


async def _painted(app: Any) -> None:
    """Returns once the screen has been refreshed after everything queued so far."""
    done = asyncio.Event()
    app.call_after_refresh(done.set)
    await done.wait()


class LoopWatch:
    """The longest the UI's event loop went without running a 2 ms ticker: how long it was blocked."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.002)
            now = time.perf_counter()
            self.worst = max(self.worst, now - last - 0.002)
            last = now

    def __enter__(self) -> LoopWatch:
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._task is not None:
            self._task.cancel()


async def first_paint(url: str) -> float:
    from redagent.console.screens.rollouts import RolloutsScreen

    started = time.perf_counter()
    app = Host.make(url, RolloutsScreen)
    async with app.run_test(size=(120, 34)):
        await _until(lambda: isinstance(app.screen, RolloutsScreen) and app.screen.loaded)
        await _painted(app)
        elapsed = time.perf_counter() - started
        assert len(app.screen.rows) == 100
    return elapsed


async def next_detail(url: str) -> tuple[list[float], list[float], float]:
    """Key `]` → the next rollout's evidence painted (20 moves); the same through pilot.press; loop stall."""
    from textual import events

    from redagent.console.screens.rollout import RolloutScreen
    from redagent.store.db import open_store

    with open_store(url) as store:
        ids = [row.rollout_id for row in store.rollout_page(RUN_ID, {}, None, 100)]
    ids = [i for i in ids if i != big_rollout_id()][:42]
    app = Host.make(url, RolloutScreen(ids[0], ids=ids))
    direct, pressed = [], []
    async with app.run_test(size=(120, 34)) as pilot:
        screen = app.screen
        await _until(lambda: screen.loaded_id == ids[0])
        await pilot.pause()
        with LoopWatch() as watch:
            for target in ids[1:21]:
                started = time.perf_counter()
                app.post_message(events.Key("right_square_bracket", "]"))  # the rollout screen's "next"
                await _until(lambda target=target: screen.loaded_id == target)
                await _painted(app)
                direct.append(time.perf_counter() - started)
                await pilot.pause()
        for target in ids[21:41]:
            started = time.perf_counter()
            await pilot.press("right_square_bracket")  # includes the pilot's own wait for the process to go idle
            await _until(lambda target=target: screen.loaded_id == target)
            pressed.append(time.perf_counter() - started)
    return direct, pressed, watch.worst


async def scroll(url: str) -> tuple[list[float], list[float], float, int]:
    """Page-down through the 5,000-event trajectory: per key (painted), per pilot.press, and the worst loop stall."""
    from textual import events

    from redagent.console.screens.rollout import RolloutScreen
    from redagent.console.widgets.trajectory import TrajectoryView

    app = Host.make(url, RolloutScreen(big_rollout_id()))
    direct, pressed = [], []
    async with app.run_test(size=(120, 34)) as pilot:
        screen = app.screen
        await _until(lambda: screen.loaded_id == big_rollout_id())
        await pilot.pause()
        trajectory = screen.query_one("#trajectory", TrajectoryView)
        trajectory.focus()
        await pilot.pause()
        with LoopWatch() as watch:
            while trajectory.cursor < trajectory.line_count - 1 and len(direct) < 1000:
                before = trajectory.cursor
                started = time.perf_counter()
                app.post_message(events.Key("pagedown", None))
                await _until(lambda before=before: trajectory.cursor != before)
                await _painted(app)
                direct.append(time.perf_counter() - started)
        reached = trajectory.cursor
        await pilot.press("home")
        for _ in range(100):
            started = time.perf_counter()
            await pilot.press("pagedown")
            pressed.append(time.perf_counter() - started)
    return direct, pressed, watch.worst, reached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate_only:
        generate(args.store)
        return
    if args.regenerate:
        args.store.unlink(missing_ok=True)
    if not args.store.exists():
        print(f"generating {ROLLOUTS:,} rollouts / {EVENTS:,} events into {args.store} …", flush=True)
        started = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--generate-only", "--store", str(args.store)], check=True)
        print(f"  generated in {time.perf_counter() - started:.0f} s")
    url = f"sqlite:///{args.store}"
    paint = asyncio.run(first_paint(url))
    moves, moves_pressed, moves_stall = asyncio.run(next_detail(url))
    pages, pages_pressed, pages_stall, reached = asyncio.run(scroll(url))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ms = 1000

    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    size_mb = args.store.stat().st_size / 2**20
    print(f"store: {args.store} ({size_mb:.0f} MB, {ROLLOUTS:,} rollouts, {EVENTS:,} events)")
    print(f"first paint of the rollout list      {paint * ms:7.1f} ms  (target < 500 ms) {verdict(paint < 0.5)}")
    median = statistics.median(moves)
    print(
        f"next rollout's detail, key → painted {median * ms:7.1f} ms  median of {len(moves)} (target < 50 ms) "
        f"{verdict(median < 0.05)}; max {max(moves) * ms:.1f} ms; "
        f"via pilot.press {statistics.median(moves_pressed) * ms:.1f} ms median"
    )
    print(
        f"UI loop stall while moving           {moves_stall * ms:7.1f} ms  (target < 50 ms) "
        f"{verdict(moves_stall < 0.05)}"
    )
    print(
        f"5,000-event trajectory page-down     {statistics.median(pages) * ms:7.1f} ms  median of {len(pages)} "
        f"(reached e{reached}); max {max(pages) * ms:.1f} ms; via pilot.press "
        f"{statistics.median(pages_pressed) * ms:.1f} ms median, max {max(pages_pressed) * ms:.1f} ms"
    )
    print(
        f"UI loop stall while scrolling        {pages_stall * ms:7.1f} ms  (target < 50 ms) "
        f"{verdict(pages_stall < 0.05)}"
    )
    print(f"peak resident memory                 {rss_mb:7.1f} MB  (target < 400 MB) {verdict(rss_mb < 400)}")


if __name__ == "__main__":
    main()
