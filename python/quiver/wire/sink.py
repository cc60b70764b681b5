"""Where encoded IPC bytes go before a vectored write: a buffer of parts, large ones by reference."""

from __future__ import annotations

from typing import Any


class GatherBuffer:
    """A write-only sink that keeps what pyarrow writes until it is taken.

    Small pieces (message prefixes, flatbuffers, padding) are copied into one growing
    buffer; large ones (column bodies) are kept by reference, without a copy. The
    result is a short list of buffers for a single vectored write.
    """

    COPY_BELOW_BYTES = 16 * 1024

    __slots__ = ("_chunks", "_tail", "closed", "nbytes")

    def __init__(self) -> None:
        self._chunks: list[Any] = []
        self._tail = bytearray()
        self.closed = False
        self.nbytes = 0

    def write(self, data: Any) -> int:
        """Takes one piece of output (bytes or a pyarrow buffer)."""
        size = len(data)
        if size < self.COPY_BELOW_BYTES:
            self._tail += data
        else:
            self._seal_tail()
            self._chunks.append(data)
        self.nbytes += size
        return size

    def flush(self) -> None:
        """Nothing to do; output is handed over by :meth:`take`."""

    def take(self) -> list[Any]:
        """Returns everything written so far, in order, and empties the sink."""
        self._seal_tail()
        chunks, self._chunks = self._chunks, []
        self.nbytes = 0
        return chunks

    def _seal_tail(self) -> None:
        if self._tail:
            self._chunks.append(self._tail)
            self._tail = bytearray()
