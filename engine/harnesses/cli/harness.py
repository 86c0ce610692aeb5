"""A real agent CLI as a harness: one sandboxed CLI process per user turn, the model and tools bridged.

Per rollout: a fresh private home and working directory, the profile's config written into the
home, the model endpoint and the MCP bridge on Unix sockets in the rollout's event loop. Each user
turn runs the CLI once (later turns resume the CLI's session): under bubblewrap (`isolation.py`), or,
when the rollout's commands run under Docker (`--sandbox docker`), in a container of the rollout's
own (`container.py`) that reaches the endpoint and the bridge only through those two sockets. The
trajectory comes from the two choke points; the CLI's own transcript, the prompts it sent and how it
showed each tool description are kept as one `transcript` event at the end. Failures are invalid
rollouts with typed reasons.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from redagent.engine.harnesses.cli.container import CLIContainer, ContainerProcess, docker_backend
from redagent.engine.harnesses.cli.endpoint import Endpoint
from redagent.engine.harnesses.cli.install import installation
from redagent.engine.harnesses.cli.isolation import Launch, Limits, Process, cli_uid, hand_over, prepare
from redagent.engine.harnesses.cli.mcp_bridge import ToolBridge
from redagent.engine.harnesses.cli.profile import Profile, Setup, clip
from redagent.engine.types import HarnessError, RolloutContext
from redagent.sandbox.beneath import private_directory

ARTIFACT_CHARS = 600_000
STDERR_TAIL = 4000


def missing_message(name: str) -> str:
    return f"harness {name} is not installed; run `redagent harnesses install {name}`"


class CLIHarness:
    def __init__(self, profile: Profile, limits: Limits | None = None) -> None:
        self.profile = profile
        self.name = profile.name
        self.limits = limits or Limits()

    async def run(self, ctx: RolloutContext) -> None:
        where = installation(self.profile)
        if not where.installed:
            raise HarnessError("harness_missing", missing_message(self.name))
        setup = Setup()
        turns: list[dict[str, Any]] = []
        # Removed on descriptors whatever the CLI left (tempfile's removal recurses: a deep tree would raise).
        with cli_uid() as uid, private_directory(prefix=f"redagent-{self.name}-") as tmp:
            root = Path(tmp)
            home, workdir, sockets = prepare(root, uid)
            docker = docker_backend(ctx.run.env.isolation)
            box = CLIContainer(docker, root, where.read_only(), self.limits, uid, self.name) if docker else None
            process: list[Process | ContainerProcess] = []

            def stop_the_cli() -> None:
                if process:
                    process[-1].kill("endpoint")

            endpoint = Endpoint(ctx, self.name, sockets / "model.sock", on_failure=stop_the_cli)
            bridge = ToolBridge(ctx, sockets / "tools.sock", endpoint)
            await endpoint.start()
            await bridge.start()
            try:
                for rel in self.profile.directories():
                    (home / rel).mkdir(parents=True, exist_ok=True)
                for rel, text in self.profile.config_files(setup).items():
                    (home / rel).parent.mkdir(parents=True, exist_ok=True)
                    (home / rel).write_text(text)
                hand_over(root, uid)
                if box is not None:
                    await box.start()
                session = None
                for turn in range(len(ctx.run.instance.user_turns)):
                    prompt = ctx.user_turn(turn)
                    endpoint.turn = turn
                    argv = self.profile.command(str(where.executable), prompt, turn, session, setup)
                    env = {
                        "HOME": setup.home,
                        "PATH": where.path(),
                        "LANG": "C.UTF-8",
                        "TMPDIR": "/tmp",
                        "TERM": "dumb",
                        "NO_COLOR": "1",
                        **self.profile.env(setup),
                    }
                    launch = Launch(argv, env, home, workdir, sockets, where.read_only())
                    process.append(
                        ContainerProcess(box, launch, self.limits, self.name)
                        if box is not None
                        else Process(launch, self.limits, uid, self.name)
                    )
                    record: dict[str, Any] = {"turn": turn}
                    turns.append(record)
                    try:
                        done = await process[-1].run()
                    except HarnessError:  # killed (time, memory): keep what the CLI had written so far
                        record["transcript"] = _safe(lambda: self.profile.transcript(home, ""))
                        raise
                    record.update(
                        exit_code=done.returncode,
                        seconds=round(done.seconds, 3),
                        peak_rss_mb=round(done.peak_rss_mb, 1),
                        cpu_seconds=round(done.cpu_seconds, 3),
                        stderr_tail=done.stderr[-STDERR_TAIL:],
                        transcript=_safe(lambda d=done: self.profile.transcript(home, d.stdout)),
                    )
                    if endpoint.failure is not None:
                        raise endpoint.failure
                    if done.returncode != 0 and not endpoint.budget_hit:
                        tail = [ln for ln in done.stderr.splitlines() if ln.strip()] or ["no output on stderr"]
                        raise HarnessError(
                            "harness_crash", f"{self.name} exited with {done.returncode}: {tail[-1].strip()[:300]}"
                        )
                    if endpoint.budget_hit or ctx.out_of_steps:
                        break
                    session = (
                        self.profile.session(home, done.stdout) or self.profile.session(home, done.stderr) or session
                    )
            finally:
                try:
                    if box is not None:
                        await box.close()
                finally:
                    await bridge.close()
                    await endpoint.close()
                    ctx.record("transcript", self._artifact(turns, endpoint, bridge, box))
        if endpoint.failure is not None:
            raise endpoint.failure

    def _artifact(
        self, turns: list[dict[str, Any]], endpoint: Endpoint, bridge: ToolBridge, box: CLIContainer | None = None
    ) -> str:
        data: dict[str, Any] = {
            "harness": self.name,
            "version": self.profile.version,
            "config_hash": self.profile.config_hash(),
            "wire": self.profile.wire,
            "endpoint": endpoint.artifact(),
            "mcp": {"tools_list": bridge.listed, "calls": bridge.calls},
            "isolation": {
                "backend": "docker",
                "image": box.backend.image,
                "start_seconds": round(box.started_seconds, 3),
            }
            if box is not None
            else {"backend": "bwrap"},
            "turns": turns,
        }
        text = json.dumps(data, ensure_ascii=False, default=str)
        share = ARTIFACT_CHARS // (2 * max(1, len(turns)))
        for shrink in (
            lambda: [t.update(transcript=clip(json.dumps(t.get("transcript"), default=str), share)) for t in turns],
            lambda: [p.update(system=clip(p["system"], 4000)) for p in data["endpoint"]["prompts"]],
            lambda: [t.update(transcript="[cut: too large]") for t in turns],
        ):
            if len(text) <= ARTIFACT_CHARS:
                break
            shrink()  # smaller and smaller, but always one valid JSON document
            text = json.dumps(data, ensure_ascii=False, default=str)
        return text


def _safe(read) -> Any:
    try:
        return read()
    except (OSError, ValueError) as exc:
        return f"[transcript unreadable: {type(exc).__name__}: {exc}]"
