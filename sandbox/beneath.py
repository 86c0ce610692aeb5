"""A directory tree as the host touches it: every path walked beneath a held directory fd, no link followed.

A rollout's workspace is hostile ground that changes under the host's feet: an agent's commands may
swap any entry for a symlink at any moment — also while the engine serves one of their own bridged
tool calls — so a path checked once and opened again (realpath, then open) can be turned into a host
file between the two. Nothing here opens a path the agent can change. `Beneath` holds a descriptor
of the root directory; every path is walked from it one component at a time with
`openat(dirfd, name, O_NOFOLLOW)` (directories with O_DIRECTORY). A symlink met on the way is read
with `readlinkat` and resolved in userland, beneath the root:

- a relative target is spliced into the components still to walk;
- `..` pops the stack of directory fds the walk holds, and never climbs above the root (that is
  `ConfinementViolation`, "path outside the workspace");
- an absolute target `/workspace/…` starts again at the root — inside the sandbox that is what it
  means — and any other absolute target is refused as outside;
- more than MAX_HOPS links in one walk is an error (a loop, or a race that never settles).

Every step is relative to a descriptor the walk holds and the kernel never follows a link for it, so
a race can only swap entries *inside* the root: a walk may meet the old entry or the new one, never
anything outside. The same holds for what is done at the end of a walk: files are opened with
O_NOFOLLOW (and O_NONBLOCK, and must be regular files once open, so a FIFO never blocks and a device
is never used), entries are removed, renamed (`renameat2(RENAME_NOREPLACE)`: "destination exists"
is decided atomically), chowned (`fchownat(AT_SYMLINK_NOFOLLOW)`) and listed relative to held fds.

Trees are walked iteratively with one held fd per level (`MAX_DEPTH` levels; deeper directories are
reported unreadable), so depth past the recursion limit or PATH_MAX costs nothing special; removal
goes to any depth by moving a subtree that reaches MAX_DEPTH up to the top of what is being removed.
Who the walk acts as (root, or a rollout's uid) is the caller's choice: see `identity.acting_as`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from redagent.sandbox.tools import ConfinementViolation, ToolError

MAX_HOPS = 40  # symlinks (and retries after a lost race) in one walk, as the kernel's own limit
MAX_DEPTH = 256  # directory levels a tree walk holds fds for; deeper ones are reported unreadable
ALIAS = "/workspace"  # an absolute link target under this names the root (the sandbox's view of it)
REMOVE_ROUNDS = 8  # times a directory is emptied again when entries keep appearing in it (a racing agent)

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_PATH = getattr(os, "O_PATH", 0o10000000) | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_NOREPLACE = 1
_libc = ctypes.CDLL(None, use_errno=True)
_libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]


def kind_of(mode: int) -> str:
    """file, dir, link, or the kind of a special file (fifo, socket, char-device, block-device, other)."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    for test, name in (
        (stat.S_ISFIFO, "fifo"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "char-device"),
        (stat.S_ISBLK, "block-device"),
    ):
        if test(mode):
            return name
    return "other"


def _components(text: str) -> list[str]:
    return [part for part in text.split("/") if part and part != "."]


def _renameat2(src_dir: int, src: str, dst_dir: int, dst: str) -> None:
    if _libc.renameat2(src_dir, os.fsencode(src), dst_dir, os.fsencode(dst), _RENAME_NOREPLACE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), dst)


def chmod_entry(dir_fd: int, name: str, mode: int) -> None:
    """chmod an entry that is not a symlink, without following one: fchmodat cannot refuse links, so the
    entry is pinned with an O_PATH descriptor first and changed through /proc/self/fd (the exact inode)."""
    fd = os.open(name, _PATH, dir_fd=dir_fd)
    try:
        if stat.S_ISLNK(os.fstat(fd).st_mode):
            raise OSError(errno.ELOOP, "is a symlink", name)
        os.chmod(f"/proc/self/fd/{fd}", mode)
    finally:
        os.close(fd)


class _Walk:
    """Where one path walk stands: the directory fds it holds from the root down (the first `borrowed`
    of them belong to someone else), their names, and the components still to walk."""

    def __init__(self, tree: Beneath, rel: str, fds: list[int], names: list[str], borrowed: int) -> None:
        self.tree, self.rel = tree, rel
        self.fds, self.names, self.borrowed = fds, names, borrowed
        self.todo = list(reversed(_components(rel)))
        self.hops = 0

    @property
    def here(self) -> int:
        return self.fds[-1]

    def close(self) -> None:
        for fd in self.fds[self.borrowed :]:
            os.close(fd)
        self.fds = self.fds[: self.borrowed]

    def where(self, name: str | None = None) -> str:
        """The canonical path (from the root) of the directory on top, or of `name` in it."""
        return "/".join(self.names + ([name] if name is not None else [])) or "."

    def outside(self) -> ConfinementViolation:
        return ConfinementViolation(f"path outside the {self.tree.label}: {self.rel!r}")

    def up(self) -> None:
        if len(self.fds) == 1:
            raise self.outside()
        fd = self.fds.pop()
        self.names.pop()
        if len(self.fds) < self.borrowed:
            self.borrowed -= 1
        else:
            os.close(fd)

    def to_root(self) -> None:
        while len(self.fds) > 1:
            self.up()

    def hop(self) -> None:
        self.hops += 1
        if self.hops > MAX_HOPS:
            raise ToolError(f"too many levels of symbolic links (or a path that keeps changing): {self.rel}")

    def splice(self, name: str) -> bool:
        """If `name` (in the directory on top) is a symlink, put its target in front of what is left to
        walk and return True; False if it is not a link (any more)."""
        try:
            target = os.readlink(name, dir_fd=self.here)
        except OSError as exc:
            if exc.errno in (errno.EINVAL, errno.ENOENT):
                return False
            raise
        self.hop()
        self.push(target)
        return True

    def push(self, target: str) -> None:
        """Put a link's target in front of what is left to walk: relative to where the walk stands, or
        from the root for the alias (`/workspace/…`); any other absolute target is outside."""
        if target.startswith("/"):
            alias = self.tree.alias
            if alias is None or not (target == alias or target.startswith(alias + "/")):
                raise self.outside()
            self.to_root()
            target = target[len(alias) :]
        self.todo.extend(reversed(_components(target)))

    def enter(self, name: str, *, create: bool) -> None:
        """Step into directory `name` (following it beneath if it is a link; made first with `create`)."""
        while True:
            try:
                fd = os.open(name, _DIR, dir_fd=self.here)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    if self.splice(name):
                        return  # the link's target is walked next, in place of `name`
                    if exc.errno == errno.ELOOP:  # it was a link a moment ago: look again
                        self.hop()
                        continue
                    raise OSError(errno.ENOTDIR, "Not a directory", self.where(name)) from None
                if exc.errno == errno.ENOENT and create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=self.here)
                    self.hop()  # bounded, should a racing agent keep removing what was just made
                    continue
                raise OSError(exc.errno, exc.strerror, self.where(name)) from None
            self.fds.append(fd)
            self.names.append(name)
            return

    def descend(self, *, create: bool) -> None:
        """Walk every component that is left: the walk then holds the directory the path names."""
        while self.todo:
            name = self.todo.pop()
            if name == "..":
                self.up()
            else:
                self.enter(name, create=create)

    def last(self, *, create: bool) -> str | None:
        """Walk every component but the last; return the last (a name in the directory on top), or None
        when the path ends in a directory the walk already holds (`.`, `..`, a link to a directory)."""
        while self.todo:
            name = self.todo.pop()
            if name == "..":
                self.up()
            elif not self.todo:
                return name
            else:
                self.enter(name, create=create)
        return None

    def final(self, *, follow: bool, create: bool) -> tuple[str | None, os.stat_result | None]:
        """The entry the path names, with its lstat (None if it does not exist). With `follow`, a
        final symlink is resolved beneath too; without, the entry is the link itself."""
        while True:
            name = self.last(create=create)
            if name is None:
                return None, os.fstat(self.here)
            try:
                st = os.stat(name, dir_fd=self.here, follow_symlinks=False)
            except FileNotFoundError:
                return name, None
            if follow and stat.S_ISLNK(st.st_mode):
                if not self.splice(name):
                    self.todo.append(name)  # no longer a link: look at it again
                    self.hop()
                continue
            return name, st

    def retry(self, name: str) -> None:
        """Look at `name` again (it changed between a check and its use)."""
        self.todo.append(name)
        self.hop()

    def parent_of_top(self, refusal: str) -> tuple[int, str]:
        """The directory on top as (its parent's fd, its name); the root itself is refused (`refusal`)."""
        if len(self.fds) == 1:
            raise ToolError(refusal)
        fd = self.fds.pop()
        name = self.names.pop()
        if len(self.fds) < self.borrowed:
            self.borrowed -= 1
        else:
            os.close(fd)
        return self.here, name


@dataclass
class Found:
    """One entry met by `Beneath.entries`: `prefix` is the path of its directory from where the walk
    started ("" or "a/b/"), `dir_fd` that directory's descriptor (valid until the walk moves on), `chain`
    the descriptors and names from the root down to it. kind "unreadable" carries the error."""

    prefix: str
    name: str
    kind: str
    dir_fd: int
    chain: list[int]
    chain_names: list[str]
    entry: os.DirEntry | None = None
    error: str | None = None

    @property
    def rel(self) -> str:
        return self.prefix + self.name

    def lstat(self) -> os.stat_result:
        if self.entry is not None:
            return self.entry.stat(follow_symlinks=False)
        return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)


class Beneath:
    """A directory tree reached only through a held descriptor of its root (see the module doc).

    `alias` is the absolute path a link may use to name the root (the workspace's `/workspace`); None
    refuses every absolute link target. `label` names the tree in error messages. Each operation
    works on its own duplicate of the root descriptor, so `reopen` (the root was mounted over) and
    `close` never pull a descriptor from under a walk in another thread."""

    def __init__(self, path: str | os.PathLike[str], *, alias: str | None = ALIAS, label: str = "workspace") -> None:
        self.path = Path(path)
        self.alias, self.label = alias, label
        self._fd: int | None = os.open(self.path, _DIR)

    def reopen(self) -> None:
        """Hold the directory now at the root's path (after a tmpfs was mounted on it)."""
        fd = os.open(self.path, _DIR)
        old, self._fd = self._fd, fd
        if old is not None:
            os.close(old)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def root_fd(self) -> int:
        """A duplicate of the root descriptor, the caller's to close."""
        fd = self._fd
        if fd is None:
            raise ToolError(f"the {self.label} is closed")
        return os.dup(fd)

    @contextlib.contextmanager
    def _walk(
        self, rel: str, *, chain: list[int] | None = None, chain_names: list[str] | None = None
    ) -> Iterator[_Walk]:
        if chain:  # resolve from a directory a tree walk holds (a link's target, relative to its folder)
            walk = _Walk(self, rel, list(chain), list(chain_names or []), len(chain))
        else:
            walk = _Walk(self, rel, [self.root_fd()], [], 0)
        try:
            yield walk
        except FileNotFoundError:
            raise ToolError(f"no such file or directory: {rel}") from None
        except NotADirectoryError:
            raise ToolError(f"not a directory: {rel}") from None
        finally:
            walk.close()

    # -- single entries -------------------------------------------------------------------------
    def lstat(self, rel: str) -> os.stat_result | None:
        """The entry itself (a final link not followed); None if it does not exist."""
        with self._walk(rel) as walk:
            return walk.final(follow=False, create=False)[1]

    def stat(self, rel: str) -> os.stat_result | None:
        """What the path names, a final link resolved beneath; None if it does not exist."""
        with self._walk(rel) as walk:
            return walk.final(follow=True, create=False)[1]

    def open(
        self, rel: str, flags: int = os.O_RDONLY, *, mode: int = 0o644, parents: bool = False, follow: bool = True
    ) -> int:
        """A descriptor of the regular file `rel` names, opened with `flags` (see `open_made`)."""
        return self.open_made(rel, flags, mode=mode, parents=parents, follow=follow)[0]

    def open_made(
        self, rel: str, flags: int = os.O_RDONLY, *, mode: int = 0o644, parents: bool = False, follow: bool = True
    ) -> tuple[int, bool]:
        """A descriptor of the regular file `rel` names (a final link resolved beneath; refused without
        `follow`), opened with `flags`, and whether it was made now: with O_CREAT a missing file is made
        (O_EXCL: never through anything planted meanwhile), its folders too with `parents`. Nothing but a
        regular file is ever opened: a directory, FIFO, socket or device is refused before any open,
        and the opened file is checked again (it may have been swapped meanwhile)."""
        with self._walk(rel) as walk:
            while True:
                name, st = walk.final(follow=follow, create=parents)
                if name is None or (st is not None and stat.S_ISDIR(st.st_mode)):
                    raise ToolError(f"is a directory: {rel}")
                made = st is None
                if st is None:
                    if not flags & os.O_CREAT:
                        raise ToolError(f"no such file or directory: {rel}")
                    try:
                        fd = os.open(name, flags | os.O_EXCL | _FILE, mode, dir_fd=walk.here)
                    except FileExistsError:
                        walk.retry(name)  # made meanwhile: look at what it is
                        continue
                elif stat.S_ISLNK(st.st_mode):
                    raise ToolError(f"is a symlink: {rel}")
                elif not stat.S_ISREG(st.st_mode):
                    raise ToolError(f"not a regular file ({kind_of(st.st_mode)}): {rel}")
                else:
                    try:
                        fd = os.open(name, (flags & ~os.O_CREAT) | _FILE, dir_fd=walk.here)
                    except OSError as exc:
                        if exc.errno in (errno.ELOOP, errno.ENOENT):  # swapped or removed meanwhile
                            if not follow and exc.errno == errno.ELOOP:
                                raise ToolError(f"is a symlink: {rel}") from None
                            walk.retry(name)
                            continue
                        if exc.errno == errno.ENXIO:  # a FIFO without a reader, or a socket, appeared
                            raise ToolError(f"not a regular file: {rel}") from None
                        raise OSError(exc.errno, exc.strerror, walk.where(name)) from None
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    os.close(fd)
                    raise ToolError(f"not a regular file: {rel}")
                return fd, made

    def read(self, rel: str, limit: int, *, follow: bool = True) -> tuple[bytes, int]:
        """Up to `limit` bytes of a regular file, and its size."""
        with os.fdopen(self.open(rel, follow=follow), "rb") as handle:
            return handle.read(limit), os.fstat(handle.fileno()).st_size

    def readlink(self, rel: str) -> str:
        with self._walk(rel) as walk:
            name, st = walk.final(follow=False, create=False)
            if name is None or st is None or not stat.S_ISLNK(st.st_mode):
                raise ToolError(f"not a symlink: {rel}")
            return os.readlink(name, dir_fd=walk.here)

    def makedirs(self, rel: str) -> None:
        """mkdir -p, links on the way resolved beneath."""
        with self._walk(rel) as walk:
            walk.descend(create=True)

    def listdir(self, rel: str) -> list[os.DirEntry]:
        """The entries of the directory `rel` names (links resolved beneath); each entry's `stat` with
        follow_symlinks=False reads it relative to that directory, never through a path."""
        with self._walk(rel) as walk:
            walk.descend(create=False)
            with os.scandir(walk.here) as found:  # scandir duplicates the fd; entries stat relative to ours
                entries = list(found)
            # DirEntry.stat uses the descriptor scandir was given: read every lstat while it is open.
            for entry in entries:
                with contextlib.suppress(OSError):
                    entry.stat(follow_symlinks=False)
            return entries

    def unlink(self, rel: str) -> None:
        """Remove a file, link or special file (a final link is removed, not followed)."""
        with self._walk(rel) as walk:
            name, st = walk.final(follow=False, create=False)
            if name is None or (st is not None and stat.S_ISDIR(st.st_mode)):
                raise ToolError(f"is a directory: {rel}")
            if st is None:
                raise ToolError(f"no such file or directory: {rel}")
            os.unlink(name, dir_fd=walk.here)

    def remove(self, rel: str, *, recursive: bool, strict: bool = True) -> list[str]:
        """Remove what `rel` names (a final link itself, not its target); a directory only with
        `recursive`. Returns what was removed as paths from the root in the walk's own spelling of
        `rel`: every entry that is not a directory, and a directory that could not be read."""
        with self._walk(rel) as walk:
            name, st = walk.final(follow=False, create=False)
            if name is None:
                parent, name = walk.parent_of_top(f"refusing to delete the {self.label} root")
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            else:
                parent = walk.here
            if st is None:
                raise ToolError(f"no such file or directory: {rel}")
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(name, dir_fd=parent)
                return [""]
            if not recursive:
                raise ToolError(f"is a directory (pass recursive=true): {rel}")
            fd = os.open(name, _DIR, dir_fd=parent)
            try:
                removed = [f.rel for f in self.entries(start=fd) if f.kind != "dir"]
                _clear(fd, strict=strict)
            finally:
                os.close(fd)
            try:
                os.rmdir(name, dir_fd=parent)
            except OSError as exc:
                if strict:
                    raise OSError(exc.errno, exc.strerror, walk.where(name)) from None
            return removed

    def rename(self, source: str, destination: str) -> None:
        """Move an entry (a link itself, not its target) to a new path that must not exist (decided by
        the kernel in the same step: RENAME_NOREPLACE); the destination's folders are made."""
        with self._walk(source) as src:
            name, st = src.final(follow=False, create=False)
            if name is None:
                src_dir, name = src.parent_of_top(f"refusing to move the {self.label} root")
            else:
                src_dir = src.here
                if st is None:
                    raise ToolError(f"no such file or directory: {source}")
            with self._walk(destination) as dst:
                target, existing = dst.final(follow=False, create=True)
                if target is None or existing is not None:
                    raise ToolError(f"destination exists: {destination}")
                try:
                    _renameat2(src_dir, name, dst.here, target)
                except FileExistsError:
                    raise ToolError(f"destination exists: {destination}") from None
                except OSError as exc:
                    raise OSError(exc.errno, exc.strerror, target) from None

    def follow(self, target: str, chain: list[int], chain_names: list[str]) -> tuple[str, int] | None:
        """Resolve a link's `target` from the directory that holds the link (`chain`, from the root
        down): the canonical path of the regular file it reaches and a descriptor of it, or None when
        it reaches anything else or leaves the tree."""
        try:
            with self._walk("", chain=chain, chain_names=chain_names) as walk:
                walk.rel = target
                walk.push(target)
                name, st = walk.final(follow=True, create=False)
                if name is None or st is None or not stat.S_ISREG(st.st_mode):
                    return None
                fd = os.open(name, os.O_RDONLY | _FILE, dir_fd=walk.here)
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    os.close(fd)
                    return None
                return walk.where(name), fd
        except (OSError, ToolError):
            return None

    # -- whole trees ----------------------------------------------------------------------------
    def entries(self, *, start: int | None = None, max_depth: int = MAX_DEPTH) -> Iterator[Found]:
        """Every entry below the root (or below the directory `start`, a descriptor the caller keeps),
        depth first, iteratively, one held fd per level. A directory is yielded before what it holds;
        one that cannot be opened or listed, or lies deeper than `max_depth`, is yielded as kind
        "unreadable" with the error. A yielded `dir_fd` is valid until the iteration moves on."""
        own = start is None
        try:
            top = self.root_fd() if start is None else start
        except ToolError as exc:  # closed: the tree is gone for us
            yield Found("", ".", "unreadable", -1, [], [], error=str(exc))
            return
        chain_fds = [top]
        chain_names: list[str] = []
        try:
            stack: list[tuple[int, str, Iterator[os.DirEntry]]] = [(top, "", iter(_scan(top)))]
        except OSError as exc:
            if own:
                os.close(top)
            yield Found("", ".", "unreadable", -1, [], [], error=exc.strerror or type(exc).__name__)
            return
        try:
            while stack:
                fd, prefix, items = stack[-1]
                entry = next(items, None)
                if entry is None:
                    stack.pop()
                    if stack:
                        os.close(fd)
                        chain_fds.pop()
                        chain_names.pop()
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    kind = (
                        "dir"
                        if is_dir
                        else "link"
                        if entry.is_symlink()
                        else (
                            "file"
                            if entry.is_file(follow_symlinks=False)
                            else kind_of(entry.stat(follow_symlinks=False).st_mode)
                        )
                    )
                except OSError as exc:  # gone meanwhile
                    yield Found(
                        prefix,
                        entry.name,
                        "unreadable",
                        fd,
                        chain_fds,
                        chain_names,
                        entry,
                        exc.strerror or type(exc).__name__,
                    )
                    continue
                found = Found(prefix, entry.name, kind, fd, chain_fds, chain_names, entry)
                if kind != "dir":
                    yield found
                    continue
                if len(stack) > max_depth:
                    yield Found(
                        prefix,
                        entry.name,
                        "unreadable",
                        fd,
                        chain_fds,
                        chain_names,
                        entry,
                        f"deeper than {max_depth} levels",
                    )
                    continue
                try:
                    inner = os.open(entry.name, _DIR, dir_fd=fd)
                except OSError as exc:
                    yield Found(
                        prefix,
                        entry.name,
                        "unreadable",
                        fd,
                        chain_fds,
                        chain_names,
                        entry,
                        exc.strerror or type(exc).__name__,
                    )
                    continue
                try:
                    listed = _scan(inner)
                except OSError as exc:
                    os.close(inner)
                    yield Found(
                        prefix,
                        entry.name,
                        "unreadable",
                        fd,
                        chain_fds,
                        chain_names,
                        entry,
                        exc.strerror or type(exc).__name__,
                    )
                    continue
                yield found
                stack.append((inner, prefix + entry.name + "/", iter(listed)))
                chain_fds.append(inner)
                chain_names.append(entry.name)
        finally:
            for fd, _, _ in stack[1:]:
                os.close(fd)
            if own:
                os.close(top)

    def chown_tree(self, uid: int, gid: int) -> None:
        """Give the root and everything below it to uid:gid, links themselves and never their targets.
        Blind to what it cannot reach: the agent's own making must not stop the next command."""
        fd = self.root_fd()
        try:
            os.fchown(fd, uid, gid)
        finally:
            os.close(fd)
        for found in self.entries():
            if found.kind == "unreadable" and found.entry is None:
                continue
            with contextlib.suppress(OSError):
                os.chown(found.name, uid, gid, dir_fd=found.dir_fd, follow_symlinks=False)

    def fix_root(self, uid: int | None, gid: int | None, add_mode: int, *, mode: int | None = None) -> None:
        """The root itself, as a sandbox needs it: owned by uid:gid (None: left) with at least `add_mode`
        (an agent may have locked itself out with chmod 000 .), or exactly `mode`."""
        fd = self.root_fd()
        try:
            if uid is not None and gid is not None:
                os.fchown(fd, uid, gid)
            now = stat.S_IMODE(os.fstat(fd).st_mode)
            wanted = mode if mode is not None else now | add_mode
            if wanted != now:
                os.fchmod(fd, wanted)
        finally:
            os.close(fd)

    def copy_into(self, other: Beneath, *, owner: tuple[int, int] | None = None) -> None:
        """Copy everything below this root into `other`'s root: regular files (content, mode and
        times), directories and symlinks, each made anew (O_EXCL) and given to `owner`. Anything else
        (a FIFO, a socket, a device) raises OSError, and so does a tree deeper than MAX_DEPTH."""
        src_top, dst_top = self.root_fd(), other.root_fd()
        stack = [(src_top, dst_top, iter(_scan(src_top)))]
        try:
            while stack:
                src, dst, items = stack[-1]
                entry = next(items, None)
                if entry is None:
                    stack.pop()
                    os.utime(dst, ns=_times(os.fstat(src)))
                    if stack:
                        os.close(src)
                        os.close(dst)
                    continue
                st = entry.stat(follow_symlinks=False)
                name = entry.name
                if stat.S_ISLNK(st.st_mode):
                    os.symlink(os.readlink(name, dir_fd=src), name, dir_fd=dst)
                    if owner:
                        os.chown(name, *owner, dir_fd=dst, follow_symlinks=False)
                elif stat.S_ISREG(st.st_mode):
                    _copy_file(src, name, dst, stat.S_IMODE(st.st_mode), owner)
                elif stat.S_ISDIR(st.st_mode):
                    if len(stack) > MAX_DEPTH:
                        raise OSError(errno.ELOOP, f"deeper than {MAX_DEPTH} levels", name)
                    os.mkdir(name, 0o700, dir_fd=dst)
                    inner_dst = os.open(name, _DIR, dir_fd=dst)
                    try:
                        inner_src = os.open(name, _DIR, dir_fd=src)
                    except OSError:
                        os.close(inner_dst)
                        raise
                    os.fchmod(inner_dst, stat.S_IMODE(st.st_mode))
                    if owner:
                        os.fchown(inner_dst, *owner)
                    stack.append((inner_src, inner_dst, iter(_scan(inner_src))))
                else:
                    raise OSError(errno.EINVAL, f"cannot copy a {kind_of(st.st_mode)}", name)
        finally:
            for src, dst, _ in stack[1:]:
                os.close(src)
                os.close(dst)
            os.close(src_top)
            os.close(dst_top)

    def move_all(self, other: Beneath) -> list[str]:
        """Move every entry of this root into `other`'s root (same filesystem: renames); their names."""
        src, dst = self.root_fd(), other.root_fd()
        try:
            names = os.listdir(src)
            for name in names:
                os.rename(name, name, src_dir_fd=src, dst_dir_fd=dst)
            return names
        finally:
            os.close(src)
            os.close(dst)


def _scan(fd: int) -> list[os.DirEntry]:
    with os.scandir(fd) as found:
        return list(found)


def _times(st: os.stat_result) -> tuple[int, int]:
    return st.st_atime_ns, st.st_mtime_ns


def _copy_file(src_dir: int, name: str, dst_dir: int, mode: int, owner: tuple[int, int] | None) -> None:
    src = os.open(name, os.O_RDONLY | _FILE, dir_fd=src_dir)
    try:
        st = os.fstat(src)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", name)
        dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE, 0o600, dir_fd=dst_dir)
        try:
            with open(src, "rb", closefd=False) as reader, open(dst, "wb", closefd=False) as writer:
                shutil.copyfileobj(reader, writer, 1 << 20)
            os.fchmod(dst, mode)
            if owner:
                os.fchown(dst, *owner)
            os.utime(dst, ns=_times(st))
        finally:
            os.close(dst)
    finally:
        os.close(src)


class _Emptying:
    """One directory being emptied: its descriptor, its name in its parent, the names still to remove,
    and how often it was listed again or an entry looked at again (both bounded: an agent may race)."""

    __slots__ = ("fd", "name", "todo", "rounds", "retries", "left")

    def __init__(self, fd: int, name: str) -> None:
        self.fd, self.name = fd, name
        self.todo = os.listdir(fd)
        self.rounds = self.retries = 0
        self.left: set[str] = set()  # given up on: never tried again in a later round

    def give_up(self, name: str) -> None:
        self.left.add(name)

    def again(self) -> list[str]:
        return [name for name in os.listdir(self.fd) if name not in self.left]


def _clear(top: int, *, strict: bool) -> None:
    """Empty the directory `top` (a descriptor the caller keeps) of everything, to any depth, on held
    descriptors only: a subtree reaching MAX_DEPTH is moved up into `top` and emptied from there; a
    directory an agent locked (chmod 000, or no write permission) is opened up first, as its owner may
    (root needs not); entries on another filesystem (a mount) are left. With `strict`, what is left
    raises OSError (EBUSY), else it stays silently."""
    device = os.fstat(top).st_dev
    chops = chopped = 0
    stack = [_Emptying(top, "")]
    left = stack[0].left
    try:
        while stack:
            frame = stack[-1]
            if not frame.todo:
                if frame.rounds < REMOVE_ROUNDS:  # entries may have appeared (a chopped subtree, an agent)
                    if len(stack) == 1 and chopped:  # the subtrees moved up are expected: no round spent
                        chopped = 0
                    else:
                        frame.rounds += 1
                    frame.todo = frame.again()
                    if frame.todo:
                        continue
                elif len(stack) == 1:
                    left.update(frame.again())
                stack.pop()
                if stack:
                    os.close(frame.fd)
                    try:
                        os.rmdir(frame.name, dir_fd=stack[-1].fd)
                    except FileNotFoundError:
                        pass
                    except OSError:
                        stack[-1].give_up(frame.name)
                continue
            name = frame.todo.pop()
            kind = _remove_entry(frame.fd, name)
            if kind != "dir":
                if kind == "left":
                    frame.give_up(name)
                continue
            try:
                inner = _open_dir_for_removal(frame.fd, name)
            except OSError:
                frame.give_up(name)
                continue
            if inner is None:  # no directory any more (swapped meanwhile): look at it again, a bounded number of times
                frame.retries += 1
                if frame.retries <= MAX_HOPS:
                    frame.todo.append(name)
                else:
                    frame.give_up(name)
                continue
            if os.fstat(inner).st_dev != device:  # a mount point: one filesystem only
                os.close(inner)
                frame.give_up(name)
                continue
            if len(stack) >= MAX_DEPTH:  # deep enough: carry on from the top instead
                os.close(inner)
                chops += 1
                try:
                    _renameat2(frame.fd, name, top, f".redagent-rm-{os.getpid()}-{chops}")
                    chopped += 1
                except OSError:
                    frame.give_up(name)
                continue
            try:
                stack.append(_Emptying(inner, name))
            except OSError:
                os.close(inner)
                frame.give_up(name)
    finally:
        for frame in stack[1:]:
            os.close(frame.fd)
    if strict and left:
        raise OSError(errno.EBUSY, f"{len(left)} entries could not be removed, e.g.", sorted(left)[0])


def _remove_entry(parent: int, name: str) -> str:
    """unlink `name` unless it is a directory: "gone", "dir", or "left" (could not be removed)."""
    for attempt in range(2):
        try:
            os.unlink(name, dir_fd=parent)
            return "gone"
        except FileNotFoundError:
            return "gone"
        except IsADirectoryError:
            return "dir"
        except PermissionError:
            if attempt:
                return "left"
            # The folder itself may be write-protected (chmod 555 by its owner, the agent).
            try:
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except OSError:
                return "left"
            if stat.S_ISDIR(st.st_mode):
                return "dir"
            with contextlib.suppress(OSError):
                os.fchmod(parent, stat.S_IMODE(os.fstat(parent).st_mode) | stat.S_IRWXU)
        except OSError as exc:
            if exc.errno == errno.EISDIR:
                return "dir"
            return "left"
    return "left"


def _open_dir_for_removal(parent: int, name: str) -> int | None:
    """Open directory `name` to empty it, opening it up first if its owner (the agent) locked it;
    None if it is no directory any more."""
    for attempt in range(2):
        try:
            fd = os.open(name, _DIR, dir_fd=parent)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                return None
            if exc.errno != errno.EACCES or attempt:
                raise
            chmod_entry(parent, name, 0o700)
            continue
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & stat.S_IRWXU != stat.S_IRWXU:
            with contextlib.suppress(OSError):
                os.fchmod(fd, mode | stat.S_IRWXU)
        return fd
    return None


def remove_tree(path: str | os.PathLike[str], *, strict: bool = False) -> None:
    """Remove the directory `path` and everything in it, on descriptors (see `_clear`). The path itself
    is the caller's own (a workspace's or a scratch directory's location, never an agent's); what is
    inside it is hostile. With `strict`, what cannot be removed raises OSError; otherwise it stays."""
    path = Path(path)
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        try:
            fd = _open_dir_for_removal(parent, path.name)
        except FileNotFoundError:
            return
        if fd is None:  # not a directory (or gone): one entry
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path.name, dir_fd=parent)
            return
        try:
            _clear(fd, strict=strict)
        finally:
            os.close(fd)
        try:
            os.rmdir(path.name, dir_fd=parent)
        except FileNotFoundError:
            pass
        except OSError:
            if strict:
                raise
    finally:
        os.close(parent)


@contextlib.contextmanager
def private_directory(prefix: str) -> Iterator[str]:
    """A fresh 0700 temporary directory, removed on descriptors at the end whatever was put in it (an
    agent CLI's home): `tempfile.TemporaryDirectory` recurses, so a deep tree would raise instead."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        remove_tree(path)


def read_newest(tree: Beneath, pattern: str, limit: int) -> str | None:
    """The text of the most recently modified regular file below `tree` whose path matches `pattern`
    (components matched with fnmatch, `**` for any number of folders), never following a link; at most
    `limit` bytes (a larger file: its first and last limit/2, marked), None if none matches."""
    import fnmatch

    parts = pattern.split("/")

    def matches(path: list[str], pat: list[str]) -> bool:
        if not pat:
            return not path
        if pat[0] == "**":
            return any(matches(path[i:], pat[1:]) for i in range(len(path) + 1))
        return bool(path) and fnmatch.fnmatchcase(path[0], pat[0]) and matches(path[1:], pat[1:])

    newest: tuple[int, str] | None = None
    for found in tree.entries(max_depth=32):
        if found.kind != "file" or not matches(found.rel.split("/"), parts):
            continue
        with contextlib.suppress(OSError):
            mtime = found.lstat().st_mtime_ns
            if newest is None or mtime > newest[0]:
                newest = (mtime, found.rel)
    if newest is None:
        return None
    fd = tree.open(newest[1])
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        if size <= limit:
            return handle.read(limit).decode("utf-8", errors="replace")
        head = handle.read(limit // 2)
        handle.seek(size - limit // 2)
        tail = handle.read(limit // 2)
    return (
        head.decode("utf-8", errors="replace")
        + f"\n…[{size - limit} bytes not read]…\n"
        + tail.decode("utf-8", errors="replace")
    )
