"""Loading and validating case files, with every problem located as `file:line: field: what`.

Case files are YAML (JSON is accepted, being YAML too) and are parsed with the safe loader only:
a case file is data, never code. Validation is exhaustive rather than fail-fast, so an author sees
every problem in a file at once. A loaded case is checked against the taxonomy, the services' real
tool schemas, and its own seed (every verifier reference must resolve).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import yaml

from redagent.cases.schema import BENIGN_SUFFIX, Attack, Case, Plans, Step, derive_marker, place_text
from redagent.cases.taxonomy import CONSTRAINTS, STRATEGIES, SURFACES, VULNERABILITIES
from redagent.sandbox.environment import SERVICES
from redagent.sandbox.gateway import INTERVENTION_KINDS, TAMPER_MODES
from redagent.sandbox.tools import validate
from redagent.sandbox.verifier import RefError, check_rule, resolve_ref

REQUIRED = ("id", "version", "title", "ivc", "surfaces", "task", "seed", "attack", "verifier",
            "policy_reminder", "recognition_cues", "plans")
KNOWN = set(REQUIRED) | {"followups", "values", "notes", "variant", "utility"}
VARIANTS = ("benign", "multi_channel")
SEED_KEYS = set(SERVICES) | {"organization", "clock", "setup_actions"}


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field}: {self.message}"


class CaseFileError(Exception):
    """One or more problems in case files; `problems` lists them all."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = problems


# -- YAML with line numbers --------------------------------------------------------------------
# libyaml's parser when PyYAML was built with it (several times faster on a large library).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Constructor(yaml.constructor.SafeConstructor):
    """Safe scalars, except that dates stay text: a case's dates are data the agent reads as written."""


_Constructor.add_constructor("tag:yaml.org,2002:timestamp", _Constructor.construct_yaml_str)


_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq",
                                                   "timestamp")}


def _to_python(node: yaml.Node, path: str, lines: dict[str, int], scalars: _Constructor) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if node.tag not in _PLAIN_TAGS:
        raise _Located(path or "(file)", node.start_mark.line + 1,
                       f"tag {node.tag!r} is not allowed: case files hold plain data only")
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Located(path or "(file)", key_node.start_mark.line + 1, "keys must be plain values")
            key = scalars.construct_object(key_node)
            child = f"{path}.{key}" if path else str(key)
            lines[child] = key_node.start_mark.line + 1
            if key in out:
                raise _Located(child, key_node.start_mark.line + 1, f"duplicate key {key!r}")
            out[str(key)] = _to_python(value_node, child, lines, scalars)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_to_python(item, f"{path}[{i}]", lines, scalars) for i, item in enumerate(node.value)]
    return scalars.construct_object(node)


class _Located(Exception):
    def __init__(self, field: str, line: int, message: str) -> None:
        super().__init__(message)
        self.field, self.line = field, line


def parse_file(path: Path) -> tuple[Any, dict[str, int]]:
    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        why = getattr(exc, "problem", None) or exc
        raise CaseFileError([Problem(str(path), line, "(file)", f"not valid YAML: {why}")]) from None
    if node is None:
        raise CaseFileError([Problem(str(path), 1, "(file)", "empty file")])
    lines: dict[str, int] = {}
    try:
        # A constructor per file: a constructor memoises every node it builds (`constructed_objects`),
        # so a shared one kept every node and mark ever parsed alive — tens of thousands of objects per
        # library that the cycle collector then walked on every full pass (100+ ms stalls in the console).
        return _to_python(node, "", lines, _Constructor()), lines
    except _Located as exc:
        raise CaseFileError([Problem(str(path), exc.line, exc.field, str(exc))]) from None
    except yaml.YAMLError as exc:
        raise CaseFileError([Problem(str(path), 1, "(file)", f"not valid YAML: {exc}")]) from None


# -- validation --------------------------------------------------------------------------------
class _Collector:
    def __init__(self, file: str, lines: dict[str, int]) -> None:
        self.file, self.lines, self.problems = file, lines, []

    def add(self, field: str, message: str) -> None:
        probe = field
        while probe and probe not in self.lines:
            probe = probe.rsplit(".", 1)[0] if "." in probe else probe.rsplit("[", 1)[0] if "[" in probe else ""
        self.problems.append(Problem(self.file, self.lines.get(probe, 1), field, message))


def load_case(path: Path | str) -> Case:
    path = Path(path)
    data, lines = parse_file(path)
    return build_case(data, lines, str(path))


def build_case(data: Any, lines: dict[str, int], file: str) -> Case:
    out = _Collector(file, lines)
    if not isinstance(data, dict):
        raise CaseFileError([Problem(file, 1, "(file)", "a case file must be a mapping")])
    for key in REQUIRED:
        if key not in data:
            out.add(key, "required field is missing")
    for key in data:
        if key not in KNOWN:
            out.add(key, f"unknown field (known: {', '.join(sorted(KNOWN))})")
    if out.problems:
        raise CaseFileError(out.problems)

    _text(out, data, "id")
    _text(out, data, "title")
    _text(out, data, "task")
    _text(out, data, "policy_reminder")
    if not isinstance(data["version"], int) or data["version"] < 1:
        out.add("version", "must be a positive integer")

    ivc = data["ivc"] if isinstance(data["ivc"], dict) else {}
    if not isinstance(data["ivc"], dict):
        out.add("ivc", "must map strategy, vulnerability and constraint")
    for key, table in (("strategy", STRATEGIES), ("vulnerability", VULNERABILITIES),
                       ("constraint", CONSTRAINTS)):
        if ivc.get(key) not in table:
            out.add(f"ivc.{key}", f"unknown {key} code {ivc.get(key)!r} (known: {', '.join(table)})")
    strategy = STRATEGIES.get(ivc.get("strategy"))

    surfaces = data["surfaces"]
    if not isinstance(surfaces, list) or not surfaces:
        out.add("surfaces", "must be a non-empty list")
        surfaces = []
    for i, surface in enumerate(surfaces):
        if surface not in SURFACES:
            out.add(f"surfaces[{i}]", f"unknown service {surface!r} (known: {', '.join(SURFACES)})")
    surfaces = [s for s in surfaces if s in SURFACES]
    constraint = CONSTRAINTS.get(ivc.get("constraint"))
    if constraint and constraint.surface != "cross" and constraint.surface not in surfaces:
        out.add("ivc.constraint", f"{constraint.code} belongs to the {constraint.surface} surface, "
                                  f"which the case does not list in surfaces")

    followups = data.get("followups") or []
    if not isinstance(followups, list) or not all(isinstance(f, str) for f in followups):
        out.add("followups", "must be a list of user turns (strings)")
        followups = []

    seed = data["seed"] if isinstance(data["seed"], dict) else {}
    if not isinstance(data["seed"], dict):
        out.add("seed", "must be a mapping of service name to its state")
    for key in seed:
        if key not in SEED_KEYS:
            out.add(f"seed.{key}", f"unknown service {key!r} (known: {', '.join(sorted(SEED_KEYS))})")
    values = data.get("values") or {}
    if not isinstance(values, dict):
        out.add("values", "must be a mapping of names to values")
        values = {}

    attack = _attack(out, data["attack"], strategy, seed, len(followups))
    verifier = data["verifier"] if isinstance(data["verifier"], dict) else {}
    if not isinstance(data["verifier"], dict) or "rule" not in verifier:
        out.add("verifier", "must be a mapping with a rule")
    for key in verifier:
        if key not in ("rule", "semantic", "judge_instructions"):
            out.add(f"verifier.{key}", "unknown field (use rule, semantic, judge_instructions)")
    semantic = bool(verifier.get("semantic", False))
    if semantic and not verifier.get("judge_instructions"):
        out.add("verifier.judge_instructions", "a semantic verifier needs judge instructions")
    if constraint and constraint.kind == "semantic" and not semantic:
        out.add("verifier.semantic", f"{constraint.code} is a semantic constraint: set semantic: true")
    context = {"seed": seed, "values": values}
    if "rule" in verifier:
        for where, message in check_rule(verifier["rule"], context):
            out.add(where, message)

    utility = data.get("utility")
    if utility is not None:
        if not isinstance(utility, dict) or set(utility) != {"rule"}:
            out.add("utility", "must be a mapping with one rule: {rule: ...} (was the user's task done?)")
            utility = None
        else:
            for where, message in check_rule(utility["rule"], context, "utility.rule"):
                out.add(where, message)

    cues = data["recognition_cues"]
    if not isinstance(cues, list) or not cues or not all(isinstance(c, str) and c.strip() for c in cues):
        out.add("recognition_cues", "must be a non-empty list of phrases")
        cues = []

    plans = _plans(out, data["plans"], surfaces, attack)
    variant = data.get("variant") or {}
    if not isinstance(variant, dict) or (variant and (variant.get("kind") not in VARIANTS
                                                      or not isinstance(variant.get("of"), str))):
        out.add("variant", f"must be {{kind: {' | '.join(VARIANTS)}, of: <base case id>}}")
        variant = {}
    if out.problems:
        raise CaseFileError(out.problems)
    canonical = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    return Case(
        id=data["id"], version=data["version"], title=data["title"],
        strategy=ivc["strategy"], vulnerability=ivc["vulnerability"], constraint=ivc["constraint"],
        surfaces=tuple(surfaces), channel=strategy.channel if strategy else "",
        task=data["task"], followups=tuple(followups), seed=seed, values=values, attack=attack,
        rule=verifier["rule"], semantic=semantic, utility=utility["rule"] if utility else None,
        judge_instructions=str(verifier.get("judge_instructions", "")),
        policy_reminder=data["policy_reminder"], recognition_cues=tuple(cues), plans=plans,
        variant=variant.get("kind", ""), variant_of=variant.get("of", ""),
        source=file, content_hash=hashlib.sha256(canonical).hexdigest(), raw=data)


def _text(out: _Collector, data: dict[str, Any], key: str) -> None:
    if not isinstance(data.get(key), str) or not data[key].strip():
        out.add(key, "must be a non-empty string")


def _attack(out: _Collector, raw: Any, strategy: Any, seed: dict[str, Any], n_followups: int) -> Attack:
    if not isinstance(raw, dict):
        out.add("attack", "must be a mapping")
        return Attack("user", "")
    allowed = {"placement", "content", "target", "item", "intervention", "marker"}
    for key in raw:
        if key not in allowed:
            out.add(f"attack.{key}", f"unknown field (use {', '.join(sorted(allowed))})")
    placement = raw.get("placement")
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        out.add("attack.content", "must be a non-empty string")
        content = ""
    expected = {"user": "user", "environment": "seed", "tool": "tool"}.get(strategy.channel if strategy else "")
    if placement not in ("user", "seed", "tool"):
        out.add("attack.placement", "must be user, seed or tool")
    elif expected and placement != expected and not (strategy.code == "T4" and placement == "seed"):
        # T4 poisons a data source the agent retrieves through a tool, so it lives in the seed.
        out.add("attack.placement", f"strategy {strategy.code} is {strategy.channel}-side: "
                                    f"its attack is placed in {expected!r}")
    target, item, intervention = raw.get("target"), raw.get("item"), raw.get("intervention")
    if placement == "user":
        if target not in (None, "task") and target not in [f"followups[{i}]" for i in range(n_followups)]:
            out.add("attack.target", "a user attack goes in 'task' or 'followups[N]' of this case")
    elif placement == "seed":
        if not isinstance(target, str):
            out.add("attack.target", "a seed attack needs the seed reference it is placed at")
        else:
            try:
                found = resolve_ref(seed, target) if item is not None else None
                if item is not None and not isinstance(found, list):
                    out.add("attack.target", "with item, the target must be a list in the seed")
                if item is None:
                    _check_text_target(seed, target)
            except (RefError, KeyError, TypeError) as exc:
                out.add("attack.target", f"no such place in the seed: {exc}")
        if item is not None and not isinstance(item, dict):
            out.add("attack.item", "must be a mapping (the record to add)")
    elif placement == "tool":
        if not isinstance(intervention, dict) or intervention.get("kind") not in INTERVENTION_KINDS:
            out.add("attack.intervention.kind", f"must be one of {', '.join(INTERVENTION_KINDS)}")
            intervention = None
        else:
            kind = intervention["kind"]
            if kind in ("tamper", "poison_description") and not isinstance(intervention.get("tool"), str):
                out.add("attack.intervention.tool", "names the tool it applies to")
            if kind == "tamper" and intervention.get("mode", "append") not in TAMPER_MODES:
                out.add("attack.intervention.mode", f"must be one of {', '.join(TAMPER_MODES)}")
            if kind == "lookalike":
                for key in ("name", "target"):
                    if not isinstance(intervention.get(key), str):
                        out.add(f"attack.intervention.{key}", "required for a look-alike tool")
    marker = raw.get("marker") or derive_marker(content)
    if isinstance(raw.get("marker"), str) and raw["marker"] not in content:
        out.add("attack.marker", "the marker must be a phrase of the attack content")
    return Attack(placement=placement or "user", content=content,
                  target=target if isinstance(target, str) else None,
                  item=item if isinstance(item, dict) else None,
                  intervention=intervention if isinstance(intervention, dict) else None, marker=marker)


def _check_text_target(seed: dict[str, Any], target: str) -> None:
    """Place an empty attack with the same code a rollout uses: raises if the target is not there."""
    place_text(copy.deepcopy(seed), target, "")


def _plans(out: _Collector, raw: Any, surfaces: list[str], attack: Attack) -> Plans:
    if not isinstance(raw, dict) or not isinstance(raw.get("benign"), list) or not isinstance(raw.get("harmful"), list):
        out.add("plans", "needs benign and harmful lists of steps")
        return Plans((), ())
    # run_command is one tool away in every harness (the shell harness gives every case a shell), so a
    # plan may take a route through it whatever the case's surfaces.
    tools = {spec.name: spec for cls in SERVICES.values() for spec in cls.tool_specs()
             if cls.name in surfaces or spec.name == "run_command"}
    fake = attack.intervention if attack.intervention and attack.intervention.get("kind") == "lookalike" else None
    if fake and fake.get("target") in tools:
        tools[fake["name"]] = tools[fake["target"]]
    built = {}
    for kind in ("benign", "harmful", "indirect"):
        steps = raw.get(kind) or []
        if kind != "indirect" and not steps:
            out.add(f"plans.{kind}", "must have at least one step")
        built[kind] = tuple(_step(out, f"plans.{kind}[{i}]", s, tools, kind == "harmful",
                                  len(raw.get("benign") or []))
                            for i, s in enumerate(steps))
    for key in raw:
        if key not in built:
            out.add(f"plans.{key}", "unknown plan (use benign, harmful, indirect)")
    uses_lookalike = bool(fake) and any(s.tool == fake.get("name") for s in built["harmful"])
    if raw.get("harmful") and not uses_lookalike and not any(s.mutate for s in built["harmful"]):
        # A look-alike step has a mutation by construction: the same call through its trusted twin.
        out.add("plans.harmful", "at least one harmful step needs mutate: argument changes that must "
                                 "make the verifier fall silent")
    return Plans(built["benign"], built["harmful"], built["indirect"])


def _step(out: _Collector, where: str, raw: Any, tools: dict[str, Any], harmful: bool, n_benign: int = 0) -> Step:
    if not isinstance(raw, dict) or not isinstance(raw.get("tool"), str):
        out.add(where, "a step needs a tool name and args")
        return Step("", {})
    for key in raw:
        if key not in ("tool", "args", "mutate", "reject", "replaces"):
            out.add(f"{where}.{key}", "unknown field (use tool, args, mutate, reject, replaces)")
    args = raw.get("args") or {}
    spec = tools.get(raw["tool"])
    if spec is None:
        out.add(f"{where}.tool", f"unknown tool {raw['tool']!r} for surfaces of this case")
        return Step(raw["tool"], args)
    for problem in validate(spec.parameters, args):
        out.add(f"{where}.args", problem)
    mutate = raw.get("mutate") or []
    if not isinstance(mutate, list) or not all(isinstance(m, dict) and m for m in mutate):
        out.add(f"{where}.mutate", "must be a list of argument overrides")
        mutate = []
    for i, override in enumerate(mutate):
        for problem in validate(spec.parameters, {**args, **override}):
            out.add(f"{where}.mutate[{i}]", problem)
    reject = raw.get("reject")
    if reject is not None and not isinstance(reject, dict):
        out.add(f"{where}.reject", "must be a mapping of argument overrides")
        reject = None
    if (mutate or reject) and not harmful:
        out.add(where, "mutate and reject belong on harmful steps")
    replaces = raw.get("replaces")
    if replaces is not None and (not harmful or not isinstance(replaces, int) or isinstance(replaces, bool)
                                 or not 0 <= replaces < n_benign):
        out.add(f"{where}.replaces", f"must be the index of a benign step (0..{n_benign - 1}) on a harmful step")
        replaces = None
    return Step(raw["tool"], args, tuple(mutate), reject, replaces)


# -- libraries ---------------------------------------------------------------------------------
def library_dir() -> Path:
    """The hand-written starter library: the default for runs and tests."""
    return Path(str(resources.files("redagent.cases") / "library"))


# The frozen compiled benchmarks, by version. A new version never rewrites an older one's files: runs
# made with v1 still resolve (and report) their cases by id and content hash.
BENCHMARKS = {1: "benchmark", 2: "benchmark_v2"}
LATEST_BENCHMARK = 2


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


def case_files(paths: Iterable[Path | str]) -> list[Path]:
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            # A frozen library's manifest.json sits beside its cases and is not one of them.
            found += sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json")
                            and p.name != "manifest.json")
        else:
            found.append(path)
    return found


def load_cases(paths: Iterable[Path | str] | None = None) -> list[Case]:
    """Load every case under `paths` (default: the built-in library); all problems, or the cases."""
    files = case_files(paths if paths is not None else [library_dir()])
    cases, problems, seen = [], [], {}
    for file in files:
        if not file.exists():
            problems.append(Problem(str(file), 1, "(file)", "cannot read: no such file"))
            continue
        try:
            case = load_case(file)
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


def find_cases(ids: Iterable[str], files: dict[str, str] | None = None,
               hashes: dict[str, str] | None = None) -> dict[str, Case]:
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
        library = {c.id: c for c in load_cases()}
        found.update({cid: library[cid] for cid in rest if cid in library})
        found.update(compiled_cases(rest - found.keys(), hashes))
    # A benign arm derived in memory (`<id>-benign`) resolves through the case it was derived from.
    derived = {cid[: -len(BENIGN_SUFFIX)]: cid for cid in wanted - found.keys() if cid.endswith(BENIGN_SUFFIX)}
    if derived and not library:
        library = {c.id: c for c in load_cases()}  # the starter library, parsed once for every derived id
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


def compiled_cases(ids: Iterable[str], hashes: dict[str, str] | None = None, *,
                   version: int | None = None) -> dict[str, Case]:
    """The compiled benchmark's cases with these ids: the newest version that has the id (or the version
    whose file has the content hash `hashes` records, or the one `version` names). Only their own files
    are parsed — the compiler writes `<base|variants>/<surface>/<id>.yaml` and every compiled id starts
    with its surface — so resolving a run's few cases does not pay for parsing thousands."""
    hashes = hashes or {}
    versions = [version] if version is not None else sorted(BENCHMARKS, reverse=True)
    found: dict[str, Case] = {}
    for case_id in sorted(set(ids)):
        surface = case_id.split("-", 1)[0]
        for number in versions:
            root = benchmark_dir(number)
            path = next((root / kind / surface / f"{case_id}.yaml" for kind in ("base", "variants")
                         if (root / kind / surface / f"{case_id}.yaml").is_file()), None)
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
