"""The dataframe libraries users reach the server with, as they ship on PyPI: pandas (`read_sql`,
`to_sql`) and polars (`read_database`, `write_database`) over ADBC's Flight SQL driver, and reading
through quiver's own DB-API client. Values are compared exactly, NULLs included.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import adbc_driver_flightsql.dbapi as flightsql
import pandas as pd
import polars as pl
import pytest

import quiver
from server_support import ServerProcess

ROWS = {"id": [1, 2, 3], "name": ["a", "b", None], "x": [0.5, 1.5, 2.5]}


@pytest.fixture(scope="module")
def server(extension: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    directory = tmp_path_factory.mktemp("dataframes")
    process = ServerProcess(
        "--listen",
        f"unix://{directory / 'quiver.sock'}",
        "--listen",
        "grpc://127.0.0.1:0",
        env={"QUIVER_EXTENSION": str(extension)},
    )
    yield process
    assert process.stop() == 0, process.stderr_text


def adbc(server: ServerProcess) -> object:
    db_kwargs = {"adbc.flight.sql.authorization_header": f"Bearer {server.token}"}
    return flightsql.connect(server.flight_sql, db_kwargs=db_kwargs)


def rows_of(frame: pl.DataFrame) -> list[tuple]:
    return [tuple(row) for row in frame.iter_rows()]


def test_pandas_to_sql_and_read_sql_through_adbc(server: ServerProcess) -> None:
    with adbc(server) as conn:
        assert pd.DataFrame(ROWS).to_sql("pandas_rows", conn, index=False) == 3
        frame = pd.read_sql("SELECT * FROM pandas_rows ORDER BY id", conn)
    assert frame["id"].tolist() == [1, 2, 3]
    assert frame["name"].tolist()[:2] == ["a", "b"] and pd.isna(frame["name"].tolist()[2])
    assert frame["x"].tolist() == [0.5, 1.5, 2.5]


def test_polars_write_database_and_read_database_through_adbc(server: ServerProcess) -> None:
    with adbc(server) as conn:
        pl.DataFrame(ROWS).write_database("polars_rows", conn, engine="adbc")
        pl.DataFrame({"id": [4], "name": ["d"], "x": [3.5]}).write_database(
            "polars_rows", conn, if_table_exists="append", engine="adbc"
        )
        frame = pl.read_database("SELECT * FROM polars_rows ORDER BY id", conn)
    assert rows_of(frame) == [(1, "a", 0.5), (2, "b", 1.5), (3, None, 2.5), (4, "d", 3.5)]


def test_pandas_and_polars_read_through_quivers_db_api(server: ServerProcess) -> None:
    with quiver.connect(f"unix://{server.unix}") as conn:
        conn.insert_arrow("dbapi_rows", pl.DataFrame(ROWS).to_arrow(), mode="create")
        conn.commit()
        with warnings.catch_warnings():
            # pandas names only SQLAlchemy and sqlite3 connections as supported; any DB-API 2.0 one works.
            warnings.simplefilter("ignore", UserWarning)
            frame = pd.read_sql("SELECT * FROM dbapi_rows ORDER BY id", conn)
        assert frame["x"].tolist() == [0.5, 1.5, 2.5]
        assert rows_of(pl.read_database("SELECT * FROM dbapi_rows ORDER BY id", conn)) == [
            (1, "a", 0.5),
            (2, "b", 1.5),
            (3, None, 2.5),
        ]
