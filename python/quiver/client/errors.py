"""The DB-API 2.0 (PEP 249) exception hierarchy, and how the server's errors map onto it.

The server names every error by a stable ``error_type`` (``crates/quiver-server-protocol/src/errors.rs``):
DuckDB's own exception name for SQL errors (``CatalogException``, ``ConstraintException``, ...) and a
protocol name for the rest (``AuthenticationError``, ``ServerStoppingError``, ...). The class is
chosen from that name; the message is the server's, unchanged (DuckDB's words for SQL errors).
"""

from __future__ import annotations

import builtins

from .. import server_protocol as sp
from ..rpc import RpcError


class Warning(builtins.Exception):
    """Important warnings (PEP 249); the client raises none today."""


class Error(builtins.Exception):
    """Base of every error this client raises.

    ``error_type`` is the server's name for the error (``"CatalogException"``), ``error_kind`` its
    kind token (``"sql"``, ``"unauthenticated"``, ...) when the server sent one.
    """

    def __init__(self, message: str, *, error_type: str | None = None, error_kind: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.error_kind = error_kind


class InterfaceError(Error):
    """Misuse of the client, or a conversation the protocol does not allow."""


class DatabaseError(Error):
    """An error the database reported."""


class DataError(DatabaseError):
    """A value that does not convert or is out of range."""


class OperationalError(DatabaseError):
    """The connection, the server or the transaction cannot go on: lost, refused, interrupted, stopping."""


class IntegrityError(DatabaseError):
    """A constraint was violated."""


class InternalError(DatabaseError):
    """The database's internal error."""


class ProgrammingError(DatabaseError):
    """The statement is wrong: syntax, unknown table or column, wrong parameter count."""


class NotSupportedError(DatabaseError):
    """The database does not implement what was asked."""


# DuckDB's exception names (the server's error_type for kind "sql") to PEP 249 classes. The names
# are those of DuckDB's own Python package, as errors.rs builds them.
_SQL_CLASSES: dict[str, type[DatabaseError]] = {
    "ParserException": ProgrammingError,
    "SyntaxException": ProgrammingError,
    "BinderException": ProgrammingError,
    "CatalogException": ProgrammingError,
    "InvalidInputException": ProgrammingError,
    "DependencyException": ProgrammingError,
    "PermissionException": ProgrammingError,
    "ConstraintException": IntegrityError,
    "ConversionException": DataError,
    "OutOfRangeException": DataError,
    "InvalidTypeException": DataError,
    "TypeMismatchException": DataError,
    "InterruptException": OperationalError,
    "TransactionException": OperationalError,
    "OutOfMemoryException": OperationalError,
    "IOException": OperationalError,
    "ConnectionException": OperationalError,
    "NotImplementedException": NotSupportedError,
    "InternalException": InternalError,
    "FatalException": InternalError,
}

_PROTOCOL_CLASSES: dict[str, type[Error]] = {
    sp.AUTHENTICATION_ERROR: OperationalError,
    sp.SERVER_STOPPING_ERROR: OperationalError,
    sp.SERVER_BUSY_ERROR: OperationalError,
    sp.LIMIT_EXCEEDED_ERROR: OperationalError,
    sp.NOT_FOUND_ERROR: ProgrammingError,
    sp.PROTOCOL_ERROR: InterfaceError,
}


def from_rpc(error: RpcError) -> Error:
    """The DB-API error for an error the server (or the RPC layer) reported."""
    name = error.error_type
    klass = _SQL_CLASSES.get(name) or _PROTOCOL_CLASSES.get(name)
    if klass is None:
        # Another DuckDB exception is still the database's; anything else is the spine refusing the call
        # (wrong protocol version, unknown method): the client's side of the conversation.
        klass = DatabaseError if name.endswith("Exception") else InterfaceError
    # The spine's error record carries "<type>: <message>" (crates/quiver-wire/src/log.rs); the DB-API
    # error keeps the message alone, DuckDB's words exactly, and the type in error_type.
    message = error.error_message.removeprefix(f"{name}: ")
    return klass(message, error_type=name, error_kind=error.error_kind)


def connection_lost(address: str, cause: BaseException) -> OperationalError:
    """The error for a connection that broke under a call."""
    return OperationalError(
        f"connection to {address} lost: {type(cause).__name__}: {cause}", error_type="ConnectionLost"
    )


def refused_reply(cause: BaseException) -> DataError:
    """The error for a reply this client refused (a batch that fails Arrow's validation).

    The call is over and the connection lives on. DuckDB's HUGEINT beyond 38 digits is the known
    case: its default Arrow form, decimal128(38, 0), cannot hold it (docs/types.md).
    """
    return DataError(f"the server's reply was refused: {cause}", error_type="InvalidReply")


__all__ = [
    "DataError",
    "DatabaseError",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "Warning",
    "connection_lost",
    "from_rpc",
    "refused_reply",
]
