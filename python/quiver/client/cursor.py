"""A DB-API 2.0 cursor: statements with ``?`` parameters, rows or Arrow out, read lazily."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .errors import InterfaceError, ProgrammingError
from .result import QueryResult, Row
from .statements import as_rows, check_sql, encode_row, encode_rows, parameter_chunks, returns_rows
from .types import Description, describe

if TYPE_CHECKING:
    from .connection import Connection


class Cursor:
    """Runs statements on its connection's session.

    :mod:`quiver.client.connection` states the rules on transactions and on results that another
    statement discards.
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.arraysize = 1
        self.description: list[Description] | None = None
        self.rowcount = -1
        self._result: QueryResult | None = None
        self._closed = False

    def execute(self, operation: str, parameters: Sequence[Any] | None = None) -> Cursor:
        """Runs one statement (several, without parameters, when it returns no rows).

        Statements that return rows (``SELECT``, ``WITH``, ``SHOW``, ... or ``RETURNING``) stream their
        result; the first batch is read now, so SQL errors raise here.
        """
        sql = self._start(operation)
        encoded = encode_row(parameters)
        if returns_rows(sql):
            self._result = self.connection._run_query(sql, encoded)
            self.description = describe(self._result.schema)
        else:
            count = self.connection._run_execute(sql, encoded)
            self.rowcount = -1 if count is None else count
        return self

    def executemany(self, operation: str, seq_of_parameters: Any) -> Cursor:
        """Runs one statement once per parameter row, many rows per call; ``rowcount`` is the total."""
        sql = self._start(operation)
        rows = as_rows(seq_of_parameters)
        total: int | None = 0
        for chunk in parameter_chunks(rows):
            count = self.connection._run_execute(sql, encode_rows(chunk))
            total = None if total is None or count is None else total + count
        self.rowcount = -1 if total is None else total
        return self

    def fetchone(self) -> Row | None:
        return self._rows().fetchone()

    def fetchmany(self, size: int | None = None) -> list[Row]:
        count = self.arraysize if size is None else size
        if count < 0:
            raise ProgrammingError(f"fetchmany size must be >= 0, got {count}")
        return self._rows().fetch(count)

    def fetchall(self) -> list[Row]:
        return self._rows().fetch(None)

    def fetch_arrow_table(self) -> pa.Table:
        """The rest of the result as one Arrow table."""
        return self._rows().table()

    def fetch_record_batch(self) -> pa.RecordBatchReader:
        """The rest of the result as a lazy reader: each batch is fetched from the server when read."""
        return self._rows().reader()

    def close(self) -> None:
        """Discards an unread result; the cursor cannot run statements afterwards."""
        self._drop_result()
        self._closed = True

    def setinputsizes(self, sizes: Any) -> None:
        """Accepted and ignored (PEP 249 allows it)."""

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        """Accepted and ignored (PEP 249 allows it)."""

    def __iter__(self) -> Iterator[Row]:
        while (row := self.fetchone()) is not None:
            yield row

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self, operation: str) -> str:
        if self._closed:
            raise InterfaceError("the cursor is closed")
        sql = check_sql(operation)
        self._drop_result()
        self.description = None
        self.rowcount = -1
        return sql

    def _rows(self) -> QueryResult:
        if self._closed:
            raise InterfaceError("the cursor is closed")
        if self._result is None:
            raise ProgrammingError("no result to fetch: the last statement returned no rows")
        return self._result

    def _drop_result(self) -> None:
        result, self._result = self._result, None
        if result is not None and result.open and not self.connection.closed:
            result.discard("the cursor ran another statement or closed")
