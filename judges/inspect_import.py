"""Inspect AI eval logs into the store as a run (`redagent import inspect LOG...`): the logs
`redagent export RUN --format inspect` writes (judges/inspect_export.py), read with inspect-ai's own reader.

The run is made under the id it had (its record from the logs' eval spec), its rollouts are rebuilt from the samples
— events from the chat messages and their metadata, receipts, diff, snapshots, E and U from the sample's metadata —
and written through the store's bulk write (`write_rollouts`, as the engine writes them), then its judge and
recognition labels from the samples' scores. So judging, recognition, the audit, the statistics and the console
work on it as on the run it came from.

A log that Inspect itself wrote by running the `redagent/bench` task (`inspect eval redagent/bench`, engine/
inspect_task.py) imports the same way: the task's metadata holds the run's protocol, each sample's the rollout as
the export writes it (with its events, rebuilt from the chat), so the run is made from the eval's header — its
id, Inspect's model, epochs as attempts, times and status — and a sample Inspect ended with an error is an invalid
rollout (`inspect_error`, never counted as safe).

A log is refused with one line naming its file when it is not an Inspect log, names another task, lacks the
export's (or the task's) metadata or was written by a later version of the mapping, or holds a record the store
would refuse;
every log must be of one run. Every sample is rebuilt and checked before anything is written, so a refused import
stores nothing. Logs are read one at a time (twice: checked, then written); each is bounded in size first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redagent.judges.inspect_export import FORMAT, META, TASK, InspectLogError, require_inspect
from redagent.store import evidence
from redagent.store.errors import InvalidRecord
from redagent.store.interfaces import ImportSink
from redagent.store.judging import judge_label_row, recognition_label_row
from redagent.store.records import (
    JudgeLabelRecord,
    RecognitionLabelRecord,
    RolloutRecord,
    RunRecord,
)
from redagent.store.records import rollout_id as stored_rollout_id
from redagent.store.rows import prepare_rollout

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.model import ChatMessage

# The largest log file read: an exported cell of thousands of rollouts with their snapshots is well under it.
MAX_LOG_BYTES = 1 << 30
BATCH = 200  # rollouts per write transaction, as the engine's writer batches them


@dataclass
class ImportResult:
    run_id: str
    logs: int = 0
    rollouts: int = 0
    judge_labels: int = 0
    recognition_labels: int = 0
    files: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "logs": self.logs,
            "rollouts": self.rollouts,
            "judge_labels": self.judge_labels,
            "recognition_labels": self.recognition_labels,
        }


def import_logs(store: ImportSink, paths: Sequence[Path]) -> ImportResult:
    """Check every log's header (task, format, run), make the run, then write each log's rollouts and labels."""
    require_inspect()
    if not paths:
        raise InspectLogError("no Inspect log given")
    headers = [(path, _header(path)) for path in _log_files(paths)]
    runs = {str(doc["id"]) for _, doc in headers}
    if len(runs) > 1:
        raise InspectLogError(f"the logs are of {len(runs)} runs ({', '.join(sorted(runs))}): import one run at a time")
    path, run_doc = headers[0]
    run = _run_record(run_doc, path)
    if store.get_run(run.id) is not None:
        raise InspectLogError(f"{path}: run {run.id!r} is already in the store")
    # Every sample is rebuilt once before anything is written, so a log that is not as the export writes it
    # leaves the store untouched; the second pass writes (a log is read again rather than the run held in memory).
    now = datetime.now(UTC)
    for path, _ in headers:
        for rollouts, judge, recognition, declared in _records(path, run.id):
            try:  # the store's own checks of each record, which its writes would make too late to refuse whole
                found = {}
                for record in rollouts:
                    prepared = prepare_rollout(record)
                    doc = evidence.rollout_document(
                        prepared.row,
                        prepared.events,
                        prepared.receipts,
                        prepared.diff,
                        {snap["kind"]: snap["blob_sha"] for snap in prepared.snapshots},
                    )
                    found[(evidence.ROLLOUT, record.id)] = evidence.rollout_digest(evidence.parts_of(doc))
                for label in judge:
                    row = judge_label_row(label, now)
                    found[(evidence.JUDGE, evidence.label_ref(evidence.JUDGE, row))] = evidence.digest(
                        evidence.label_document(evidence.JUDGE, row)
                    )
                for recognised in recognition:
                    row = recognition_label_row(recognised, now)
                    found[(evidence.RECOGNITION, evidence.label_ref(evidence.RECOGNITION, row))] = evidence.digest(
                        evidence.label_document(evidence.RECOGNITION, row)
                    )
            except InvalidRecord as exc:
                raise InspectLogError(f"{path}: {exc}") from exc
            # A log carries each record's digest in the run's chain: a record that no longer has it was changed in
            # the log after the export, and the import refuses the log rather than store it as the run's.
            for key, (seq, recorded) in sorted(declared.items(), key=lambda entry: entry[1][0]):
                if found.get(key) != recorded:
                    raise InspectLogError(
                        f"{path}: {key[0]} {key[1]} differs from what the export recorded (record {seq} of run "
                        f"{run.id}'s evidence chain): the log was changed after the export"
                    )
    store.create_run(run)
    result = ImportResult(run_id=run.id)
    for path, _ in headers:
        for rollouts, judge, recognition, _declared in _records(path, run.id):
            result.rollouts += store.write_rollouts(rollouts)
            result.judge_labels += store.write_judge_labels(judge)
            result.recognition_labels += store.write_recognition_labels(recognition)
        result.logs += 1
        result.files.append(str(path))
    return result


# A batch of a log's records, and each one's place and digest in the run's chain as the export recorded it.
Batch = tuple[
    list[RolloutRecord], list[JudgeLabelRecord], list[RecognitionLabelRecord], dict[tuple[str, str], tuple[int, str]]
]


def _records(path: Path, run_id: str) -> Iterator[Batch]:
    """The log's rollouts and their labels, BATCH rollouts at a time (labels after their rollouts' batch)."""
    log = _read(path)
    batch: Batch = ([], [], [], {})
    for sample in log.samples or []:
        try:
            record, labels, recognised = sample_records(sample, run_id, model=str(log.eval.model))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, InspectLogError):
                raise
            raise InspectLogError(
                f"{path}: sample {sample.id!r} (epoch {sample.epoch}): not as the export writes it ({exc!r})"
            ) from exc
        batch[0].append(record)
        batch[1].extend(labels)
        batch[2].extend(recognised)
        batch[3].update(_declared(sample, record.id))
        if len(batch[0]) >= BATCH:
            yield batch
            batch = ([], [], [], {})
    if batch[0]:
        yield batch


def _declared(sample: EvalSample, rollout_id: str) -> dict[tuple[str, str], tuple[int, str]]:
    """The sample's records' places and digests in the run's chain, as the export wrote them (none in a log of the
    task, or of an export before the chain)."""
    found: dict[tuple[str, str], tuple[int, str]] = {}

    def add(kind: str, ref: str, chain: Any) -> None:
        if isinstance(chain, Mapping) and isinstance(chain.get("digest"), str):
            found[(kind, ref)] = (int(chain.get("seq") or 0), str(chain["digest"]))

    add(evidence.ROLLOUT, rollout_id, ((sample.metadata or {}).get(META) or {}).get("chain"))
    for score in (sample.scores or {}).values():
        doc = score.metadata or {}
        if doc.get("kind") == "judge":
            add(evidence.JUDGE, f"{rollout_id}|{doc.get('config_hash')}|{doc.get('backbone')}", doc.get("chain"))
        elif doc.get("kind") == "recognition":
            add(evidence.RECOGNITION, f"{rollout_id}|{doc.get('judge')}|{doc.get('contract_hash')}", doc.get("chain"))
    return found


def _log_files(paths: Sequence[Path]) -> Iterator[Path]:
    """The logs named, a folder standing for the Inspect logs in it (as `inspect view --log-dir` reads one)."""
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in (".eval", ".json") and p.is_file())
            if not found:
                raise InspectLogError(f"{path}: no Inspect log (.eval or .json) in this folder")
            yield from found
        else:
            yield path


def _read(path: Path, *, header_only: bool = False) -> EvalLog:
    from inspect_ai.log import read_eval_log

    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InspectLogError(f"{path}: cannot read ({exc.strerror})") from exc
    if not path.is_file():
        raise InspectLogError(f"{path}: not a file")
    if size > MAX_LOG_BYTES:
        raise InspectLogError(f"{path}: {size} bytes, more than the {MAX_LOG_BYTES} an Inspect log may have here")
    if path.suffix not in (".eval", ".json"):
        raise InspectLogError(f"{path}: not an Inspect log (an Inspect log is a .eval or .json file)")
    try:
        return read_eval_log(str(path), header_only=header_only, resolve_attachments=True)
    except Exception as exc:  # inspect-ai raises what its parsers raise (zip, JSON, pydantic): all mean "not a log"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InspectLogError(f"{path}: not an Inspect log ({first[:200]})") from exc


def _header(path: Path) -> Mapping[str, Any]:
    """The log's run record, after checking it is an exported redagent log this mapping reads."""
    log = _read(path, header_only=True)
    if log.eval.task != TASK:
        raise InspectLogError(f"{path}: a log of task {log.eval.task!r}, not {TASK!r}: only REDAgentBench logs import")
    meta = (log.eval.metadata or {}).get(META)
    if isinstance(meta, Mapping) and meta.get("origin") == "task":
        if meta.get("format") != FORMAT:
            raise InspectLogError(f"{path}: task format {meta.get('format')!r}; this version reads format {FORMAT}")
        return task_run_document(log, meta, path)
    if not isinstance(meta, Mapping) or not isinstance(meta.get("run"), Mapping):
        raise InspectLogError(
            f"{path}: a {TASK} log without the run's record (written neither by redagent export nor by the task)"
        )
    if meta.get("format") != FORMAT:
        raise InspectLogError(f"{path}: export format {meta.get('format')!r}; this version reads format {FORMAT}")
    return meta["run"]


# Inspect's eval status → the store's run status.
_RUN_STATUS = {"success": "finished", "error": "failed", "cancelled": "stopped", "started": "running"}


def task_run_document(log: EvalLog, meta: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """The run of a log Inspect wrote running the redagent/bench task: its protocol from the task's metadata (the
    engine's, engine/matrix.py protocol_of), the model and attempts (epochs) as Inspect ran them, its times."""
    try:
        epochs = int(log.eval.config.epochs or 1)
        protocol = {**dict(meta["protocol"]), "models": [str(log.eval.model)], "attempts": epochs}
        # The agent Inspect ran (the task's default, or what --solver put in its place): the harness's build.
        builds = {name: dict(build) for name, build in (protocol.get("harness_builds") or {}).items()}
        for build in builds.values():
            build["solver"] = [step.solver for step in log.plan.steps] if log.plan else None
        protocol["harness_builds"] = builds
        created = datetime.fromisoformat(str(log.eval.created))
        stats = log.stats
        return {
            "id": str(meta["run_id"]),
            "status": _RUN_STATUS.get(str(log.status), "failed"),
            "protocol": protocol,
            "case_set_hash": str(meta["case_set_hash"]),
            "code_version": str(meta["code_version"]),
            "planned": int(log.eval.dataset.samples or 0) * epochs,
            "created_at": created.isoformat(),
            "started_at": stats.started_at or None,
            "finished_at": stats.completed_at or None,
        }
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InspectLogError(
            f"{path}: the redagent/bench task's metadata is not as the task writes it ({exc!r})"
        ) from exc


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def _run_record(doc: Mapping[str, Any], path: Path) -> RunRecord:
    try:
        created = _time(doc["created_at"])
        if created is None:
            raise ValueError("created_at missing")
        return RunRecord(
            id=str(doc["id"]),
            status=str(doc["status"]),
            protocol=dict(doc["protocol"]),
            case_set_hash=str(doc["case_set_hash"]),
            code_version=str(doc["code_version"]),
            planned=int(doc["planned"]),
            created_at=created,
            started_at=_time(doc.get("started_at")),
            finished_at=_time(doc.get("finished_at")),
            parent_run_id=doc.get("parent_run_id"),
            manifest_hash=doc.get("manifest_hash"),
            host=doc.get("host"),
            pid=doc.get("pid"),
            heartbeat_at=_time(doc.get("heartbeat_at")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InspectLogError(f"{path}: the run's record is not as the export writes it ({exc!r})") from exc


def sample_records(
    sample: EvalSample, run_id: str, *, model: str = ""
) -> tuple[RolloutRecord, list[JudgeLabelRecord], list[RecognitionLabelRecord]]:
    """One sample back into the rollout the store had (or the task's scorer wrote), and its labels."""
    meta = (sample.metadata or {})[META]
    if "outcome" not in meta and "ivc" in meta:  # a task's sample Inspect ended before its scorer: invalid
        return errored_record(sample, meta, run_id, model), [], []
    if meta.get("format") != FORMAT:
        raise ValueError(f"format {meta.get('format')!r}")
    case, ivc, cell, validity, outcome = meta["case"], meta["ivc"], meta["cell"], meta["validity"], meta["outcome"]
    usage, timing = meta["usage"], meta["timing"]
    rollout_id = str(meta["rollout_id"])
    started, finished = _time(timing["started_at"]), _time(timing["finished_at"])
    if started is None or finished is None:
        raise ValueError("started_at and finished_at are required")
    record = RolloutRecord(
        id=rollout_id,
        run_id=run_id,
        **_case_fields(case, ivc),
        model=str(cell["model"]),
        harness=str(cell["harness"]),
        cue=str(cell["cue"]),
        defense=str(cell["defense"]),
        attempt=int(cell["attempt"]),
        valid=bool(validity["valid"]),
        invalid_reason=validity["invalid_reason"],
        invalid_detail=validity["invalid_detail"],
        E=outcome["E"],
        evidence=dict(outcome["evidence"]),
        expected_E=outcome["expected_E"],
        reached=bool(outcome["reached"]),
        final_text=str(meta["final_text"]),
        started_at=started,
        finished_at=finished,
        duration_ms=float(timing["duration_ms"]),
        prompt_tokens=int(usage["prompt_tokens"]),
        completion_tokens=int(usage["completion_tokens"]),
        cost_usd=float(usage["cost_usd"]),
        baseline_rollout_id=meta["baseline_rollout_id"],
        # The task's scorer keeps the events it rebuilt from the chat; the export keeps each in its message.
        events=list(meta["events"]) if "events" in meta else [message_event(message) for message in sample.messages],
        receipts=list(meta["receipts"]),
        baseline=meta["snapshots"]["baseline"],
        final=meta["snapshots"]["final"],
        diff=list(meta["diff"]),
        U=outcome["U"],
        benign=bool(case["benign"]),
    )
    labels: list[JudgeLabelRecord] = []
    recognition: list[RecognitionLabelRecord] = []
    for score in (sample.scores or {}).values():
        doc = dict(score.metadata or {})
        kind = doc.pop("kind", None)
        doc.pop("chain", None)  # the label's place in the exported chain (checked by `chain_differences`)
        if kind not in ("judge", "recognition"):
            continue  # E and U (read from the metadata above), or a score another tool added
        if doc.get("rollout_id") != rollout_id:
            raise ValueError(f"a label of rollout {doc.get('rollout_id')!r} on rollout {rollout_id!r}")
        doc["run_id"] = run_id
        doc["created_at"] = _time(doc.get("created_at"))
        if kind == "judge":
            labels.append(JudgeLabelRecord(**doc))
        else:
            recognition.append(RecognitionLabelRecord(**doc))
    return record, labels, recognition


def _case_fields(case: Mapping[str, Any], ivc: Mapping[str, Any]) -> dict[str, Any]:
    """A rollout's case and IVC path as its record holds them, from a sample's metadata (scored or errored)."""
    return {
        "case_id": str(case["id"]),
        "case_version": int(case["version"]),
        "case_hash": str(case["hash"]),
        "strategy": str(ivc["strategy"]),
        "vulnerability": str(ivc["vulnerability"]),
        "constraint": str(ivc["constraint"]),
        "surfaces": [str(s) for s in ivc["surfaces"]],
        "channel": str(ivc["channel"]),
    }


MAX_ERROR_CHARS = 2000  # of an errored sample's message kept as the invalid rollout's detail


def task_rollout_id(run_id: str, case_id: str, case_hash: str, cell: Mapping[str, Any]) -> str:
    """The id the engine gives a rollout, for a task's sample that never reached its scorer: the same hash of the
    run, the case and the cell, so each sample of a run has its own."""
    model, harness, cue, defense = (str(cell[k]) for k in ("model", "harness", "cue", "defense"))
    return stored_rollout_id(run_id, case_id, case_hash, model, harness, cue, defense, int(cell["attempt"]))


def errored_record(sample: EvalSample, meta: Mapping[str, Any], run_id: str, model: str) -> RolloutRecord:
    """A task's sample that Inspect ended with an error (the model, the agent or the sandbox failed before the
    scorer ran) as an invalid rollout: no E and no U, so it is never counted as safe nor as a task failed."""
    case, ivc = meta["case"], meta["ivc"]
    cell = {**meta["cell"], "model": model, "attempt": int(sample.epoch)}
    message = sample.error.message if sample.error is not None else "the sample ended before it was scored"
    started, finished = _time(sample.started_at or None), _time(sample.completed_at or None)
    now = datetime.now(UTC)
    return RolloutRecord(
        id=task_rollout_id(run_id, str(case["id"]), str(case["hash"]), cell),
        run_id=run_id,
        **_case_fields(case, ivc),
        model=model,
        harness=str(cell["harness"]),
        cue=str(cell["cue"]),
        defense=str(cell["defense"]),
        attempt=cell["attempt"],
        valid=False,
        invalid_reason="inspect_error",
        invalid_detail=str(message)[:MAX_ERROR_CHARS],
        E=None,
        evidence={},
        expected_E=None,
        reached=False,
        final_text="",
        started_at=started or now,
        finished_at=finished or started or now,
        duration_ms=float(sample.total_time or 0.0) * 1000,
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        baseline_rollout_id=None,
        U=None,
        benign=bool(case["benign"]),
    )


def message_event(message: ChatMessage) -> dict[str, Any]:
    """A chat message back into the trajectory event it was made from (judges/inspect_export.py event_message)."""
    rest = dict((message.metadata or {})[META])
    content_field = rest.pop("content_field")
    none = rest.pop("content_none")
    content = message.content if isinstance(message.content, str) else message.text
    rest[content_field] = None if none else content
    return rest
