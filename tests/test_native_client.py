"""The native module (``quiver_native``, crates/quiver-python) against a real quiver server: queries
as pyarrow readers, statements, prepared statements, Arrow inserts, errors, cancel, and the switch
``quiver.native`` / ``quiver.implementation()``.

tools/setup.sh installs the module into .venv; without it these tests fail and say so.
"""

from __future__ import annotations

import decimal
import gc
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from server_support import WAIT_SECONDS, wait_until


@pytest.fixture(scope="module")
def qn() -> ModuleType:
    try:
        import quiver_native
    except ImportError as exc:
        pytest.fail(f"quiver_native is not installed ({exc}): run tools/setup.sh")
    return quiver_native


@pytest.fixture(scope="module")
def server(qn: ModuleType, extension: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    socket = tmp_path_factory.mktemp("native") / "q.sock"
    process = qn.ServerProcess(
        listen=["tcp://127.0.0.1:0", f"unix://{socket}"],
        extension=extension,
        command=[sys.executable, "-m", "quiver.serve"],
        ready_wait_s=WAIT_SECONDS,
    )
    yield process
    process.stop()


@pytest.fixture
def db(server: object) -> Iterator[object]:
    with server.connect() as connection:  # type: ignore[attr-defined]
        yield connection


def test_quiver_names_the_native_module_and_pure_python_can_be_forced(qn: ModuleType) -> None:
    import quiver

    assert quiver.native is qn
    assert quiver.implementation() == "native"
    forced = subprocess.run(
        [sys.executable, "-c", "import quiver; print(quiver.implementation(), quiver.native)"],
        env={**os.environ, "QUIVER_PURE_PYTHON": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert forced.stdout.split() == ["python", "None"]


def test_query_streams_a_pyarrow_reader(db: object) -> None:
    reader = db.query("SELECT range AS i, range * 2 AS j FROM range(300000)")  # type: ignore[attr-defined]
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.names == ["i", "j"]
    batches = list(reader)
    assert len(batches) > 1, "a large result arrives in several batches"
    table = pa.Table.from_batches(batches)
    assert table.num_rows == 300000
    assert pc.sum(table.column("j")).as_py() == 2 * sum(range(300000))


def test_unix_socket_uses_shared_memory(server: object) -> None:
    unix = next(a for a in server.addresses if a.startswith("unix://"))  # type: ignore[attr-defined]
    with server.connect(unix) as db:  # type: ignore[attr-defined]
        assert db.uses_shm
        table = db.query("SELECT range AS i, repeat('x', 20) AS s FROM range(500000)").read_all()
        assert table.num_rows == 500000 and table.column("s")[0].as_py() == "x" * 20
    with server.connect(unix, shm=False) as db:  # type: ignore[attr-defined]
        assert not db.uses_shm


@pytest.mark.parametrize("over", ["tcp", "unix"])
def test_every_batch_keeps_the_result_schema_and_values(server: object, over: str) -> None:
    """Each batch crosses as a struct array imported against the result's schema: every batch
    carries that schema, and nulls, strings, decimals, lists and structs arrive as sent (several
    batches, over the socket and over shared memory).
    """
    address = next(a for a in server.addresses if a.startswith(over))  # type: ignore[attr-defined]
    sql = (
        "SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'v' || i END AS s, (i / 100)::DECIMAL(18, 2) AS d, "
        "[i, i + 1] AS l, {'a': i, 'b': i % 3 = 0} AS st FROM (SELECT range::BIGINT AS i FROM range(300000))"
    )
    with server.connect(address) as db:  # type: ignore[attr-defined]
        db.execute(f"CREATE OR REPLACE TABLE kept AS {sql}")
        reader = db.query("SELECT * FROM kept ORDER BY i")
        batches = list(reader)
        assert len(batches) > 1, "a large result arrives in several batches"
        assert all(batch.schema.equals(reader.schema, check_metadata=True) for batch in batches)
        table = pa.Table.from_batches(batches)
        assert table.num_rows == 300000
        assert table.column("s").null_count == len(range(0, 300000, 7))
        assert table.slice(299998, 1).to_pylist() == [
            {"i": 299998, "s": "v299998", "d": decimal.Decimal("2999.98"), "l": [299998, 299999],
             "st": {"a": 299998, "b": False}}
        ]  # fmt: skip


def test_execute_counts_rows_and_takes_parameters(db: object) -> None:
    assert db.execute("CREATE TABLE ex (a BIGINT, b VARCHAR)") == 0  # type: ignore[attr-defined]
    assert db.execute("INSERT INTO ex VALUES (?, ?)", [1, "one"]) == 1  # type: ignore[attr-defined]
    many = pa.record_batch({"a": [2, 3, 4], "b": ["two", None, "four"]})
    assert db.execute("INSERT INTO ex VALUES (?, ?)", many) == 3  # type: ignore[attr-defined]
    table = db.query("SELECT a, b FROM ex WHERE a >= ? ORDER BY a", [2]).read_all()  # type: ignore[attr-defined]
    assert table.to_pydict() == {"a": [2, 3, 4], "b": ["two", None, "four"]}
    with pytest.raises(TypeError, match="a parameter is None, bool, int, float or str"):
        db.execute("SELECT ?", [object()])  # type: ignore[attr-defined]


def test_prepared_statements_run_with_bound_parameters(qn: ModuleType, db: object) -> None:
    db.execute("CREATE TABLE pr AS SELECT range AS i FROM range(100)")  # type: ignore[attr-defined]
    with db.prepare("SELECT count(*) AS n FROM pr WHERE i < ?") as counted:  # type: ignore[attr-defined]
        assert counted.parameter_count == 1
        assert counted.result_schema.names == ["n"]
        assert [counted.query([k]).read_all().column("n")[0].as_py() for k in (0, 10, 1000)] == [0, 10, 100]
    with pytest.raises(qn.InvalidInputError, match="closed"):
        counted.query([1])
    insert = db.prepare("INSERT INTO pr VALUES (?)")  # type: ignore[attr-defined]
    assert insert.result_schema is None
    assert insert.execute(pa.record_batch({"i": [500, 501]})) == 2
    with pytest.raises(qn.InvalidInputError, match="takes 1 parameters, 2 given"):
        insert.execute([1, 2])
    insert.close()
    assert db.query("SELECT max(i) AS m FROM pr").read_all().column("m")[0].as_py() == 501  # type: ignore[attr-defined]


def test_insert_arrow_from_a_table_and_a_reader_all_or_nothing(qn: ModuleType, db: object) -> None:
    table = pa.table({"id": pa.array(range(1000), pa.int64()), "v": pa.array([0.5] * 1000)})
    assert db.insert_arrow("ins", table, "create") == 1000  # type: ignore[attr-defined]
    batches = (pa.record_batch({"id": pa.array([k], pa.int64()), "v": [1.0]}) for k in range(5))
    reader = pa.RecordBatchReader.from_batches(table.schema, batches)
    assert db.insert_arrow("ins", reader) == 5  # type: ignore[attr-defined]
    wrong = pa.table({"id": pa.array(["x"]), "v": pa.array([1.0])})
    with pytest.raises(qn.SqlError, match="Could not convert string 'x'"):
        db.insert_arrow("ins", wrong)  # type: ignore[attr-defined]

    def fails_midway() -> Iterator[pa.RecordBatch]:
        yield pa.record_batch({"id": pa.array([7], pa.int64()), "v": [7.0]})
        raise ValueError("the source broke")

    broken = pa.RecordBatchReader.from_batches(table.schema, fails_midway())
    with pytest.raises(qn.InvalidInputError, match="the source broke"):
        db.insert_arrow("ins", broken)  # type: ignore[attr-defined]
    with pytest.raises(qn.InvalidInputError, match="unknown insert mode 'sideways'"):
        db.insert_arrow("ins", table, "sideways")  # type: ignore[attr-defined]
    assert db.query("SELECT count(*) AS n FROM ins").read_all().column("n")[0].as_py() == 1005  # type: ignore[attr-defined]


def test_arrow_inserter_commits_on_finish_and_rolls_back_on_abort(qn: ModuleType, db: object) -> None:
    schema = pa.schema([("k", pa.int64())])
    with db.arrow_inserter("stepwise", schema, "create") as inserter:  # type: ignore[attr-defined]
        inserter.write(pa.record_batch({"k": [1, 2]}, schema=schema))
        inserter.write(pa.table({"k": [3]}, schema=schema))
        with pytest.raises(qn.InvalidInputError, match="an insert is open"):
            db.execute("SELECT 1")  # type: ignore[attr-defined]
    assert db.query("SELECT sum(k) AS s FROM stepwise").read_all().column("s")[0].as_py() == 6  # type: ignore[attr-defined]
    given_up = db.arrow_inserter("stepwise", schema)  # type: ignore[attr-defined]
    given_up.write(pa.record_batch({"k": [100]}, schema=schema))
    given_up.abort()
    with pytest.raises(qn.InvalidInputError, match="already ended"):
        given_up.finish()
    assert db.query("SELECT count(*) AS n FROM stepwise").read_all().column("n")[0].as_py() == 3  # type: ignore[attr-defined]


def test_server_errors_keep_their_report_and_the_connection_lives(qn: ModuleType, db: object) -> None:
    with pytest.raises(qn.SqlError, match="syntax error") as caught:
        db.execute("SELEC 1")  # type: ignore[attr-defined]
    assert caught.value.error_type == "ParserException" and caught.value.kind == "sql"
    assert isinstance(caught.value, qn.Error)
    with pytest.raises(qn.SqlError, match="no_such_table"):
        db.query("SELECT * FROM no_such_table")  # type: ignore[attr-defined]
    assert db.query("SELECT 42 AS x").read_all().column("x")[0].as_py() == 42  # type: ignore[attr-defined]


def test_a_wrong_token_and_a_bad_address_are_refused(qn: ModuleType, server: object) -> None:
    tcp = next(a for a in server.addresses if a.startswith("tcp://"))  # type: ignore[attr-defined]
    with pytest.raises(qn.UnauthenticatedError):
        qn.connect(tcp, "not-the-token")
    with pytest.raises(qn.InvalidInputError, match="bad address"):
        qn.connect("http://example")


def test_a_new_statement_discards_an_unfinished_result(qn: ModuleType, db: object) -> None:
    reader = db.query("SELECT range AS i FROM range(10000000)")  # type: ignore[attr-defined]
    assert reader.read_next_batch().num_rows > 0
    assert db.query("SELECT 7 AS x").read_all().column("x")[0].as_py() == 7  # type: ignore[attr-defined]
    with pytest.raises(qn.InvalidInputError, match="the result was discarded"):
        reader.read_next_batch()


def test_a_large_result_over_a_socket_arrives_whole(db: object) -> None:
    """Many batches, each pulled as Python asks for it: every row arrives once, and the connection goes on."""
    reader = db.query("SELECT range AS i FROM range(3000000)")  # type: ignore[attr-defined]
    rows, total, batches = 0, 0, 0
    for batch in reader:
        rows, batches = rows + batch.num_rows, batches + 1
        total += pc.sum(batch.column(0)).as_py()
    assert (rows, total) == (3000000, sum(range(3000000)))
    assert batches > 2
    assert db.query("SELECT 1 AS x").read_all().num_rows == 1  # type: ignore[attr-defined]


def test_a_reader_let_go_mid_result_cancels_its_query(db: object) -> None:
    reader = db.query("SELECT range AS i FROM range(10000000)")  # type: ignore[attr-defined]
    for _ in range(3):
        assert reader.read_next_batch().num_rows > 0
    del reader
    gc.collect()
    assert db.query("SELECT 7 AS x").read_all().column("x")[0].as_py() == 7  # type: ignore[attr-defined]


def test_an_error_mid_stream_keeps_its_quiver_type(qn: ModuleType, db: object) -> None:
    """The first batch arrives; DuckDB fails further on: the reader raises quiver's SqlError with its report."""
    reader = db.query(  # type: ignore[attr-defined]
        "SELECT CASE WHEN range = 9000000 THEN error('failed at the end')::BIGINT ELSE range END AS i "
        "FROM range(10000000)"
    )
    assert reader.read_next_batch().num_rows > 0
    with pytest.raises(qn.SqlError, match="failed at the end") as caught:
        reader.read_all()
    assert caught.value.error_type == "InvalidInputException" and caught.value.kind == "sql"
    assert db.query("SELECT 1 AS x").read_all().num_rows == 1  # type: ignore[attr-defined]


def test_an_empty_result_keeps_its_schema(db: object) -> None:
    table = db.query("SELECT 1::INTEGER AS x, 'a' AS y WHERE false").read_all()  # type: ignore[attr-defined]
    assert table.num_rows == 0
    assert table.schema.names == ["x", "y"] and table.schema.field("x").type == pa.int32()


def test_cancel_from_another_thread_interrupts_a_running_statement(qn: ModuleType, db: object) -> None:
    """The long statement runs with the GIL released, so this thread can ask to cancel it."""
    outcome: list[BaseException | int] = []

    def run() -> None:
        try:
            outcome.append(db.execute("SELECT count(*) FROM range(1000000000000) a"))  # type: ignore[attr-defined]
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    wait_until(lambda: db.cancel() or bool(outcome), "a cancel that interrupts the statement")  # type: ignore[attr-defined]
    worker.join(WAIT_SECONDS)
    assert not worker.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], qn.Error), outcome
    assert "interrupt" in str(outcome[0]).lower()
    assert db.query("SELECT 1 AS x").read_all().num_rows == 1  # type: ignore[attr-defined]


def test_closed_connection_refuses_calls(qn: ModuleType, server: object) -> None:
    db = server.connect()  # type: ignore[attr-defined]
    reader = db.query("SELECT range AS i FROM range(10000000)")
    db.close()
    assert db.closed
    with pytest.raises(qn.InvalidInputError, match="closed"):
        db.execute("SELECT 1")
    with pytest.raises(qn.InvalidInputError, match="discarded"):
        reader.read_all()
