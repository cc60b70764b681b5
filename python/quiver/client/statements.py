"""Statements on the wire: parameters as nested Arrow streams, and which method runs a statement.

A statement goes to ``query`` (a stream of batches) or ``execute`` (rows changed) by its first word.

Parameters (``crates/quiver-server-protocol/src/parameters.rs``): one row per execution, one column per
``?`` in the statement, in order; column names are ignored. Each column's Arrow type is pyarrow's
inference over that column's values, so ``executemany`` rows must agree on each parameter's type.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from .. import server_protocol as sp
from .errors import NotSupportedError, ProgrammingError

# The first keyword of statements that answer with rows: these go to `query` (a stream of batches);
# everything else goes to `execute` (a count of rows changed), which also runs several statements.
_ROW_KEYWORDS = frozenset(
    {
        "SELECT",
        "WITH",
        "FROM",
        "VALUES",
        "TABLE",
        "SHOW",
        "DESCRIBE",
        "DESC",
        "SUMMARIZE",
        "EXPLAIN",
        "PRAGMA",
        "CALL",
        "PIVOT",
        "UNPIVOT",
    }
)
_LEADING_NOISE = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*", re.DOTALL)
_FIRST_WORD = re.compile(r"[A-Za-z_]+")
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)


def returns_rows(sql: str) -> bool:
    """Whether ``sql`` answers with rows (a query, or a change with ``RETURNING``)."""
    start = _LEADING_NOISE.match(sql)
    word = _FIRST_WORD.match(sql, start.end() if start else 0)
    if word is None:
        return False
    return word.group(0).upper() in _ROW_KEYWORDS or _RETURNING.search(sql) is not None


def encode_row(parameters: Sequence[Any] | Mapping[str, Any] | None) -> bytes | None:
    """One execution's parameters as a nested stream; ``None`` when there are none."""
    if parameters is None:
        return None
    row = _as_row(parameters)
    return encode_rows([row]) if row else None


def encode_rows(rows: Sequence[Sequence[Any]]) -> bytes:
    """Several executions' parameters (all rows as wide as the first) as a nested stream."""
    assert rows, "at least one row of parameters"
    width = len(rows[0])
    if width == 0:
        raise ProgrammingError("executemany: a parameter row is empty; the statement takes no parameters?")
    for index, row in enumerate(rows):
        if len(row) != width:
            raise ProgrammingError(f"parameter row {index} has {len(row)} values, the first has {width}")
    try:
        columns = [pa.array([row[i] for row in rows]) for i in range(width)]
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise ProgrammingError(f"parameters do not convert to Arrow: {exc}") from exc
    batch = pa.RecordBatch.from_arrays(columns, names=[f"p{i + 1}" for i in range(width)])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    encoded = sink.getvalue().to_pybytes()
    if len(encoded) > sp.PARAMETERS_BYTES_MAX:
        raise ProgrammingError(f"parameters of {len(encoded)} bytes exceed the limit of {sp.PARAMETERS_BYTES_MAX}")
    return encoded


def parameter_chunks(rows: Sequence[Sequence[Any]]) -> Iterator[Sequence[Sequence[Any]]]:
    """``executemany``'s rows in groups the server accepts in one call (at most PARAMETER_ROWS_MAX rows)."""
    for start in range(0, len(rows), sp.PARAMETER_ROWS_MAX):
        yield rows[start : start + sp.PARAMETER_ROWS_MAX]


def check_sql(sql: object) -> str:
    """``sql`` as the text the server takes, refused here when it cannot be."""
    if not isinstance(sql, str):
        raise ProgrammingError(f"a statement must be a str, got {type(sql).__name__}")
    size = len(sql.encode("utf-8"))
    if size > sp.SQL_BYTES_MAX:
        raise ProgrammingError(f"SQL text of {size} bytes exceeds the limit of {sp.SQL_BYTES_MAX}")
    return sql


def as_rows(seq_of_parameters: Any) -> list[Sequence[Any]]:
    """``executemany``'s parameter sequence as a list of rows."""
    return [_as_row(parameters) for parameters in seq_of_parameters]


def _as_row(parameters: Any) -> Sequence[Any]:
    if isinstance(parameters, Mapping):
        raise NotSupportedError("named parameters are not supported; paramstyle is 'qmark' (use ? and a sequence)")
    if isinstance(parameters, (str, bytes)) or not isinstance(parameters, Sequence):
        raise ProgrammingError(f"parameters must be a sequence (list or tuple), got {type(parameters).__name__}")
    return parameters


_BEGINS = frozenset({"BEGIN", "START"})
_ENDS = frozenset({"COMMIT", "END", "ROLLBACK", "ABORT"})


def transaction_control(sql: str) -> bool | None:
    """``True`` for a statement opening a transaction, ``False`` for one ending it, else ``None``."""
    start = _LEADING_NOISE.match(sql)
    word = _FIRST_WORD.match(sql, start.end() if start else 0)
    keyword = word.group(0).upper() if word else ""
    if keyword in _BEGINS:
        return True
    if keyword in _ENDS:
        return False
    return None
