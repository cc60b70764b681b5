"""The rows of `./quiver bench server` (bench/peers/server/rows.py): the seed's generator, deterministic,
and a checksum that catches a wrong row. No peer is started here.
"""

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "peers" / "server"))
import rows


def test_the_first_and_last_rows_follow_the_formula():
    t = rows.table(1000, start=20)
    assert t.schema == rows.SCHEMA
    assert t.slice(0, 2).to_pylist() == [
        {"id": 20, "sensor_id": 0, "value": 20 * 0.1, "timestamp": 1_700_000_020_000},
        {"id": 21, "sensor_id": 1, "value": 21 * 0.1, "timestamp": 1_700_000_021_000},
    ]
    assert t.slice(999).to_pylist() == [
        {"id": 1019, "sensor_id": 9, "value": 1019 * 0.1, "timestamp": 1_700_001_019_000}
    ]


def test_two_calls_give_identical_tables():
    assert rows.table(123_457, start=7).equals(rows.table(123_457, start=7))


@pytest.mark.parametrize(("n", "start"), [(0, 0), (1, 0), (9, 3), (1000, 0), (123_457, 99)])
def test_the_closed_form_checksum_matches_the_data(n, start):
    t = rows.table(n, start=start)
    assert rows.of_table(t).matches(rows.expected(n, start=start))
    filtered = t.filter(pc.equal(t["sensor_id"], rows.FILTER_SENSOR)).select(["id", "value"])
    assert rows.of_table(filtered).matches(rows.expected_filtered(n, start=start))


def test_the_worker_split_holds_the_same_rows_as_one_table():
    parts = rows.worker_tables(100_001, 3)
    assert [p.num_rows for p in parts] == [33_333] * 3
    assert pa.concat_tables(parts).equals(rows.table(99_999))


def test_the_checksum_catches_one_changed_value_and_one_missing_row():
    t = rows.table(10_000)
    want = rows.expected(10_000)
    assert rows.of_table(t).matches(want)
    values = t["value"].to_pylist()
    values[5000] += 1.0
    changed = t.set_column(2, "value", pa.array(values, pa.float64()))
    assert not rows.of_table(changed).matches(want)
    ids = t["id"].to_pylist()
    ids[7] = 8
    assert not rows.of_table(t.set_column(0, rows.SCHEMA.field("id"), pa.array(ids, pa.int32()))).matches(want)
    assert not rows.of_table(t.slice(1)).matches(want)


def test_a_sql_checksum_row_compares_like_the_table_checksum():
    want = rows.expected(500)
    got = rows.of_sql_row((500, want.sum_id, want.sum_sensor_id, want.sum_timestamp_offset, want.sum_value))
    assert got.matches(want)
    assert not rows.of_sql_row((500, want.sum_id + 1, 0, 0, want.sum_value)).matches(want)


def test_sizes_beyond_the_limit_are_refused():
    with pytest.raises(AssertionError):
        rows.table(rows.ROWS_MAX + 1)


def _filtered(t):
    return t.filter(pc.equal(t["sensor_id"], rows.FILTER_SENSOR)).select(["id", "value"])


def _aggregated(t):
    return t.group_by("sensor_id").aggregate([("id", "count"), ("value", "sum")])


def test_each_worker_table_result_is_checked_against_its_own_ids():
    per, workers = 501, 2
    parts = rows.worker_tables(per * workers + 1, workers)
    filtered = [_filtered(p) for p in parts]
    assert sum(f.num_rows for f in filtered) == rows.split_result_rows("query.filtered", per, workers)
    assert rows.split_results_match("query.filtered", filtered, per)
    assert rows.split_results_match("query.full_scan", parts, per)
    assert rows.split_results_match("query.aggregation", [_aggregated(p) for p in parts], per)
    assert not rows.split_results_match("query.full_scan", list(reversed(parts)), per)
