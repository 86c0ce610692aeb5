"""Docker's multiplexed exec stream, decoded as it arrives.

An exec started without a TTY interleaves stdout and stderr on one socket in frames: an 8-byte header
(stream: 1 stdout, 2 stderr; three zero bytes; the payload's length, big-endian) and the payload. Both the
sandbox's command backend and the CLI containers read such streams; this is their one decoder.

The payload is handed on in the pieces it arrives in, never buffered whole: a frame's header may announce up to
4 GiB, and what a command prints is the agent's to choose, so the decoder holds at most one partial header.
"""

from __future__ import annotations

from collections.abc import Iterator

STDOUT, STDERR = 1, 2
_HEADER = 8


class FrameDecoder:
    """Feed it the bytes read from the socket; it yields (stream, bytes) for the payload they carry."""

    __slots__ = ("_header", "_stream", "_left")

    def __init__(self) -> None:
        self._header = bytearray()
        self._stream = 0
        self._left = 0  # payload bytes of the current frame still to come

    def feed(self, data: bytes) -> Iterator[tuple[int, bytes]]:
        view = memoryview(data)
        while view:
            if self._left:
                piece, view = view[: self._left], view[self._left :]
                self._left -= len(piece)
                yield self._stream, bytes(piece)
                continue
            need = _HEADER - len(self._header)
            self._header += view[:need]
            view = view[need:]
            if len(self._header) == _HEADER:
                self._stream = self._header[0]
                self._left = int.from_bytes(self._header[4:8], "big")
                self._header.clear()

    @property
    def pending(self) -> bool:
        """Whether the stream stopped inside a frame (a header or a payload cut short)."""
        return bool(self._header or self._left)
