//! The rows of seed 002's suite, `measurements(id INT NOT NULL, sensor_id INT, value DOUBLE,
//! timestamp BIGINT)` (24 bytes per row), and the checksums that prove every peer moved the same
//! rows. Row `i` of a table starting at `start`:
//!
//! ```text
//! id        = start + i
//! sensor_id = id % 10
//! value     = id * 0.1
//! timestamp = 1_700_000_000_000 + id * 1000
//! ```
//!
//! The same formula as `bench/peers/server/rows.py`, so quiver's records and the peers' compare.

use std::sync::Arc;

use arrow_array::{Array, Float64Array, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

pub const BYTES_PER_ROW: u64 = 24;
pub const TIMESTAMP_BASE: i64 = 1_700_000_000_000;
const TIMESTAMP_STEP: i64 = 1000;
const SENSORS: i32 = 10;
/// The sensor `query.filtered` selects.
pub const FILTER_SENSOR: i32 = 5;
/// Rows per batch the inserts send (as the seed's suite and the peers cut them).
pub const BATCH_ROWS: usize = 100_000;
/// `id` is an INT, and the timestamp checksum must fit an i64.
pub const ROWS_MAX: u64 = 100_000_000;

pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("sensor_id", DataType::Int32, true),
        Field::new("value", DataType::Float64, true),
        Field::new("timestamp", DataType::Int64, true),
    ]))
}

/// `count` rows with ids from `start`, as one batch.
pub fn measurement_rows(start: u64, count: usize) -> RecordBatch {
    assert!(
        start + count as u64 <= ROWS_MAX,
        "ids stay below {ROWS_MAX}"
    );
    let first = start as i32;
    let ids = Int32Array::from_iter_values(first..first + count as i32);
    let sensors = Int32Array::from_iter_values(ids.values().iter().map(|id| id % SENSORS));
    let values = Float64Array::from_iter_values(ids.values().iter().map(|&id| id as f64 * 0.1));
    let stamps = Int64Array::from_iter_values(
        ids.values()
            .iter()
            .map(|&id| TIMESTAMP_BASE + id as i64 * TIMESTAMP_STEP),
    );
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(ids),
            Arc::new(sensors),
            Arc::new(values),
            Arc::new(stamps),
        ],
    )
    .expect("the columns match the schema")
}

/// `count` rows from `start`, cut into batches of [`BATCH_ROWS`].
pub fn batches(start: u64, count: u64) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut next = start;
    while next < start + count {
        let rows = (start + count - next).min(BATCH_ROWS as u64);
        out.push(measurement_rows(next, rows as usize));
        next += rows;
    }
    out
}

/// Sums over a set of rows; `None` where the rows lack the column.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Checksum {
    pub count: i64,
    pub sum_id: i64,
    pub sum_sensor_id: Option<i64>,
    pub sum_timestamp_offset: Option<i64>,
    pub sum_value: f64,
}

/// What the server holds, asked in SQL after an insert.
pub fn checksum_sql(table: &str) -> String {
    format!(
        "SELECT count(*), sum(CAST(id AS BIGINT)), sum(CAST(sensor_id AS BIGINT)), \
         sum(timestamp - {TIMESTAMP_BASE}), sum(value) FROM {table}"
    )
}

impl Checksum {
    /// Adds a batch with columns `id`, `value` and optionally `sensor_id`, `timestamp`.
    pub fn add(&mut self, batch: &RecordBatch) {
        let column = |name: &str| batch.column_by_name(name);
        let ids = column("id").expect("a scan keeps id");
        let ids = ids
            .as_any()
            .downcast_ref::<Int32Array>()
            .expect("id is INT");
        self.count += batch.num_rows() as i64;
        self.sum_id += ids.values().iter().map(|&v| v as i64).sum::<i64>();
        if let Some(sensors) = column("sensor_id") {
            let sensors = sensors.as_any().downcast_ref::<Int32Array>().unwrap();
            *self.sum_sensor_id.get_or_insert(0) +=
                sensors.values().iter().map(|&v| v as i64).sum::<i64>();
        }
        if let Some(stamps) = column("timestamp") {
            let stamps = stamps.as_any().downcast_ref::<Int64Array>().unwrap();
            *self.sum_timestamp_offset.get_or_insert(0) += stamps
                .values()
                .iter()
                .map(|&v| v - TIMESTAMP_BASE)
                .sum::<i64>();
        }
        let values = column("value").expect("a scan keeps value");
        let values = values.as_any().downcast_ref::<Float64Array>().unwrap();
        self.sum_value += values.values().iter().sum::<f64>();
    }

    /// Reads the one row of [`checksum_sql`].
    pub fn from_sql_row(batch: &RecordBatch) -> Checksum {
        assert_eq!(batch.num_rows(), 1, "the checksum query answers one row");
        let int = |index: usize| -> i64 {
            let cast = arrow_cast::cast(batch.column(index), &DataType::Int64).unwrap();
            let column = cast.as_any().downcast_ref::<Int64Array>().unwrap();
            if column.is_null(0) {
                0
            } else {
                column.value(0)
            }
        };
        let value = arrow_cast::cast(batch.column(4), &DataType::Float64).unwrap();
        let value = value.as_any().downcast_ref::<Float64Array>().unwrap();
        Checksum {
            count: int(0),
            sum_id: int(1),
            sum_sensor_id: Some(int(2)),
            sum_timestamp_offset: Some(int(3)),
            sum_value: if value.is_null(0) {
                0.0
            } else {
                value.value(0)
            },
        }
    }

    /// Exact on the integer sums both sides have, a relative tolerance on the sum of doubles
    /// (its order differs between engines).
    pub fn matches(&self, other: &Checksum) -> bool {
        let same = |a: Option<i64>, b: Option<i64>| a.zip(b).is_none_or(|(a, b)| a == b);
        self.count == other.count
            && self.sum_id == other.sum_id
            && same(self.sum_sensor_id, other.sum_sensor_id)
            && same(self.sum_timestamp_offset, other.sum_timestamp_offset)
            && (self.sum_value - other.sum_value).abs() <= 1e-9 * self.sum_value.abs().max(1.0)
    }

    /// The expected checksum of `query.filtered`'s result over `batches` (id and value of the
    /// rows of sensor [`FILTER_SENSOR`]).
    pub fn filtered(batches: &[RecordBatch]) -> Checksum {
        let mut sum = Checksum::default();
        for batch in batches {
            let ids = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap();
            for &id in ids
                .values()
                .iter()
                .filter(|&&id| id % SENSORS == FILTER_SENSOR)
            {
                sum.count += 1;
                sum.sum_id += id as i64;
                sum.sum_value += id as f64 * 0.1;
            }
        }
        sum
    }

    /// The expected checksum of all of `batches`.
    pub fn of(batches: &[RecordBatch]) -> Checksum {
        let mut sum = Checksum::default();
        for batch in batches {
            sum.add(batch);
        }
        sum
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "count": self.count,
            "sum_id": self.sum_id,
            "sum_sensor_id": self.sum_sensor_id,
            "sum_timestamp_offset": self.sum_timestamp_offset,
            "sum_value": (self.sum_value * 1000.0).round() / 1000.0,
        })
    }
}
