"""What inspect-ai loads for the `redagent` package (pyproject's `[project.entry-points.inspect_ai]`): the
`redagent/bench` task and the `redagent` sandbox environment register themselves when imported. inspect-ai loads
this module when a name in the `redagent/` namespace is looked up (`inspect eval redagent/bench`)."""

from redagent.engine.inspect_sandbox import CaseSandbox
from redagent.engine.inspect_task import bench

__all__ = ["CaseSandbox", "bench"]
