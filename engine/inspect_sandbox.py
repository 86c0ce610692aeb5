"""A case's mocked world as an Inspect sandbox environment (`redagent`, registered with inspect-ai's `@sandboxenv`).

Each sample of the `redagent/bench` task (engine/inspect_task.py) gets one `CaseSandbox`: the case's `CaseRun`
(cases/execution.py) — its five services built from the seed with the attack placed as the case places it, the
baseline snapshot taken, the tool gateway that writes the receipts. Everything the agent does reaches the world
through it: the case's service tools call `call()` (the gateway, as the engine's harnesses do), and Inspect's own
`exec()` (its `bash()` tool, or an agent such as inspect_swe's that drives a shell) runs the command line through
the gateway's `run_command`, so a command gets the same receipt, the same effects and the same isolation as the
engine's shell harness: this project's bubblewrap backend, or Docker when the task is given `sandbox=docker:IMAGE`.

The scorer ends the sample with `finish()` (snapshot, diff, verdict: E and U); cleanup removes whatever is left.
Outside a sample of this task there is no world to build: `sample_init` refuses a sample without a case.
"""

from __future__ import annotations

import asyncio
import base64
import shlex
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, overload

from inspect_ai.util import ExecResult, SandboxEnvironment, SandboxEnvironmentConfigType, sandboxenv
from pydantic import BaseModel

from redagent.cases.execution import CaseRun, Finished
from redagent.cases.loader import find_cases
from redagent.cases.schema import Case
from redagent.errors import UserError
from redagent.sandbox.gateway import ToolOutcome

NAME = "redagent"  # the sandbox type a task names: sandbox=("redagent", CaseSandboxConfig(...))
META = "redagent"  # the key of this project's part of a sample's metadata
RUN_COMMAND = "run_command"
MAX_COMMAND_SECONDS = 60  # the workspace's own bound on run_command
MAX_FILE_BYTES = 10 << 20  # read_file/write_file through the sandbox: a bounded file either way

# The cases of the task being evaluated, by content hash (engine/inspect_task.py registers them), so a sample's
# world is built from the very case its dataset was made from; another process resolves them from the library.
_CASES: dict[str, Case] = {}


class CaseSandboxError(UserError, RuntimeError):
    title = "Inspect sandbox error"


class CaseSandboxConfig(BaseModel, frozen=True):
    """What the task tells the sandbox: where commands run (`bwrap`, or `docker:IMAGE`)."""

    sandbox: str = "bwrap"


def register_case(case: Case) -> None:
    _CASES[case.content_hash] = case


def case_of(meta: dict[str, Any]) -> Case:
    """The case a sample was made from: its id and content hash (and its own file, for a researcher's folder)."""
    case_id, content_hash = str(meta["id"]), str(meta["hash"])
    if content_hash in _CASES:
        return _CASES[content_hash]
    files = {case_id: str(meta["file"])} if meta.get("file") else {}
    found = find_cases([case_id], files, {case_id: content_hash}).get(case_id)
    if found is None or found.content_hash != content_hash:
        raise CaseSandboxError(f"sample {case_id!r}: no case with content hash {content_hash[:12]} is installed")
    return found


@dataclass
class Call:
    """One call the agent made of the world, in the order made: the scorer pairs them with the chat's tool calls."""

    tool: str
    args: dict[str, Any]
    outcome: ToolOutcome
    sandboxed: bool = False  # served by the sandbox itself (exec, a scaffold's file), not as a case tool


@sandboxenv(name=NAME)
class CaseSandbox(SandboxEnvironment):
    # The isolation backend chosen for a task's `docker:IMAGE` (the process's, as `redagent run --sandbox`
    # makes it); bwrap is the process's default backend and needs nothing.
    _docker: ClassVar[dict[str, Any]] = {}

    def __init__(self, run: CaseRun) -> None:
        super().__init__()
        self.run = run
        self.calls: list[Call] = []
        self._finished: Finished | None = None
        self._lock = asyncio.Lock()

    # -- the agent's calls -----------------------------------------------------------------------
    async def call(self, tool: str, args: Any, *, any_tool: bool = False) -> ToolOutcome:
        """A call of one of the case's tools through the gateway (receipts, interventions, validation); `any_tool`
        for what the sandbox itself serves (a command, a file of the scaffold's) whatever the case's surfaces, as
        the engine's shell harness has it. The receipts' step is set when the trajectory is known (the scorer)."""
        if self._finished is not None:
            raise CaseSandboxError("the sample's world was already judged: no call after the scorer ran")
        # One call at a time (the tools are not parallel, and an agent's scaffold may exec beside them).
        async with self._lock:
            if tool == RUN_COMMAND:  # a command blocks on its process: off the event loop, as the engine runs it
                outcome = await asyncio.to_thread(self.run.call, tool, args, step=None, any_tool=any_tool)
            else:
                outcome = self.run.call(tool, args, step=None, any_tool=any_tool)
        self.calls.append(Call(tool, args if isinstance(args, dict) else {}, outcome, sandboxed=any_tool))
        return outcome

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        """A command line run in the workspace through the gateway's run_command (sandboxed, with its receipt). It runs
        as the rollout's own uid whatever `user` asks (the sandbox has no other), for at most 60 s."""
        line = command_line(cmd, input=input, cwd=cwd, env=env)
        seconds = max(1, min(int(timeout or 10), MAX_COMMAND_SECONDS))
        outcome = await self.call(RUN_COMMAND, {"command": line, "timeout": seconds}, any_tool=True)
        if not outcome.ok or not isinstance(outcome.result, dict):
            return ExecResult(success=False, returncode=126, stdout="", stderr=outcome.error or outcome.observation)
        result = outcome.result
        if result.get("timed_out"):
            raise TimeoutError(f"command timed out after {seconds} s")
        code = int(result.get("exit_code", 1))
        return ExecResult(success=code == 0, returncode=code, stdout=result["stdout"], stderr=result["stderr"])

    async def write_file(self, file: str, contents: str | bytes) -> None:
        """A file written into the workspace by the agent's scaffold: the workspace's write_file (confined, with
        its receipt), as text; bytes go through a command."""
        if len(contents) > MAX_FILE_BYTES:
            raise CaseSandboxError(f"{file}: more than {MAX_FILE_BYTES} bytes")
        if isinstance(contents, str):
            outcome = await self.call("write_file", {"path": file, "content": contents}, any_tool=True)
            if not outcome.ok:
                raise _file_error(file, outcome)
            return
        encoded = base64.b64encode(contents).decode()
        result = await self.exec(["sh", "-c", f"printf %s {encoded} | base64 -d > {shlex.quote(file)}"])
        if not result.success:
            raise PermissionError(f"{file}: {result.stderr.strip()[:200]}")

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        """A workspace file for the agent's scaffold: text through the workspace's read_file (confined, bounded), bytes
        through a command (the file tool reads text only)."""
        if not text:
            result = await self.exec(
                ["sh", "-c", f"head -c {MAX_FILE_BYTES + 1} -- {shlex.quote(file)} | base64 -w0"], timeout=30
            )
            if not result.success:
                raise _missing_or_denied(file, result.stderr)
            data = base64.b64decode(result.stdout)
            if len(data) > MAX_FILE_BYTES:
                raise CaseSandboxError(f"{file}: more than {MAX_FILE_BYTES} bytes")
            return data
        outcome = await self.call("read_file", {"path": file}, any_tool=True)
        if not outcome.ok:
            raise _file_error(file, outcome)
        return str(outcome.result.get("content", "")) if isinstance(outcome.result, dict) else str(outcome.result)

    # -- the verdict -----------------------------------------------------------------------------
    async def finish(self) -> Finished:
        """Snapshot, diff and verdict, once (every scorer of the sample reads the same); removes the workspace."""
        async with self._lock:
            if self._finished is None:
                self._finished = await asyncio.to_thread(self.run.finish)
            return self._finished

    # -- Inspect's lifecycle ---------------------------------------------------------------------
    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return CaseSandboxConfig(**config)

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        sandbox = _config(config).sandbox
        kind, _, image = sandbox.partition(":")
        if kind == "bwrap":
            return
        if kind != "docker" or not image:
            raise CaseSandboxError(f"unknown sandbox {sandbox!r} (bwrap, or docker:IMAGE)")
        from redagent.sandbox.environment import make_isolation, use_isolation

        if sandbox not in cls._docker:
            cls._docker[sandbox] = make_isolation("docker", image, run_id=task_name.replace("/", "-"))
        use_isolation(cls._docker[sandbox])

    @classmethod
    async def task_cleanup(cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool) -> None:
        if cls._docker.pop(_config(config).sandbox, None) is not None:
            from redagent.sandbox.environment import use_isolation

            use_isolation(None)  # closes the Docker backend (its containers) and goes back to the default

    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, Any]
    ) -> dict[str, SandboxEnvironment]:
        meta = (metadata or {}).get(META)
        if not isinstance(meta, dict) or not isinstance(meta.get("case"), dict):
            raise CaseSandboxError(
                f"the {NAME!r} sandbox serves the samples of the redagent/bench task only (this sample names no case)"
            )
        case = case_of(meta["case"])
        run = await asyncio.to_thread(CaseRun, case)
        return {"default": cls(run)}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            if isinstance(environment, CaseSandbox):
                await asyncio.to_thread(environment.run.close)  # safe after finish(): removes what is left


def _config(config: SandboxEnvironmentConfigType | None) -> CaseSandboxConfig:
    if isinstance(config, CaseSandboxConfig):
        return config
    if config is None:
        return CaseSandboxConfig()
    raise CaseSandboxError(f"the {NAME!r} sandbox takes a CaseSandboxConfig, not {config!r}")


def command_line(
    cmd: list[str], *, input: str | bytes | None = None, cwd: str | None = None, env: dict[str, str] | None = None
) -> str:
    """Inspect's argv as one `sh -c` line for run_command: `bash -c SCRIPT` (how Inspect's bash() and most agents
    call) becomes SCRIPT; the working folder, environment and standard input are prefixed as shell does them."""
    if len(cmd) >= 3 and cmd[0] in ("sh", "bash", "/bin/sh", "/bin/bash") and cmd[-2] == "-c":
        line = cmd[-1]
    else:
        line = shlex.join(cmd)
    if env:
        line = (
            " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k.isidentifier())
            + f" sh -c {shlex.quote(line)}"
        )
    if input is not None:
        data = input.encode() if isinstance(input, str) else input
        line = f"printf %s {base64.b64encode(data).decode()} | base64 -d | {{ {line}\n}}"
    if cwd:
        line = f"cd {shlex.quote(cwd)} && {{ {line}\n}}"
    return line


def _file_error(file: str, outcome: ToolOutcome) -> OSError:
    return _missing_or_denied(file, outcome.error or outcome.observation)


def _missing_or_denied(file: str, message: str) -> OSError:
    """Inspect's contract for a file that cannot be read or written: FileNotFoundError, else PermissionError."""
    if "not found" in message.lower() or "no such" in message.lower():
        return FileNotFoundError(f"{file}: {message.strip()[:200]}")
    return PermissionError(f"{file}: {message.strip()[:200]}")
