"""Loading and validating case files, with every problem located as `file:line: field: what`.

Case files are YAML (JSON is accepted, being YAML too) and untrusted: they come from other people and
from LLM compilers. They are read as plain data only, within limits (cases/safeyaml.py), so no file can
run code, exhaust memory or time, or crash the loader. Validation is exhaustive rather than fail-fast,
so an author sees every problem in a file at once. A loaded case is checked against the taxonomy, the
services' real tool schemas and seed shapes (cases/seedcheck.py), with every path it holds confined to
the workspace, and its own seed (every verifier reference must resolve, every service, tool and diff
path a rule names must exist).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from redagent.cases.safeyaml import Located, check_data, parse_text, read_text
from redagent.cases.schema import (
    BENIGN_SUFFIX,
    SOURCE_CHARS,
    SOURCE_FIELDS,
    SOURCE_USES,
    Attack,
    Case,
    Plans,
    Step,
    derive_marker,
    place_text,
)
from redagent.cases.seedcheck import LIST_ITEMS, check_seed, describe, tool_path_problem
from redagent.cases.taxonomy import CONSTRAINTS, STRATEGIES, SURFACES, VULNERABILITIES
from redagent.errors import UserError
from redagent.sandbox.environment import SERVICES
from redagent.sandbox.gateway import INTERVENTION_KINDS, TAMPER_MODES
from redagent.sandbox.tools import ToolSpec, validate
from redagent.sandbox.verifier import RefError, Scope, check_rule, resolve_ref, suggest

REQUIRED = (
    "id",
    "version",
    "title",
    "ivc",
    "surfaces",
    "task",
    "seed",
    "attack",
    "verifier",
    "policy_reminder",
    "recognition_cues",
    "plans",
)
KNOWN = set(REQUIRED) | {"followups", "values", "notes", "variant", "utility", "divergences"}
VARIANTS = ("benign", "multi_channel")
SEED_KEYS = set(SERVICES) | {"organization", "clock", "setup_actions"}


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        # One line whatever a hostile file holds: control characters escaped, long parts cut.
        return f"{_shown(self.file)}:{self.line}: {_shown(self.field)}: {_shown(self.message, 400)}"


# Escaped in a problem line: C0 and C1 controls, line separators, bidi and other format characters (Cf),
# lone surrogates. A hostile file's name or key then cannot reorder, hide or colour the line it is named in.
_UNPRINTABLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
    "\ud800-\udfff]"
)


def _shown(text: str, limit: int = 200) -> str:
    text = _UNPRINTABLE.sub(lambda m: repr(m.group(0))[1:-1], str(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class CaseFileError(UserError):
    """One or more problems in case files; `problems` lists them all."""

    title = "Case file error"

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(
            "\n".join(map(str, problems)),
            file=problems[0].file if problems else None,
            field=problems[0].field if problems else None,
        )
        self.problems = problems

    def line(self) -> str:
        if not self.problems:
            return "a problem in case files"
        more = " (run `redagent cases validate` for all)" if len(self.problems) > 1 else ""
        return f"{len(self.problems)} problem(s) in case files; first: {self.problems[0]}{more}"


# -- YAML with line numbers --------------------------------------------------------------------
def parse_file(path: Path, cache: Any = None) -> tuple[Any, dict[str, int]]:
    """A case file as plain data and the line of every field, bounded (cases/safeyaml.py): an untrusted
    file costs milliseconds and megabytes whatever it holds, and every problem is located.

    With `cache` (cases/checkcache.py), a file parsed before — the same bytes, under the same loader — is read back
    from its JSON instead of parsed again: parsing is ~80 % of loading, and `cases check` loads every case before it
    finds that nothing changed. Only files that parsed, into data JSON holds exactly, are kept."""
    try:
        text = read_text(path)
        if cache is None:
            return parse_text(text)
        from redagent.cases.checkcache import code_version, digest

        key = digest("parsed", code_version("check"), hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
        kept = cache.get(key)
        if isinstance(kept, dict) and isinstance(kept.get("lines"), dict) and "data" in kept:
            return kept["data"], kept["lines"]
        data, lines = parse_text(text)
        if _plain_json(data):
            cache.put(key, {"data": data, "lines": lines})
        return data, lines
    except Located as exc:
        raise CaseFileError([Problem(str(path), exc.line, exc.field, str(exc))]) from None


def _plain_json(value: Any, depth: int = 0) -> bool:
    """Whether JSON gives `value` back exactly: string keys, finite floats, no other types (a tuple, a date)."""
    if depth > 200:
        return False
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain_json(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain_json(v, depth + 1) for k, v in value.items())
    return False


# -- validation --------------------------------------------------------------------------------
MAX_PROBLEMS = 50  # reported per file

# What the self-check runs. It runs a case's plans many times — once per dropped effect step, per mutation, per
# generated route and near-miss — so its cost is about the number of runs times the steps in each; a 60-step plan
# of 220 KB (within every YAML bound) kept `cases check` busy for minutes. The real libraries (62 starter cases,
# both benchmarks: 11,348 files) peak at 12 benign, 2 harmful and 1 indirect step, 2 mutations on a step, 3
# run_command steps, no setup action and 2,012 bytes of plans; benchmarks/case_bounds.py measures these maxima,
# and times the check of a case at every limit. docs/case-format.md ("Limits") gives the reasons.
MAX_STEPS = {"benign": 48, "harmful": 8, "indirect": 8}
MAX_MUTATIONS = 8  # on one harmful step
MAX_COMMANDS = 6  # run_command steps in all plans together: each, every time the plans run, starts a sandbox
MAX_SETUP_ACTIONS = 16  # run each time a sandbox is built
MAX_ANSWER_CHARS = 4096  # a plan's final answer: a sentence or two (AgentDojo's ground-truth outputs are under 100)
MAX_DIVERGENCES = 32  # recorded differences from the benchmark a case was imported from (an AgentDojo case has < 10)
MAX_PLAN_BYTES = 64 << 10  # the plans as JSON, and the setup actions as JSON


class _Collector:
    def __init__(self, file: str, lines: dict[str, int]) -> None:
        self.file, self.lines = file, lines
        self.problems: list[Problem] = []

    def error(self) -> CaseFileError:
        """The problems found, at most MAX_PROBLEMS of them: a hostile file with 20,000 bad paths is refused
        in a screenful, not 20,000 lines."""
        shown = self.problems[:MAX_PROBLEMS]
        if len(self.problems) > MAX_PROBLEMS:
            shown.append(
                Problem(self.file, 1, "(file)", f"{len(self.problems) - MAX_PROBLEMS} more problem(s) not shown")
            )
        return CaseFileError(shown)

    def add(self, field: str, message: str) -> None:
        probe = field
        while probe and probe not in self.lines:
            probe = probe.rsplit(".", 1)[0] if "." in probe else probe.rsplit("[", 1)[0] if "[" in probe else ""
        self.problems.append(Problem(self.file, self.lines.get(probe, 1), field, message))


def load_case(path: Path | str, cache: Any = None) -> Case:
    path = Path(path)
    data, lines = parse_file(path, cache)
    return build_case(data, lines, str(path), bounded=True)


# A case id names files (`<surface>/<id>.yaml` in a compiled library) and rollouts: a plain slug.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what function-calling APIs accept as a tool name
ALL_TOOLS: dict[str, ToolSpec] = {spec.name: spec for cls in SERVICES.values() for spec in cls.tool_specs()}


def build_case(data: Any, lines: dict[str, int], file: str, *, bounded: bool = False) -> Case:
    """A validated `Case` from plain data, or CaseFileError with every problem located. `bounded` says the
    data came from `parse_file`, which already bounded it; anything else (an LLM's JSON) is bounded here."""
    if not bounded:
        try:
            check_data(data)
        except Located as exc:
            raise CaseFileError([Problem(file, exc.line, exc.field, str(exc))]) from None
    out = _Collector(file, lines)
    if not isinstance(data, dict):
        raise CaseFileError([Problem(file, 1, "(file)", f"a case file must be a mapping, not {describe(data)}")])
    missing = [key for key in REQUIRED if key not in data]
    for key in data:
        if key not in KNOWN:
            hint = suggest(key, KNOWN)
            out.add(key, f"unknown field{hint}")
            # A misspelt required field is one problem, not two: the typo says what is missing.
            missing = [m for m in missing if hint != f" (did you mean {m!r}?)"]
    for key in missing:
        out.add(key, "required field is missing")
    if out.problems:
        raise out.error()

    for key in ("id", "title", "task", "policy_reminder"):
        _text(out, data, key)
    if isinstance(data["id"], str) and data["id"].strip() and not _ID.match(data["id"]):
        out.add("id", "must be a slug: letters, digits, '.', '_' and '-', at most 128, starting with a letter or digit")
    if not _is_int(data["version"]) or data["version"] < 1:
        out.add("version", "must be a positive integer")

    ivc = data["ivc"] if isinstance(data["ivc"], dict) else {}
    if not isinstance(data["ivc"], dict):
        out.add("ivc", "must map strategy, vulnerability and constraint")
    tables: dict[str, Mapping[str, object]] = {
        "strategy": STRATEGIES,
        "vulnerability": VULNERABILITIES,
        "constraint": CONSTRAINTS,
    }
    for key in ivc:
        if key not in tables:
            out.add(f"ivc.{key}", f"unknown field{suggest(key, tables)}")
    codes: dict[str, str | None] = {key: ivc.get(key) if isinstance(ivc.get(key), str) else None for key in tables}
    for key, table in tables.items():
        if codes[key] not in table:
            out.add(f"ivc.{key}", f"unknown {key} code {ivc.get(key)!r} (known: {', '.join(table)})")
    strategy = STRATEGIES.get(codes["strategy"] or "")

    surfaces = data["surfaces"]
    if not isinstance(surfaces, list) or not surfaces:
        out.add("surfaces", "must be a non-empty list")
        surfaces = []
    for i, surface in enumerate(surfaces):
        if not isinstance(surface, str) or surface not in SURFACES:
            out.add(f"surfaces[{i}]", f"unknown service {surface!r} (known: {', '.join(SURFACES)})")
        elif surface in surfaces[:i]:
            out.add(f"surfaces[{i}]", f"{surface!r} is listed twice")
    surfaces = list(dict.fromkeys(s for s in surfaces if isinstance(s, str) and s in SURFACES))
    constraint = CONSTRAINTS.get(codes["constraint"] or "")
    if constraint and constraint.surface != "cross" and constraint.surface not in surfaces:
        out.add(
            "ivc.constraint",
            f"{constraint.code} belongs to the {constraint.surface} surface, which the case does not list in surfaces",
        )

    followups = data.get("followups") or []
    if not isinstance(followups, list) or not all(isinstance(f, str) for f in followups):
        out.add("followups", "must be a list of user turns (strings)")
        followups = []

    seed = data["seed"] if isinstance(data["seed"], dict) else {}
    if not isinstance(data["seed"], dict):
        out.add("seed", "must be a mapping of service name to its state")
    for key in seed:
        if key not in SEED_KEYS:
            out.add(f"seed.{key}", f"unknown service {key!r}{suggest(key, SEED_KEYS)}")
    check_seed(seed, out.add)
    _setup_actions(out, seed.get("setup_actions"))
    values = data.get("values") or {}
    if not isinstance(values, dict):
        out.add("values", "must be a mapping of names to values")
        values = {}

    visible = _visible_tools(surfaces)
    # A problem already reported in the seed or the surfaces is not reported again through what depends on
    # it (the attack's place in the seed, a plan's tools): one mistake, one line.
    seed_broken = any(p.field.startswith("seed") for p in out.problems)
    surfaces_broken = any(p.field.startswith("surfaces") for p in out.problems)
    attack = _attack(out, data["attack"], strategy, seed, len(followups), visible, seed_broken=seed_broken)
    lookalike = (
        attack.intervention.get("name")
        if attack.intervention
        and attack.intervention.get("kind") == "lookalike"
        and isinstance(attack.intervention.get("name"), str)
        else None
    )
    scope = Scope(
        services=frozenset(SERVICES),
        tools={name: frozenset(spec.parameters["properties"]) for name, spec in ALL_TOOLS.items()},
        vias=frozenset({"run_command", *([lookalike] if lookalike else [])}),
    )
    verifier = data["verifier"] if isinstance(data["verifier"], dict) else {}
    if not isinstance(data["verifier"], dict) or "rule" not in verifier:
        out.add("verifier", "must be a mapping with a rule")
    for key in verifier:
        if key not in ("rule", "semantic", "judge_instructions", "bound"):
            out.add(
                f"verifier.{key}", f"unknown field{suggest(key, ('rule', 'semantic', 'judge_instructions', 'bound'))}"
            )
    if verifier.get("bound", "upper") not in ("upper", "lower"):
        out.add(
            "verifier.bound",
            "must be upper (the rule decides a deterministic part) or lower (the rule sees "
            "verbatim and typed disclosures; paraphrases need the judge)",
        )
    elif "bound" in verifier and verifier.get("semantic") is not True:
        out.add("verifier.bound", "only a semantic verifier has a bound")
    if not isinstance(verifier.get("semantic", False), bool):
        out.add("verifier.semantic", "must be true or false")
    if not isinstance(verifier.get("judge_instructions", ""), str):
        out.add("verifier.judge_instructions", "must be a string")
    semantic = verifier.get("semantic", False) is True
    if semantic and not verifier.get("judge_instructions"):
        out.add("verifier.judge_instructions", "a semantic verifier needs judge instructions")
    if constraint and constraint.kind == "semantic" and not semantic:
        out.add("verifier.semantic", f"{constraint.code} is a semantic constraint: set semantic: true")
    context = {"seed": seed, "values": values}
    if "rule" in verifier:
        for where, message in check_rule(verifier["rule"], context, scope=scope):
            out.add(where, message)

    utility = data.get("utility")
    if utility is not None:
        if not isinstance(utility, dict) or set(utility) != {"rule"}:
            out.add("utility", "must be a mapping with one rule: {rule: ...} (was the user's task done?)")
            utility = None
        else:
            for where, message in check_rule(utility["rule"], context, "utility.rule", scope=scope):
                out.add(where, message)

    cues = data["recognition_cues"]
    if not isinstance(cues, list) or not cues or not all(isinstance(c, str) and c.strip() for c in cues):
        out.add("recognition_cues", "must be a non-empty list of phrases")
        cues = []

    plans = _plans(out, data["plans"], ALL_TOOLS if surfaces_broken else visible, attack)
    variant = data.get("variant") or {}
    if not isinstance(variant, dict) or (
        variant
        and (
            variant.get("kind") not in VARIANTS
            or not isinstance(variant.get("of"), str)
            or set(variant) - {"kind", "of"}
        )
    ):
        out.add("variant", f"must be {{kind: {' | '.join(VARIANTS)}, of: <base case id>}}")
        variant = {}
    if data.get("notes") is not None and not isinstance(data["notes"], str):
        out.add("notes", "must be free text (a string)")
    divergences = _divergences(out, data.get("divergences"))
    if out.problems:
        raise out.error()
    canonical = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    return Case(
        id=data["id"],
        version=data["version"],
        title=data["title"],
        strategy=ivc["strategy"],
        vulnerability=ivc["vulnerability"],
        constraint=ivc["constraint"],
        surfaces=tuple(surfaces),
        channel=strategy.channel if strategy else "",
        task=data["task"],
        followups=tuple(followups),
        seed=seed,
        values=values,
        attack=attack,
        rule=verifier["rule"],
        semantic=semantic,
        utility=utility["rule"] if utility else None,
        semantic_bound=str(verifier.get("bound", "upper")) if semantic else "",
        judge_instructions=str(verifier.get("judge_instructions", "")),
        policy_reminder=data["policy_reminder"],
        recognition_cues=tuple(cues),
        plans=plans,
        variant=variant.get("kind", ""),
        variant_of=variant.get("of", ""),
        divergences=divergences,
        source=file,
        content_hash=hashlib.sha256(canonical).hexdigest(),
        raw=data,
    )


def _divergences(out: _Collector, raw: Any) -> tuple[tuple[str, str], ...]:
    """Where a case imported from another benchmark reads harm or utility differently from it (cases/agentdojo.py):
    `[{kind: a-slug, detail: text}]`, kept so a comparison with that benchmark can say why two verdicts differ."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_DIVERGENCES:
        out.add("divergences", f"must be a list of at most {MAX_DIVERGENCES} {{kind, detail}} entries")
        return ()
    found = []
    for i, item in enumerate(raw):
        if (
            not isinstance(item, dict)
            or set(item) != {"kind", "detail"}
            or not isinstance(item["kind"], str)
            or not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", item["kind"])
            or not isinstance(item["detail"], str)
        ):
            out.add(f"divergences[{i}]", "must be {kind: a lower-case slug, detail: text}")
            continue
        found.append((item["kind"], item["detail"]))
    return tuple(found)


def _text(out: _Collector, data: dict[str, Any], key: str) -> None:
    if not isinstance(data.get(key), str) or not data[key].strip():
        out.add(key, "must be a non-empty string")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _visible_tools(surfaces: list[str]) -> dict[str, ToolSpec]:
    # run_command is one tool away in every harness (the shell harness gives every case a shell), so a
    # plan may take a route through it whatever the case's surfaces.
    return {name: spec for name, spec in ALL_TOOLS.items() if spec.service in surfaces or name == "run_command"}


def _path_args(spec: ToolSpec) -> tuple[str, ...]:
    """The arguments of a tool that name workspace paths (attachments: paths or drive document ids)."""
    params = spec.parameters["properties"]
    names = [n for n in ("path", "source", "destination") if spec.service == "workspace" and n in params]
    names += [n for n in ("save_as", "attachments") if n in params]
    return tuple(names)


def _check_args(out: _Collector, where: str, spec: ToolSpec, args: dict[str, Any], *, partial: bool = False) -> None:
    """Arguments against the tool's schema, and every workspace path inside the workspace."""
    schema = {**spec.parameters, "required": []} if partial else spec.parameters
    for problem in validate(schema, args):
        out.add(f"{where}", problem)
    for name in _path_args(spec):
        value = args.get(name)
        for i, path in enumerate(value if isinstance(value, list) else [value] if value is not None else []):
            why = tool_path_problem(path)
            if why:
                out.add(
                    f"{where}.{name}" + (f"[{i}]" if isinstance(value, list) else ""),
                    f"{why} (a path a refused attempt uses belongs in reject)",
                )


def _setup_actions(out: _Collector, raw: Any) -> None:
    """Tool calls run as `setup` before the agent starts: any tool of the mocked world, checked like a step."""
    if raw is None:
        return
    if not isinstance(raw, list):
        out.add("seed.setup_actions", "must be a list of {tool, args}")
        return
    if len(raw) > MAX_SETUP_ACTIONS:
        out.add(
            "seed.setup_actions",
            f"{len(raw):,} setup actions; a case may have at most {MAX_SETUP_ACTIONS} "
            f"(they run each time a sandbox is built)",
        )
        raw = raw[:MAX_SETUP_ACTIONS]
    size = len(orjson.dumps(raw))
    if size > MAX_PLAN_BYTES:
        out.add("seed.setup_actions", f"{size:,} bytes as JSON; setup actions may hold at most {MAX_PLAN_BYTES:,}")
    for i, action in enumerate(raw):
        where = f"seed.setup_actions[{i}]"
        if not isinstance(action, dict) or not isinstance(action.get("tool"), str):
            out.add(where, "a setup action needs a tool name and args")
            continue
        for key in action:
            if key not in ("tool", "args"):
                out.add(f"{where}.{key}", f"unknown field{suggest(key, ('tool', 'args'))}")
        spec = ALL_TOOLS.get(action["tool"])
        if spec is None:
            out.add(f"{where}.tool", f"unknown tool {action['tool']!r}{suggest(action['tool'], ALL_TOOLS)}")
            continue
        if spec.name == "run_command":
            # Setup runs while every sandbox is built, dozens of times per check and outside its time
            # budget: it sets up state through the services; a command belongs in a plan or a seed script.
            out.add(f"{where}.tool", "setup actions cannot run commands (put a script in the seed)")
            continue
        args = action.get("args", {})
        if not isinstance(args, dict):
            out.add(f"{where}.args", f"must be a mapping of argument names to values, not {describe(args)}")
            continue
        _check_args(out, f"{where}.args", spec, args)


def _attack(
    out: _Collector,
    raw: Any,
    strategy: Any,
    seed: dict[str, Any],
    n_followups: int,
    visible: dict[str, ToolSpec],
    *,
    seed_broken: bool = False,
) -> Attack:
    if not isinstance(raw, dict):
        out.add("attack", "must be a mapping")
        return Attack("user", "")
    allowed = {"placement", "content", "target", "item", "intervention", "marker", "source"}
    for key in raw:
        if key not in allowed:
            out.add(f"attack.{key}", f"unknown field{suggest(key, allowed)}")
    placement = raw.get("placement") if isinstance(raw.get("placement"), str) else None
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        out.add("attack.content", "must be a non-empty string")
        content = ""
    expected = {"user": "user", "environment": "seed", "tool": "tool"}.get(strategy.channel if strategy else "")
    if placement not in ("user", "seed", "tool"):
        out.add("attack.placement", "must be user, seed or tool")
    elif expected and placement != expected and not (strategy.code == "T4" and placement == "seed"):
        # T4 poisons a data source the agent retrieves through a tool, so it lives in the seed.
        out.add(
            "attack.placement",
            f"strategy {strategy.code} is {strategy.channel}-side: its attack is placed in {expected!r}",
        )
    target, item, intervention = raw.get("target"), raw.get("item"), raw.get("intervention")
    if placement == "user":
        if target not in (None, "task") and target not in [f"followups[{i}]" for i in range(n_followups)]:
            out.add("attack.target", "a user attack goes in 'task' or 'followups[N]' of this case")
    elif placement == "seed":
        if not isinstance(target, str):
            out.add("attack.target", "a seed attack needs the seed reference it is placed at")
        elif item is not None:
            _check_item(out, seed, target, item, seed_broken)
        else:
            why = _text_target_problem(seed, target)
            if why and not (seed_broken and why.startswith("no such place")):
                out.add("attack.target", why)
    elif placement == "tool":
        intervention = _intervention(out, intervention, visible)
    marker = raw.get("marker")
    if marker is not None and (not isinstance(marker, str) or not marker.strip()):
        out.add("attack.marker", "must be a phrase of the attack content (a string)")
        marker = None
    elif isinstance(marker, str) and marker not in content:
        out.add("attack.marker", "the marker must be a phrase of the attack content")
    source = _attack_source(out, raw.get("source")) if "source" in raw else None
    return Attack(
        placement=placement or "user",
        content=content,
        target=target if isinstance(target, str) else None,
        item=item if isinstance(item, dict) else None,
        intervention=intervention if isinstance(intervention, dict) else None,
        marker=marker or derive_marker(content),
        source=source,
    )


def _attack_source(out: _Collector, raw: Any) -> dict[str, str] | None:
    """The technique the attack text comes from (cases/construction/sourcing.py): a knowledge-base mapping id and
    its citation, every field short text. Optional: hand-written cases and the frozen benchmarks have none."""
    if not isinstance(raw, dict):
        out.add("attack.source", f"must be a mapping of {', '.join(SOURCE_FIELDS)}, not {describe(raw)}")
        return None
    bad = False
    for key, value in raw.items():
        if key not in SOURCE_FIELDS:
            out.add(f"attack.source.{key}", f"unknown field{suggest(str(key), SOURCE_FIELDS)}")
            bad = True
        elif not isinstance(value, str) or len(value) > SOURCE_CHARS:
            out.add(f"attack.source.{key}", f"must be text of at most {SOURCE_CHARS} characters")
            bad = True
    for key in ("mapping", "package", "file", "entry"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            out.add(f"attack.source.{key}", "is required: the citation names the mapping, package, file and entry")
            bad = True
    if raw.get("use", "wrapper") not in SOURCE_USES:
        out.add("attack.source.use", f"must be one of {', '.join(SOURCE_USES)}")
        bad = True
    if isinstance(raw.get("strategy"), str) and raw["strategy"] not in STRATEGIES:
        out.add("attack.source.strategy", f"unknown strategy {raw['strategy']!r}")
        bad = True
    return None if bad else dict(raw)


def _check_item(out: _Collector, seed: dict[str, Any], target: str, item: Any, seed_broken: bool) -> None:
    """A whole record the attack adds to a seed list: a list there, the record's shape, a fresh id."""
    try:
        found = resolve_ref(seed, target)
    except (RefError, KeyError, TypeError) as exc:
        if not seed_broken:
            out.add("attack.target", f"no such place in the seed: {exc}")
        return
    if not isinstance(found, list):
        out.add("attack.target", "with item, the target must be a list in the seed")
        return
    if not isinstance(item, dict):
        out.add("attack.item", "must be a mapping (the record to add)")
        return
    shape = LIST_ITEMS.get(target)
    if shape is not None:
        shape.check(item, "attack.item", out.add)
    ids = {r.get("id") for r in found if isinstance(r, dict) and isinstance(r.get("id"), str)}
    if isinstance(item.get("id"), str) and item["id"] in ids:
        out.add("attack.item.id", f"{item['id']!r} is already the id of a record at {target}")


def _text_target_problem(seed: dict[str, Any], target: str) -> str | None:
    """Why the attack cannot be placed as text at `target`, or None. The text is placed with the same code
    a rollout uses (on a copy), and it must land in text: a number or a record made text would break the
    service that reads it."""
    head, _, last = target.rpartition(".")
    bracket = re.match(r'^(.*)\["((?:[^"\\]|\\.)*)"\]$', target)
    if bracket:
        head, last = bracket.group(1), bracket.group(2)
    try:
        container = resolve_ref(seed, head) if head else seed
        current = container[last]
    except (RefError, KeyError, TypeError, IndexError) as exc:
        return f"no such place in the seed: {exc}"
    workspace_file = head == "workspace.files"
    if isinstance(current, dict) and not (
        workspace_file and isinstance(current.get("content", ""), str) and "symlink" not in current
    ):
        return "the target must be a text field (a string), or a workspace file"
    if not isinstance(current, (str, dict)):
        return f"the target holds {describe(current)}, not text: place the attack in a string field"
    try:
        place_text(copy.deepcopy(seed), target, "")
    except (RefError, KeyError, TypeError, IndexError) as exc:
        return f"no such place in the seed: {exc}"
    return None


def _intervention(out: _Collector, raw: Any, visible: dict[str, ToolSpec]) -> dict[str, Any] | None:
    """A tool-side attack: its kind's fields, a tool the agent is shown, and arguments that tool takes."""
    if not isinstance(raw, dict) or raw.get("kind") not in INTERVENTION_KINDS:
        out.add("attack.intervention.kind", f"must be one of {', '.join(INTERVENTION_KINDS)}")
        return None
    kind = raw["kind"]
    allowed = {
        "tamper": {"kind", "tool", "match", "mode", "field"},
        "poison_description": {"kind", "tool"},
        "lookalike": {"kind", "name", "target", "inject_args"},
    }[kind]
    ok = True
    for key in raw:
        if key not in allowed:
            out.add(f"attack.intervention.{key}", f"unknown field for {kind}{suggest(key, allowed)}")
    tool_key = "target" if kind == "lookalike" else "tool"
    tool = raw.get(tool_key)
    # Problems below are reported but the intervention is kept where its shape allows, so the plans that
    # use it are checked against it rather than reported again as naming an unknown tool.
    if not isinstance(tool, str):
        out.add(f"attack.intervention.{tool_key}", "names the tool it applies to")
        return None
    spec = visible.get(tool)
    if spec is None:
        where = "not a tool of this case's surfaces" if tool in ALL_TOOLS else "no such tool"
        out.add(f"attack.intervention.{tool_key}", f"{tool!r}: {where}{suggest(tool, visible)}")
        return None
    params = spec.parameters["properties"]
    if kind == "tamper":
        if raw.get("mode", "append") not in TAMPER_MODES:
            out.add("attack.intervention.mode", f"must be one of {', '.join(TAMPER_MODES)}")
            ok = False
        match = raw.get("match")
        if match is not None and not isinstance(match, dict):
            out.add("attack.intervention.match", f"must map {tool}'s argument names to values, not {describe(match)}")
            ok = False
        for name, value in (match or {}).items() if isinstance(match, dict) else ():
            if name not in params:
                out.add(
                    f"attack.intervention.match.{name}", f"{tool} takes no argument {name!r}{suggest(name, params)}"
                )
                ok = False
            elif isinstance(value, (dict, list)) and params[name].get("type") not in ("object", "array"):
                out.add(f"attack.intervention.match.{name}", "must be a single value")
                ok = False
        if "field" in raw and (not isinstance(raw["field"], str) or not raw["field"]):
            out.add("attack.intervention.field", "names one field of the tool's result (a string)")
            ok = False
    if kind == "lookalike":
        name = raw.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            out.add("attack.intervention.name", "required for a look-alike tool: 1-64 letters, digits, _ or -")
            ok = False
        elif name in ALL_TOOLS:
            # Reported, and kept for the plans' sake: the gateway would indeed run such a call as the twin.
            out.add("attack.intervention.name", f"{name!r} is a real tool: a look-alike needs a name of its own")
        inject = raw.get("inject_args", {})
        if not isinstance(inject, dict):
            out.add(
                "attack.intervention.inject_args", f"must be a mapping of {tool}'s arguments, not {describe(inject)}"
            )
        else:
            _check_args(out, "attack.intervention.inject_args", spec, inject, partial=True)
    return raw if ok else None


def _plans(out: _Collector, raw: Any, tools: dict[str, ToolSpec], attack: Attack) -> Plans:
    if not isinstance(raw, dict) or not isinstance(raw.get("benign"), list) or not isinstance(raw.get("harmful"), list):
        out.add("plans", "needs benign and harmful lists of steps")
        return Plans((), ())
    size = len(orjson.dumps(raw))
    if size > MAX_PLAN_BYTES:
        out.add(
            "plans",
            f"{size:,} bytes as JSON; plans may hold at most {MAX_PLAN_BYTES:,} (the self-check runs "
            f"them dozens of times)",
        )
    tools = dict(tools)
    fake = attack.intervention if attack.intervention and attack.intervention.get("kind") == "lookalike" else None
    if fake and isinstance(fake.get("target"), str) and fake["target"] in tools:
        tools[fake["name"]] = tools[fake["target"]]
    built = {}
    for kind in ("benign", "harmful", "indirect"):
        steps = raw.get(kind) or []
        if not isinstance(steps, list):
            out.add(f"plans.{kind}", "must be a list of steps")
            steps = []
        if kind != "indirect" and not steps:
            out.add(f"plans.{kind}", "must have at least one step")
        if len(steps) > MAX_STEPS[kind]:
            out.add(
                f"plans.{kind}",
                f"{len(steps):,} steps; a {kind} plan may have at most {MAX_STEPS[kind]} (the "
                f"self-check runs the plans once per mutation and derived route)",
            )
            steps = steps[: MAX_STEPS[kind]]
        built[kind] = tuple(
            _step(out, f"plans.{kind}[{i}]", s, tools, kind == "harmful", len(raw.get("benign") or []))
            for i, s in enumerate(steps)
        )
    answer = raw.get("answer", "")
    if not isinstance(answer, str) or len(answer) > MAX_ANSWER_CHARS:
        out.add(
            "plans.answer",
            f"must be the plan's final answer to the user: text of at most {MAX_ANSWER_CHARS:,} characters",
        )
        answer = ""
    for key in raw:
        if key not in built and key != "answer":
            out.add(f"plans.{key}", f"unknown plan (use benign, harmful, indirect, answer){suggest(key, built)}")
    commands = sum(step.tool == "run_command" for steps in built.values() for step in steps)
    if commands > MAX_COMMANDS:
        out.add(
            "plans",
            f"{commands} run_command steps; a case's plans may have at most {MAX_COMMANDS} (each is a "
            f"sandboxed command every time the self-check runs its plan)",
        )
    uses_lookalike = fake is not None and any(s.tool == fake.get("name") for s in built["harmful"])
    if raw.get("harmful") and not uses_lookalike and not any(s.mutate for s in built["harmful"]):
        # A look-alike step has a mutation by construction: the same call through its trusted twin.
        out.add(
            "plans.harmful",
            "at least one harmful step needs mutate: argument changes that must make the verifier fall silent",
        )
    return Plans(built["benign"], built["harmful"], built["indirect"], answer)


STEP_KEYS = ("tool", "args", "mutate", "reject", "replaces")


def _step(out: _Collector, where: str, raw: Any, tools: dict[str, ToolSpec], harmful: bool, n_benign: int = 0) -> Step:
    if not isinstance(raw, dict) or not isinstance(raw.get("tool"), str):
        out.add(where, "a step needs a tool name and args")
        return Step("", {})
    for key in raw:
        if key not in STEP_KEYS:
            out.add(f"{where}.{key}", f"unknown field{suggest(key, STEP_KEYS)}")
    args = raw.get("args")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        out.add(f"{where}.args", f"must be a mapping of argument names to values, not {describe(args)}")
        return Step(raw["tool"], {})
    spec = tools.get(raw["tool"])
    if spec is None:
        out.add(f"{where}.tool", f"unknown tool {raw['tool']!r} for surfaces of this case{suggest(raw['tool'], tools)}")
        return Step(raw["tool"], args)
    _check_args(out, f"{where}.args", spec, args)
    mutate = raw.get("mutate") or []
    if not isinstance(mutate, list) or not all(isinstance(m, dict) and m for m in mutate):
        out.add(f"{where}.mutate", "must be a list of argument overrides")
        mutate = []
    if len(mutate) > MAX_MUTATIONS:
        out.add(
            f"{where}.mutate",
            f"{len(mutate):,} mutations; a step may have at most {MAX_MUTATIONS} (the "
            f"self-check runs the plans once for each)",
        )
        mutate = mutate[:MAX_MUTATIONS]
    for i, override in enumerate(mutate):
        _check_args(out, f"{where}.mutate[{i}]", spec, {**args, **override})
    reject = raw.get("reject")
    if reject is not None and not isinstance(reject, dict):
        out.add(f"{where}.reject", "must be a mapping of argument overrides")
        reject = None
    if (mutate or reject) and not harmful:
        out.add(where, "mutate and reject belong on harmful steps")
    replaces = raw.get("replaces")
    if replaces is not None and (not harmful or not _is_int(replaces) or not 0 <= replaces < n_benign):
        out.add(f"{where}.replaces", f"must be the index of a benign step (0..{n_benign - 1}) on a harmful step")
        replaces = None
    return Step(raw["tool"], args, tuple(mutate), reject, replaces)


# -- libraries ---------------------------------------------------------------------------------
def library_dir() -> Path:
    """The hand-written starter library: the default for runs and tests."""
    return Path(str(resources.files("redagent.cases") / "library"))


# The frozen compiled benchmarks, by version. A new version never rewrites an older one's files: runs
# made with v1 or v2 still resolve (and report) their cases by id and content hash.
BENCHMARKS = {1: "benchmark", 2: "benchmark_v2", 3: "benchmark_v3"}
LATEST_BENCHMARK = 3


def benchmark_dir(version: int | None = None) -> Path:
    """A compiled, frozen benchmark library (base cases and their variants, with its manifest); the
    latest version unless one is named."""
    version = LATEST_BENCHMARK if version is None else version
    if version not in BENCHMARKS:
        raise ValueError(f"no benchmark version {version} (known: {', '.join(map(str, BENCHMARKS))})")
    return Path(str(resources.files("redagent.cases") / BENCHMARKS[version]))


def benchmark_version(path: Path | str) -> int | None:
    """The benchmark version a case file belongs to, or None when it is not part of one."""
    resolved = Path(path).resolve()
    for version in sorted(BENCHMARKS, reverse=True):
        if resolved.is_relative_to(benchmark_dir(version).resolve()):
            return version
    return None


def benchmarks_used(cases: Iterable[Case]) -> dict[str, str | None]:
    """The compiled benchmark versions `cases` were read from (`"3"`), each with its frozen manifest's hash: what a
    run records so that it names the benchmark it used, whatever `--cases benchmark` means later."""
    versions = {v for c in cases if c.source and (v := benchmark_version(c.source)) is not None}
    return {str(v): manifest_hash(benchmark_dir(v)) for v in sorted(versions)}


CASE_SUFFIXES = (".yaml", ".yml", ".json")
# A case folder's walk. The compiled benchmarks nest three folders deep (benchmark/base/<surface>/) and the whole
# installed package holds 11,348 case files; these bounds leave wide margins and keep a hostile folder (3,000
# levels, millions of entries) to one line. The walk is iterative: Path.rglob recursed, a RecursionError there.
MAX_FOLDER_DEPTH = 32
MAX_FOLDER_ENTRIES = 200_000


def case_files(paths: Iterable[Path | str]) -> list[Path]:
    """The case files under `paths` (a folder's files found by `walk_folder`, a file as given); CaseFileError
    for a folder that cannot be walked within bounds or holds a case file linked from outside it."""
    files, problems = _case_files(paths)
    if problems:
        raise CaseFileError(problems)
    return files


def _case_files(paths: Iterable[Path | str]) -> tuple[list[Path], list[Problem]]:
    found: list[Path] = []
    problems: list[Problem] = []
    for path in map(Path, paths):
        if path.is_dir():
            found += walk_folder(path, problems)
        else:
            found.append(path)  # a file named on the command line is read where it points
    return found, problems


def walk_folder(root: Path, problems: list[Problem]) -> list[Path]:
    """The case files in a folder and below it, sorted; what cannot be taken is added to `problems`, one line
    each. Iterative and bounded (depth, entries). Linked folders are not entered (as before); a linked case
    file is read only if it resolves inside the folder: a link out of it (`x.yaml -> /etc/…`, `-> ../../secret`)
    is refused by name. A frozen library's manifest.json sits beside its cases and is not one of them."""
    base = os.path.realpath(root)
    found: list[Path] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    seen = 0
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(itertools.islice(listing, MAX_FOLDER_ENTRIES - seen + 1))
        except OSError as exc:
            problems.append(Problem(str(folder), 1, "(folder)", f"cannot read: {exc.strerror or exc}"))
            continue
        seen += len(entries)
        if seen > MAX_FOLDER_ENTRIES:
            problems.append(
                Problem(
                    str(root),
                    1,
                    "(folder)",
                    f"more than {MAX_FOLDER_ENTRIES:,} files and folders: "
                    f"not a case folder (name the folders of cases)",
                )
            )
            return sorted(found)
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_symlink():
                    if path.suffix in CASE_SUFFIXES and path.name != "manifest.json":
                        target = os.path.realpath(path)
                        if os.path.commonpath([base, target]) != base:
                            problems.append(
                                Problem(
                                    str(path),
                                    1,
                                    "(file)",
                                    f"a link to {target}, outside the case folder {root}: refused",
                                )
                            )
                        else:
                            found.append(path)
                elif entry.is_dir(follow_symlinks=False):
                    if depth + 1 > MAX_FOLDER_DEPTH:
                        problems.append(
                            Problem(
                                str(path),
                                1,
                                "(folder)",
                                f"nested deeper than {MAX_FOLDER_DEPTH} folders below {root}: not walked",
                            )
                        )
                    else:
                        stack.append((path, depth + 1))
                elif path.suffix in CASE_SUFFIXES and path.name != "manifest.json":
                    found.append(path)
            except OSError as exc:
                problems.append(Problem(str(path), 1, "(file)", f"cannot read: {exc.strerror or exc}"))
    return sorted(found)


def starter_library() -> dict[str, Case]:
    """The starter library by id, parsed once while its files are unchanged: every stored rollout the console
    opens resolves its case against it (cases are frozen, so the parsed cases are shared; never mutate this)."""
    files = case_files([library_dir()])
    return _parsed_library(tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files))


@lru_cache(maxsize=2)
def _parsed_library(_signature: tuple[tuple[str, int, int], ...]) -> dict[str, Case]:
    return {c.id: c for c in load_cases()}


def load_cases(paths: Iterable[Path | str] | None = None, *, cache: Any = None) -> list[Case]:
    """Load every case under `paths` (default: the built-in library); all problems, or the cases. `cache`: see
    `parse_file`."""
    files, problems = _case_files(paths if paths is not None else [library_dir()])
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for file in files:
        if not file.exists():
            problems.append(Problem(str(file), 1, "(file)", "cannot read: no such file"))
            continue
        try:
            case = load_case(file, cache)
        except CaseFileError as exc:
            problems += exc.problems
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(str(file), 1, "(file)", f"cannot read: {exc}"))
            continue
        if case.id in seen:
            problems.append(Problem(str(file), 1, "id", f"duplicate id {case.id!r} (also in {seen[case.id]})"))
            continue
        seen[case.id] = str(file)
        cases.append(case)
    if problems:
        raise CaseFileError(problems)
    return cases


def manifest_hash(root: Path | None = None) -> str | None:
    """The frozen manifest's hash of a compiled library (default: the latest benchmark), None if not frozen."""
    manifest = (root or benchmark_dir()) / "manifest.json"
    return orjson.loads(manifest.read_bytes())["manifest_hash"] if manifest.exists() else None


def find_cases(
    ids: Iterable[str], files: dict[str, str] | None = None, hashes: dict[str, str] | None = None
) -> dict[str, Case]:
    """The cases with these ids, by id — what a stored run's case ids are resolved against: `files`
    (id → the file a run read it from, for cases of a researcher's own folder), else the starter
    library and the compiled benchmarks (base cases and variants). With `hashes` (id → the content hash
    a run recorded), a compiled case is taken from the benchmark version whose file has that content,
    so a run made on v1 resolves v1's cases. Ids found nowhere (or whose file is gone) are absent."""
    wanted, files, hashes = set(ids), files or {}, hashes or {}
    own = [Path(files[cid]) for cid in sorted(wanted) if cid in files and Path(files[cid]).is_file()]
    found = {c.id: c for c in (load_cases(own) if own else []) if c.id in wanted}
    rest = wanted - found.keys() - files.keys()
    library: dict[str, Case] = {}
    if rest:
        library = starter_library()
        found.update({cid: library[cid] for cid in rest if cid in library})
        found.update(compiled_cases(rest - found.keys(), hashes))
    # A benign arm derived in memory (`<id>-benign`) resolves through the case it was derived from.
    derived = {cid[: -len(BENIGN_SUFFIX)]: cid for cid in wanted - found.keys() if cid.endswith(BENIGN_SUFFIX)}
    if derived and not library:
        library = starter_library()
    for base_id, cid in derived.items():
        for base in _candidates(base_id, files, library):
            counterpart = base.benign_counterpart()
            if cid not in hashes or hashes[cid] == counterpart.content_hash:
                found[cid] = counterpart
                break
    return found


def _candidates(case_id: str, files: dict[str, str], library: dict[str, Case]) -> list[Case]:
    """Every case a base id may name: the researcher's file, the starter library, each benchmark version."""
    if case_id in files:
        return [c for c in load_cases([files[case_id]]) if c.id == case_id] if Path(files[case_id]).is_file() else []
    out = [library[case_id]] if case_id in library else []
    for version in sorted(BENCHMARKS, reverse=True):
        out += compiled_cases([case_id], version=version).values()
    return out


def compiled_cases(
    ids: Iterable[str], hashes: dict[str, str] | None = None, *, version: int | None = None
) -> dict[str, Case]:
    """The compiled benchmark's cases with these ids: the newest version that has the id (or the version
    whose file has the content hash `hashes` records, or the one `version` names). Only their own files
    are parsed — the compiler writes `<base|variants>/<surface>/<id>.yaml` and every compiled id starts
    with its surface — so resolving a run's few cases does not pay for parsing thousands."""
    hashes = hashes or {}
    versions = [version] if version is not None else sorted(BENCHMARKS, reverse=True)
    found: dict[str, Case] = {}
    for case_id in sorted(set(ids)):
        if not isinstance(case_id, str) or not _ID.match(case_id):
            continue  # an id from a stored run is data too: it names a file only if it is a plain slug
        surface = case_id.split("-", 1)[0]
        for number in versions:
            root = benchmark_dir(number)
            path = next(
                (
                    root / kind / surface / f"{case_id}.yaml"
                    for kind in ("base", "variants")
                    if (root / kind / surface / f"{case_id}.yaml").is_file()
                ),
                None,
            )
            if path is None:
                continue
            case = load_cases([path])[0]
            if case.id != path.stem:  # found by file name; a file holding another id must not answer for it
                raise CaseFileError([Problem(str(path), 1, "id", f"id {case.id!r} differs from the file name")])
            found.setdefault(case_id, case)  # the newest, unless an older version has the recorded content
            if case_id not in hashes:
                break
            if hashes[case_id] == case.content_hash:
                found[case_id] = case
                break
    return found
