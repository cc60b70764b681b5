"""The quiver server's protocol, ``quiver.server`` 1.0.0, in Python.

Every name here is the same word as in ``crates/quiver-server-protocol`` (the one statement of the
protocol): method and parameter names (``methods.rs``), the insert handshake (``insert.rs``), error
types and kinds (``errors.rs``), bounds (``limits.rs``), addresses (``address.rs``) and what
``connect`` answers (``session.rs``). A rename there is a rename here; ``test_server_client_protocol.py``
reads the Rust sources and fails when the two drift.

:class:`QuiverServer` is the method table as a protocol class of :mod:`quiver.rpc`, so the package's
own RPC client builds every request from it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, ClassVar

import pyarrow as pa

from .rpc import ArrowType, ExchangeState, ProducerState, Stream

PROTOCOL_NAME = "quiver.server"
PROTOCOL_VERSION = "1.0.0"

# -- methods (methods.rs) ----------------------------------------------------------------------

CONNECT = "connect"
EXECUTE = "execute"
QUERY = "query"
PREPARE = "prepare"
EXECUTE_PREPARED = "execute_prepared"
QUERY_PREPARED = "query_prepared"
CLOSE_PREPARED = "close_prepared"
INSERT = "insert"
TABLES = "tables"
TABLE_SCHEMA = "table_schema"
CANCEL = "cancel"
METHODS = (
    CONNECT,
    EXECUTE,
    QUERY,
    PREPARE,
    EXECUTE_PREPARED,
    QUERY_PREPARED,
    CLOSE_PREPARED,
    INSERT,
    TABLES,
    TABLE_SCHEMA,
    CANCEL,
)


class Param:
    """Parameter names shared by several methods (``methods.rs``'s ``param``)."""

    TOKEN = "token"
    CLIENT_NAME = "client_name"
    SQL = "sql"
    PARAMETERS = "parameters"
    BATCH_ROWS = "batch_rows"
    STATEMENT_ID = "statement_id"
    TABLE = "table"
    SCHEMA_NAME = "schema_name"
    CATALOG = "catalog"
    SCHEMA = "schema"
    MODE = "mode"
    SESSION_ID = "session_id"


class Prepared:
    """The fields of ``prepare``'s reply."""

    STATEMENT_ID = "statement_id"
    PARAMETER_COUNT = "parameter_count"
    RESULT_SCHEMA = "result_schema"


class Tables:
    """The columns of the ``tables`` listing."""

    CATALOG = "catalog"
    SCHEMA_NAME = "schema_name"
    TABLE_NAME = "table_name"
    TABLE_TYPE = "table_type"
    COLUMN_COUNT = "column_count"
    ESTIMATED_ROWS = "estimated_rows"


TABLES_SCHEMA = pa.schema(
    [
        pa.field(Tables.CATALOG, pa.string(), nullable=False),
        pa.field(Tables.SCHEMA_NAME, pa.string(), nullable=False),
        pa.field(Tables.TABLE_NAME, pa.string(), nullable=False),
        pa.field(Tables.TABLE_TYPE, pa.string(), nullable=False),
        pa.field(Tables.COLUMN_COUNT, pa.int64(), nullable=False),
        pa.field(Tables.ESTIMATED_ROWS, pa.int64()),
    ]
)

# -- the session connect answers (session.rs) ----------------------------------------------------

SESSION_ID_HEX_DIGITS = 32
_SESSION_FIELDS = ("server_version", "duckdb_version", "session_id", "database")
SESSION_TYPE = pa.struct([pa.field(name, pa.string(), nullable=False) for name in _SESSION_FIELDS])
PREPARED_TYPE = pa.struct(
    [
        pa.field(Prepared.STATEMENT_ID, pa.int64(), nullable=False),
        pa.field(Prepared.PARAMETER_COUNT, pa.int64(), nullable=False),
        pa.field(Prepared.RESULT_SCHEMA, pa.binary()),
    ]
)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """The session a ``connect`` opened; ``session_id`` is what ``cancel`` asks for."""

    server_version: str
    duckdb_version: str
    session_id: str
    database: str

    @classmethod
    def from_reply(cls, reply: dict[str, Any]) -> SessionInfo:
        missing = [name for name in _SESSION_FIELDS if not isinstance(reply.get(name), str)]
        if missing:
            raise ValueError(f"connect reply lacks text field(s): {', '.join(missing)}")
        info = cls(**{name: reply[name] for name in _SESSION_FIELDS})
        if not is_session_id(info.session_id):
            raise ValueError(f"connect reply: {info.session_id!r} is not a session id")
        return info


def is_session_id(text: str) -> bool:
    """Whether ``text`` has the shape of a session id: 32 lowercase hex digits."""
    return len(text) == SESSION_ID_HEX_DIGITS and all(c in "0123456789abcdef" for c in text)


# -- the insert handshake (insert.rs) ------------------------------------------------------------

COMMIT_KEY = "quiver.insert.commit"
COMMIT_VALUE = "1"
ROWS_FIELD = "rows"
ACK_SCHEMA = pa.schema([pa.field(ROWS_FIELD, pa.int64(), nullable=False)])


class InsertMode(Enum):
    """What ``insert`` does with the target table."""

    APPEND = "append"
    CREATE = "create"
    CREATE_APPEND = "create_append"
    REPLACE = "replace"

    @classmethod
    def parse(cls, name: str | InsertMode) -> InsertMode:
        if isinstance(name, InsertMode):
            return name
        for mode in cls:
            if mode.value == name:
                return mode
        known = ", ".join(mode.value for mode in cls)
        raise ValueError(f"unknown insert mode '{name}' (expected one of: {known})")


# -- errors (errors.rs) --------------------------------------------------------------------------

KIND_SQL = "sql"
KIND_UNAUTHENTICATED = "unauthenticated"
KIND_LIMIT = "limit_exceeded"
KIND_PROTOCOL = "protocol"
KIND_NOT_FOUND = "not_found"
KIND_STOPPING = "server_stopping"
KIND_BUSY = "server_busy"

AUTHENTICATION_ERROR = "AuthenticationError"
LIMIT_EXCEEDED_ERROR = "LimitExceededError"
PROTOCOL_ERROR = "ProtocolError"
NOT_FOUND_ERROR = "NotFoundError"
SERVER_STOPPING_ERROR = "ServerStoppingError"
SERVER_BUSY_ERROR = "ServerBusyError"

# -- limits (limits.rs) --------------------------------------------------------------------------

BATCH_ROWS_DEFAULT = 1 << 17
BATCH_ROWS_MAX = 1 << 24
SQL_BYTES_MAX = 4 << 20
PARAMETERS_BYTES_MAX = 64 << 20
PARAMETER_ROWS_MAX = 1 << 20
SCHEMA_BYTES_MAX = 1 << 20
SCHEMA_FIELDS_MAX = 4096
PREPARED_PER_SESSION_MAX = 1024
TOKEN_BYTES_MAX = 1024
IDENTIFIER_BYTES_MAX = 1024
CONNECTIONS_DEFAULT = 64
MESSAGE_BYTES_DEFAULT = 256 << 20
#: Most bytes a client puts in one insert batch; larger batches go as slices (a quarter of the default
#: message limit, so a slice with its framing fits).
INSERT_BATCH_BYTES_MAX = 64 << 20

# -- addresses (address.rs) ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Address:
    """``tcp://HOST:PORT`` (``host`` set) or ``unix:///absolute/path`` (``path`` set)."""

    host: str | None = None
    port: int = 0
    path: str | None = None

    @classmethod
    def parse(cls, text: str) -> Address:
        def bad(why: str) -> ValueError:
            return ValueError(f"bad address '{text}': {why} (expected tcp://HOST:PORT or unix:///PATH)")

        if text.startswith("unix://"):
            path = text[len("unix://") :]
            if not path.startswith("/"):
                raise bad("a Unix socket path must be absolute")
            return cls(path=path)
        if not text.startswith("tcp://"):
            raise bad("unknown scheme")
        rest = text[len("tcp://") :]
        if rest.startswith("["):
            host, closed, after = rest[1:].partition("]")
            if not closed:
                raise bad("unclosed '['")
            if not after.startswith(":"):
                raise bad("no port after the IPv6 address")
            port = after[1:]
        else:
            host, colon, port = rest.rpartition(":")
            if not colon:
                raise bad("no port")
        if not host:
            raise bad("no host")
        if not port.isascii() or not port.isdigit() or int(port) > 65535:
            raise bad("the port is not 0-65535")
        return cls(host=host, port=int(port))

    @property
    def is_unix(self) -> bool:
        return self.path is not None

    def is_local(self) -> bool:
        """Whether only this machine can reach it: a Unix socket, or TCP on loopback or ``localhost``."""
        if self.path is not None:
            return True
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host or "").is_loopback
        except ValueError:
            return False

    def __str__(self) -> str:
        if self.path is not None:
            return f"unix://{self.path}"
        host = f"[{self.host}]" if self.host and ":" in self.host else self.host
        return f"tcp://{host}:{self.port}"


# -- the method table as an RPC protocol class (methods.rs) -------------------------------------

_Session = Annotated[object, ArrowType(SESSION_TYPE, nullable=False)]
_PreparedReply = Annotated[object, ArrowType(PREPARED_TYPE, nullable=False)]


class QuiverServer:
    """The methods of ``quiver.server``, parameters in the order the Rust table declares them."""

    protocol_name: ClassVar[str] = PROTOCOL_NAME
    protocol_version: ClassVar[str] = PROTOCOL_VERSION

    def connect(self, token: str | None = None, client_name: str | None = None) -> _Session: ...

    def execute(self, sql: str, parameters: bytes | None = None) -> int | None: ...

    def query(
        self, sql: str, parameters: bytes | None = None, batch_rows: int | None = None
    ) -> Stream[ProducerState]: ...

    def prepare(self, sql: str) -> _PreparedReply: ...

    def execute_prepared(self, statement_id: int, parameters: bytes | None = None) -> int | None: ...

    def query_prepared(
        self, statement_id: int, parameters: bytes | None = None, batch_rows: int | None = None
    ) -> Stream[ProducerState]: ...

    def close_prepared(self, statement_id: int) -> None: ...

    def insert(
        self, table: str, schema_name: str | None, catalog: str | None, schema: bytes, mode: str
    ) -> Stream[ExchangeState]: ...

    def tables(self, catalog: str | None = None, schema_name: str | None = None) -> Stream[ProducerState]: ...

    def table_schema(self, table: str, schema_name: str | None = None, catalog: str | None = None) -> bytes: ...

    def cancel(self, session_id: str) -> bool: ...
