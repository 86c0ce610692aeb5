"""The workspace surface: a real directory per rollout, file tools confined to it, and `run_command`.

Confinement is checked on the resolved path: absolute paths, `..` that climbs out and symlinks that
point out are all refused as `ConfinementViolation`, which the gateway records as a denied receipt.
Commands run only under the isolation backend; when it is unavailable the tool refuses to run.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shlex
import shutil
import stat
from pathlib import Path
from typing import Any

from redagent.sandbox.canonical import text_digest
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

TEXT_LIMIT = 1 << 20  # text files up to 1 MiB keep their text in snapshots: what a secret is looked for in
TEXT_DIGEST_LIMIT = 8 << 20  # files up to this size get a whitespace-normalised text digest
INDEX_LIMIT = 20_000  # paths fingerprinted around a command to tell what it changed (the diff sees everything)
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

    def read_payload(self, rel: str) -> str:
        """A file as it would travel in a message: its text, or base64 of its bytes when it is not text
        (an archive stays decodable, where replacing invalid bytes would destroy it)."""
        path = self.resolve(rel, must_exist=True)
        if path.is_dir():
            raise ToolError(f"is a directory: {rel}")
        data = path.read_bytes()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(data).decode()

    def read_large(self, rel: str) -> str | None:
        """The text of a file the snapshot was too small to keep (up to TEXT_DIGEST_LIMIT), for the
        verifier while the sandbox still exists; None for anything else."""
        try:
            path = self.resolve(rel, must_exist=True)
        except ToolError:
            return None
        if path.is_symlink() or not path.is_file() or path.stat().st_size > TEXT_DIGEST_LIMIT:
            return None
        return path.read_bytes().decode("utf-8", errors="replace")

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
            before = self.index()
            try:
                result = self.env.isolation.run(
                    self.root, command, timeout=min(timeout, 60), bridge=self.env.bridge)
            except IsolationUnavailable as exc:
                raise ToolError(f"run_command is unavailable: {exc}") from None
            after = self.index()
            # What the command did to the workspace, beside what it did through the services.
            fx["changed"] = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
            # What those files held when the command ended: a fetched body written and then overwritten
            # by a later step still landed in the workspace (an ingress), even if the final state lost it.
            fx["changed_sha256"] = self._digests(fx["changed"][:64])
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
        # Dot-files are state like any other file; only regular files are ever opened (a FIFO an
        # agent made would block the snapshot forever).
        with os.scandir(folder) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_symlink():
                    files[rel] = self._link(entry.path)
                elif entry.is_dir(follow_symlinks=False):
                    self._walk(entry.path, rel + "/", files)
                elif entry.is_file(follow_symlinks=False):
                    files[rel] = _file_record(entry.path, entry.stat(follow_symlinks=False).st_mode)
                else:
                    files[rel] = {"special": _special_kind(entry.stat(follow_symlinks=False).st_mode)}

    def _link(self, path: str) -> dict[str, Any]:
        """A symlink with its target; when the target is a file inside the workspace, its digests too,
        so a link that exposes a key file is seen as a copy of it (targets outside are never read)."""
        target = os.readlink(path)
        item: dict[str, Any] = {"symlink": target, "target": None}
        root = Path(os.path.realpath(self.root))
        if target == "/workspace" or target.startswith("/workspace/"):
            # Inside the sandbox the workspace is /workspace: an absolute link there points into it.
            real = Path(os.path.realpath(root / target[len("/workspace/"):]))
        else:
            real = Path(os.path.realpath(path))
        if root in real.parents and real.is_file():
            item["target"] = real.relative_to(root).as_posix()
            record = _file_record(str(real), real.stat().st_mode)
            item.update(sha256=record["sha256"], size=record["size"])
            if "text_sha256" in record:
                item["text_sha256"] = record["text_sha256"]
        return item

    def _digests(self, paths: list[str]) -> dict[str, str]:
        found = {}
        for rel in paths:
            path = self.root / rel
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= TEXT_DIGEST_LIMIT:
                found[rel] = _sha(path.read_bytes())
        return found

    def index(self) -> dict[str, tuple[int, int, int, int, str]]:
        """A cheap fingerprint of every path (size, mtime, inode, mode, link target): what a command
        changed is the paths whose fingerprint differs before and after it."""
        found: dict[str, tuple[int, int, int, int, str]] = {}
        stack = [(str(self.root), "")]
        while stack and len(found) < INDEX_LIMIT:  # bounded: an agent may make a million files
            folder, prefix = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                rel = prefix + entry.name
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, rel + "/"))
                    continue
                link = os.readlink(entry.path) if entry.is_symlink() else ""
                # Not ctime: handing the workspace to the sandbox's uid (chown) touches every file's ctime.
                found[rel] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, link)
        return found


def _file_record(path: str, st_mode: int) -> dict[str, Any]:
    # Content is hashed in chunks, so a large file costs no more memory than a small one; its text
    # is kept up to TEXT_LIMIT and its whitespace-normalised digest up to TEXT_DIGEST_LIMIT, so a
    # change to a large file is a change, never a removal of a field a rule watches.
    digest = hashlib.sha256()
    head = bytearray()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
            if len(head) <= TEXT_DIGEST_LIMIT:
                head += chunk
    mode = st_mode & 0o7777
    # The permission bits are state too: chmod 666 on a key file must show in the diff.
    item: dict[str, Any] = {"sha256": digest.hexdigest(), "size": size, "mode": f"{mode:04o}",
                            "executable": bool(mode & 0o111)}
    if size <= TEXT_DIGEST_LIMIT:
        data = bytes(head)
        text = data.decode("utf-8", errors="replace")
        item["text_sha256"] = text_digest(text)
        if size <= TEXT_LIMIT:
            # Binary content travels as base64, so an archive holding a secret stays decodable.
            item["content"] = text if _is_text(data) else "base64:" + base64.b64encode(data).decode()
    return item


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _special_kind(st_mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "char-device"),
                       (stat.S_ISBLK, "block-device")):
        if test(st_mode):
            return name
    return "other"


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
