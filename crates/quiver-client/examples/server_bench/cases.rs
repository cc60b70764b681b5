//! What the workloads share: the measured record, the timing loop, table set-up and checks. Every
//! case checks its rows on its first (warm-up) run, never measured: same rows, checked, not assumed.

use std::time::Instant;

use arrow_array::RecordBatch;
use quiver_client::{Connection, Error, InsertMode, Result};

use crate::rows::{checksum_sql, Checksum};

/// What one case measured.
pub struct Measured {
    pub workload: &'static str,
    pub variant: String,
    pub flavor: &'static str,
    pub api: &'static str,
    pub connections: usize,
    pub rows: u64,
    pub bytes_per_row: u64,
    pub times_s: Vec<f64>,
    pub checksum: Checksum,
}

/// Everything the cases of one transport share.
pub struct Bench<'a> {
    pub connect: &'a (dyn Fn() -> Result<Connection> + Sync),
    pub runtime: &'a tokio::runtime::Runtime,
    pub rows: u64,
    pub workers: usize,
    pub warmup: usize,
    pub measured: usize,
    pub data: &'a [RecordBatch],
    pub worker_data: &'a [Vec<RecordBatch>],
}

const COLUMNS_DDL: &str = "id INT NOT NULL, sensor_id INT, value DOUBLE, timestamp BIGINT";
pub const FULL_SCAN: &str = "SELECT id, sensor_id, value, timestamp FROM {t}";
pub const FILTERED: &str = "SELECT id, value FROM {t} WHERE sensor_id = 5";
pub const AGGREGATION: &str =
    "SELECT sensor_id, count(*) AS n, sum(value) AS total FROM {t} GROUP BY sensor_id";
/// The query workloads (name, SQL template), in report order; every client path runs all three.
pub const QUERIES: [(&str, &str); 3] = [
    ("query.full_scan", FULL_SCAN),
    ("query.filtered", FILTERED),
    ("query.aggregation", AGGREGATION),
];

pub fn fail(what: String) -> Error {
    Error::InvalidInput(what)
}

/// Runs `prepare` (untimed) then `run` (timed) `warmup + measured` times, both on `state`; `run`
/// gets the repetition's index (0 is the warm-up that checks).
pub fn timed<S>(
    bench: &Bench,
    state: &mut S,
    mut prepare: impl FnMut(&mut S) -> Result<()>,
    mut run: impl FnMut(&mut S, usize) -> Result<()>,
) -> Result<Vec<f64>> {
    assert!(
        bench.warmup >= 1,
        "the first run checks the rows; it is never measured"
    );
    let mut times = Vec::with_capacity(bench.measured);
    for rep in 0..bench.warmup + bench.measured {
        prepare(state)?;
        let started = Instant::now();
        run(state, rep)?;
        let elapsed = started.elapsed().as_secs_f64();
        if rep >= bench.warmup {
            times.push(elapsed);
        }
    }
    Ok(times)
}

pub fn recreate(connection: &mut Connection, table: &str) -> Result<()> {
    connection.execute(&format!(
        "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} ({COLUMNS_DDL})"
    ))?;
    Ok(())
}

pub fn held(connection: &mut Connection, table: &str) -> Result<Checksum> {
    let batches = connection.query_arrow(&checksum_sql(table))?;
    Ok(Checksum::from_sql_row(&batches[0]))
}

pub fn check(what: &str, got: &Checksum, want: &Checksum) -> Result<()> {
    if got.matches(want) {
        Ok(())
    } else {
        Err(fail(format!("{what}: checksum {got:?}, expected {want:?}")))
    }
}

/// Loads `table` with `batches` (untimed set-up of the query workloads).
pub fn load(connection: &mut Connection, table: &str, batches: &[RecordBatch]) -> Result<()> {
    recreate(connection, table)?;
    connection.insert_batches(table, InsertMode::Append, batches)?;
    check(table, &held(connection, table)?, &Checksum::of(batches))
}

pub fn sum(a: &Checksum, b: &Checksum) -> Checksum {
    let add = |x: Option<i64>, y: Option<i64>| Some(x.unwrap_or(0) + y.unwrap_or(0));
    Checksum {
        count: a.count + b.count,
        sum_id: a.sum_id + b.sum_id,
        sum_sensor_id: add(a.sum_sensor_id, b.sum_sensor_id),
        sum_timestamp_offset: add(a.sum_timestamp_offset, b.sum_timestamp_offset),
        sum_value: a.sum_value + b.sum_value,
    }
}
