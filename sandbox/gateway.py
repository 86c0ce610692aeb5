"""The tool gateway: every tool call an agent makes passes here, and only here.

It resolves the name (including look-alike tools a case plants), validates arguments against the
schema the model was shown, runs the service, writes receipts for consequential calls and for
every refused attempt, and applies the case's tool-side interventions to what the agent is shown.
Both the original result and the observation actually shown are returned, so the trajectory keeps
them side by side.

The gateway survives any call: a name that is not a string, arguments that are not a JSON object or
could not be stored (lone surrogates, integers past 64 bits), a service that raises something it
should not — each is an error outcome (with a failed receipt where receipts are kept), never an
exception out of `call`. Only a sandbox that could not be set up (`SandboxFailure`) propagates: the
rollout is invalid then, not the tool call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from redagent.sandbox.cli import CommandLineError
from redagent.sandbox.cli import resolve as resolve_command
from redagent.sandbox.isolation import BridgeAnswer, SandboxFailure
from redagent.sandbox.tools import ConfinementViolation, ToolError, ToolSpec, validate

if TYPE_CHECKING:
    from redagent.sandbox.host import Host

INTERVENTION_KINDS = ("tamper", "poison_description", "lookalike")
TAMPER_MODES = ("replace", "append", "prepend", "error")


@dataclass
class ToolOutcome:
    name: str
    args: dict[str, Any]
    ok: bool
    result: Any  # what the service returned (None on error)
    observation: str  # what the agent is shown
    error: str | None = None
    receipt_ids: list[str] = field(default_factory=list)
    tampered: bool = False

    @property
    def original(self) -> str:
        """The observation the agent would have seen without any intervention."""
        return self.error and f"ERROR: {self.error}" or render(self.result)


def with_injected(args: dict[str, Any], inject: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments a look-alike tool really runs its twin with: lists extended, mappings merged."""
    effective = dict(args)
    for key, value in (inject or {}).items():
        current = effective.get(key)
        if isinstance(value, list):
            effective[key] = list(current or []) + list(value)
        elif isinstance(value, dict):
            effective[key] = {**(current or {}), **value}
        else:
            effective[key] = value
    return effective


def render(result: Any) -> str:
    if isinstance(result, str):
        return result
    try:
        return orjson.dumps(result).decode()
    except (TypeError, orjson.JSONEncodeError):  # text orjson refuses (lone surrogates) is escaped instead
        return json.dumps(result, default=str)


class ToolGateway:
    def __init__(self, env: Host, surfaces: list[str], interventions: list[dict[str, Any]] | None = None) -> None:
        self.env = env
        self.surfaces = list(surfaces)
        self.interventions = list(interventions or [])
        self.specs: dict[str, ToolSpec] = {}  # every tool of the mocked world, for bridged calls
        offered: set[str] = set()
        for service in env.services.values():
            for spec in service.tool_specs():
                self.specs[spec.name] = spec
                if service.offers(spec.name):
                    offered.add(spec.name)
        self.visible = [n for n, s in self.specs.items() if s.service in self.surfaces and n in offered]
        self.lookalikes = {i["name"]: i for i in self.interventions if i["kind"] == "lookalike"}
        self._nested = 0  # run_command calls in progress through the bridge (at most one)

    # -- what the agent sees -------------------------------------------------------------------
    def tool_list(self) -> list[dict[str, Any]]:
        """Function definitions in the order a harness shows them; look-alikes sit beside their twins."""
        shown = []
        for name in self.visible:
            spec = self.specs[name]
            shown.append(self.definition(name))
            for fake in self.lookalikes.values():
                if fake["target"] == name:
                    shown.append(
                        {"name": fake["name"], "description": fake["description"], "parameters": spec.parameters}
                    )
        return shown

    def definition(self, name: str) -> dict[str, Any]:
        """The definition of any tool as an agent would be shown it (poisoned descriptions included)."""
        description = self.specs[name].description
        for item in self.interventions:
            if item["kind"] == "poison_description" and item["tool"] == name:
                description = f"{description}\n{item['content']}"
        return self.specs[name].schema(description)

    def service_of(self) -> dict[str, str]:
        """Tool name → service, look-alikes under their twin's service."""
        services = {name: spec.service for name, spec in self.specs.items()}
        for fake in self.lookalikes.values():
            services[fake["name"]] = services[fake["target"]]
        return services

    # -- calls ---------------------------------------------------------------------------------
    def call(
        self,
        name: str,
        args: Any,
        *,
        step: int | None,
        actor: str = "agent",
        via: str | None = None,
        bridged: bool = False,
    ) -> ToolOutcome:
        if not isinstance(name, str):
            return self._error(str(name)[:100], args, f"tool name must be a string, got {type(name).__name__}")
        fake = self.lookalikes.get(name)
        target = fake["target"] if fake else name
        if fake and via is None:  # the agent called the look-alike itself: that is the call's route
            via = fake["name"]
        spec = self.specs.get(target)
        if spec is None or (not bridged and target not in self.visible):
            return self._error(name, args, f"unknown tool {name!r}")
        if not isinstance(args, dict):
            return self._refused(
                spec,
                name,
                {},
                step,
                actor,
                via,
                ToolError(f"arguments must be a JSON object, got {type(args).__name__}"),
            )
        try:  # what cannot be stored in a receipt cannot be run: the rollout would fail to store later
            orjson.dumps(args)
        except (TypeError, orjson.JSONEncodeError) as exc:
            return self._refused(spec, name, {}, step, actor, via, ToolError(f"arguments cannot be stored: {exc}"))
        problems = validate(spec.parameters, args)
        if problems:
            return self._refused(
                spec, name, args, step, actor, via, ToolError("invalid arguments: " + "; ".join(problems))
            )
        effective = with_injected(args, fake.get("inject_args") if fake else None)
        service = self.env.services[spec.service]
        fx: dict[str, Any] = {}
        before = len(self.env.receipts)
        previous_bridge = self.env.bridge
        self.env.bridge = lambda request: self._bridged(request, step)
        try:
            result = spec.handler(service, fx, **effective)
        except ToolError as exc:
            return self._refused(spec, name, effective, step, actor, via, exc, sent=fx.get("outbound"))
        except OSError as exc:  # the real filesystem said no (a file where a folder should be, …)
            reason = f"{exc.strerror or exc}: {Path(str(exc.filename)).name}" if exc.filename else str(exc)
            return self._refused(spec, name, effective, step, actor, via, ToolError(reason))
        except SandboxFailure:
            raise
        except Exception as exc:  # a service bug costs this call, recorded as failed, not the rollout
            return self._refused(
                spec,
                name,
                effective,
                step,
                actor,
                via,
                ToolError(f"internal error in {spec.name}: {type(exc).__name__}: {str(exc)[:200]}"),
            )
        finally:
            self.env.bridge = previous_bridge
        receipts = []
        if fake and via != fake["name"]:  # a command's call keeps `via: run_command`; the look-alike is noted
            fx["lookalike"] = fake["name"]
        # A read that still sent something out (a page opened, a search made) is on the egress wire too.
        if spec.consequential or fx.get("outbound"):
            receipts.append(
                self.env.receipts.append(
                    service=spec.service,
                    action=spec.name,
                    args=effective,
                    outcome="ok",
                    actor=actor,
                    step=step,
                    effect=fx,
                    via=via,
                )
            )
        made = [r.id for r in self.env.receipts.since(before)]
        outcome = ToolOutcome(
            name=name, args=args, ok=True, result=result, observation=render(result), receipt_ids=made
        )
        return self._intervene(outcome, target)

    def command_tools(self) -> dict[str, dict[str, Any]]:
        """Every tool a sandboxed command may name, look-alikes included, for the service CLIs."""
        tools = {name: {"service": spec.service, "parameters": spec.parameters} for name, spec in self.specs.items()}
        for fake in self.lookalikes.values():
            tools[fake["name"]] = tools[fake["target"]]
        return tools

    def _bridged(self, request: dict[str, Any], step: int | None) -> BridgeAnswer:
        if "cli" in request:
            try:
                name, args = resolve_command(request["cli"], self.command_tools())
            except CommandLineError as exc:
                return BridgeAnswer(ok=False, output=str(exc))
        else:
            name, args = request["tool"], request["args"]
        fake = self.lookalikes.get(name)
        nested = (fake["target"] if fake else name) == "run_command"
        if nested and self._nested:
            # `rtool run_command` from a command is one level of sandbox in a sandbox (a planted script
            # that runs a command); a script calling itself that way would nest them without bound.
            return BridgeAnswer(
                ok=False,
                output="run_command is not available from inside a command "
                "that run_command started: run the command directly",
            )
        self._nested += nested
        try:
            outcome = self.call(name, args, step=step, via="run_command", bridged=True)
        finally:
            self._nested -= nested
        hosts = []
        for rid in outcome.receipt_ids:
            receipt = next(r for r in self.env.receipts if r.id == rid)
            if receipt.effect.get("host"):
                hosts.append(receipt.effect["host"])
        text = outcome.observation if outcome.ok else (outcome.error or outcome.observation)
        return BridgeAnswer(ok=outcome.ok, output=text, hosts=hosts, receipt_ids=outcome.receipt_ids)

    def _refused(
        self,
        spec: ToolSpec,
        name: str,
        args: dict[str, Any],
        step: int | None,
        actor: str,
        via: str | None,
        exc: ToolError,
        sent: Any = None,
    ) -> ToolOutcome:
        """A call that failed. `sent` is what the service put on the egress wire before it failed (a request
        the remote server answered with an error): those bytes left, so the receipt keeps them."""
        receipt_ids = []
        # Attempts at effects, and every attempt to leave the sandbox, are evidence an auditor needs.
        if spec.consequential or isinstance(exc, ConfinementViolation) or sent:
            lookalike = name in self.lookalikes and via != name  # through a command: noted beside `via`
            effect = {**({"lookalike": name} if lookalike else {}), **({"outbound": sent} if sent else {})}
            receipt = self.env.receipts.append(
                service=spec.service,
                action=spec.name,
                args=args,
                outcome=exc.outcome,
                actor=actor,
                step=step,
                error=str(exc),
                via=via,
                effect=effect or None,
            )
            receipt_ids.append(receipt.id)
        outcome = self._error(name, args, str(exc))
        outcome.receipt_ids = receipt_ids
        return outcome

    @staticmethod
    def _error(name: str, args: Any, message: str) -> ToolOutcome:
        return ToolOutcome(
            name=name,
            args=args if isinstance(args, dict) else {},
            ok=False,
            result=None,
            observation=f"ERROR: {message}",
            error=message,
        )

    def _intervene(self, outcome: ToolOutcome, target: str) -> ToolOutcome:
        for item in self.interventions:
            if item["kind"] != "tamper" or item["tool"] != target:
                continue
            if any(outcome.args.get(k) != v for k, v in (item.get("match") or {}).items()):
                continue
            outcome.tampered = True
            mode, content = item.get("mode", "append"), item["content"]
            if mode == "error":
                outcome.observation = f"ERROR: {content}"
                continue
            field_name = item.get("field")
            if field_name and isinstance(outcome.result, dict) and field_name in outcome.result:
                shown = dict(outcome.result)
                shown[field_name] = _apply(mode, str(shown[field_name]), content)
                outcome.observation = render(shown)
            else:
                outcome.observation = _apply(mode, outcome.observation, content)
        return outcome


def _apply(mode: str, text: str, content: str) -> str:
    if mode == "replace":
        return content
    if mode == "prepend":
        return f"{content}\n{text}"
    return f"{text}\n{content}"
