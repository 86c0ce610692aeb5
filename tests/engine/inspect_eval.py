"""`inspect eval redagent/bench` with a calibration agent as Inspect's offline model, in a process of its own (as the
`inspect` command runs it; inspect-ai sets up its logging and event loop per process):

    python tests/engine/inspect_eval.py BEHAVIOUR LOG_DIR [-T key=value ...] [--fail CASE_ID] [--solver NAME]

The model is `mockllm/model` answering with the calibration agent's actions (tests/engine/inspect_sim.py); with
`--fail` its request for that case's sample raises, so Inspect ends that sample with an error. Prints the log's path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.engine, run as a script

from tests.engine.inspect_sim import calibration_outputs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("behaviour")
    parser.add_argument("log_dir")
    parser.add_argument("-T", dest="task_args", action="append", default=[])
    parser.add_argument("--fail", default=None)
    parser.add_argument("--solver", default=None)
    args = parser.parse_args()
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model
    from inspect_ai.solver import SolverSpec
    from inspect_ai.solver._task_state import sample_state

    answer = calibration_outputs(args.behaviour)

    def scripted(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        state = sample_state()
        if args.fail is not None and state is not None and state.sample_id == args.fail:
            raise RuntimeError(f"the scripted model fails on {args.fail}")
        return answer(messages, tools, tool_choice, config)

    task_args = dict(item.split("=", 1) for item in args.task_args)
    logs = inspect_eval(
        "redagent/bench",
        model=get_model("mockllm/model", custom_outputs=scripted),
        task_args=task_args,
        solver=SolverSpec(args.solver) if args.solver else None,  # as `inspect eval --solver NAME` names one
        log_dir=args.log_dir,
        display="none",
        max_samples=4,
        fail_on_error=False,  # a failed sample is logged with its error, and the others run on
    )
    print(logs[0].location)


if __name__ == "__main__":
    main()
