"""The one decoder of Docker's multiplexed exec stream (sandbox commands and CLI containers both read it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from redagent.sandbox.docker_stream import STDERR, STDOUT, FrameDecoder

frames = st.lists(st.tuples(st.sampled_from([0, STDOUT, STDERR]), st.binary(max_size=300)), max_size=20)


def encode(items: list[tuple[int, bytes]]) -> bytes:
    return b"".join(bytes([kind, 0, 0, 0]) + len(data).to_bytes(4, "big") + data for kind, data in items)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@settings(max_examples=300, deadline=None)
@given(frames, st.lists(st.integers(min_value=0), max_size=30))
def test_any_split_of_the_stream_gives_each_streams_bytes_in_order(items, cuts):
    decoder = FrameDecoder()
    got: dict[int, bytes] = {0: b"", STDOUT: b"", STDERR: b""}
    for chunk in split(encode(items), cuts):
        for kind, piece in decoder.feed(chunk):
            assert piece  # no empty pieces
            got[kind] += piece
    assert not decoder.pending
    assert got == {kind: b"".join(d for k, d in items if k == kind) for kind in got}


def test_a_frame_announcing_gigabytes_is_passed_on_as_it_arrives_and_reported_cut_short():
    decoder = FrameDecoder()
    header = bytes([STDOUT, 0, 0, 0]) + (0xFFFFFFFF).to_bytes(4, "big")
    assert list(decoder.feed(header + b"abc")) == [(STDOUT, b"abc")]
    assert list(decoder.feed(b"d" * 10)) == [(STDOUT, b"d" * 10)]
    assert decoder.pending  # the stream ended inside the frame


def test_a_header_split_across_reads_is_held_until_whole():
    decoder = FrameDecoder()
    data = encode([(STDERR, b"oops")])
    assert list(decoder.feed(data[:3])) == []
    assert decoder.pending
    assert list(decoder.feed(data[3:])) == [(STDERR, b"oops")]
    assert not decoder.pending
