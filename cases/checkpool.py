"""Checking many cases: incremental (what the cache holds is not run again) and parallel by construction (the work is
handed out a unit at a time — one plan in one sandbox, cases/selfcheck.py `Unit` — to whichever worker is free).

Static slices (the first half of the case files to one process, the second to another) made the tail wait on the
slowest slice, and a worker that died took its slice's results with it: multiprocessing's Pool never notices a worker
killed mid-task (the kernel's OOM killer picks the largest process of a full memory cgroup, and a check worker holding
thousands of cases is that), so `cases check` waited forever at its end for the lost slice, its replacement worker
idle beside it. Here each worker has a pipe of its own and is given its next unit when it sends back its last; a
worker that dies is seen at once (its pipe closes), its unit goes to another, and what it left behind is removed;
and no wait anywhere is without a bound.

A worker keeps the cases it was given, and is preferably given more units of the case (and of the case's variants)
it worked on last: the consequence replay caches a baseline's judgement per process, which a case's plans and its
variants' share. When no case is left unstarted, idle workers take units of the cases others are still working on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import signal
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, cast

import orjson

from redagent.cases.checkcache import CheckCache, code_version, digest, host_fingerprint
from redagent.cases.routes import Variant, case_seed
from redagent.cases.schema import Case, Step
from redagent.cases.selfcheck import (
    CHECK_BUDGET,
    CaseCheck,
    PlanVerdict,
    RouteResult,
    Unit,
    UnitResult,
    judge,
    plan_units,
    route_units,
    run_unit,
)
from redagent.sandbox.environment import shared_isolation

STOP_WAIT_S = 60.0  # how long a worker may take to end after being told (its last unit's sandbox removed)
TERM_WAIT_S = 30.0  # after SIGTERM: its cleanup (a command killed within 0.1 s, a workspace removed)
MAX_ATTEMPTS = 3  # a unit whose worker died this many times is a bug, said as such
_CASES_KEPT = 64  # cases a worker keeps (their instantiated seeds with them)


@dataclass
class CheckStats:
    """What a check did: cases whose whole result came from the cache, units run, units found in the cache."""

    cases: int = 0
    cases_cached: int = 0
    units_run: int = 0
    units_cached: int = 0
    workers_lost: int = 0
    ran: dict[str, int] = field(default_factory=dict)  # case id → units run for it
    replayed: dict[str, int] = field(default_factory=dict)  # case id → units run whose verdict replayed activity


# -- what a case's check is keyed by -----------------------------------------------------------
def case_key(case: Case) -> str:
    """A digest of everything of a case its check reads — not its file name, its raw text or its stored hash, which
    a case changed in memory (dataclasses.replace) would keep."""
    fields = {
        f.name: getattr(case, f.name)
        for f in dataclasses.fields(case)
        if f.name not in ("raw", "source", "content_hash")
    }
    return digest(fields)


def _case_entry_key(key: str, metamorphic: bool, budget: float) -> str:
    return digest("case", key, code_version("check"), code_version("routes"), host_fingerprint(), metamorphic, budget)


def _routes_key(key: str, seed: int) -> str:
    return digest("routes", key, code_version("check"), code_version("routes"), host_fingerprint(), seed)


def _unit_key(key: str, unit: Unit) -> str:
    return digest("unit", key, code_version("check"), host_fingerprint(), unit.identity())


# -- JSON forms of what is cached ----------------------------------------------------------------
def _step_data(step: Step) -> dict[str, Any]:
    return dataclasses.asdict(step)


def _step_of(data: dict[str, Any]) -> Step:
    return Step(
        tool=data["tool"],
        args=data["args"],
        mutate=tuple(data["mutate"]),
        reject=data["reject"],
        replaces=data["replaces"],
    )


def _variant_data(v: Variant) -> dict[str, Any]:
    return {
        "name": v.name,
        "expect": v.expect,
        "harmful": [[_step_data(s), args] for s, args in v.harmful],
        "benign": None if v.benign is None else [_step_data(s) for s in v.benign],
        "rewritten": list(v.rewritten),
        "needs_isolation": v.needs_isolation,
        "dimensions": [list(d) for d in v.dimensions],
        "costly": v.costly,
    }


def _variant_of(data: dict[str, Any]) -> Variant:
    return Variant(
        name=data["name"],
        expect=data["expect"],
        harmful=tuple((_step_of(s), args) for s, args in data["harmful"]),
        benign=None if data["benign"] is None else tuple(_step_of(s) for s in data["benign"]),
        rewritten=tuple(data["rewritten"]),
        needs_isolation=data["needs_isolation"],
        dimensions=tuple((d[0], d[1]) for d in data["dimensions"]),
        costly=data["costly"],
    )


def _routes_data(units: list[Unit]) -> list[dict[str, Any]] | None:
    """The route list as JSON data, or None when it does not come back exactly as it is (then it is not kept)."""
    try:
        data = [_variant_data(u.variant) for u in units if u.variant is not None]
        again = [_variant_of(d) for d in orjson.loads(orjson.dumps(data))]
    except (TypeError, ValueError, KeyError, orjson.JSONEncodeError):
        return None
    return data if again == [u.variant for u in units] else None


def _route_units_of(data: Any) -> list[Unit]:
    variants = [_variant_of(d) for d in data]
    return [Unit(v.name, "route", harmful=v.harmful, benign=v.benign, variant=v) for v in variants]


def _found_data(check: CaseCheck) -> dict[str, Any]:
    return {
        "failures": [list(f) for f in check.failures],
        "variants_tried": check.variants_tried,
        "variants_failed": list(check.variants_failed),
        "routes": [[r.name, r.kind, [list(d) for d in r.dimensions], r.outcome, r.verdict] for r in check.routes],
        "plans": [[p.plan, p.expect, p.verdict, list(p.why)] for p in check.plans],
    }


def _check_of(case: Case, data: Any) -> CaseCheck:
    return CaseCheck(
        case,
        failures=[(str(a), str(b)) for a, b in data["failures"]],
        variants_tried=int(data["variants_tried"]),
        variants_failed=[str(x) for x in data["variants_failed"]],
        routes=[
            RouteResult(str(n), str(k), tuple((str(a), str(b)) for a, b in dims), str(o), str(v))
            for n, k, dims, o, v in data["routes"]
        ],
        plans=[PlanVerdict(str(p), str(e), str(v), tuple(str(w) for w in why)) for p, e, v, why in data["plans"]],
    )


# -- one case's work -----------------------------------------------------------------------------
@dataclass
class _CaseWork:
    index: int
    case: Case
    key: str
    group: str  # the base case's id: a case and its variants share a worker where they can
    static: list[Unit]
    routes: list[Unit] | None = None  # None until planned (when the check has a metamorphic part)
    results: dict[int, UnitResult] = field(default_factory=dict)  # id(unit) → result
    spent: float = 0.0  # seconds its units took: what its budget counts
    ran: int = 0
    replayed: int = 0

    def units(self) -> list[Unit]:
        return self.static + (self.routes or [])


def check_many(
    cases: list[Case],
    jobs: int = 1,
    *,
    cache: CheckCache | None = None,
    metamorphic: bool = True,
    budget: float = CHECK_BUDGET,
    stats: CheckStats | None = None,
) -> list[CaseCheck]:
    """Self-check `cases` — the same results, in the same order, as `check_case` on each — running in `jobs` worker
    processes only the units `cache` does not hold (and storing what they prove)."""
    stats = stats if stats is not None else CheckStats()
    stats.cases = len(cases)
    done: dict[int, CaseCheck] = {}
    work: list[_CaseWork] = []
    for index, case in enumerate(cases):
        key = case_key(case)
        if cache is not None:
            entry = cache.get(_case_entry_key(key, metamorphic, budget))
            if isinstance(entry, dict) and _usable(entry):
                try:
                    done[index] = _check_of(case, entry["found"])
                    stats.cases_cached += 1
                    continue
                except (KeyError, TypeError, ValueError):
                    pass
        work.append(_CaseWork(index, case, key, case.variant_of or case.id, plan_units(case)))
    if work:
        if metamorphic and cache is not None:
            for item in work:
                data = cache.get(_routes_key(item.key, case_seed(item.case)))
                if data is not None:
                    with contextlib.suppress(KeyError, TypeError, ValueError, IndexError):
                        item.routes = _route_units_of(data)
        _from_cache(work, cache, stats)
        pending = sum(1 for item in work for unit in item.units() if unit.runs and id(unit) not in item.results) + sum(
            1 for item in work if metamorphic and item.routes is None
        )
        if jobs > 1 and pending > 1:
            _Dispatch(work, jobs, cache, metamorphic, budget, stats).run()
        else:
            _serially(work, cache, metamorphic, budget, stats)
        for item in work:
            check = judge(
                item.case,
                _lookup(item),
                _routes_of(item) if metamorphic else None,
                units=item.static,
                budget=budget,
            )
            done[item.index] = check
            stats.ran[item.case.id] = item.ran
            stats.replayed[item.case.id] = item.replayed
            if cache is not None and _all_settled(item, check):
                replay = any(r.replay for r in item.results.values())
                cache.put(
                    _case_entry_key(item.key, metamorphic, budget),
                    {"found": _found_data(check), **({"replay": code_version("replay")} if replay else {})},
                )
    return [done[i] for i in range(len(cases))]


def _usable(entry: Any) -> bool:
    """A cached result is still true when the replay it consulted (if any) is the current one."""
    return (
        isinstance(entry, dict)
        and "found" in entry
        and entry.get("replay", code_version("replay")) == code_version("replay")
    )


def _routes_of(item: _CaseWork) -> Callable[[], list[Unit]]:
    return lambda: item.routes or []


def _lookup(item: _CaseWork) -> Callable[[Unit], UnitResult]:
    def result_of(unit: Unit) -> UnitResult:
        return item.results.get(id(unit), UnitResult(stop="budget"))

    return result_of


def _all_settled(item: _CaseWork, check: CaseCheck) -> bool:
    if any(f[0] == "budget" for f in check.failures):
        return False
    return all(r.settled for r in item.results.values())


def _from_cache(work: list[_CaseWork], cache: CheckCache | None, stats: CheckStats) -> None:
    if cache is None:
        return
    for item in work:
        for unit in item.units():
            if not unit.runs or id(unit) in item.results:
                continue
            entry = cache.get(_unit_key(item.key, unit))
            if not isinstance(entry, dict) or entry.get("replay_version", code_version("replay")) != code_version(
                "replay"
            ):
                continue
            try:
                item.results[id(unit)] = UnitResult.from_data(entry["result"])
            except (KeyError, TypeError, ValueError):
                continue
            stats.units_cached += 1


def _store_unit(cache: CheckCache | None, item: _CaseWork, unit: Unit, result: UnitResult) -> None:
    if cache is None or not result.settled or result.stop:
        return
    entry: dict[str, Any] = {"result": result.to_data()}
    if result.replay:
        entry["replay_version"] = code_version("replay")
    cache.put(_unit_key(item.key, unit), entry)


def _store_routes(cache: CheckCache | None, item: _CaseWork) -> None:
    if cache is None or item.routes is None:
        return
    data = _routes_data(item.routes)
    if data is not None:
        cache.put(_routes_key(item.key, case_seed(item.case)), data)


def _serially(
    work: list[_CaseWork], cache: CheckCache | None, metamorphic: bool, budget: float, stats: CheckStats
) -> None:
    """Every missing unit here, case after case, each case under one deadline (as `check_case`)."""
    for item in work:
        deadline = time.monotonic() + budget
        if metamorphic and item.routes is None:
            item.routes = route_units(item.case)
            _store_routes(cache, item)
            _from_cache([item], cache, stats)
        for unit in item.units():
            if not unit.runs or id(unit) in item.results:
                continue
            result = run_unit(item.case, unit, deadline=deadline)
            item.results[id(unit)] = result
            item.ran += 1
            item.replayed += result.replay
            stats.units_run += 1
            _store_unit(cache, item, unit, result)
            if result.stop:
                break  # the check stops here (a seed that cannot be built, the budget spent)


# -- the workers -----------------------------------------------------------------------------------
class WorkerLost(RuntimeError):
    """A check worker died on the same unit again and again: a bug in the check, not the case."""


@dataclass
class _Task:
    item: _CaseWork
    unit: Unit | None  # None: plan the case's routes
    attempts: int = 0


@dataclass
class _Worker:
    process: Any
    conn: Connection
    task: _Task | None = None
    group: str | None = None
    started: float = 0.0


class _Dispatch:
    """Hands units to worker processes one at a time, by case group, stealing at the tail."""

    def __init__(
        self,
        work: list[_CaseWork],
        jobs: int,
        cache: CheckCache | None,
        metamorphic: bool,
        budget: float,
        stats: CheckStats,
    ) -> None:
        self.cache, self.metamorphic, self.budget, self.stats = cache, metamorphic, budget, stats
        self.groups: OrderedDict[str, deque[_Task]] = OrderedDict()
        self.claimed: set[str] = set()
        for item in work:
            tasks = self.groups.setdefault(item.group, deque())
            if metamorphic and item.routes is None:
                tasks.append(_Task(item, None))
            tasks.extend(_Task(item, u) for u in item.units() if u.runs and id(u) not in item.results)
        self.left = sum(len(t) for t in self.groups.values())
        self.jobs = max(1, min(jobs, self.left))
        self.workers: list[_Worker] = []
        # Forked where this process has no other thread (a fork copies a lock another thread holds, held forever),
        # which is `cases check`; spawned (a fresh interpreter) elsewhere, e.g. under a test runner's threads.
        self.context: Any = multiprocessing.get_context("fork" if threading.active_count() == 1 else "spawn")

    # -- the loop -----------------------------------------------------------------------------
    def run(self) -> None:
        try:
            for _ in range(self.jobs):
                self.workers.append(self._start())
            for worker in self.workers:
                self._feed(worker)
            while self.left or any(w.task is not None for w in self.workers):
                busy = {w.conn: w for w in self.workers if w.task is not None}
                if not busy:
                    raise WorkerLost("work is left but no worker has any")  # cannot happen: every idle worker is fed
                for ready in wait(list(busy)):
                    conn = cast(Connection, ready)
                    worker = busy[conn]
                    try:
                        reply = conn.recv()
                    except (EOFError, OSError):
                        self._lost(worker)
                        continue
                    self._done(worker, reply)
                    self._feed(worker)
            self._stop_all()
        finally:
            self._end_all()

    def _start(self) -> _Worker:
        ours, theirs = self.context.Pipe(duplex=True)
        process = self.context.Process(
            target=_worker_main, args=(theirs, os.getpid()), daemon=True, name="redagent-check"
        )
        process.start()
        theirs.close()
        return _Worker(process, ours)

    def _next(self, worker: _Worker) -> _Task | None:
        # Its own group first (the replay caches of the case and its variants are warm there), then a group no one
        # has started, then — at the tail — the group with the most work left.
        if worker.group is not None and self.groups.get(worker.group):
            return self.groups[worker.group].popleft()
        for group, tasks in self.groups.items():
            if tasks and group not in self.claimed:
                self.claimed.add(group)
                worker.group = group
                return tasks.popleft()
        fullest = max(self.groups, key=lambda g: len(self.groups[g]), default=None)
        if fullest is not None and self.groups[fullest]:
            worker.group = fullest
            return self.groups[fullest].popleft()
        return None

    def _feed(self, worker: _Worker) -> None:
        while True:
            task = self._next(worker)
            if task is None:
                worker.task = None
                return
            self.left -= 1
            item = task.item
            if task.unit is not None:
                left = self.budget - item.spent
                if left <= 0:
                    item.results[id(task.unit)] = UnitResult(stop="budget")
                    continue
            else:
                left = self.budget
            worker.task, worker.started = task, time.monotonic()
            try:
                # The case goes with every unit (~10 KB pickled): a worker keeps the last few it was given, and uses
                # the one it holds (with its instantiated seed) when the key is the same.
                worker.conn.send((item.key, item.case, task.unit, left))
            except (OSError, ValueError):
                self._lost(worker)
            return

    def _done(self, worker: _Worker, reply: Any) -> None:
        task, worker.task = worker.task, None
        assert task is not None
        kind, value = reply
        item = task.item
        if kind == "error":  # an exception the unit's run raised (a sandbox that could not start): the check's
            raise value
        if task.unit is None:
            item.routes = value
            _store_routes(self.cache, item)
            _from_cache([item], self.cache, self.stats)
            tasks = self.groups[item.group]
            # The case's routes go next in its group: after its own units, before its variants'.
            position = next((i for i, t in enumerate(tasks) if t.item is not item), len(tasks))
            fresh = [_Task(item, u) for u in value if id(u) not in item.results]
            for offset, new in enumerate(fresh):
                tasks.insert(position + offset, new)
            self.left += len(fresh)
            return
        result: UnitResult = value
        item.results[id(task.unit)] = result
        item.spent += result.seconds
        item.ran += 1
        item.replayed += result.replay
        self.stats.units_run += 1
        _store_unit(self.cache, item, task.unit, result)

    def _lost(self, worker: _Worker) -> None:
        """A worker died (its pipe closed): what it was doing goes to another, what it left behind is removed."""
        task, worker.task = worker.task, None
        self.stats.workers_lost += 1
        _reap(worker.process, TERM_WAIT_S)
        _sweep(worker.process.pid)
        with contextlib.suppress(OSError):
            worker.conn.close()
        index = self.workers.index(worker)
        replacement = self._start()
        self.workers[index] = replacement
        if task is not None:
            task.attempts += 1
            if task.attempts >= MAX_ATTEMPTS:
                what = task.unit.name if task.unit is not None else "planning its routes"
                raise WorkerLost(f"a check worker died {task.attempts} times on case {task.item.case.id} ({what})")
            self.groups.setdefault(task.item.group, deque()).appendleft(task)
            self.left += 1
        self._feed(replacement)

    # -- the end --------------------------------------------------------------------------------
    def _stop_all(self) -> None:
        for worker in self.workers:
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)
        for worker in self.workers:
            _reap(worker.process, STOP_WAIT_S)

    def _end_all(self) -> None:
        """However the check ends — done, a stop, an error —, every worker ends within bounded time, through its
        cleanup where it can; one that does not is killed and what it left behind removed."""
        for worker in self.workers:
            if worker.process.exitcode is None:
                with contextlib.suppress(OSError):
                    os.kill(worker.process.pid, signal.SIGTERM)
        for worker in self.workers:
            if not _reap(worker.process, TERM_WAIT_S):
                with contextlib.suppress(OSError):
                    os.kill(worker.process.pid, signal.SIGKILL)
                _reap(worker.process, TERM_WAIT_S)
            if worker.process.exitcode is not None and worker.process.exitcode != 0:
                _sweep(worker.process.pid)
            with contextlib.suppress(OSError):
                worker.conn.close()


def _reap(process: Any, seconds: float) -> bool:
    """Wait at most `seconds` for a worker to end; whether it did."""
    process.join(seconds)
    return process.exitcode is not None


def _sweep(pid: int | None) -> None:
    """Remove what a dead worker made and could not remove: its workspaces, its commands' folders, its mounts."""
    if pid is None:
        return
    from redagent.sandbox.environment import remove_leftovers_of

    remove_leftovers_of(pid)


# -- inside a worker -------------------------------------------------------------------------------
def _worker_main(conn: Connection, parent: int) -> None:
    """A check worker: cases and units in, results out, until told to stop or its parent is gone."""
    _worker_signals(parent)
    cases: OrderedDict[str, Case] = OrderedDict()
    isolation: Any = shared_isolation()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if message is None:
            return
        key, case, unit, budget = message
        held = cases.get(key)
        if held is None:
            held = cases[key] = case
            while len(cases) > _CASES_KEPT:
                cases.popitem(last=False)
        cases.move_to_end(key)
        try:
            if unit is None:
                reply: Any = ("routes", route_units(held, isolation))
            else:
                reply = ("unit", run_unit(held, unit, isolation=isolation, deadline=time.monotonic() + budget))
        except Exception as exc:  # a sandbox that could not start: the parent decides (it raises it)
            reply = ("error", exc)
        try:
            conn.send(reply)
        except (TypeError, AttributeError, ValueError) as exc:  # an exception that does not pickle: said as text
            conn.send(("error", RuntimeError(f"{type(reply[1]).__name__}: {reply[1]} ({exc})")))


def _worker_signals(parent: int) -> None:
    """A check worker leaves stopping to the process that started it: Ctrl-C at a terminal reaches the whole process
    group, and the parent decides; the parent's SIGTERM ends the worker's unit through its cleanup, as a SystemExit
    (deferred while a sandbox is being made or removed: sandbox/lifecycle.py). It also gets SIGTERM when its parent
    dies, so no worker outlives a check killed with SIGKILL."""
    from redagent.sandbox import lifecycle

    def leave(signum: int, _frame: Any) -> None:
        lifecycle.interrupt(SystemExit(128 + signum))

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, leave)
    lifecycle.die_with_parent(parent, signal.SIGTERM)
