"""Who the host is when it acts for a rollout: a uid leased per rollout across the host, taken per thread.

**Leases.** When the engine runs as root, every rollout gets one unprivileged uid of its own: its
workspace and seed files belong to it, its sandboxed commands run as it (nested commands too: they
are sequential and end with their parent), and the host's file tools act as it. A uid must never be
shared by two live rollouts — on one host, not only in one process — or one rollout's processes count
against another's process limit (and could signal them). So a uid is *leased*: an exclusive `flock`
on a file named after it in a root-owned 0700 directory (`/run/redagent-uids`, else a checked one under
the temporary directory), held by an open descriptor for the rollout's life. The kernel drops the
lock when the descriptor closes or the process dies, so a crashed engine leaks nothing, and any other
engine process on the host (`--workers`, Ray, a second run) skips a leased uid. Lock files are never
removed: unlinking a locked file lets a second process lock a fresh file of the same name while a
third still holds the old one.

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

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
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
            return fd
        raise LeaseUnavailable(errno.EACCES, "no safe directory for uid leases (" + "; ".join(problems) + ")")


def lease_uid(uids: tuple[int, int] = COMMAND_UIDS) -> UidLease:
    """Lease a uid of the range (base, span) that no live process on this host holds."""
    base, span = uids
    folder = _lease_dir()
    start = random.randrange(span)  # spread out, so concurrent leasers rarely try the same file first
    for step in range(span):
        uid = base + (start + step) % span
        fd = os.open(str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        return UidLease(uid, fd)
    raise LeaseUnavailable(errno.EAGAIN, f"all {span} uids from {base} are leased on this host")


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
