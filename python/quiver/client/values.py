"""The Python values of a result column: Arrow's own, and DuckDB's lossless forms read back.

With ``SET arrow_lossless_conversion = true`` DuckDB sends the types Arrow has no exact form for as
``arrow.opaque`` columns of vendor ``DuckDB`` (docs/types.md). ``fetch*`` reads the ones with a Python
value as that value: HUGEINT and UHUGEINT as ``int``, TIME WITH TIME ZONE as a ``datetime.time`` with
its offset. Other opaque columns (BIT, BIGNUM) and opaque values nested in lists or structs stay the
bytes DuckDB sent. The Arrow methods (``fetch_arrow_table``, ...) always return the columns as sent.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from .errors import DataError

# DuckDB's TIME WITH TIME ZONE in 64 bits: microseconds of the day above 24 bits of offset, stored as
# MAX_OFFSET - offset seconds so that the bits order like the instants (duckdb/common/types/datetime.hpp).
_TIME_TZ_OFFSET_BITS = 24
_TIME_TZ_OFFSET_MAX = 16 * 60 * 60 - 1


def _hugeint(raw: bytes) -> int:
    return int.from_bytes(raw, "little", signed=True)


def _uhugeint(raw: bytes) -> int:
    return int.from_bytes(raw, "little", signed=False)


def _time_tz(raw: bytes) -> datetime.time:
    bits = int.from_bytes(raw, "little", signed=False)
    micros = bits >> _TIME_TZ_OFFSET_BITS
    offset = _TIME_TZ_OFFSET_MAX - (bits & ((1 << _TIME_TZ_OFFSET_BITS) - 1))
    seconds, micro = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    zone = datetime.timezone(datetime.timedelta(seconds=offset))
    return datetime.time(hour, minute, second, micro, tzinfo=zone)


_DUCKDB_OPAQUE: dict[str, Callable[[bytes], Any]] = {
    "hugeint": _hugeint,
    "uhugeint": _uhugeint,
    "time_tz": _time_tz,
}


def column_values(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """The column's values as Python objects; a value Python cannot hold is a :class:`DataError`.

    (DuckDB's dates and timestamps reach years far beyond ``datetime``'s 9999: ``fetch*`` refuses
    them, the Arrow methods carry them.)
    """
    try:
        values = column.to_pylist()
    except (OverflowError, ValueError) as exc:
        raise DataError(f"a {column.type} value has no Python form: {exc}", error_type="ValueOutOfRange") from exc
    kind = column.type
    if isinstance(kind, pa.OpaqueType) and kind.vendor_name == "DuckDB":
        read = _DUCKDB_OPAQUE.get(kind.type_name)
        if read is not None:
            return [None if value is None else read(value) for value in values]
    return values
