"""A query's result, read from the server's stream one batch at a time.

The server produces a batch per tick of the ``query`` producer, so the client holds one batch (plus
what the caller keeps) however large the result: rows for ``fetch*``, Arrow for the Arrow methods.
The first batch is read when the statement runs, so SQL errors surface at ``execute`` and the schema
(``description``) is known before any fetch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ..rpc import StreamCall
from .errors import InterfaceError
from .values import column_values

Row = tuple[Any, ...]


class QueryResult:
    """The open stream of one query; ``guard`` runs each read with the connection's error mapping."""

    def __init__(self, call: StreamCall, guard: Callable[[Callable[[], Any]], Any]) -> None:
        self._call = call
        self._guard = guard
        self._batch: pa.RecordBatch | None = None
        self._rows: list[Row] | None = None
        self._offset = 0
        self._finished = False
        self._discarded: str | None = None
        self._advance()
        schema = call.output_schema
        assert schema is not None, "the first tick opened the output stream"
        self.schema: pa.Schema = schema

    @property
    def open(self) -> bool:
        """Whether the server still has rows to send (the stream holds the connection)."""
        return not self._finished

    def discard(self, reason: str) -> None:
        """Stops the stream early (the server stops producing); later reads raise with ``reason``."""
        if not self._finished:
            self._finished = True
            self._guard(self._call.cancel)
        self._discarded = reason
        self._batch, self._rows = None, None

    def abandon(self, reason: str) -> None:
        """Like :meth:`discard` without telling the server (its connection is gone)."""
        self._finished = True
        self._discarded = reason
        self._batch, self._rows = None, None

    # -- rows -----------------------------------------------------------------------------

    def fetchone(self) -> Row | None:
        rows = self.fetch(1)
        return rows[0] if rows else None

    def fetch(self, count: int | None) -> list[Row]:
        """Up to ``count`` rows (all that are left with ``None``)."""
        taken: list[Row] = []
        while count is None or len(taken) < count:
            batch = self._current()
            if batch is None:
                break
            if self._rows is None:
                columns = [column_values(column) for column in batch.columns]
                self._rows = list(zip(*columns, strict=True)) if columns else [()] * batch.num_rows
            want = len(self._rows) - self._offset if count is None else count - len(taken)
            end = min(self._offset + want, len(self._rows))
            taken.extend(self._rows[self._offset : end])
            self._offset = end
        return taken

    # -- Arrow ----------------------------------------------------------------------------

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The rest of the result, batch by batch (what ``fetch*`` has not taken)."""
        while (batch := self._current()) is not None:
            rest = batch if self._offset == 0 else batch.slice(self._offset)
            self._offset = batch.num_rows
            yield rest

    def reader(self) -> pa.RecordBatchReader:
        """The rest of the result as a lazy reader: one server tick per batch read."""
        return pa.RecordBatchReader.from_batches(self.schema, self.batches())

    def table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.batches()), schema=self.schema)

    # -- the stream -----------------------------------------------------------------------

    def _current(self) -> pa.RecordBatch | None:
        """The batch with rows left to take, reading the next when this one is spent."""
        if self._discarded is not None:
            raise InterfaceError(f"the result is gone: {self._discarded}")
        while self._batch is not None and self._offset >= self._batch.num_rows:
            self._advance()
        return self._batch

    def _advance(self) -> None:
        self._batch, self._rows, self._offset = None, None, 0
        if self._finished:
            return
        try:
            answer = self._guard(self._call.tick)
        except BaseException:
            self._finished = True  # an error ends the stream: the call is over on both sides
            raise
        if answer is None:
            self._finished = True
        else:
            self._batch = answer.batch
