"""report.json is an interface for users: the `Report` dataclass tree writes the JSON the dict-based report wrote.

`data/report_before.json` is the report of a fixed store (below) as `build_report` wrote it while it still
returned a dict (main at 6f25501a); the typed report of the same store must serialise to the same bytes — the
same keys in the same order, the same values. Regenerate it only for a deliberate change of the JSON format, and
say so in docs/architecture.md: `.venv/bin/python -m tests.judges.test_report_json --write`.

Its audit section was written again by main at a06d1d98 (the code before issue 34, same format) once the fill chose
its disagreements by rollout instead of by item order, which issue 34 made random: the report of issue 34's code
must still be those bytes, so the audit's figures did not move with the items' ids.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from redagent.judges.report import build_report
from redagent.judges.report_model import AuditStats, Report, ReportShapeError, UtilityArm, from_json, to_json
from redagent.store import Store, open_store
from redagent.store.records import JudgeLabelRecord, RecognitionLabelRecord
from tests.store.factory import make_rollout, make_run

FIXTURE = Path(__file__).parent / "data" / "report_before.json"
HARNESSES = ("native", "react", "shell")
VIEWS = (("state/rule", "h-state", "state"), ("trajectory/rule", "h-trajectory", "trajectory"))


def fill(store: Store) -> None:
    """run-1: 12 cases × 3 harnesses × 2 models, one invalid rollout, two rule views that disagree now and then,
    lexical recognition labels of the harmful ones, and an audit of the state view with every item labelled
    (the reviewers disagree on a few, and one is left unsure)."""
    from redagent.judges import audit
    from redagent.judges.labelling import LEXICAL, recognition_contract_hash

    store.create_run(make_run("run-1", planned=72))
    contract = recognition_contract_hash(LEXICAL)
    rollouts, labels, recognition = [], [], []
    for i in range(12):
        for harness in HARNESSES:
            for model in ("sim/m1", "sim/m2"):
                valid = (i, harness, model) != (3, "shell", "sim/m2")
                r = make_rollout(
                    "run-1",
                    f"banking/c{i:02d}",
                    model,
                    harness=harness,
                    n_events=2,
                    E=int((i + len(harness) + len(model)) % 3 != 0),
                    valid=valid,
                    invalid_reason=None if valid else "timeout",
                    strategy=("E1", "U2", "T1")[i % 3],
                )
                rollouts.append(r)
                if not valid:
                    continue
                for k, (name, config_hash, view) in enumerate(VIEWS):
                    label = r.E if (i + k * len(harness)) % 5 else 1 - int(r.E or 0)
                    labels.append(
                        JudgeLabelRecord(
                            rollout_id=r.id,
                            run_id="run-1",
                            config_name=name,
                            config_hash=config_hash,
                            view=view,
                            contract_hash="c",
                            gate="agent-effects",
                            backbone="rule",
                            label=label,
                            status="ok",
                        )
                    )
                if r.E == 1:
                    resolved = i % 4 != 0
                    broad = int(resolved and i % 2 == 0)
                    recognition.append(
                        RecognitionLabelRecord(
                            rollout_id=r.id,
                            run_id="run-1",
                            judge=LEXICAL,
                            contract_hash=contract,
                            anchor_idx=1 if resolved else None,
                            resolved=resolved,
                            broad=broad if resolved else None,
                            strict=int(broad and i % 3 == 0) if resolved else None,
                            status="ok",
                        )
                    )
    store.write_rollouts(rollouts)
    store.write_judge_labels(labels)
    store.write_recognition_labels(recognition)
    audit_id = audit.sample(
        store,
        "run-1",
        24,
        ["harness", "label"],
        5,
        "h-state",
        "rule",
        reviewers=("alice", "bob"),
        adjudicator="carol",
        config_name="state/rule",
    )
    truth = {r.id: int(r.E or 0) for r in rollouts if r.valid}
    # Who disagrees where goes by rollout: item ids and orders are random (issue 34), the sampled rollouts are not.
    items = sorted(store.audit_items(audit_id), key=lambda item: item.rollout_id)
    rollout_of = {item.item_id: item.rollout_id for item in items}
    for k, item in enumerate(items):
        right = "harmful" if truth[item.rollout_id] else "not_harmful"
        store.submit_label(audit_id, item.item_id, "alice", right)
        store.submit_label(audit_id, item.item_id, "bob", right if k % 6 else "unsure")
    queue = sorted(store.adjudication_queue(audit_id, "carol"), key=lambda entry: rollout_of[entry.item_id])
    for k, entry in enumerate(queue):
        rollout = rollout_of[entry.item_id]
        verdict = "unsure" if k == 0 else ("harmful" if truth[rollout] else "not_harmful")
        store.adjudicate(audit_id, entry.item_id, "carol", verdict)


def report_bytes(store: Store) -> bytes:
    """The report's JSON as write_report writes it, with the audit's random id replaced by a fixed one."""
    report: Any = build_report(store, "run-1", reps=200, seed=3)
    data = report.to_json() if hasattr(report, "to_json") else report  # the dict of the code before the tree
    text = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY, default=str)
    for audit in store.audits("run-1"):
        text = text.replace(audit.id.encode(), b"audit-fixed")
    return text


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with open_store(f"sqlite:///{tmp_path / 'fixed.db'}") as opened:
        fill(opened)
        yield opened


def test_the_json_of_the_typed_report_is_the_json_of_the_dict_report(store):
    assert report_bytes(store) == FIXTURE.read_bytes()


def test_every_section_survives_a_typed_round_trip(store):
    report = build_report(store, "run-1", reps=200, seed=3)
    assert set(report.sections) == {
        "protocol",
        "asr",
        "by_strategy",
        "utility",
        "health",
        "views",
        "ranking",
        "cue",
        "defense",
        "reg",
        "audit",
    }
    assert report.reg is not None and report.audit is not None and report.views  # the fixture reaches them all
    again = Report.from_json(orjson.loads(orjson.dumps(report.to_json())))
    assert again == report
    assert again.to_json() == report.to_json()


def test_a_statistic_with_a_key_the_report_does_not_name_is_refused():
    # A new figure in judges/stats.py must get its field in judges/report_model.py, not vanish from report.json.
    arm = {"u": 0.5, "done": 1, "n": 2, "valid": 2, "lo": 0.1, "hi": 0.9}
    assert to_json(from_json(UtilityArm, arm)) == arm
    with pytest.raises(ReportShapeError, match="names no extra"):
        from_json(UtilityArm, {**arm, "extra": 1})
    with pytest.raises(ReportShapeError, match="missing hi"):
        from_json(UtilityArm, {k: v for k, v in arm.items() if k != "hi"})
    with pytest.raises(ReportShapeError, match="expected an integer"):
        from_json(UtilityArm, {**arm, "done": "1"})


def test_an_audit_figure_method_is_one_of_the_known_ones(store):
    audit = build_report(store, "run-1", reps=200, only="audit").audit
    assert audit is not None
    data = to_json(audit)
    data["precision"] = {**data["precision"], "method": "guesswork"}
    with pytest.raises(ReportShapeError, match="guesswork"):
        from_json(AuditStats, data)


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as folder, open_store(f"sqlite:///{folder}/fixed.db") as fixed:
        fill(fixed)
        FIXTURE.parent.mkdir(exist_ok=True)
        FIXTURE.write_bytes(report_bytes(fixed))
    print(f"wrote {FIXTURE}")
