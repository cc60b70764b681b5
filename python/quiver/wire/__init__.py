"""Arrow IPC streams with per-batch metadata, back to back on one byte stream.

The vgi-rpc v1 wire is a sequence of complete IPC streams in each direction. This
package reads them one at a time without reading past an end marker
(:class:`StreamReader`), writes them into memory for a single vectored write
(:class:`GatherBuffer`, :class:`StreamWriter`), models log and error batches
(:class:`LogRecord`, :class:`ErrorReport`), tells batch roles apart
(:func:`classify`) and enforces :class:`Limits`.
"""

from . import keys
from .error import ConnectionClosed, LimitExceeded, Malformed, Truncated, WireError
from .framing import END_OF_STREAM, MessageKind
from .limits import DEFAULT_LIMITS, Limits
from .log import ErrorCode, ErrorReport, LogLevel, LogRecord
from .metadata import BatchMetadata, decode_metadata, encode_metadata
from .reader import StreamReader
from .role import BatchRole, classify
from .sink import GatherBuffer
from .writer import StreamWriter, empty_batch, encode_stream

__all__ = [
    "DEFAULT_LIMITS",
    "END_OF_STREAM",
    "BatchMetadata",
    "BatchRole",
    "ConnectionClosed",
    "ErrorCode",
    "ErrorReport",
    "GatherBuffer",
    "LimitExceeded",
    "Limits",
    "LogLevel",
    "LogRecord",
    "Malformed",
    "MessageKind",
    "StreamReader",
    "StreamWriter",
    "Truncated",
    "WireError",
    "classify",
    "decode_metadata",
    "empty_batch",
    "encode_metadata",
    "encode_stream",
    "keys",
]
