"""The cases of the type matrix (``test_type_matrix.py``, rendered into docs/types.md).

A DuckDB case is a column of one DuckDB type holding its extremes and a NULL; an Arrow case is an
Arrow column a client may send that DuckDB has no type of its own for. Each names what a client must
see: ``exact`` (the value and the type come back), ``converted`` (the values come back, under another
type: ``why`` says which and why) or ``error`` (refused with a clear error: ``why`` says why).
Expectations can differ per client (``query_by_client``), which the matrix then shows.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import pyarrow as pa

EXACT = "exact"
CONVERTED = "converted"
ERROR = "error"


@dataclass(frozen=True)
class DuckCase:
    """A DuckDB type and SQL literals of its values (a NULL row is added)."""

    name: str
    sql_type: str
    literals: tuple[str, ...]
    query: str = EXACT
    insert: str = EXACT
    lossless: bool = False
    """Whether ``SET arrow_lossless_conversion = true`` changes its Arrow form (a second query column)."""
    why: str = ""
    query_by_client: dict[str, str] = field(default_factory=dict)
    lossless_query: str = EXACT

    def expected_query(self, client: str) -> str:
        return self.query_by_client.get(client, self.query)


@dataclass(frozen=True)
class ArrowCase:
    """An Arrow column a client inserts."""

    name: str
    array: pa.Array
    insert: str = EXACT
    why: str = ""
    insert_by_client: dict[str, str] = field(default_factory=dict)

    def expected_insert(self, client: str) -> str:
        return self.insert_by_client.get(client, self.insert)


PYTHON_DATES_WHY = (
    "Python's datetime ends at year 9999: the DB-API's fetch* raises DataError for values beyond it, "
    "its fetch_arrow_table carries them"
)


def _ints(bits: int, signed: bool = True) -> tuple[str, ...]:
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    return (str(low), str(high), "0")


HUGEINT_WHY = (
    "default Arrow form decimal128(38, 0), read back as DECIMAL(38,0); it holds 38 digits, so the extremes "
    "(39 digits) make an array that fails Arrow's validation: the DB-API client refuses it (DataError), "
    "quiver_native, Node and ADBC pass it on; `SET arrow_lossless_conversion = true` sends DuckDB's exact hugeint"
)

DUCK_CASES: tuple[DuckCase, ...] = (
    DuckCase("BOOLEAN", "BOOLEAN", ("true", "false")),
    DuckCase("TINYINT", "TINYINT", _ints(8)),
    DuckCase("SMALLINT", "SMALLINT", _ints(16)),
    DuckCase("INTEGER", "INTEGER", _ints(32)),
    DuckCase("BIGINT", "BIGINT", _ints(64)),
    DuckCase(
        "HUGEINT",
        "HUGEINT",
        (*_ints(128), "99999999999999999999999999999999999999"),
        query=ERROR,
        insert=CONVERTED,
        lossless=True,
        why=HUGEINT_WHY,
        query_by_client={"quiver_native": "invalid", "node": "invalid", "adbc": "invalid"},
    ),
    DuckCase(
        "HUGEINT (38 digits)",
        "HUGEINT",
        ("-99999999999999999999999999999999999999", "99999999999999999999999999999999999999"),
        query=CONVERTED,
        insert=CONVERTED,
        lossless=True,
        why="decimal128(38, 0), read back as DECIMAL(38,0)",
    ),
    DuckCase("UTINYINT", "UTINYINT", _ints(8, signed=False)),
    DuckCase("USMALLINT", "USMALLINT", _ints(16, signed=False)),
    DuckCase("UINTEGER", "UINTEGER", _ints(32, signed=False)),
    DuckCase("UBIGINT", "UBIGINT", _ints(64, signed=False)),
    DuckCase(
        "UHUGEINT",
        "UHUGEINT",
        ("0", "99999999999999999999999999999999999999"),
        query=CONVERTED,
        insert=CONVERTED,
        lossless=True,
        why="default Arrow form decimal128(38, 0), read back as DECIMAL(38,0): values up to 38 digits; beyond, "
        "as HUGEINT's extremes (`SET arrow_lossless_conversion = true` sends DuckDB's exact uhugeint)",
    ),
    DuckCase("FLOAT", "FLOAT", ("-3.4028235e38", "3.4028235e38", "1.1754944e-38", "'nan'", "'inf'", "'-inf'", "-0.0")),
    DuckCase(
        "DOUBLE", "DOUBLE", ("-1.7976931348623157e308", "1.7976931348623157e308", "5e-324", "'nan'", "'inf'", "'-inf'")
    ),
    DuckCase("DECIMAL(4,1)", "DECIMAL(4,1)", ("-999.9", "999.9", "0.1")),
    DuckCase("DECIMAL(18,6)", "DECIMAL(18,6)", ("-999999999999.999999", "999999999999.999999")),
    DuckCase(
        "DECIMAL(38,10)",
        "DECIMAL(38,10)",
        ("-9999999999999999999999999999.9999999999", "9999999999999999999999999999.9999999999"),
    ),
    DuckCase("VARCHAR", "VARCHAR", ("''", "'ascii'", "'ünïcødé 🦆'", "repeat('x', 100000)")),
    DuckCase("BLOB", "BLOB", ("''::BLOB", "'\\x00\\xFF\\x80'::BLOB")),
    DuckCase(
        "DATE",
        "DATE",
        ("'5877642-06-25 (BC)'", "'5881580-07-10'", "'1970-01-01'"),
        query_by_client={"dbapi": ERROR},
        why=PYTHON_DATES_WHY,
    ),
    DuckCase(
        "DATE ±infinity",
        "DATE",
        ("'infinity'", "'-infinity'"),
        query_by_client={"dbapi": ERROR},
        why="DuckDB's infinities are the extreme day numbers of date32 and come back as themselves; "
        + PYTHON_DATES_WHY,
    ),
    DuckCase("TIME", "TIME", ("'00:00:00'", "'23:59:59.999999'")),
    DuckCase("TIME_NS", "TIME_NS", ("'00:00:00'", "'23:59:59.999999999'")),
    DuckCase(
        "TIMETZ",
        "TIMETZ",
        ("'12:34:56.789+05:30'", "'00:00:00-15:59'"),
        query="lossy",
        insert="lossy",
        lossless=True,
        why="default Arrow form time64[us] keeps the wall time and drops the offset (read back as TIME); "
        "`SET arrow_lossless_conversion = true` sends DuckDB's time_tz with its offset",
    ),
    DuckCase(
        "TIMESTAMP",
        "TIMESTAMP",
        ("'290309-12-22 (BC) 00:00:00'", "'294247-01-10 04:00:54.775806'", "'1970-01-01'"),
        query_by_client={"dbapi": ERROR},
        why=PYTHON_DATES_WHY,
    ),
    DuckCase("TIMESTAMP_S", "TIMESTAMP_S", ("'1677-09-22 00:00:00'", "'2262-04-11 23:47:16'")),
    DuckCase("TIMESTAMP_MS", "TIMESTAMP_MS", ("'1677-09-22 00:00:00.001'", "'2262-04-11 23:47:16.854'")),
    DuckCase("TIMESTAMP_NS", "TIMESTAMP_NS", ("'1677-09-22 00:12:43.145225'", "'2262-04-11 23:47:16.854775806'")),
    DuckCase(
        "TIMESTAMPTZ",
        "TIMESTAMPTZ",
        ("'2000-01-01 00:00:00+00'", "'1900-06-30 12:00:00.123456+02'"),
        why="instants exact; the Arrow time zone is the session's TimeZone setting (`SET TimeZone = '...'`), "
        "not a zone stored per value (DuckDB stores none)",
    ),
    DuckCase(
        "INTERVAL",
        "INTERVAL",
        ("INTERVAL '1 year 2 months 3 days 04:05:06.789012'", "-INTERVAL '100 years'"),
    ),
    DuckCase(
        "UUID",
        "UUID",
        ("'00000000-0000-0000-0000-000000000000'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'"),
        query=CONVERTED,
        insert=CONVERTED,
        lossless=True,
        why="default Arrow form is its text (inserted back as VARCHAR); "
        "`SET arrow_lossless_conversion = true` sends the arrow.uuid extension type",
    ),
    DuckCase(
        "BIT",
        "BIT",
        ("'0'", "'010110'"),
        query="lossy",
        insert="lossy",
        lossless=True,
        why="default Arrow form is DuckDB's internal bytes of the bit string as binary: read back, a BLOB of "
        "those bytes, not the bits; `SET arrow_lossless_conversion = true` sends DuckDB's bit (exact)",
    ),
    DuckCase("BIGNUM", "BIGNUM", ("'-123456789012345678901234567890123456789012345678901234567890'", "'0'")),
    DuckCase(
        "ENUM",
        "ENUM('happy', 'sad')",
        ("'happy'", "'sad'"),
        query=CONVERTED,
        insert=CONVERTED,
        why="an Arrow dictionary of its labels; DuckDB reads a dictionary back as VARCHAR (it makes no ENUM "
        "from Arrow)",
    ),
    DuckCase("LIST", "INTEGER[]", ("[]", "[1, NULL, 3]", "[NULL]")),
    DuckCase("LIST of LIST", "VARCHAR[][]", ("[[], ['a'], NULL]", "[]")),
    DuckCase("STRUCT", "STRUCT(a INTEGER, b VARCHAR)", ("{'a': 1, 'b': ''}", "{'a': NULL, 'b': NULL}")),
    DuckCase("MAP", "MAP(VARCHAR, INTEGER)", ("MAP {}", "MAP {'k': 1, 'l': NULL}")),
    DuckCase("UNION", "UNION(i INTEGER, s VARCHAR)", ("union_value(i := 1)", "union_value(s := 'x')")),
    DuckCase("ARRAY", "INTEGER[3]", ("[1, 2, 3]", "[NULL, NULL, NULL]")),
    DuckCase(
        "JSON",
        "JSON",
        ("'{\"a\": [1, 2]}'", "'null'"),
        query=CONVERTED,
        insert=CONVERTED,
        why="Arrow string (inserted back as VARCHAR)",
    ),
    DuckCase("NULL only", "INTEGER", ()),
)


def _float16(values: list[float | None]) -> pa.Array:
    data = b"".join(struct.pack("<e", 0.0 if v is None else v) for v in values)
    validity = pa.array([v is not None for v in values]).buffers()[1]
    return pa.Array.from_buffers(pa.float16(), len(values), [validity, pa.py_buffer(data)])


ARROW_CASES: tuple[ArrowCase, ...] = (
    ArrowCase("uuid (arrow.uuid)", pa.array([b"\x00" * 16, b"\xff" * 16, None], pa.uuid())),
    ArrowCase(
        "dictionary<int32, string>",
        pa.array(["a", "b", "a", None]).dictionary_encode(),
        insert=CONVERTED,
        why="DuckDB reads a dictionary as its value type (VARCHAR); it makes no ENUM from Arrow",
    ),
    ArrowCase(
        "large_string",
        pa.array(["", "x" * 1000, None], pa.large_string()),
        insert=CONVERTED,
        why="VARCHAR; queried back as string (DuckDB has one string type; "
        "`SET arrow_large_buffer_size = true` sends large_string)",
    ),
    ArrowCase(
        "string_view",
        pa.array(["", "a longer string than twelve bytes", None], pa.string_view()),
        insert=CONVERTED,
        why="VARCHAR; queried back as string (`SET produce_arrow_string_view = true` sends string_view)",
    ),
    ArrowCase(
        "large_binary",
        pa.array([b"", b"\x00\xff", None], pa.large_binary()),
        insert=CONVERTED,
        why="BLOB; queried back as binary",
    ),
    ArrowCase(
        "binary_view",
        pa.array([b"", b"\x00\xff", None], pa.binary_view()),
        insert=CONVERTED,
        why="BLOB; queried back as binary",
    ),
    ArrowCase(
        "fixed_size_binary[3]",
        pa.array([b"abc", b"\x00\x00\x00", None], pa.binary(3)),
        insert=CONVERTED,
        why="BLOB; queried back as binary",
    ),
    ArrowCase(
        "float16",
        _float16([1.5, -65504.0, None]),
        insert=CONVERTED,
        why="DuckDB 2.0 has no half float: the server widens it to float32 before DuckDB scans it "
        "(every half value is a float32 value), a FLOAT column",
    ),
    ArrowCase(
        "timestamp[us, Europe/Paris]",
        pa.array([0, 1_700_000_000_000_000, None], pa.timestamp("us", tz="Europe/Paris")),
        insert=CONVERTED,
        why="TIMESTAMPTZ keeps the instant, not the zone name: it comes back in the session's TimeZone",
    ),
    ArrowCase("timestamp[ns]", pa.array([1, -1, None], pa.timestamp("ns"))),
    ArrowCase(
        "time32[ms]",
        pa.array([0, 86_399_999, None], pa.time32("ms")),
        insert=CONVERTED,
        why="TIME (microseconds): comes back as time64[us]",
    ),
    ArrowCase("time64[ns]", pa.array([1, 86_399_999_999_999, None], pa.time64("ns"))),
    ArrowCase(
        "date64", pa.array([0, 86_400_000, None], pa.date64()), insert=CONVERTED, why="DATE: comes back as date32"
    ),
    ArrowCase(
        "duration[ns]",
        pa.array([1_000, 3_600_000_000_000, None], pa.duration("ns")),
        insert=CONVERTED,
        why="INTERVAL: comes back as month_day_nano_interval; nanoseconds below a microsecond are dropped, "
        "as for month_day_nano_interval",
    ),
    ArrowCase(
        "month_day_nano_interval (ns)",
        pa.array([pa.MonthDayNano([1, 2, 3]), pa.MonthDayNano([0, 0, 1_000]), None], pa.month_day_nano_interval()),
        insert="lossy",
        why="DuckDB's INTERVAL counts microseconds: nanoseconds below a microsecond are dropped (3 ns -> 0)",
    ),
    ArrowCase(
        "decimal256(40, 0)",
        pa.array([1, None], pa.decimal256(40, 0)),
        insert=ERROR,
        why="DuckDB's DECIMAL has at most 38 digits (NotImplementedException)",
    ),
    ArrowCase(
        "large_list<int64>",
        pa.array([[1, None], [], None], pa.large_list(pa.int64())),
        insert=CONVERTED,
        why="LIST: comes back as list",
    ),
    ArrowCase(
        "list_view<int32>",
        pa.array([[1], [], None], pa.list_view(pa.int32())),
        insert=CONVERTED,
        insert_by_client={"node": ERROR},
        why="LIST: comes back as list; apache-arrow (Node) reads no list views",
    ),
    ArrowCase(
        "dense_union",
        pa.UnionArray.from_dense(
            pa.array([0, 1], pa.int8()), pa.array([0, 0], pa.int32()), [pa.array([1]), pa.array(["x"])], ["i", "s"]
        ),
        insert=ERROR,
        why="DuckDB 2.0 reads sparse unions only (NotImplementedException)",
    ),
    ArrowCase("null", pa.nulls(3)),
)
