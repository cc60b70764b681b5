"""Arrow IPC streams with per-batch metadata, back to back on one byte stream.

The vgi-rpc v1 wire is a sequence of complete IPC streams in each direction. This
package reads them one at a time without reading past an end marker
(:class:`StreamReader`), writes them into memory for a single vectored write
(:class:`Gather`, :class:`StreamWriter`), models log and error batches
(:class:`LogRecord`, :class:`ErrorReport`), tells batch roles apart
(:func:`classify`) and enforces :class:`Limits`.
"""

from . import keys
from .errors import ConnectionClosed, LimitExceeded, MalformedStream, Truncated, WireError
from .framing import END_OF_STREAM, MessageKind
from .limits import DEFAULT_LIMITS, Limits
from .log import ErrorCode, ErrorReport, Level, LogRecord
from .metadata import Metadata, decode_metadata, encode_metadata
from .reader import StreamReader
from .roles import Role, classify
from .writer import Gather, StreamWriter, empty_batch, serialize_stream

__all__ = [
    "DEFAULT_LIMITS",
    "END_OF_STREAM",
    "ConnectionClosed",
    "ErrorCode",
    "ErrorReport",
    "Gather",
    "Level",
    "LimitExceeded",
    "Limits",
    "LogRecord",
    "MalformedStream",
    "MessageKind",
    "Metadata",
    "Role",
    "StreamReader",
    "StreamWriter",
    "Truncated",
    "WireError",
    "classify",
    "decode_metadata",
    "empty_batch",
    "encode_metadata",
    "keys",
    "serialize_stream",
]
