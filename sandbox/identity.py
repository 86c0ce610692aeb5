"""Who the host is when it acts for a rollout: a uid leased per rollout across the host, taken per thread.

**Leases.** When the engine runs as root, every rollout gets one unprivileged uid of its own: its
workspace and seed files belong to it, its sandboxed commands run as it (nested commands too: they
are sequential and end with their parent), and the host's file tools act as it. A uid must never be
shared by two live rollouts — on one host, not only in one process — or one rollout's processes count
against another's process limit (and could signal them). So a uid is *leased*: an exclusive `flock`
on a file named after it in a root-owned 0700 directory (`/run/redagent-uids`, else a checked one under
the temporary directory), held by an open descriptor for the rollout's life. The kernel drops the
lock when the descriptor closes or the process dies, so a crashed engine leaks nothing, and any other
engine process on the host (`--workers`, Ray, a second run) skips a leased uid.

The folder holds only live leases. A lease's file is removed by its holder while it still holds the lock, and a
leaser that has locked a file checks that the name still leads to the file it locked (same device and inode),
taking another uid if not: so a file removed (and made anew by someone else) between one process's open and its
lock is never a second lease of the uid. Files a killed process left (unlocked) are removed by the next process to
open the folder, under the same rule. An entry the engine did not make — not a uid of its ranges, not a regular
file of this user, a link, a folder — is never opened for writing, locked or removed: it is skipped, and its uid
with it. (Before, lock files were never removed, and the folder held 49,630 of them after half an hour; a stray
entry named like a uid raised a raw OSError.)

**Acting as the rollout.** `acting_as(uid)` sets the calling thread's filesystem uid and gid to the
rollout's uid and drops its supplementary groups for the duration of a block (`setfsuid`, `setfsgid`
and the raw `setgroups` system call change only the calling thread; glibc's `setgroups` would change
every thread). While the filesystem uid is not 0, the kernel clears CAP_CHOWN, CAP_DAC_OVERRIDE,
CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID, CAP_LINUX_IMMUTABLE, CAP_MAC_OVERRIDE and CAP_MKNOD from
the thread's effective set, so a file tool served for an agent has exactly the agent's rights to the
files it reaches, never root's (`thread_identity()` reads them back from /proc/thread-self/status). A
thread started inside the block would inherit that identity: nothing in it starts one.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import platform
import random
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from redagent.errors import UserError

COMMAND_UIDS = (200_000, 65_536)  # a rollout's own uid: its workspace, its commands, its file tools
CLI_UIDS = (300_000, 65_536)  # a real agent CLI's uid (engine/harnesses/cli), apart from the commands'
LEASE_DIRS = (Path("/run/redagent-uids"), Path(tempfile.gettempdir()) / "redagent-uids")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.setfsuid.argtypes = [ctypes.c_uint]
_libc.setfsgid.argtypes = [ctypes.c_uint]
_libc.syscall.restype = ctypes.c_long
# setgroups(2) as the kernel has it (per thread); the number per architecture. Elsewhere the groups
# stay (a uid's group rights are then those of root's supplementary groups, which on most hosts are none).
_SETGROUPS = {"x86_64": 116, "aarch64": 159, "riscv64": 159, "ppc64le": 81, "s390x": 206}.get(platform.machine())
_NO_ID = 0xFFFFFFFF  # (uid_t)-1: setfsuid with it changes nothing and returns the current value


class LeaseUnavailable(UserError, OSError):
    """No uid could be leased here (no safe lease directory, or every uid of the range is in use)."""

    title = "Sandbox unavailable"


class UidLease:
    """One uid held for a rollout (or a CLI) on this host until `release` — or until the process dies."""

    def __init__(self, uid: int, fd: int, folder: int | None = None) -> None:
        self.uid = uid
        self._fd: int | None = fd
        self._folder = folder
        self._pid = os.getpid()

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            # Removed while still locked, and only by the process that locked it (a forked child holds a copy of
            # the descriptor, not the lease): nobody else can lock this file now, so nobody holds it.
            if self._folder is not None and os.getpid() == self._pid and _same_file(fd, str(self.uid), self._folder):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(str(self.uid), dir_fd=self._folder)
        finally:
            os.close(fd)  # closing the descriptor drops the flock

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> UidLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.release()


_dir_lock = threading.Lock()
_dir_fd: int | None = None


def _lease_dir() -> int:
    """A descriptor of the lease directory: owned by this (root) process, not a symlink, mode 0700."""
    global _dir_fd
    with _dir_lock:
        if _dir_fd is not None:
            return _dir_fd
        problems = []
        for path in LEASE_DIRS:
            try:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path, 0o700)
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError as exc:
                problems.append(f"{path}: {exc.strerror}")
                continue
            st = os.fstat(fd)
            if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
                # Someone else made it (or opened it up): their files could stand for any uid's lock.
                os.close(fd)
                problems.append(f"{path}: not a 0700 directory of uid {os.geteuid()}")
                continue
            _dir_fd = fd
            with contextlib.suppress(OSError):
                _sweep(fd)  # once per process: what killed processes (and earlier versions) left
            return fd
        raise LeaseUnavailable(errno.EACCES, "no safe directory for uid leases (" + "; ".join(problems) + ")")


def lease_uid(uids: tuple[int, int] = COMMAND_UIDS) -> UidLease:
    """Lease a uid of the range (base, span) that no live process on this host holds."""
    base, span = uids
    folder = _lease_dir()
    start = random.randrange(span)  # spread out, so concurrent leasers rarely try the same file first
    for step in range(span):
        uid = base + (start + step) % span
        fd = _lock(str(uid), folder, create=True)
        if fd is not None:
            return UidLease(uid, fd, folder)
    raise LeaseUnavailable(errno.EAGAIN, f"all {span} uids from {base} are leased on this host")


_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _lock(name: str, folder: int, *, create: bool) -> int | None:
    """A descriptor of the lease file `name`, exclusively locked and still the file of that name — or None: held by
    another process, removed or replaced meanwhile, or not a lease file at all (skipped, never touched)."""
    try:
        fd = os.open(name, _FLAGS | (os.O_CREAT if create else 0), 0o600, dir_fd=folder)
    except OSError:  # a link, a folder, something unopenable: not one of ours
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
            os.close(fd)  # a file of another user's, or one others may write: not a lease file, left as it is
            return None
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    if not _same_file(fd, name, folder):  # removed by its holder between our open and our lock: try another
        os.close(fd)
        return None
    return fd


def _same_file(fd: int, name: str, folder: int) -> bool:
    try:
        here = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)


def _sweep(folder: int) -> int:
    """Remove the lease files no live process holds (a killed process's; an earlier version's, which kept them all);
    returns how many. Only names of the engine's uid ranges, only regular files of this user: the rest is skipped."""
    ranges = (COMMAND_UIDS, CLI_UIDS)
    removed = 0
    for name in os.listdir(folder):
        if not name.isdigit() or not any(b <= int(name) < b + n for b, n in ranges):
            continue
        fd = _lock(name, folder, create=False)
        if fd is None:
            continue
        try:
            os.unlink(name, dir_fd=folder)  # locked by us, so held by nobody
            removed += 1
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


@contextlib.contextmanager
def acting_as(uid: int | None) -> Iterator[None]:
    """Within the block, the calling thread touches files as `uid` (and gid `uid`, no groups): root's
    rights over files are gone for it until the block ends. None: as the process is (not root)."""
    if uid is None:
        yield
        return
    groups = os.getgroups() if _SETGROUPS is not None else []
    old_gid = _libc.setfsgid(uid)
    old_uid = _libc.setfsuid(uid)
    try:
        if _libc.setfsuid(_NO_ID) != uid or _libc.setfsgid(_NO_ID) != uid:
            raise PermissionError(errno.EPERM, f"cannot act as uid {uid} (setfsuid refused)")
        if groups and _libc.syscall(_SETGROUPS, 0, None) != 0:
            raise PermissionError(ctypes.get_errno(), "cannot drop the supplementary groups")
        yield
    finally:
        _libc.setfsuid(old_uid)
        _libc.setfsgid(old_gid)
        if groups:
            array = (ctypes.c_uint * len(groups))(*groups)
            _libc.syscall(_SETGROUPS, len(groups), array)


def thread_identity() -> dict[str, str]:
    """The calling thread's Uid, Gid, Groups and CapEff lines as the kernel reports them."""
    found = {}
    with open("/proc/thread-self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("Uid", "Gid", "Groups", "CapEff"):
                found[key] = value.strip()
    return found
