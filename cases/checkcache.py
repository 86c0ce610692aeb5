"""What the self-check already proved, kept on disk: results keyed by what they depend on, and nothing else.

A self-check result is a function of the case (its content), the code that checks it (the sandbox, the verifier, the
self-check itself; the route generator for the routes it draws; the consequence replay for the plans whose verdict
replayed future activity), the route seed and the host's sandbox. Each entry's key is a digest of exactly those, so
an unchanged case under unchanged code is never checked twice, and any change re-checks what it can affect — no
more (a route the generator still draws the same way is found again by its content), no less (the code versions are
digests of the source files, never a number someone must remember to bump).

The store is a folder of compressed JSON files (`$REDAGENT_CHECK_CACHE`, else `$XDG_CACHE_HOME/redagent/check`, else
`~/.cache/redagent/check`), owned by the user and closed to everyone else (0700), which may be shared by any number of
concurrent checks: an entry is written whole to a temporary file and renamed into place (readers see the old entry,
the new one or none, never half of one), and it carries its own key and a digest of its payload, so an entry that
is corrupt, truncated, foreign or from another format version is a miss (and removed), never an error. The store is
bounded: past `max_bytes` the least recently used entries go (a hit touches its entry). JSON only: the cache is data,
never code (no pickles), like the case files it describes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import stat
import sys
import tempfile
import zlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import orjson

FORMAT = 2
MAX_BYTES = 512 << 20  # the whole store; a v3 check's results and parsed case files take ~60 MB compressed
MAX_ENTRY_BYTES = 64 << 20  # an entry, compressed and as JSON
_PACKAGE = Path(__file__).resolve().parents[1]  # the folder holding cases/, sandbox/, …


def default_folder() -> Path | None:
    """Where the store lives; None when $REDAGENT_CHECK_CACHE is `off`."""
    chosen = os.environ.get("REDAGENT_CHECK_CACHE")
    if chosen:
        return None if chosen == "off" else Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "redagent" / "check"


def digest(*parts: Any) -> str:
    """A key: the SHA-256 of the parts as canonical JSON (sorted keys; dataclasses by their fields)."""
    return hashlib.sha256(
        orjson.dumps(parts, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=repr)
    ).hexdigest()


# -- code versions -----------------------------------------------------------------------------
# What each part of a result depends on, as source files below the package folder. The case data folders (the
# libraries, the benchmarks, the knowledge base) are not code: a case's own content is in its key already.
COMPONENTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # The sandbox, the verifier and the self-check: every result. (Included, excluded.)
    "check": (
        ("sandbox", "cases", "redagent/errors.py"),
        (
            "sandbox/consequences",
            "cases/routes.py",
            "cases/transforms.py",
            "cases/library",
            "cases/benchmark",
            "cases/benchmark_v2",
            "cases/benchmark_v3",
            "cases/knowledge",
            "cases/kb",
            "cases/construction",
        ),
    ),
    # The route generator: which routes a case's metamorphic check draws (a route's result is keyed by its content).
    "routes": (("cases/routes.py", "cases/transforms.py"), ()),
    # The consequence replay: only the plans whose verdict replayed future activity (persistence, protections).
    "replay": (("sandbox/consequences",), ()),
}
_SOURCE_SUFFIXES = (".py", ".txt", ".tsv", ".gz", ".json", ".yaml", ".sh", ".md", "")


def _files(include: Iterable[str], exclude: Iterable[str]) -> list[Path]:
    skip = [(_PACKAGE / e) for e in exclude]
    found: list[Path] = []
    for item in include:
        root = _PACKAGE / item
        paths = [root] if root.is_file() else sorted(root.rglob("*")) if root.is_dir() else []
        for path in paths:
            if not path.is_file() or "__pycache__" in path.parts or path.suffix not in _SOURCE_SUFFIXES:
                continue
            if any(path == s or s in path.parents for s in skip):
                continue
            found.append(path)
    return found


@cache
def code_version(component: str) -> str:
    """A digest of the source of one component (COMPONENTS): the files' paths and bytes, and for "check" the
    interpreter's version and the verifier's regular-expression engine. Computed from the files once per process."""
    include, exclude = COMPONENTS[component]
    h = hashlib.sha256(f"{component}\0{FORMAT}\0".encode())
    for path in _files(include, exclude):
        h.update(str(path.relative_to(_PACKAGE)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    if component == "check":
        h.update(f"{sys.version_info[:2]}\0{_version_of('google-re2')}\0{_version_of('orjson')}".encode())
    return h.hexdigest()


def _version_of(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return ""


@cache
def host_fingerprint() -> str:
    """What of this host a verdict can depend on: the sandbox backend, quota mounts, the tools a consequence replay
    uses, whether commands run as a uid of their own. A cache shared between hosts never mixes their results."""
    from redagent.sandbox.environment import shared_isolation
    from redagent.sandbox.isolation import quota_problem

    isolation = shared_isolation()
    return digest(
        getattr(isolation, "name", type(isolation).__name__),
        quota_problem() is None if getattr(isolation, "name", "") == "bubblewrap" else None,
        [bool(shutil.which(tool)) for tool in ("strace", "git", "direnv", "bash")],
        os.geteuid() == 0,
        platform.machine(),
    )


# -- the store ---------------------------------------------------------------------------------
class CheckCache:
    """A bounded folder of JSON entries, safe for concurrent readers and writers."""

    def __init__(self, folder: Path, *, max_bytes: int = MAX_BYTES) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.hits = self.misses = self.writes = self.dropped = 0
        folder.mkdir(parents=True, mode=0o700, exist_ok=True)
        st = os.stat(folder, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o022:
            # Another user's folder, or one others may write: their entries could stand for any result.
            raise CacheUnusable(f"{folder}: not a folder of uid {os.geteuid()} closed to others")

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The payload stored under `key`, or None: absent, unreadable, corrupt or foreign entries are misses."""
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            self.misses += 1
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
                raise ValueError("not a regular entry")
            with os.fdopen(fd, "rb", closefd=False) as handle:
                raw = handle.read(MAX_ENTRY_BYTES + 1)
            inflate = zlib.decompressobj()
            text = inflate.decompress(raw, MAX_ENTRY_BYTES)
            if inflate.unconsumed_tail or not inflate.eof:
                raise ValueError("larger than an entry may be, or cut short")
            entry = orjson.loads(text)
            payload = entry["payload"]
            if (
                entry.get("format") != FORMAT
                or entry.get("key") != key
                or entry.get("sha256") != hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()
            ):
                raise ValueError("not this entry")
        except (OSError, ValueError, KeyError, TypeError, zlib.error, orjson.JSONDecodeError):
            os.close(fd)
            self.misses += 1
            self.dropped += 1
            _remove(path)  # a corrupt entry is rewritten by the check that misses it
            return None
        with contextlib.suppress(OSError):
            os.utime(fd)  # least recently used goes first when the store is full
        os.close(fd)
        self.hits += 1
        return payload

    def put(self, key: str, payload: Any) -> None:
        """Store `payload` (JSON data) under `key`, whole or not at all; a store that cannot be written is skipped."""
        body = zlib.compress(
            orjson.dumps(
                {
                    "format": FORMAT,
                    "key": key,
                    "sha256": hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest(),
                    "payload": payload,
                }
            ),
            1,
        )
        path = self._path(key)
        try:
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=".entry-", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(body)
                os.replace(temporary, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError:
            return
        self.writes += 1

    def trim(self) -> int:
        """Remove the least recently used entries until the store holds at most 80 % of `max_bytes`, and temporary
        files a killed writer left (older than an hour). Safe while others read and write: a removed entry is a
        miss. Returns how many files were removed."""
        entries: list[tuple[float, int, Path]] = []
        removed = 0
        total = 0
        for shard in self.folder.iterdir() if self.folder.is_dir() else ():
            if not shard.is_dir() or shard.is_symlink():
                continue
            for path in shard.iterdir():
                try:
                    st = path.lstat()
                except OSError:
                    continue
                if path.name.startswith(".entry-"):
                    if st.st_mtime < _now() - 3600:
                        with contextlib.suppress(OSError):
                            path.unlink()
                            removed += 1
                    continue
                entries.append((st.st_mtime, st.st_size, path))
                total += st.st_size
        if total <= self.max_bytes:
            return removed
        for _, size, path in sorted(entries):
            if total <= self.max_bytes * 0.8:
                break
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
                total -= size
        return removed


def _remove(path: Path) -> None:
    """Remove what stands at an entry's place in the store (a file, a link, a folder), quietly."""
    try:
        os.unlink(path)
    except IsADirectoryError:
        shutil.rmtree(path, ignore_errors=True)  # rmtree never follows a link out of it
    except OSError:
        pass


def _now() -> float:
    import time

    return time.time()


class CacheUnusable(OSError):
    """The cache folder cannot be trusted or made (the check runs without it)."""


def open_cache(folder: Path | None = None) -> CheckCache | None:
    """The check cache at `folder` (default: `default_folder()`), or None where it is turned off or unusable."""
    folder = folder if folder is not None else default_folder()
    if folder is None:
        return None
    try:
        return CheckCache(folder)
    except OSError:
        return None
