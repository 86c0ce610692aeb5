"""The workspace surface: a real directory per rollout, file tools confined to it, and `run_command`.

Confinement is checked on the resolved path: absolute paths, `..` that climbs out and symlinks that
point out are all refused as `ConfinementViolation`, which the gateway records as a denied receipt.
Commands run only under the isolation backend; when it is unavailable the tool refuses to run.

The workspace is hostile ground: an agent's commands may leave FIFOs, sockets, symlink loops, names
that are not UTF-8, trees deeper than any recursion limit. Only regular files are ever opened (a FIFO
would block a reader forever), every read is bounded, and the snapshot records what it cannot read
instead of failing. Where the process may mount (root), the workspace becomes a tmpfs of its own
with a size and inode quota (isolation.WORKSPACE_MB / WORKSPACE_INODES) before its first sandboxed
command, removed with the rollout.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any

from redagent.sandbox.canonical import text_digest
from redagent.sandbox.cli import SERVICE_OF_COMMAND
from redagent.sandbox.isolation import (
    WORKSPACE_INODES,
    WORKSPACE_MB,
    CommandResult,
    IsolationUnavailable,
    mount_tmpfs,
    quota_problem,
    unmount,
)
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
# read_file shows at most this much of a file: more than any model's context holds, and every copy of an
# observation (result, rendering, trajectory, record) costs host memory.
READ_LIMIT = 256 << 10
PAYLOAD_LIMIT = TEXT_DIGEST_LIMIT  # a file sent out (an attachment) is at most this large
HASH_LIMIT = 256 << 20  # files up to this size (any the quota'd workspace can hold) are hashed whole;
HASH_SAMPLE = 64 << 20  # a larger one (a seeded 2 GB sparse file) by its size, head and tail: a bounded read
LIST_LIMIT = 1000  # entries list_dir returns; the rest are counted
CLOSE_WAIT = 10.0  # seconds a closing workspace waits for a killed command to give its thread back
_URL_HOSTS = re.compile(r"\b(?:https?|ftp|ssh|s3)://([A-Za-z0-9.-]+)", re.IGNORECASE)
_AT_HOSTS = re.compile(r"\b[\w.-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)")


class Workspace(Service):
    name = "workspace"

    def load(self, seed: dict[str, Any]) -> None:
        self.root = Path(self.env.workspace_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self._open_quota()
        try:
            for rel, spec in (seed.get("files") or {}).items():
                self._plant(rel, {"content": spec} if isinstance(spec, str) else spec)
        except BaseException:
            self.close()  # not yet one of the environment's services: its quota mount is dropped here
            raise

    def _plant(self, rel: str, spec: dict[str, Any]) -> None:
        """Write one seed file, never outside the workspace. The loader refuses escaping paths already;
        this is the second line: each folder is opened relative to its parent with O_NOFOLLOW, so no
        absolute path, `..` or symlink (one planted by an earlier seed entry) can redirect the write."""
        parts = rel.split("/") if isinstance(rel, str) else []
        if not parts or rel.startswith("/") or any(p in ("", ".", "..") or "\0" in p for p in parts):
            raise ConfinementViolation(f"seed file outside the workspace: {rel!r}")
        nofollow = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        folder = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))  # the root is ours
        try:
            for part in parts[:-1]:
                try:
                    if not self._seed_entry_exists(part, folder):
                        os.mkdir(part, 0o777, dir_fd=folder)
                    inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=folder)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink (or a file) where a folder goes
                        raise ConfinementViolation(f"seed file {rel!r} goes through a symlink or file") from None
                    raise
                os.close(folder)
                folder = inner
            if "symlink" in spec:
                os.symlink(spec["symlink"], parts[-1], dir_fd=folder)
                return
            try:
                fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | nofollow, 0o666, dir_fd=folder)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise ConfinementViolation(f"seed file {rel!r} is a symlink") from None
                raise
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                if spec.get("executable"):
                    os.fchmod(fd, 0o755)
                handle.write(spec.get("content", ""))
        finally:
            os.close(folder)

    @staticmethod
    def _seed_entry_exists(name: str, folder: int) -> bool:
        try:
            os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def _open_quota(self) -> None:
        self._stop = threading.Event()  # set when the rollout closes: a running command is killed
        self._busy = threading.Condition()
        self._running = 0
        self.quota = False  # whether the workspace is a quota'd tmpfs of its own (made before the first command)
        # Only a directory the environment made (and removes) gets a quota mount: a caller's own
        # directory must keep its files after the rollout.
        self._quota_due = bool(getattr(self.env, "_owns_dir", False))

    def _mount_quota(self) -> None:
        """Before the first sandboxed command, move the workspace onto a tmpfs of its own with the
        quota. Not at load: most rollouts never run a command, and until one runs only the host's own
        tools, bounded by what a model sends, have written here — so those never pay for a mount.
        Without mount rights, or if what is there already exceeds the quota, the workspace stays as it
        is (see isolation.quota_problem)."""
        self._quota_due = False
        if quota_problem() is not None:
            return
        iso = self.env.isolation
        staging = Path(tempfile.mkdtemp(prefix=".redagent-move-", dir=self.root.parent))
        names = os.listdir(self.root)
        for name in names:  # a rename within one filesystem: nothing is copied twice
            os.rename(self.root / name, staging / name)
        mounted = mount_tmpfs(self.root, getattr(iso, "workspace_mb", WORKSPACE_MB),
                              getattr(iso, "workspace_inodes", WORKSPACE_INODES))
        try:
            if mounted:
                shutil.copytree(staging, self.root, symlinks=True, dirs_exist_ok=True)
                self.quota = True
                # An environment dropped without close() must not leave its mount behind (a killed
                # process's mounts are reaped by the next one: isolation.reap_stale_mounts).
                self._unmount_later = weakref.finalize(self, _unmount_quietly, self.root)
        except (OSError, RecursionError, shutil.Error):
            unmount(self.root)
            mounted = False
        if not mounted:
            for name in names:
                os.rename(staging / name, self.root / name)
        remove_tree(staging)

    def close(self) -> None:
        """Kill a command still running, wait for its thread to come back, and drop the quota mount
        (its memory with it). Called by Environment.close before the directory is removed."""
        self._stop.set()
        with self._busy:
            self._busy.wait_for(lambda: self._running == 0, timeout=CLOSE_WAIT)
        # The backend's hold on this workspace (Docker: the rollout's container, which binds it) goes
        # before the quota mount does.
        release = getattr(self.env.isolation, "release", None)  # a test's stand-in backend may hold nothing
        if release is not None:
            release(self.root)
        if self.quota:
            self.quota = False
            self._unmount_later.detach()
            unmount(self.root)

    # -- confinement ---------------------------------------------------------------------------
    def resolve(self, rel: str, *, must_exist: bool = False) -> Path:
        if not isinstance(rel, str) or not rel.strip():
            raise ToolError("path must be a non-empty string")
        if "\0" in rel:
            raise ToolError("path contains a NUL byte")
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
        data, size = _read_regular(path, rel, PAYLOAD_LIMIT)
        if size > PAYLOAD_LIMIT:
            raise ToolError(f"file too large to send: {rel} ({size} bytes; at most {PAYLOAD_LIMIT})")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(data).decode()

    def read_large(self, rel: str) -> str | None:
        """The text of a file the snapshot was too small to keep (up to TEXT_DIGEST_LIMIT), for the
        verifier while the sandbox still exists; None for anything else."""
        try:
            path = self.resolve(rel, must_exist=True)
            if path.is_symlink():
                return None
            data, size = _read_regular(path, rel, TEXT_DIGEST_LIMIT)
        except (ToolError, OSError):
            return None
        return data.decode("utf-8", errors="replace") if size <= TEXT_DIGEST_LIMIT else None

    def read_text(self, rel: str) -> str:
        path = self.resolve(rel, must_exist=True)
        if path.is_dir():
            raise ToolError(f"is a directory: {rel}")
        data, size = _read_regular(path, rel, READ_LIMIT)
        text = data.decode("utf-8", errors="replace")
        if size > READ_LIMIT:
            text += f"\n[truncated: the file has {size} bytes; shown are the first {READ_LIMIT}]"
        return text

    def put(self, target: Path, rel: str, content: str) -> None:
        """Write `content` to an already resolved path, opening nothing but a regular file."""
        target.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(_open_regular(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, rel), "wb") as handle:
            handle.write(content.encode("utf-8"))

    # -- tools ---------------------------------------------------------------------------------
    @tool("List the files and folders in a workspace directory.",
          path=string("directory relative to the workspace root", default="."))
    def list_dir(self, fx: dict, path: str = ".") -> dict[str, Any]:
        target = self.resolve(path, must_exist=True)
        if not target.is_dir():
            raise ToolError(f"not a directory: {path}")
        with os.scandir(target) as found:
            children = sorted(found, key=lambda e: e.name)
        entries = []
        for child in children[:LIST_LIMIT]:
            st = child.stat(follow_symlinks=False)  # never opens the entry: a FIFO is listed, not read
            kind = ("link" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode)
                    else "file" if stat.S_ISREG(st.st_mode) else _special_kind(st.st_mode))
            entry: dict[str, Any] = {"name": _name(child.name), "type": kind}
            if kind == "file":
                entry["size"] = st.st_size
            entries.append(entry)
        listing: dict[str, Any] = {"path": path, "entries": entries}
        if len(children) > LIST_LIMIT:
            listing["more"] = len(children) - LIST_LIMIT
        return listing

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
        fx["before_sha256"] = _file_sha(target, path) if target.exists() else None
        self.put(target, path, content)
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
        with os.fdopen(_open_regular(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, path), "wb") as handle:
            handle.write(content.encode("utf-8"))
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
            removed = sorted(_name(self.relative(Path(p))) for p in _files_under(str(target)))
            remove_tree(target, strict=True)
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
        if "\0" in command:
            raise ToolError("a command cannot contain a NUL byte")
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
            with self._busy:
                self._running += 1
            try:
                if self._quota_due:
                    self._mount_quota()
                before = self.index()
                result = self.env.isolation.run(
                    self.root, command, timeout=min(timeout, 60), bridge=self.env.bridge, stop=self._stop)
                after = self.index()
            except IsolationUnavailable as exc:
                raise ToolError(f"run_command is unavailable: {exc}") from None
            finally:
                with self._busy:
                    self._running -= 1
                    self._busy.notify_all()
            # What the command did to the workspace, beside what it did through the services.
            fx["changed"] = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
            # What those files held when the command ended: a fetched body written and then overwritten
            # by a later step still landed in the workspace (an ingress), even if the final state lost it.
            fx["changed_sha256"] = self._digests(fx["changed"][:64])
            fx["isolation"] = getattr(self.env.isolation, "name", "bubblewrap")
        fx.update(exit_code=result.exit_code, timed_out=result.timed_out,
                  stdout_sha256=_sha(result.stdout.encode()),
                  stderr_sha256=_sha(result.stderr.encode()),
                  hosts=sorted(set(fx["hosts"]) | set(result.hosts)),
                  bridged_calls=result.bridged_calls)
        return {"exit_code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr,
                "timed_out": result.timed_out}

    # -- snapshot ------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        # os.scandir rather than pathlib, and a stack rather than recursion: this runs twice per rollout,
        # the stat calls add up, and an agent can make a tree deeper than Python's recursion limit.
        # Dot-files are state like any other file; only regular files are ever opened.
        files: dict[str, Any] = {}
        stack = [(str(self.root), "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        rel = prefix + _name(entry.name)
                        try:
                            if entry.is_symlink():
                                files[rel] = self._link(entry.path)
                            elif entry.is_dir(follow_symlinks=False):
                                stack.append((entry.path, rel + "/"))
                            elif entry.is_file(follow_symlinks=False):
                                files[rel] = _file_record(entry.path)
                            else:
                                files[rel] = {"special": _special_kind(entry.stat(follow_symlinks=False).st_mode)}
                        except OSError as exc:  # gone, unreadable, a path past PATH_MAX: recorded, never fatal
                            files[rel] = {"special": "unreadable", "error": exc.strerror or type(exc).__name__}
            except OSError as exc:
                files[prefix.rstrip("/") or "."] = {"special": "unreadable",
                                                     "error": exc.strerror or type(exc).__name__}
        return {"files": dict(sorted(files.items()))}

    def _link(self, path: str) -> dict[str, Any]:
        """A symlink with its target; when the target is a file inside the workspace, its digests too,
        so a link that exposes a key file is seen as a copy of it (targets outside are never read)."""
        target = os.readlink(path)
        item: dict[str, Any] = {"symlink": _name(target), "target": None}
        root = Path(os.path.realpath(self.root))
        if target == "/workspace" or target.startswith("/workspace/"):
            # Inside the sandbox the workspace is /workspace: an absolute link there points into it.
            real = Path(os.path.realpath(root / target[len("/workspace/"):]))
        else:
            real = Path(os.path.realpath(path))
        if root in real.parents and real.is_file():
            item["target"] = _name(real.relative_to(root).as_posix())
            record = _file_record(str(real))
            item.update(sha256=record["sha256"], size=record["size"])
            if "text_sha256" in record:
                item["text_sha256"] = record["text_sha256"]
        return item

    def _digests(self, paths: list[str]) -> dict[str, str]:
        found = {}
        for rel in paths:
            path = self.root / rel
            try:
                if path.is_symlink():
                    continue
                data, size = _read_regular(path, rel, TEXT_DIGEST_LIMIT)
            except (ToolError, OSError):
                continue
            if size <= TEXT_DIGEST_LIMIT:
                found[rel] = _sha(data)
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
                rel = prefix + _name(entry.name)
                try:
                    st = entry.stat(follow_symlinks=False)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, rel + "/"))
                        continue
                    link = _name(os.readlink(entry.path)) if entry.is_symlink() else ""
                except OSError:
                    continue
                # Not ctime: handing the workspace to the sandbox's uid (chown) touches every file's ctime.
                found[rel] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, link)
        return found


def _file_record(path: str) -> dict[str, Any]:
    # Content is hashed in chunks, so a large file costs no more memory than a small one; its text
    # is kept up to TEXT_LIMIT and its whitespace-normalised digest up to TEXT_DIGEST_LIMIT, so a
    # change to a large file is a change, never a removal of a field a rule watches. The file is
    # opened without following a link and without blocking, and must still be regular once open.
    digest = hashlib.sha256()
    head = bytearray()
    size = 0
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        partial = st.st_size > HASH_LIMIT
        while not (partial and size >= HASH_SAMPLE) and (chunk := handle.read(1 << 20)):
            digest.update(chunk)
            size += len(chunk)
            if len(head) <= TEXT_DIGEST_LIMIT:
                head += chunk
        if partial:  # the size and the last HASH_SAMPLE bytes stand in for the middle
            handle.seek(max(size, st.st_size - HASH_SAMPLE))
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
            digest.update(str(st.st_size).encode())
            size = st.st_size
    mode = st.st_mode & 0o7777
    # The permission bits are state too: chmod 666 on a key file must show in the diff.
    item: dict[str, Any] = {"sha256": digest.hexdigest(), "size": size, "mode": f"{mode:04o}",
                            "executable": bool(mode & 0o111)}
    if partial:
        item["partial"] = True
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


def _unmount_quietly(root: Path) -> None:
    with contextlib.suppress(OSError):
        unmount(root)


def _name(name: str) -> str:
    """A file name as storable text: a name that is not UTF-8 shows its raw bytes escaped (\\xff)."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def _open_regular(path: Path, flags: int, rel: str) -> int:
    """A descriptor for `path` if it is (or, with O_CREAT, will be) a regular file; nothing else is ever
    opened — a FIFO would block the opener forever and a device may act on being opened. The check
    is repeated on the open descriptor, so a file swapped for a FIFO in between is refused too."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise ToolError(f"no such file: {rel}") from None
    else:
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"not a regular file ({_special_kind(st.st_mode)}): {rel}")
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO without a reader, or a socket, appeared meanwhile
            raise ToolError(f"not a regular file: {rel}") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"not a regular file: {rel}")
    return fd


def _read_regular(path: Path, rel: str, limit: int) -> tuple[bytes, int]:
    """Up to `limit` bytes of a regular file, and its size."""
    with os.fdopen(_open_regular(path, os.O_RDONLY, rel), "rb") as handle:
        return handle.read(limit), os.fstat(handle.fileno()).st_size


def _file_sha(path: Path, rel: str) -> str:
    digest = hashlib.sha256()
    with os.fdopen(_open_regular(path, os.O_RDONLY, rel), "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _files_under(folder: str) -> list[str]:
    """Every non-directory path below `folder`, without recursion (trees may be arbitrarily deep)."""
    found, stack = [], [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        found.append(entry.path)
        except OSError:  # past PATH_MAX or unreadable: the directory stands for what it holds
            found.append(current)
    return found


def remove_tree(path: Path, *, strict: bool = False) -> None:
    """Remove a directory tree an agent may have made hostile: deeper than shutil.rmtree's recursion
    (Python 3.11's is recursive), or with directories it made unreadable (chmod 000, as its own uid).
    With `strict`, what cannot be removed raises OSError; otherwise it is left behind silently."""
    try:
        shutil.rmtree(path)
        return
    except FileNotFoundError:
        return
    except (OSError, RecursionError):
        pass
    # rm(1) walks any depth; chmod first gives back directories the agent locked (as root, moot).
    subprocess.run(["chmod", "-R", "u+rwx", "--", str(path)], capture_output=True)
    done = subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], capture_output=True, text=True)
    if strict and os.path.lexists(path):
        raise OSError(errno.EBUSY, f"cannot remove {path.name}: {done.stderr.strip()[:200]}")


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
