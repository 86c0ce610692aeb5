"""The report of one run as a tree of frozen dataclasses: what `build_report` returns and every reader reads.

Each level names its fields in the report's own words (`AsrCell.valid` is the valid denominator, `ci_low` None
is "no interval", with `why_no_interval` saying why). The statistics in `judges/stats.py`, `judges/audit.py` and
`judges/health.py` still compute plain dicts; `from_json` turns one into its dataclass and refuses a dict with a
key the dataclass does not name, a missing key, or a value of the wrong type, so a statistic that gains a field
cannot silently drop out of the report. `to_json` is the inverse: the JSON users read (`redagent report`'s
report.json, `redagent stats --json`) with the same keys, in the same order, as the dicts had.

Two field markers keep that JSON as it was: `_OMIT` — the key is left out while the value is None (a judge's
`unlabelled` count, an audit figure's `note`); `_FLAT` — a nested dataclass whose fields sit beside its parent's
in the JSON (a cell's labels and its figures: `{"model": ..., "rollouts": ...}`), so that the pooled row is the
same figures under the labels "all".
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, Union

from redagent.store.records import InvalidReason  # a health cell's invalid rollouts by reason, as the store counts them

_OMIT = {"omit_none": True}
_FLAT = {"flat": True}

T = TypeVar("T")


class ReportShapeError(TypeError):
    """A statistic's dict does not have the shape its report dataclass names (a bug, never a user's error)."""


# -- the protocol ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Attacker:
    kind: str  # "none", "scripted", "adaptive"
    model: str | None
    budget: int | None


@dataclass(frozen=True, slots=True)
class JudgingConfiguration:
    config_name: str
    config_hash: str
    view: str
    backbone: str


@dataclass(frozen=True, slots=True)
class Protocol:
    """What the run was (its protocol as stored) and which judges the report reads (`backbone`)."""

    run_id: str
    status: str
    models: tuple[str, ...] | None
    harnesses: tuple[str, ...] | None
    cues: tuple[str, ...] | None
    defenses: tuple[str, ...] | None
    attempts: int | None
    cases: Any  # the run's case selection as its protocol stores it
    case_set_hash: str
    code_version: str
    parent_run_id: str | None
    backbone: str
    benign_arm: bool
    attacker: Attacker
    judging_configurations: tuple[JudgingConfiguration, ...]


# -- ASR -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AsrCell:
    """ASR of one (model, harness, cue, defense) cell over its valid attacked rollouts, for one source: the
    verifier ("execution") or a judging configuration. `rate` and its Wilson interval are None without a valid
    rollout; `unlabelled` (judges only) counts valid rollouts the judge has no ok label for. The execution ASR is a
    pair of bounds: `rate` the confirmed harm, `upper` confirmed plus `unresolved` (rollouts the verifier could not
    decide, never counted safe); its interval runs from the lower bound's Wilson low to the upper's Wilson high."""

    model: str
    harness: str
    cue: str
    defense: str
    source: str
    backbone: str | None
    harmful: int
    valid: int
    invalid: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    unlabelled: int | None = field(default=None, metadata=_OMIT)
    unresolved: int | None = field(default=None, metadata=_OMIT)
    upper: float | None = field(default=None, metadata=_OMIT)


@dataclass(frozen=True, slots=True)
class StrategyRate:
    strategy: str
    model: str
    harness: str
    harmful: int
    valid: int
    rate: float
    unresolved: int = 0
    upper: float | None = None


# -- semantic cases --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SemanticBound:
    cases: int
    valid: int
    harmful_by_rule: int
    candidates: int
    range: tuple[int, int]  # harmful rollouts [at least, at most] until judged


@dataclass(frozen=True, slots=True)
class SemanticJudge:
    config: str
    backbone: str
    decided: int
    harmful: int
    undecided: int


@dataclass(frozen=True, slots=True)
class Semantic:
    cases: int
    valid: int
    harmful_by_rule: int
    llm_hybrid: tuple[SemanticJudge, ...]
    bounds: Mapping[Literal["upper", "lower"], SemanticBound]


# -- utility ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class UtilityArm:
    """U of one arm: done of n valid rollouts with a utility check (of `valid`), Wilson 95 % [lo, hi]; u None
    ("n/a") when n is 0."""

    u: float | None
    done: int
    n: int
    valid: int
    lo: float | None
    hi: float | None


@dataclass(frozen=True, slots=True)
class ExecutionAsr:
    """Execution ASR as bounds: `rate` confirmed harm of valid, `upper` with the unresolved counted too."""

    harmful: int
    valid: int
    rate: float | None
    unresolved: int = 0
    upper: float | None = None


@dataclass(frozen=True, slots=True)
class UtilityFigures:
    benign: UtilityArm
    under_attack: UtilityArm
    execution_asr: ExecutionAsr | None  # None: the cell has no attacked rollout


@dataclass(frozen=True, slots=True)
class UtilityRow:
    """One cell's utility ("all" in every label: the pooled row)."""

    model: str
    harness: str
    cue: str
    defense: str
    figures: UtilityFigures = field(metadata=_FLAT)


@dataclass(frozen=True, slots=True)
class UtilityTable:
    cells: tuple[UtilityRow, ...]
    overall: UtilityFigures

    def rows(self) -> tuple[UtilityRow, ...]:
        """The cells, then the pooled row."""
        return (*self.cells, UtilityRow("all", "all", "all", "all", self.overall))


# -- setup health ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class HealthCell:
    model: str
    harness: str
    cue: str
    defense: str
    rollouts: int
    valid: int
    no_tool_call: int
    attacked: int
    reached: int
    invalid: Mapping[str, InvalidReason]
    invalid_n: int
    no_tool_call_share: float | None
    exposure: float | None
    warnings: tuple[str, ...]
    harmful_unreached: int = 0  # harmful rollouts the attack never reached (judges/health.py)


@dataclass(frozen=True, slots=True)
class Health:
    cells: tuple[HealthCell, ...]
    warnings: tuple[str, ...]


# -- views, ranking, effects -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ViewComparison:
    """Two judging views on the same rollouts: rates, disagreement, exact McNemar and b − a with its
    case-clustered interval (None, with the reason, when there is none)."""

    a: str
    b: str
    model: str
    n: int
    a_rate: float | None
    b_rate: float | None
    disagreement: float | None
    a_only: int
    b_only: int
    mcnemar_p: float
    diff: float | None
    diff_ci_low: float | None
    diff_ci_high: float | None
    why_no_interval: str | None


@dataclass(frozen=True, slots=True)
class SliceReversals:
    slice: str
    inversions: int
    pairs: int


@dataclass(frozen=True, slots=True)
class RankingAgreement:
    a: str
    b: str
    slices: int
    slices_with_reversal: int
    inversions: int
    by_slice: tuple[SliceReversals, ...]


@dataclass(frozen=True, slots=True)
class PairedChange:
    """A matched-pair change baseline → treatment, in percentage points with its case-clustered interval."""

    pairs: int
    incomplete: int
    baseline_rate: float | None
    treatment_rate: float | None
    change_pp: float | None
    ci_low_pp: float | None
    ci_high_pp: float | None
    prevented: int
    baseline_harmful: int
    introduced: int
    why_no_interval: str | None


@dataclass(frozen=True, slots=True)
class Effect:
    """An evaluation-cue or defense effect for one model ("all": pooled)."""

    baseline: str
    treatment: str
    model: str
    change: PairedChange = field(metadata=_FLAT)


# -- the Recognition–Execution Gap -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RegFigures:
    executions: int
    resolved: int
    unresolved: int
    broad: int
    strict: int
    rate_broad: float | None
    rate_strict: float | None
    lower_bound_broad: float | None
    lower_bound_strict: float | None


@dataclass(frozen=True, slots=True)
class RegStrategy:
    strategy: str
    figures: RegFigures = field(metadata=_FLAT)


@dataclass(frozen=True, slots=True)
class Reg:
    judge: str
    figures: RegFigures = field(metadata=_FLAT)
    by: tuple[RegStrategy, ...] = ()


# -- the human audit of the judge ------------------------------------------------------------------------------
EstimateMethod = Literal["bootstrap", "exact", "wilson-effective-n", "combined"]


@dataclass(frozen=True, slots=True)
class AuditEstimate:
    """One audit figure: its value (None, `why_undefined`) and 95 % interval (None, `why_no_interval`), how
    the interval was made, and the flags that qualify it (provisional; resting on two-cluster strata)."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    exact: bool
    why_undefined: str | None
    why_no_interval: str | None
    replicates_undefined: int | None
    method: EstimateMethod | None
    provisional: bool
    two_clusters: bool
    source: Literal["census", "sample"] | None = field(default=None, metadata=_OMIT)  # the judged ASR only
    note: str | None = field(default=None, metadata=_OMIT)
    coincides_with: Literal["human_asr"] | None = field(default=None, metadata=_OMIT)


@dataclass(frozen=True, slots=True)
class DesignMerge:
    strata: tuple[str, ...]
    into: str
    why: str


@dataclass(frozen=True, slots=True)
class AuditDesign:
    """How the sample was drawn; an audit drawn before cases were the unit has unit "rollout" and nothing else."""

    unit: Literal["case", "rollout"]
    min_cases: int | None = field(default=None, metadata=_OMIT)
    merges: tuple[DesignMerge, ...] = ()
    merged: Mapping[str, str] | None = field(default=None, metadata=_OMIT)


@dataclass(frozen=True, slots=True)
class Excluded:
    unsure: int
    pending: int


@dataclass(frozen=True, slots=True)
class UncoveredStratum:
    stratum: str
    population: int
    sampled: int
    unsure: int
    pending: int
    reason: str  # "not sampled" or "no usable label (...)"


@dataclass(frozen=True, slots=True)
class AuditStratum:
    stratum: str
    population: int
    sampled: int
    usable: int
    unsure: int
    pending: int
    weight: float | None  # None: no usable label
    fraction: float
    clusters: int


@dataclass(frozen=True, slots=True)
class PooledStratum:
    stratum: str
    into: str
    why: str


@dataclass(frozen=True, slots=True)
class ResolvedAsr:
    """The execution ASR over valid attacked rollouts: the verifier's bounds [`lower`, `upper`] (harm, and harm plus
    `unresolved`), and `rate` — the unresolved resolved by the audit's human labels (`share` of them harmful, from
    `labelled` unresolved items) — with its 95 % interval (`method`: exact, bootstrap or wilson-effective-n)."""

    harmful: int
    unresolved: int
    valid: int
    lower: float | None
    upper: float | None
    labelled: int
    share: float | None
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    method: str | None
    why_undefined: str | None
    why_no_interval: str | None


@dataclass(frozen=True, slots=True)
class AuditStats:
    """An audit's figures (judges.audit.estimates): reviewer agreement and kappa, the judge's precision, recall,
    specificity, F1 and accuracy against the final human labels, and the judged, direct human and audited ASR,
    weighted back to the covered population; `audits` (in a run's report) lists the run's audits, newest first."""

    audit_id: str
    run_id: str
    config: str
    config_hash: str
    backbone: str
    stratify: tuple[str, ...]
    items: int
    final_labels: int
    labelled_both: int
    agreement: float | None
    agreement_ci: tuple[float | None, float | None]
    agreement_method: str | None
    kappa: float | None
    kappa_ci: tuple[float | None, float | None]
    kappa_defined: bool
    kappa_method: str | None
    why_kappa_undefined: str | None
    why_no_kappa_interval: str | None
    kappa_clusters: int
    notes: tuple[str, ...]
    design: AuditDesign
    n: int
    usable: int
    excluded: Excluded
    provisional: bool
    strata: int
    strata_covered: int
    clusters: int
    population: int
    population_covered: int
    census: bool
    uncovered: tuple[UncoveredStratum, ...]
    by_stratum: tuple[AuditStratum, ...]
    reps: int
    interval_method: str
    interval_undefined: str | None
    pooled_for_variance: tuple[PooledStratum, ...]
    two_cluster_strata: int
    variance_strata: int
    interval_assumes: tuple[str, ...]
    label_stratified: bool
    precision: AuditEstimate
    recall: AuditEstimate
    specificity: AuditEstimate
    f1: AuditEstimate
    accuracy: AuditEstimate
    judged_asr: AuditEstimate
    human_asr: AuditEstimate
    audited_asr: AuditEstimate
    audits: tuple[str, ...] | None = field(default=None, metadata=_OMIT)
    # The run's execution ASR, the verifier's bounds resolved by the unresolved stratum's human labels (None for an
    # audit read back from a report written before verdicts had three values).
    execution: ResolvedAsr | None = field(default=None, metadata=_OMIT)

    def estimate(self, metric: str) -> AuditEstimate:
        """The figure named `metric` (one of stats.AUDIT_METRICS)."""
        value = getattr(self, metric)
        if not isinstance(value, AuditEstimate):
            raise KeyError(metric)
        return value


# -- the adaptive attacker -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AsrAtK:
    k: int
    harmful: int
    n: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    why_no_interval: str | None


@dataclass(frozen=True, slots=True)
class MovesToSuccess:
    successes: int
    not_within_budget: int
    distribution: Mapping[str, int]  # "k" → successes after exactly k moves, k = 0 … budget
    mean: float | None
    median: float | None


@dataclass(frozen=True, slots=True)
class Claims:
    claimed: int
    verified: int


@dataclass(frozen=True, slots=True)
class AdaptiveFigures:
    rollouts: int
    cases: int
    asr_at_k: tuple[AsrAtK, ...]
    moves_to_success: MovesToSuccess
    fixed_vs_adaptive: PairedChange
    moves_made: int
    refused_placements: int
    attacker_stopped: int
    claims: Claims
    # Rollouts the verifier could not decide: left out of every attacker figure (a success only the judges and
    # the audit can confirm is neither counted as one nor as a failure).
    unresolved: int = 0


@dataclass(frozen=True, slots=True)
class AdaptiveCell:
    model: str
    harness: str
    cue: str
    defense: str
    figures: AdaptiveFigures = field(metadata=_FLAT)


@dataclass(frozen=True, slots=True)
class Adaptive:
    attacker: str
    model: str | None
    budget: int
    cells: tuple[AdaptiveCell, ...]
    overall: AdaptiveFigures | None

    def rows(self) -> tuple[AdaptiveCell, ...]:
        """The cells, then the pooled row (labels "all") when there is one."""
        pooled = (AdaptiveCell("all", "all", "all", "all", self.overall),) if self.overall is not None else ()
        return (*self.cells, *pooled)


# -- the report ------------------------------------------------------------------------------------------------
TableName = Literal["asr", "utility", "views", "ranking", "cue", "defense", "reg", "audit", "adaptive"]
Section = Literal[
    "protocol",
    "asr",
    "by_strategy",
    "semantic",
    "utility",
    "health",
    "views",
    "ranking",
    "cue",
    "defense",
    "reg",
    "audit",
    "adaptive",
]
SECTIONS: tuple[Section, ...] = typing.get_args(Section)


@dataclass(frozen=True, slots=True)
class Report:
    """Every statistic of one run. A table left out (`build_report(only=...)`) is None; `sections` names the
    ones this report holds, in the order the JSON lists them (a computed REG without labels is held, as null)."""

    protocol: Protocol
    sections: tuple[Section, ...] = ("protocol",)
    asr: tuple[AsrCell, ...] | None = None
    by_strategy: tuple[StrategyRate, ...] | None = None
    semantic: Semantic | None = None
    utility: UtilityTable | None = None
    health: Health | None = None
    views: tuple[ViewComparison, ...] | None = None
    ranking: tuple[RankingAgreement, ...] | None = None
    cue: tuple[Effect, ...] | None = None
    defense: tuple[Effect, ...] | None = None
    reg: Reg | None = None
    audit: AuditStats | None = None
    adaptive: Adaptive | None = None

    def to_json(self, sections: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The report as plain JSON data: the sections it holds, or exactly `sections` (null where not held)."""
        if sections is None:
            return {name: to_json(getattr(self, name)) for name in self.sections}
        return {name: to_json(getattr(self, name)) if name in self.sections else None for name in sections}

    def only(self, sections: tuple[str, ...]) -> Report:
        """The same report holding only `sections` (and the protocol)."""
        kept = tuple(name for name in self.sections if name == "protocol" or name in sections)
        dropped: dict[str, Any] = {name: None for name in SECTIONS if name != "protocol" and name not in kept}
        return dataclasses.replace(self, sections=kept, **dropped)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Report:
        unknown = set(data) - set(SECTIONS)
        if unknown:
            raise ReportShapeError(f"Report: unknown sections {sorted(unknown)}")
        return cls(
            **{name: _value(_hints(cls)[name], data[name], f"Report.{name}") for name in data},
            sections=tuple(name for name in SECTIONS if name in data),
        )


# -- conversion ------------------------------------------------------------------------------------------------
_PLAIN = (int, float, str, bool)


def to_json(value: Any) -> Any:
    """A report value as plain JSON data: dataclasses as dicts (fields in order; `_OMIT` fields left out while
    None, `_FLAT` fields spliced into their parent), tuples as lists."""
    if value is None or type(value) in _PLAIN:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for name, flat, omit_none in _layout(type(value)):
            item = getattr(value, name)
            if flat:
                out.update(to_json(item))
            elif not (item is None and omit_none):
                out[name] = to_json(item)
        return out
    if isinstance(value, tuple | list):
        return [to_json(item) for item in value]
    if isinstance(value, Mapping):
        return {key: to_json(item) for key, item in value.items()}
    return value


def from_json(cls: type[T], data: Mapping[str, Any]) -> T:
    """The dataclass `cls` from its JSON dict, every field checked against its annotation (see the module)."""
    return _build(cls, data, cls.__name__)


# What the builder looks up per class and per annotation, computed once: a report has thousands of values.
# (Plain dicts rather than functools.cache: mypy does not take a class for a Hashable argument.)
_HINTS: dict[Any, dict[str, Any]] = {}
_KEYS: dict[Any, frozenset[str]] = {}
_LAYOUT: dict[Any, tuple[tuple[str, bool, bool], ...]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _keys(cls: type) -> frozenset[str]:
    """The JSON keys of `cls`, with its flat fields' keys in place of theirs."""
    if cls not in _KEYS:
        hints = _hints(cls)
        keys: set[str] = set()
        for f in dataclasses.fields(cls):
            keys |= _keys(hints[f.name]) if f.metadata.get("flat") else {f.name}
        _KEYS[cls] = frozenset(keys)
    return _KEYS[cls]


def _layout(cls: type) -> tuple[tuple[str, bool, bool], ...]:
    """Each field of `cls`: its name, whether it is flat, whether it is left out while None."""
    if cls not in _LAYOUT:
        _LAYOUT[cls] = tuple(
            (f.name, bool(f.metadata.get("flat")), bool(f.metadata.get("omit_none"))) for f in dataclasses.fields(cls)
        )
    return _LAYOUT[cls]


@functools.cache
def _shape(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    return typing.get_origin(hint), typing.get_args(hint)


def _build(cls: type[T], data: Mapping[str, Any], where: str) -> T:
    if not isinstance(data, Mapping):
        raise ReportShapeError(f"{where}: expected an object for {cls.__name__}, got {type(data).__name__}")
    unknown = set(data) - _keys(cls)
    if unknown:
        raise ReportShapeError(f"{where}: {cls.__name__} names no {', '.join(sorted(unknown))}")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.metadata.get("flat"):
            values[f.name] = _build(
                hints[f.name], {k: data[k] for k in _keys(hints[f.name]) if k in data}, f"{where}.{f.name}"
            )
        elif f.name in data:
            values[f.name] = _value(hints[f.name], data[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING:
            raise ReportShapeError(f"{where}: missing {f.name}")
    return cls(**values)


def _value(hint: Any, value: Any, where: str) -> Any:
    if type(value) is hint and hint in _PLAIN:
        return value  # the common case, checked first
    if hasattr(value, "item") and not isinstance(value, Mapping | list | tuple):
        value = value.item()  # a numpy scalar: the Python number it holds
    origin, args = _shape(hint)
    if hint is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _value(inner[0], value, where)
        raise ReportShapeError(f"{where}: unsupported annotation {hint}")
    if origin is Literal:
        if value not in args:
            raise ReportShapeError(f"{where}: {value!r} is none of {args}")
        return value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return value  # built already (and checked by its own annotations' builder, or typed code)
        return _build(hint, value, where)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ReportShapeError(f"{where}: expected a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], item, f"{where}[{i}]") for i, item in enumerate(value))
        if len(value) != len(args):
            raise ReportShapeError(f"{where}: expected {len(args)} items, got {len(value)}")
        return tuple(_value(a, item, f"{where}[{i}]") for i, (a, item) in enumerate(zip(args, value, strict=True)))
    if origin is Mapping:
        if not isinstance(value, Mapping):
            raise ReportShapeError(f"{where}: expected an object, got {type(value).__name__}")
        return types.MappingProxyType(
            {_value(args[0], k, where): _value(args[1], v, f"{where}[{k!r}]") for k, v in value.items()}
        )
    if hint is float:
        # An int stays an int: the JSON writes 1, not 1.0, as it did.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ReportShapeError(f"{where}: expected a number, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ReportShapeError(f"{where}: expected an integer, got {value!r}")
        return value
    if hint in (str, bool):
        if not isinstance(value, hint):
            raise ReportShapeError(f"{where}: expected {hint.__name__}, got {value!r}")
        return value
    raise ReportShapeError(f"{where}: unsupported annotation {hint}")
