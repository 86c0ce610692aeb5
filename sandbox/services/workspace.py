"""The workspace surface: a real directory per rollout, file tools confined to it, and `run_command`.

The host touches the workspace only through `beneath.Beneath`: a directory fd held for the rollout,
every path walked from it one component at a time without the kernel following a link, so an agent's
command swapping entries while a tool call is served can never make the host reach outside.
Absolute paths, `..` that climbs out and symlinks that point out are refused as
`ConfinementViolation`, which the gateway records as a denied receipt. When the engine is root the
rollout has a uid of its own (`identity.lease_uid`): the workspace and seed files belong to it, its
commands run as it, and every file tool served for the agent (and the downloads and attachments done
for it) runs with the thread's filesystem identity set to it (`identity.acting_as`), so root's rights
are never used on the agent's behalf. The instrument's own observation (snapshot, index, digests,
hand-over, removal) stays root, through the same descriptors. Commands run only under the isolation
backend; when it is unavailable the tool refuses to run.

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
import stat
import threading
import weakref
from pathlib import Path, PurePosixPath
from typing import Any

from redagent.sandbox import names
from redagent.sandbox.beneath import Beneath, Found, kind_of, remove_tree
from redagent.sandbox.canonical import text_digest
from redagent.sandbox.cli import SERVICE_OF_COMMAND
from redagent.sandbox.identity import COMMAND_UIDS, LeaseUnavailable, acting_as, lease_uid
from redagent.sandbox.isolation import (
    WORKSPACE_INODES,
    WORKSPACE_MB,
    Budget,
    CommandResult,
    IsolationUnavailable,
    SandboxFailure,
    mount_tmpfs,
    quota_problem,
    unmount,
)
from redagent.sandbox.lifecycle import critical
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
_AT_HOSTS = re.compile(r"(?<![\w.-])[\w.-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)")  # from a run's start only


class Workspace(Service):
    name = "workspace"

    def load(self, seed: dict[str, Any]) -> None:
        self.root = Path(self.env.workspace_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self._open_quota()
        self.lease = None
        self.uid: int | None = None  # the rollout's own uid when the engine is root
        self.budget = Budget()  # what all the rollout's commands may use together
        try:
            self.fs = Beneath(self.root)
            self._finalizer = weakref.finalize(self, _release_quietly, self.fs, None)
            if os.geteuid() == 0:
                try:
                    self.lease = lease_uid(COMMAND_UIDS)
                except LeaseUnavailable as exc:
                    raise SandboxFailure(str(exc)) from None
                self.uid = self.lease.uid
                self._finalizer.detach()
                self._finalizer = weakref.finalize(self, _release_quietly, self.fs, self.lease)
                if self._quota_due:  # a directory of our own making: only the root itself is there yet
                    self.fs.fix_root(self.uid, self.uid, stat.S_IRWXU)
                else:  # a caller's directory, with whatever it holds
                    self.fs.chown_tree(self.uid, self.uid)
            for rel, spec in (seed.get("files") or {}).items():
                self._plant(rel, {"content": spec} if isinstance(spec, str) else spec)
        except BaseException:
            self.close()  # not yet one of the environment's services: its quota mount is dropped here
            raise

    def _agent(self) -> contextlib.AbstractContextManager[None]:
        """The identity every file operation done for the agent runs under: the rollout's uid."""
        return acting_as(self.uid)

    def _plant(self, rel: str, spec: dict[str, Any]) -> None:
        """Write one seed file, never outside the workspace, as the rollout's uid. The loader refuses
        escaping paths already; this is the second line: each folder is opened relative to its parent
        with O_NOFOLLOW, so no absolute path, `..` or symlink (one planted by an earlier seed entry) can
        redirect the write."""
        parts = rel.split("/") if isinstance(rel, str) else []
        if not parts or rel.startswith("/") or any(p in ("", ".", "..") or "\0" in p for p in parts):
            raise ConfinementViolation(f"seed file outside the workspace: {rel!r}")
        nofollow = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        with self._agent():
            folder = self.fs.root_fd()
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
        self._quota_lock = threading.Lock()  # two first commands at once (parallel tool calls) mount once
        self.quota = False  # whether the workspace is a quota'd tmpfs of its own (made before the first command)
        # Only a directory the environment made (and removes) gets a quota mount: a caller's own
        # directory must keep its files after the rollout.
        self._quota_due = bool(getattr(self.env, "_owns_dir", False))

    def _mount_quota(self) -> None:
        """Before the first sandboxed command, move the workspace onto a tmpfs of its own with the
        quota. Not at load: most rollouts never run a command, and until one runs only the host's own
        tools, bounded by what a model sends, have written here — so those never pay for a mount.
        Without mount rights, or if what is there already exceeds the quota, the workspace stays as it
        is (see isolation.quota_problem). Entries move by rename and come back by copy, on descriptors,
        given to the rollout's uid."""
        self._quota_due = False
        if quota_problem() is not None:
            return
        with critical():  # a stop waits for the move: never a mount unrecorded, a staging folder half made
            self._move_onto_quota()

    def _move_onto_quota(self) -> None:
        iso = self.env.isolation
        staging_path = self._staging_path()
        remove_tree(staging_path)  # never there (the root's name is unique), unless a killed process left it
        staging_path.mkdir(mode=0o700)
        try:
            with Beneath(staging_path, label="staging folder") as staging:
                root_stat = self.fs.stat(".")
                assert root_stat is not None, "the open root is there"
                mode = stat.S_IMODE(root_stat.st_mode)
                self.fs.move_all(staging)  # a rename within one filesystem: nothing is copied twice
                mounted = mount_tmpfs(
                    self.root,
                    getattr(iso, "workspace_mb", WORKSPACE_MB),
                    getattr(iso, "workspace_inodes", WORKSPACE_INODES),
                )
                try:
                    if mounted:
                        self.fs.reopen()  # the tmpfs now at the root's path
                        owner = (self.uid, self.uid) if self.uid is not None else None
                        self.fs.fix_root(self.uid, self.uid, 0, mode=mode)  # the tmpfs's root as the old one
                        staging.copy_into(self.fs, owner=owner)
                        self.quota = True
                        # An environment dropped without close() must not leave its mount behind (a killed
                        # process's mounts are reaped by the next one: isolation.reap_stale_mounts).
                        self._unmount_later = weakref.finalize(self, _unmount_quietly, self.root)
                except (OSError, ToolError):
                    unmount(self.root)
                    self.fs.reopen()
                    mounted = False
                if not mounted:
                    staging.move_all(self.fs)
        finally:
            remove_tree(staging_path)

    def _staging_path(self) -> Path:
        """Where the entries wait while the quota tmpfs is mounted: beside the root (the same filesystem, so a
        rename), named after it so that close() removes it whatever interrupted the move."""
        return self.root.parent / f".redagent-move-{self.root.name}"

    def interrupt(self) -> None:
        """Kill a command still running (within 0.1 s) and start no other; returns at once. The rollout is closing:
        close() follows once the call that ran the command has come back."""
        self._stop.set()

    def close(self) -> None:
        """Kill a command still running, wait for its thread to come back, drop the quota mount (its
        memory with it) and the rollout's uid. Called by Environment.close before the directory is removed."""
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
        if self._staging_path().exists():
            # A stop (SystemExit from a signal) that landed inside the move left the staging folder, its
            # mkdir or its removal half done: it is named after the root, so the close finds it.
            remove_tree(self._staging_path())
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()  # the root descriptor, and the uid (nothing runs as it any more)

    # -- confinement ---------------------------------------------------------------------------
    @staticmethod
    def checked(rel: Any) -> str:
        """A path as an agent may give it: a non-empty relative string without NUL."""
        if not isinstance(rel, str) or not rel.strip():
            raise ToolError("path must be a non-empty string")
        if "\0" in rel:
            raise ToolError("path contains a NUL byte")
        if rel.startswith(("/", "~")) or re.match(r"^[A-Za-z]:[\\/]", rel):
            raise ConfinementViolation(f"path outside the workspace: {rel!r} (use a relative path)")
        return rel

    @staticmethod
    def relative(rel: str) -> str:
        """A path as receipts record it: the agent's own spelling, `.` and repeated slashes folded
        (what `root / rel` relative to the root always gave)."""
        return PurePosixPath(rel).as_posix()

    def read_payload(self, rel: str) -> str:
        """A file as it would travel in a message, read as the agent: its text, or base64 of its bytes
        when it is not text (an archive stays decodable, where replacing invalid bytes would destroy it)."""
        with self._agent():
            data, size = self.fs.read(self.checked(rel), PAYLOAD_LIMIT)
        if size > PAYLOAD_LIMIT:
            raise ToolError(f"file too large to send: {rel} ({size} bytes; at most {PAYLOAD_LIMIT})")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(data).decode()

    def read_large(self, rel: str) -> str | None:
        """The text of a file the snapshot was too small to keep (up to TEXT_DIGEST_LIMIT), for the
        verifier while the sandbox still exists; None for anything else (a final symlink included). `rel` is a
        snapshot key (`sandbox.names`): a name that is not UTF-8 is read by its bytes."""
        spelled = names.path(rel) if isinstance(rel, str) else None
        if spelled is None:
            return None
        try:
            fd = self.fs.open(self.checked(spelled), follow=False)
        except (ToolError, OSError):
            return None
        with os.fdopen(fd, "rb") as handle:
            data, size = handle.read(TEXT_DIGEST_LIMIT), os.fstat(fd).st_size
        return data.decode("utf-8", errors="replace") if size <= TEXT_DIGEST_LIMIT else None

    def read_text(self, rel: str) -> str:
        with self._agent():
            data, size = self.fs.read(self.checked(rel), READ_LIMIT)
        text = data.decode("utf-8", errors="replace")
        if size > READ_LIMIT:
            text += f"\n[truncated: the file has {size} bytes; shown are the first {READ_LIMIT}]"
        return text

    def put(self, rel: str, content: str) -> None:
        """Write `content` to the file `rel` names (made, with its folders, if missing), as the agent:
        nothing but a regular file is ever opened."""
        with (
            self._agent(),
            os.fdopen(
                self.fs.open(self.checked(rel), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, parents=True), "wb"
            ) as handle,
        ):
            handle.write(content.encode("utf-8"))

    # -- tools ---------------------------------------------------------------------------------
    @tool(
        "List the files and folders in a workspace directory.",
        path=string("directory relative to the workspace root", default="."),
    )
    def list_dir(self, fx: dict, path: str = ".") -> dict[str, Any]:
        with self._agent():
            children = sorted(self.fs.listdir(self.checked(path)), key=lambda e: e.name)
        entries = []
        for child in children[:LIST_LIMIT]:
            try:
                st = child.stat(follow_symlinks=False)  # read while the folder was held; a FIFO is listed, not read
            except OSError:  # gone meanwhile
                continue
            kind = "link" if stat.S_ISLNK(st.st_mode) else kind_of(st.st_mode)
            entry: dict[str, Any] = {"name": _name(child.name), "type": kind}
            if kind == "file":
                entry["size"] = st.st_size
            entries.append(entry)
        listing: dict[str, Any] = {"path": path, "entries": entries}
        if len(children) > LIST_LIMIT:
            listing["more"] = len(children) - LIST_LIMIT
        return listing

    @tool(
        "Read a text file from the workspace.",
        required=("path",),
        path=string("file path relative to the workspace root"),
    )
    def read_file(self, fx: dict, path: str) -> dict[str, Any]:
        return {"path": path, "content": self.read_text(path)}

    @tool(
        "Create or overwrite a text file in the workspace.",
        consequential=True,
        required=("path", "content"),
        path=string("file path relative to the workspace root"),
        content=string("the full new content"),
    )
    def write_file(self, fx: dict, path: str, content: str) -> dict[str, Any]:
        data = content.encode()
        with self._agent():
            # One descriptor for what the file held and what it now holds: the file that is hashed is
            # the file that is written, whatever a command swaps meanwhile.
            fd, made = self.fs.open_made(self.checked(path), os.O_RDWR | os.O_CREAT, parents=True)
            with os.fdopen(fd, "r+b") as handle:
                fx["existed"] = not made
                fx["before_sha256"] = None if made else _sha_of(handle)
                handle.seek(0)
                handle.truncate()
                handle.write(data)
        fx.update(path=self.relative(path), sha256=_sha(data), payload=content)
        return {"path": path, "bytes": len(data)}

    @tool(
        "Append text to a file in the workspace (created if missing).",
        consequential=True,
        required=("path", "content"),
        path=string("file path relative to the workspace root"),
        content=string("text to append"),
    )
    def append_file(self, fx: dict, path: str, content: str) -> dict[str, Any]:
        with (
            self._agent(),
            os.fdopen(
                self.fs.open(self.checked(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, parents=True), "wb"
            ) as handle,
        ):
            handle.write(content.encode("utf-8"))
        fx.update(path=self.relative(path), payload=content)
        return {"path": path, "appended": len(content.encode())}

    @tool(
        "Delete a file, or a directory with recursive=true.",
        consequential=True,
        required=("path",),
        path=string("path relative to the workspace root"),
        recursive=boolean("delete a directory and everything in it"),
    )
    def delete_path(self, fx: dict, path: str, recursive: bool = False) -> dict[str, Any]:
        given = self.relative(self.checked(path))
        with self._agent():
            below = self.fs.remove(path, recursive=recursive)
        removed = sorted(_name(f"{given}/{rel}" if rel else given) for rel in below)
        fx.update(path=path, removed=removed)
        return {"deleted": removed}

    @tool(
        "Move or rename a file or directory inside the workspace.",
        consequential=True,
        required=("source", "destination"),
        source=string("existing path"),
        destination=string("new path"),
    )
    def move_path(self, fx: dict, source: str, destination: str) -> dict[str, Any]:
        with self._agent():
            self.fs.rename(self.checked(source), self.checked(destination))
        fx.update(source=source, destination=destination)
        return {"moved": source, "to": destination}

    @tool(
        "Run a shell command in the workspace (isolated: no network, only the workspace is "
        "writable). Returns exit code, stdout and stderr.",
        consequential=True,
        required=("command",),
        command=string("the command line, run with sh -c"),
        timeout=integer("seconds before the command is killed (default 10, at most 60)", minimum=1),
    )
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
            result = CommandResult(
                exit_code=0 if answer.ok else 1,
                stdout=answer.output + "\n" if answer.ok else "",
                stderr="" if answer.ok else answer.output + "\n",
                timed_out=False,
                hosts=answer.hosts,
                bridged_calls=answer.receipt_ids,
            )
            fx["isolation"] = "builtin"
        else:
            with self._busy:
                self._running += 1
            try:
                with self._quota_lock:
                    if self._quota_due:
                        self._mount_quota()
                # An earlier command may have locked the workspace (chmod 000 .): this one must enter it.
                self.fs.fix_root(self.uid, self.uid, stat.S_IRWXU)
                before = self.index()
                result = self.env.isolation.run(
                    self.root,
                    command,
                    timeout=min(timeout, 60),
                    bridge=self.env.bridge,
                    stop=self._stop,
                    uid=self.uid,
                    budget=self.budget,
                )
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
        fx.update(
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            stdout_sha256=_sha(result.stdout.encode()),
            stderr_sha256=_sha(result.stderr.encode()),
            hosts=sorted(set(fx["hosts"]) | set(result.hosts)),
            bridged_calls=result.bridged_calls,
        )
        return {
            "exit_code": result.exit_code,
            "stdout": result.stdout,
            "stderr": result.stderr,
            "timed_out": result.timed_out,
        }

    # -- snapshot ------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        # Walked on descriptors, iteratively (an agent can make a tree deeper than Python's recursion
        # limit), as root: the instrument's own observation. Dot-files are state like any other file;
        # only regular files are ever opened.
        files: dict[str, Any] = {}
        for found in self.fs.entries():
            if found.kind == "dir":
                continue
            rel = names.key(found.rel)
            try:
                if found.kind == "unreadable":
                    files[rel] = {"special": "unreadable", "error": found.error}
                elif found.kind == "link":
                    files[rel] = self._link(found)
                elif found.kind == "file":
                    files[rel] = _file_record_at(found.dir_fd, found.name)
                else:
                    files[rel] = {"special": found.kind}
            except OSError as exc:  # gone, unreadable, swapped meanwhile: recorded, never fatal
                files[rel] = {"special": "unreadable", "error": exc.strerror or type(exc).__name__}
        return {"files": dict(sorted(files.items()))}

    def _link(self, found: Found) -> dict[str, Any]:
        """A symlink with its target; when the target is a file inside the workspace, its digests too,
        so a link that exposes a key file is seen as a copy of it (targets outside are never read)."""
        target = os.readlink(found.name, dir_fd=found.dir_fd)
        item: dict[str, Any] = {"symlink": names.key(target), "target": None}
        reached = self.fs.follow(target, found.chain, found.chain_names)
        if reached is not None:
            where, fd = reached
            record = _file_record_fd(fd)
            item["target"] = names.key(where)
            item.update(sha256=record["sha256"], size=record["size"])
            if "text_sha256" in record:
                item["text_sha256"] = record["text_sha256"]
        return item

    def _digests(self, paths: list[str]) -> dict[str, str]:
        found = {}
        for rel in paths:
            spelled = names.path(rel)
            if spelled is None:
                continue
            try:
                fd = self.fs.open(spelled, follow=False)
            except (ToolError, OSError):
                continue
            with os.fdopen(fd, "rb") as handle:
                data, size = handle.read(TEXT_DIGEST_LIMIT), os.fstat(fd).st_size
            if size <= TEXT_DIGEST_LIMIT:
                found[rel] = _sha(data)
        return found

    def index(self) -> dict[str, tuple[int, int, int, int, str]]:
        """A cheap fingerprint of every path (size, mtime, inode, mode, link target): what a command
        changed is the paths whose fingerprint differs before and after it."""
        found: dict[str, tuple[int, int, int, int, str]] = {}
        for entry in self.fs.entries():
            if len(found) >= INDEX_LIMIT:  # bounded: an agent may make a million files
                break
            if entry.kind in ("dir", "unreadable"):
                continue
            try:
                st = entry.lstat()
                link = names.key(os.readlink(entry.name, dir_fd=entry.dir_fd)) if entry.kind == "link" else ""
            except OSError:
                continue
            # Not ctime: handing the workspace to the sandbox's uid (chown) touches every file's ctime.
            found[names.key(entry.rel)] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, link)
        return found


def _file_record_at(dir_fd: int, name: str) -> dict[str, Any]:
    """The record of a regular file in a held folder, opened without following a link or blocking."""
    return _file_record_fd(
        os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dir_fd)
    )


def _file_record_fd(fd: int) -> dict[str, Any]:
    # Content is hashed in chunks, so a large file costs no more memory than a small one; its text
    # is kept up to TEXT_LIMIT and its whitespace-normalised digest up to TEXT_DIGEST_LIMIT, so a
    # change to a large file is a change, never a removal of a field a rule watches. The file must
    # be regular once open (this closes `fd`).
    digest = hashlib.sha256()
    head = bytearray()
    size = 0
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
    item: dict[str, Any] = {
        "sha256": digest.hexdigest(),
        "size": size,
        "mode": f"{mode:04o}",
        "executable": bool(mode & 0o111),
    }
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
    """A file name as the agent is shown it (list_dir, a removal's list): a name that is not UTF-8 shows its raw
    bytes escaped (\\xff). Snapshots and the index key entries losslessly instead (`sandbox.names`)."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def _sha_of(handle: Any) -> str:
    digest = hashlib.sha256()
    while chunk := handle.read(1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


def _release_quietly(fs: Beneath, lease: Any) -> None:
    """The root descriptor and the rollout's uid lease (at close, or when a dropped environment is collected)."""
    with contextlib.suppress(OSError):
        fs.close()
    if lease is not None:
        lease.release()


# A command's first word when it is plain (no quote in it) and ends at whitespace or the end: shlex's first word too.
_FIRST_PLAIN_WORD = re.compile(r"\s*([^\s'\"]+)(?=\s|$)")
_SPECIAL_UNQUOTED = set("|&;<>()$`\\*?[]{}~#!\n\r")
_SPECIAL_IN_DOUBLE = set("$`\\!")


def builtin_words(command: str) -> list[str] | None:
    """The words of `command` when it is a single service command with nothing for a shell to do
    (no operators, expansions or globs outside single quotes); None otherwise."""
    first = _FIRST_PLAIN_WORD.match(command)
    if first is not None and first.group(1) not in SERVICE_OF_COMMAND:
        # Most commands are not service commands: their first word says so without the scan and shlex's
        # character-by-character parse of the rest (a script given inline is often many kilobytes).
        return None
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
