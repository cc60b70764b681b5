"""The Python client of the quiver server: DB-API 2.0 (PEP 249) plus Arrow in and out.

>>> import quiver
>>> with quiver.connect("unix:///tmp/quiver.sock") as conn:
...     conn.insert_arrow("t", pa.table({"x": [1, 2, 3]}), mode="create")
...     conn.execute("SELECT count(*), max(x) FROM t").fetchall()
[(3, 3)]

Addresses are ``tcp://HOST:PORT`` (a token required: ``token=`` or ``$QUIVER_TOKEN``) and
``unix:///absolute/path`` (shared memory on by default: large batches travel through a segment this
client creates). The protocol is :mod:`quiver.server_protocol`.
"""

from __future__ import annotations

from typing import Any

from .connection import Connection
from .cursor import Cursor
from .errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Warning,
)
from .types import (
    BINARY,
    DATETIME,
    NUMBER,
    ROWID,
    STRING,
    Binary,
    Date,
    DateFromTicks,
    Time,
    TimeFromTicks,
    Timestamp,
    TimestampFromTicks,
)

apilevel = "2.0"
threadsafety = 1  # threads may share the module, not a connection (Connection.cancel excepted)
paramstyle = "qmark"


def connect(address: str, **options: Any) -> Connection:
    """A connection to the quiver server at ``address`` (``tcp://HOST:PORT`` or ``unix:///PATH``).

    Options: ``token`` (TCP; default ``$QUIVER_TOKEN``), ``autocommit`` (default ``False``: PEP 249
    transactions), ``shm`` (default on for Unix sockets), ``shm_bytes``, ``client_name``, ``batch_rows``
    (most rows per result batch; the server's default when ``None``).
    """
    return Connection(address, **options)


__all__ = [
    "BINARY",
    "DATETIME",
    "NUMBER",
    "ROWID",
    "STRING",
    "Binary",
    "Connection",
    "Cursor",
    "DataError",
    "DatabaseError",
    "Date",
    "DateFromTicks",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "Time",
    "TimeFromTicks",
    "Timestamp",
    "TimestampFromTicks",
    "Warning",
    "apilevel",
    "connect",
    "paramstyle",
    "threadsafety",
]
