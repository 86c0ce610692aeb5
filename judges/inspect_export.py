"""A stored run as Inspect AI eval logs (`redagent export RUN --format inspect --out DIR`), written with inspect-ai's
own log API (`inspect_ai.log`), so the files are Inspect's format and `inspect view` opens the folder.

Grouping: one log per (model, harness, cue, defense) cell — what an Inspect eval is (one task, one model, one
configuration); the harness, cue and defense are the task's arguments. Every log of a run carries the run's
Inspect `run_id` (the store's run id), so Inspect groups them as one run. Within a log a sample is one rollout:
its id is the case id and its epoch the attempt (attempts are Inspect's epochs).

A sample holds
- messages: the trajectory's events as Inspect chat messages (user, assistant with its tool calls, tool results,
  system); each message's metadata keeps what the chat message cannot say (event index, stored role, what the
  service returned when the agent was shown a tampered result, receipt ids) so the import gives back the events;
- scores: `E` (the verifier's outcome), `U` (the utility check), one per judge label (`<config>@<backbone>`, its
  configuration in the score's metadata) and one per recognition label (`R:<judge>`, broad and strict); a score
  is left out where the store has no value (an invalid rollout's E, a case without a utility check);
- metadata: the case's IVC path (strategy → vulnerability → constraint, surfaces, channel), the validity
  (invalid rollouts also carry Inspect's sample `error` with their reason), receipts, state diff, the baseline
  and final snapshots, the verifier's evidence, usage and timing;
- the eval spec's metadata: the run's record (protocol: benchmark versions, harness builds, cue texts, defense,
  attempt budget, …) and the cell's valid denominators.

Each log is built in memory for its cell (inspect-ai writes a whole log at once); cells are read one at a time.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redagent.errors import UserError
from redagent.sandbox.outcome import outcome_of
from redagent.store import evidence
from redagent.store.interfaces import ExportSource
from redagent.store.records import ExportCell, JudgeLabelRecord, RecognitionLabelRecord, RunRecord

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.model import ChatMessage

# The task every exported log names; the import refuses any other task's log.
TASK = "redagent/bench"
# The version of this mapping (in every log's metadata): an import reads only the versions it knows.
FORMAT = 1
META = "redagent"  # the key of this project's metadata in the eval spec, a sample and a message
EXTRA_MISSING = "the inspect extra is not installed: pip install -e '.[inspect]'"
# E is the execution ASR's lower bound and E_upper its upper: a rollout the verifier left unresolved scores 0 in the
# first and 1 in the second (as the `redagent/bench` task's scorers do), so it is never counted safe in both.
E_SCORE, E_UPPER, U_SCORE = "E", "E_upper", "U"
FAILED = "failed"  # a failed label's score value (Inspect's scores have no None)
# The run's chain as an export carries it (Store.evidence_links): head, records, (kind, ref) → (seq, digest).
EvidenceLinks = tuple[str | None, int, Mapping[tuple[str, str], tuple[int, str]]]


class InspectLogError(UserError, ValueError):
    """An Inspect log that cannot be written or read as asked; one line for the user."""

    title = "Inspect log error"


def require_inspect() -> None:
    """inspect-ai is an optional extra: without it, one line saying how to install it."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError as exc:
        raise InspectLogError(EXTRA_MISSING) from exc


def label_score_name(config_name: str, backbone: str) -> str:
    return f"{config_name}@{backbone}"


def recognition_score_name(judge: str) -> str:
    return f"R:{judge}"


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def run_document(run: RunRecord) -> dict[str, Any]:
    """The run's record as JSON (times as ISO strings): what the import makes the run from."""
    doc = asdict(run)
    for key in ("created_at", "started_at", "finished_at", "heartbeat_at"):
        doc[key] = iso(doc[key])
    return doc


def export_run(store: ExportSource, run_id: str, out_dir: Path) -> list[Path]:
    """Write one Inspect log per cell of the run into `out_dir`; returns the files written."""
    require_inspect()
    from inspect_ai.log import write_eval_log

    run = store.get_run(run_id)
    if run is None:
        raise InspectLogError(f"no run {run_id!r} in the store")
    cells = store.export_cells(run_id)
    if not cells:
        raise InspectLogError(f"run {run_id!r} has no stored rollouts: nothing to export")
    if out_dir.exists() and not out_dir.is_dir():
        raise InspectLogError(f"{out_dir}: not a directory")
    labels = _judge_labels(store, run_id)
    recognition = _recognition_labels(store, run_id)
    chain = store.evidence_links(run_id)
    written = []
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for cell in cells:
            log = cell_log(run, cell, store.iter_export(run_id, cell), labels, recognition, chain)
            path = out_dir / log_name(run, cell)
            write_eval_log(log, str(path))
            written.append(path)
    except OSError as exc:
        raise InspectLogError(f"{exc.filename or out_dir}: cannot write ({exc.strerror})") from exc
    return written


def log_name(run: RunRecord, cell: ExportCell) -> str:
    """`<created>_redagent-bench_<cell>_<task id>.eval`: Inspect's own naming (`{timestamp}_{task}_{model}_{id}`,
    which its log listing parses without opening the file), the cell readable in the model's place."""
    stamp = run.created_at.strftime("%Y-%m-%dT%H-%M-%S")
    slug = re.sub(r"[^A-Za-z0-9.-]+", "-", f"{cell.model}-{cell.harness}-{cell.cue}-{cell.defense}").strip("-")
    return f"{stamp}_redagent-bench_{slug}_{_cell_id(run, cell)}.eval"


def _cell_id(run: RunRecord, cell: ExportCell) -> str:
    key = "\x1f".join((run.id, cell.model, cell.harness, cell.cue, cell.defense))
    return hashlib.sha256(key.encode()).hexdigest()[:22]


def _judge_labels(store: ExportSource, run_id: str) -> dict[str, list[JudgeLabelRecord]]:
    """Every judge label of the run, by rollout id, in the order of the run's configurations."""
    found: dict[str, list[JudgeLabelRecord]] = {}
    for config in store.judged_configs(run_id):
        for label in store.judge_labels(run_id, config["config_hash"], config["backbone"]):
            found.setdefault(label.rollout_id, []).append(label)
    return found


def _recognition_labels(store: ExportSource, run_id: str) -> dict[str, list[RecognitionLabelRecord]]:
    found: dict[str, list[RecognitionLabelRecord]] = {}
    for judge, contract_hash in store.recognition_judges(run_id):
        for label in store.recognition_labels(run_id, judge, contract_hash):
            found.setdefault(label.rollout_id, []).append(label)
    return found


def cell_log(
    run: RunRecord,
    cell: ExportCell,
    rollouts: Iterator[dict[str, Any]],
    labels: Mapping[str, list[JudgeLabelRecord]],
    recognition: Mapping[str, list[RecognitionLabelRecord]],
    chain: EvidenceLinks = (None, 0, {}),
) -> EvalLog:
    """One cell's Inspect log: its rollouts as samples, the run's protocol and its evidence chain's head in the eval
    spec, each rollout's and label's place and digest in the chain beside it (store/evidence.py)."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalScore,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.model import ModelUsage

    head, records, links = chain
    samples = [
        rollout_sample(item, labels.get(item["rollout_id"], []), recognition.get(item["rollout_id"], []), links)
        for item in rollouts
    ]
    valid = [s for s in samples if s.metadata[META]["validity"]["valid"]]
    attacked = [s for s in valid if not s.metadata[META]["case"]["benign"]]
    protocol = run.protocol
    created = iso(run.created_at) or ""
    spec = EvalSpec(
        eval_id=_cell_id(run, cell),
        run_id=run.id,
        created=created,
        task=TASK,
        task_id=_cell_id(run, cell),
        task_version=FORMAT,
        task_args={"harness": cell.harness, "cue": cell.cue, "defense": cell.defense},
        dataset=EvalDataset(
            name=str(protocol.get("cases") or "cases"),
            samples=len({s.id for s in samples}),
            sample_ids=sorted({str(s.id) for s in samples}),
            shuffled=False,
        ),
        model=cell.model,
        config=EvalConfig(epochs=int(protocol.get("attempts") or 1)),
        metadata={
            META: {
                "format": FORMAT,
                "run": run_document(run),
                "cell": asdict(cell),
                "protocol": {
                    "benchmarks": protocol.get("benchmarks"),
                    # A real agent CLI's pinned build; an in-house harness is built from this code version.
                    "harness_build": (protocol.get("harness_builds") or {}).get(cell.harness)
                    or {"in_house": True, "code_version": run.code_version},
                    "cue": cell.cue,
                    "cue_text": (protocol.get("cue_text") or {}).get(cell.cue),
                    "defense": cell.defense,
                    "attempts": protocol.get("attempts"),
                    "code_version": run.code_version,
                    "case_set_hash": run.case_set_hash,
                },
                # The run's evidence chain when exported: `redagent runs verify RUN --head HEAD` locates it.
                "evidence": {"chain": evidence.CHAIN, "head": head, "records": records},
                # The denominators every rate of this cell is over: valid rollouts (invalid ones are not
                # failures of the agent), and of them the attacked ones (benign rollouts are no attack).
                "denominators": {
                    "rollouts": len(samples),
                    "valid": len(valid),
                    "valid_attacked": len(attacked),
                    "invalid": len(samples) - len(valid),
                },
            }
        },
    )
    scores = []
    for name in (E_SCORE, E_UPPER, U_SCORE):
        values = [s.scores[name].value for s in attacked if s.scores and name in s.scores]
        if values:
            mean = sum(float(v) for v in values if isinstance(v, int | float)) / len(values)
            scores.append(
                EvalScore(
                    name=name,
                    scorer=name,
                    scored_samples=len(values),
                    unscored_samples=len(samples) - len(values),
                    metrics={"mean": EvalMetric(name="mean", value=mean)},
                )
            )
    prompt = sum(int(s.metadata[META]["usage"]["prompt_tokens"]) for s in samples)
    completion = sum(int(s.metadata[META]["usage"]["completion_tokens"]) for s in samples)
    started = iso(run.started_at) or created
    return EvalLog(
        status=_status(run.status),
        eval=spec,
        results=EvalResults(total_samples=len(samples), completed_samples=len(valid), scores=scores),
        stats=EvalStats(
            started_at=started,
            completed_at=iso(run.finished_at) or started,
            model_usage={
                cell.model: ModelUsage(input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion)
            },
        ),
        samples=samples,
    )


def _status(status: str) -> Any:
    return {"finished": "success", "failed": "error", "running": "started", "planned": "started"}.get(
        status, "cancelled"
    )


def _chain(links: Mapping[tuple[str, str], tuple[int, str]], kind: str, ref: str) -> dict[str, Any] | None:
    found = links.get((kind, ref))
    return None if found is None else {"seq": found[0], "digest": found[1]}


def rollout_sample(
    item: dict[str, Any],
    labels: list[JudgeLabelRecord],
    recognition: list[RecognitionLabelRecord],
    links: Mapping[tuple[str, str], tuple[int, str]] | None = None,
) -> EvalSample:
    """One rollout (an export dict, store/rows.py) as an Inspect sample; with the run's chain `links`, each record's
    place and digest in it."""
    links = links or {}
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    messages = [event_message(event) for event in item["events"]]
    first_user = next((e["text"] for e in item["events"] if e["role"] == "user"), "")
    scores: dict[str, Score] = {}
    if item["valid"]:
        outcome = outcome_of(item["E"])
        scores[E_SCORE] = Score(
            value=1 if item["E"] == 1 else 0,
            explanation="the verifier's outcome over receipts and the state diff"
            + (" (unresolved: 0 here, 1 in E_upper)" if item["E"] is None else ""),
            metadata={"expected_E": item["expected_E"], "evidence": item["evidence"], "outcome": outcome},
        )
        scores[E_UPPER] = Score(
            value=0 if item["E"] == 0 else 1,
            explanation="the execution ASR's upper bound: harm, or unresolved",
            metadata={"outcome": outcome},
        )
    if item["U"] is not None:
        scores[U_SCORE] = Score(value=int(item["U"]), explanation="the case's utility check")
    for label in labels:
        name = label_score_name(label.config_name, label.backbone)
        if name in scores:  # two configurations of one name and backbone: the hash tells them apart
            name = f"{name}#{label.config_hash[:12]}"
        scores[name] = Score(
            value=label.label if label.label is not None else FAILED,
            explanation=label.rationale,
            metadata={
                "kind": "judge",
                **_label_document(label),
                "chain": _chain(links, evidence.JUDGE, f"{label.rollout_id}|{label.config_hash}|{label.backbone}"),
            },
        )
    for rec in recognition:
        name = recognition_score_name(rec.judge)
        if name in scores:
            name = f"{name}#{rec.contract_hash[:12]}"
        value: Any = {"broad": rec.broad, "strict": rec.strict} if rec.status == "ok" else FAILED
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if v is not None}
        chained = _chain(links, evidence.RECOGNITION, f"{rec.rollout_id}|{rec.judge}|{rec.contract_hash}")
        scores[name] = Score(
            value=value,
            explanation=rec.rationale,
            metadata={"kind": "recognition", **_label_document(rec), "chain": chained},
        )
    usage = {
        "prompt_tokens": item["prompt_tokens"],
        "completion_tokens": item["completion_tokens"],
        "cost_usd": item["cost_usd"],
    }
    started, finished = item["started_at"], item["finished_at"]
    metadata = {
        META: {
            "format": FORMAT,
            "rollout_id": item["rollout_id"],
            "case": {
                "id": item["case_id"],
                "version": item["case_version"],
                "hash": item["case_hash"],
                "benign": item["benign"],
            },
            "ivc": {
                "strategy": item["strategy"],
                "vulnerability": item["vulnerability"],
                "constraint": item["constraint"],
                "surfaces": item["surfaces"],
                "channel": item["channel"],
            },
            "cell": {k: item[k] for k in ("model", "harness", "cue", "defense", "attempt")},
            "validity": {
                "valid": item["valid"],
                "invalid_reason": item["invalid_reason"],
                "invalid_detail": item["invalid_detail"],
            },
            "outcome": {
                "E": item["E"],
                "U": item["U"],
                "expected_E": item["expected_E"],
                "reached": item["reached"],
                "evidence": item["evidence"],
            },
            "final_text": item["final_text"],
            "receipts": item["receipts"],
            "diff": item["diff"],
            "snapshots": {"baseline": item["baseline"], "final": item["final"]},
            "usage": usage,
            "timing": {
                "started_at": iso(started) if isinstance(started, datetime) else started,
                "finished_at": iso(finished) if isinstance(finished, datetime) else finished,
                "duration_ms": item["duration_ms"],
            },
            "baseline_rollout_id": item["baseline_rollout_id"],
            "chain": _chain(links, evidence.ROLLOUT, item["rollout_id"]),
        }
    }
    error = None
    if not item["valid"]:
        from inspect_ai.log import EvalError

        detail = f": {item['invalid_detail']}" if item["invalid_detail"] else ""
        error = EvalError(
            message=f"invalid rollout ({item['invalid_reason']}){detail}", traceback="", traceback_ansi=""
        )
    return EvalSample(
        id=item["case_id"],
        epoch=int(item["attempt"]),
        input=first_user,
        target="",
        messages=messages,
        output=ModelOutput.from_content(model=item["model"], content=item["final_text"] or ""),
        scores=scores,
        metadata=metadata,
        model_usage={
            item["model"]: ModelUsage(
                input_tokens=int(item["prompt_tokens"]),
                output_tokens=int(item["completion_tokens"]),
                total_tokens=int(item["prompt_tokens"]) + int(item["completion_tokens"]),
                total_cost=float(item["cost_usd"]),
            )
        },
        total_time=float(item["duration_ms"]) / 1000,
        error=error,
    )


def _label_document(label: JudgeLabelRecord | RecognitionLabelRecord) -> dict[str, Any]:
    doc = asdict(label)
    doc["created_at"] = iso(label.created_at)
    return doc


# What a chat message's content holds for each stored role: the text the agent was shown.
_CONTENT_FIELD = {"tool": "observation"}


def event_message(event: Mapping[str, Any]) -> ChatMessage:
    """One trajectory event as an Inspect chat message. The message's metadata keeps the event without the field
    its content holds (`observation` for a tool result, `text` otherwise), so the import gives back the event."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    role = event["role"]
    content_field = _CONTENT_FIELD.get(role, "text")
    content = event.get(content_field)
    rest = {k: v for k, v in event.items() if k != content_field}
    rest["content_field"] = content_field
    rest["content_none"] = content is None
    metadata = {META: rest}
    text = content if isinstance(content, str) else ""
    call = event.get("tool_call") or {}
    if role == "assistant":
        tool_calls = None
        if call:
            args = call.get("args")
            tool_calls = [
                ToolCall(
                    id=str(call.get("id") or f"e{event['idx']}"),
                    function=str(call.get("name") or ""),
                    arguments=dict(args) if isinstance(args, Mapping) else {"args": args},
                )
            ]
        return ChatMessageAssistant(content=text, tool_calls=tool_calls, metadata=metadata)
    if role == "tool":
        return ChatMessageTool(
            content=text,
            tool_call_id=str(call.get("id") or "") or None,
            function=str(call.get("name") or "") or None,
            metadata=metadata,
        )
    if role == "user":
        return ChatMessageUser(content=text, metadata=metadata)
    # system, and what is no chat turn (an attacker's move, a transcript note): shown as system messages.
    return ChatMessageSystem(content=text, metadata=metadata)
