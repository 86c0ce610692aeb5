"""The workspace surface: a real directory per rollout, file tools confined to it, and `run_command`.

Confinement is checked on the resolved path: absolute paths, `..` that climbs out and symlinks that
point out are all refused as `ConfinementViolation`, which the gateway records as a denied receipt.
Commands run only under the isolation backend; when it is unavailable the tool refuses to run.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from redagent.sandbox.cli import SERVICE_OF_COMMAND
from redagent.sandbox.isolation import CommandResult, IsolationUnavailable
from redagent.sandbox.services.base import Service
from redagent.sandbox.tools import (
    ConfinementViolation,
    ToolError,
    boolean,
    integer,
    string,
    tool,
)

TEXT_LIMIT = 65536  # files up to this size keep their text in snapshots, so diffs can show it
_URL_HOSTS = re.compile(r"\b(?:https?|ftp|ssh|s3)://([A-Za-z0-9.-]+)", re.IGNORECASE)
_AT_HOSTS = re.compile(r"\b[\w.-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)")


class Workspace(Service):
    name = "workspace"

    def load(self, seed: dict[str, Any]) -> None:
        self.root = Path(self.env.workspace_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        for rel, spec in (seed.get("files") or {}).items():
            spec = {"content": spec} if isinstance(spec, str) else spec
            target = self.root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if "symlink" in spec:
                os.symlink(spec["symlink"], target)
                continue
            target.write_text(spec.get("content", ""), encoding="utf-8")
            if spec.get("executable"):
                target.chmod(0o755)

    # -- confinement ---------------------------------------------------------------------------
    def resolve(self, rel: str, *, must_exist: bool = False) -> Path:
        if not isinstance(rel, str) or not rel.strip():
            raise ToolError("path must be a non-empty string")
        if rel.startswith(("/", "~")) or re.match(r"^[A-Za-z]:[\\/]", rel):
            raise ConfinementViolation(f"path outside the workspace: {rel!r} (use a relative path)")
        candidate = self.root / rel
        # realpath follows every symlink, including a dangling final one, so a link planted to
        # point outside cannot be used to write through it either.
        real = Path(os.path.realpath(candidate))
        root = Path(os.path.realpath(self.root))
        if real != root and root not in real.parents:
            raise ConfinementViolation(f"path outside the workspace: {rel!r}")
        if must_exist and not (candidate.exists() or candidate.is_symlink()):
            raise ToolError(f"no such file or directory: {rel}")
        return candidate

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def read_text(self, rel: str) -> str:
        path = self.resolve(rel, must_exist=True)
        if path.is_dir():
            raise ToolError(f"is a directory: {rel}")
        return path.read_bytes().decode("utf-8", errors="replace")

    # -- tools ---------------------------------------------------------------------------------
    @tool("List the files and folders in a workspace directory.",
          path=string("directory relative to the workspace root", default="."))
    def list_dir(self, fx: dict, path: str = ".") -> dict[str, Any]:
        target = self.resolve(path, must_exist=True)
        if not target.is_dir():
            raise ToolError(f"not a directory: {path}")
        entries = []
        for child in sorted(target.iterdir()):
            kind = "link" if child.is_symlink() else "dir" if child.is_dir() else "file"
            entry = {"name": child.name, "type": kind}
            if kind == "file":
                entry["size"] = child.stat().st_size
            entries.append(entry)
        return {"path": path, "entries": entries}

    @tool("Read a text file from the workspace.", required=("path",),
          path=string("file path relative to the workspace root"))
    def read_file(self, fx: dict, path: str) -> dict[str, Any]:
        return {"path": path, "content": self.read_text(path)}

    @tool("Create or overwrite a text file in the workspace.", consequential=True,
          required=("path", "content"),
          path=string("file path relative to the workspace root"),
          content=string("the full new content"))
    def write_file(self, fx: dict, path: str, content: str) -> dict[str, Any]:
        target = self.resolve(path)
        if target.is_dir():
            raise ToolError(f"is a directory: {path}")
        fx["existed"] = target.exists()
        fx["before_sha256"] = _sha(target.read_bytes()) if target.exists() else None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        fx.update(path=self.relative(target), sha256=_sha(content.encode()), payload=content)
        return {"path": path, "bytes": len(content.encode())}

    @tool("Append text to a file in the workspace (created if missing).", consequential=True,
          required=("path", "content"),
          path=string("file path relative to the workspace root"),
          content=string("text to append"))
    def append_file(self, fx: dict, path: str, content: str) -> dict[str, Any]:
        target = self.resolve(path)
        if target.is_dir():
            raise ToolError(f"is a directory: {path}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as handle:
            handle.write(content)
        fx.update(path=self.relative(target), payload=content)
        return {"path": path, "appended": len(content.encode())}

    @tool("Delete a file, or a directory with recursive=true.", consequential=True,
          required=("path",),
          path=string("path relative to the workspace root"),
          recursive=boolean("delete a directory and everything in it"))
    def delete_path(self, fx: dict, path: str, recursive: bool = False) -> dict[str, Any]:
        target = self.resolve(path, must_exist=True)
        if target == self.root:
            raise ToolError("refusing to delete the workspace root")
        if target.is_dir() and not target.is_symlink():
            if not recursive:
                raise ToolError(f"is a directory (pass recursive=true): {path}")
            removed = sorted(self.relative(p) for p in target.rglob("*") if not p.is_dir())
            shutil.rmtree(target)
        else:
            removed = [self.relative(target)]
            target.unlink()
        fx.update(path=path, removed=removed)
        return {"deleted": removed}

    @tool("Move or rename a file or directory inside the workspace.", consequential=True,
          required=("source", "destination"),
          source=string("existing path"), destination=string("new path"))
    def move_path(self, fx: dict, source: str, destination: str) -> dict[str, Any]:
        src = self.resolve(source, must_exist=True)
        dst = self.resolve(destination)
        if dst.exists():
            raise ToolError(f"destination exists: {destination}")
        dst.parent.mkdir(parents=True, exist_ok=True)
        src.rename(dst)
        fx.update(source=source, destination=destination)
        return {"moved": source, "to": destination}

    @tool("Run a shell command in the workspace (isolated: no network, only the workspace is "
          "writable). Returns exit code, stdout and stderr.", consequential=True,
          required=("command",),
          command=string("the command line, run with sh -c"),
          timeout=integer("seconds before the command is killed (default 10, at most 60)",
                          minimum=1))
    def run_command(self, fx: dict, command: str, timeout: int = 10) -> dict[str, Any]:
        fx["command"] = command
        fx["hosts"] = named_hosts(command)
        words = builtin_words(command)
        if words is not None and self.env.bridge is not None:
            # A plain service command (`mail send …`) runs none of the agent's code: answer it here,
            # exactly as the shim would through the sandbox, without paying for a sandbox.
            answer = self.env.bridge({"cli": words})
            result = CommandResult(exit_code=0 if answer.ok else 1, stdout=answer.output + "\n" if answer.ok else "",
                                   stderr="" if answer.ok else answer.output + "\n", timed_out=False,
                                   hosts=answer.hosts, bridged_calls=answer.receipt_ids)
            fx["isolation"] = "builtin"
        else:
            try:
                result = self.env.isolation.run(
                    self.root, command, timeout=min(timeout, 60), bridge=self.env.bridge)
            except IsolationUnavailable as exc:
                raise ToolError(f"run_command is unavailable: {exc}") from None
            fx["isolation"] = "bubblewrap"
        fx.update(exit_code=result.exit_code, timed_out=result.timed_out,
                  stdout_sha256=_sha(result.stdout.encode()),
                  stderr_sha256=_sha(result.stderr.encode()),
                  hosts=sorted(set(fx["hosts"]) | set(result.hosts)),
                  bridged_calls=result.bridged_calls)
        return {"exit_code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr,
                "timed_out": result.timed_out}

    # -- snapshot ------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        files: dict[str, Any] = {}
        self._walk(str(self.root), "", files)
        return {"files": dict(sorted(files.items()))}

    def _walk(self, folder: str, prefix: str, files: dict[str, Any]) -> None:
        # os.scandir rather than pathlib: this runs twice per rollout and the stat calls add up.
        with os.scandir(folder) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_symlink():
                    files[rel] = {"symlink": os.readlink(entry.path)}
                elif entry.is_dir():
                    self._walk(entry.path, rel + "/", files)
                else:
                    with open(entry.path, "rb") as handle:
                        data = handle.read()
                    mode = entry.stat().st_mode & 0o7777
                    # The permission bits are state too: chmod 666 on a key file must show in the diff.
                    item: dict[str, Any] = {"sha256": _sha(data), "size": len(data), "mode": f"{mode:04o}",
                                            "executable": bool(mode & 0o111)}
                    if len(data) <= TEXT_LIMIT:
                        item["content"] = data.decode("utf-8", errors="replace")
                    files[rel] = item


_SPECIAL_UNQUOTED = set("|&;<>()$`\\*?[]{}~#!\n\r")
_SPECIAL_IN_DOUBLE = set("$`\\!")


def builtin_words(command: str) -> list[str] | None:
    """The words of `command` when it is a single service command with nothing for a shell to do
    (no operators, expansions or globs outside single quotes); None otherwise."""
    quote = None
    for char in command:
        if quote == "'":
            quote = None if char == "'" else quote
        elif quote == '"':
            if char in _SPECIAL_IN_DOUBLE:
                return None
            quote = None if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char in _SPECIAL_UNQUOTED:
            return None
    if quote is not None:
        return None
    words = shlex.split(command)
    return words if words and words[0] in SERVICE_OF_COMMAND else None


def named_hosts(text: str) -> list[str]:
    """Hosts a command line or script names (URLs, user@host), for the run_command receipt."""
    hosts = {h.lower() for h in _URL_HOSTS.findall(text)}
    hosts |= {h.lower() for h in _AT_HOSTS.findall(text)}
    return sorted(hosts)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
