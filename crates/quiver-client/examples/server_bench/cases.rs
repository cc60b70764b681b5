//! The workloads of seed 002's suite on one transport: `insert.bulk` in five shapes, and the three
//! queries over one connection, async, and N connections. Every case checks its rows on its first
//! (warm-up) run, outside the measured runs: same rows, checked, not assumed.

use std::time::Instant;

use arrow_array::{Array, Int64Array, RecordBatch};
use quiver_client::parallel::{insert_chunks, on_connections};
use quiver_client::{AsyncConnection, Connection, Error, InsertMode, Result};

use crate::rows::{checksum_sql, schema, Checksum, BYTES_PER_ROW};

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

fn fail(what: String) -> Error {
    Error::InvalidInput(what)
}

/// Runs `prepare` (untimed) then `run` (timed) `warmup + measured` times, both on `state`; `run`
/// gets the repetition's index (0 is the warm-up that checks).
fn timed<S>(
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

fn recreate(connection: &mut Connection, table: &str) -> Result<()> {
    connection.execute(&format!(
        "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} ({COLUMNS_DDL})"
    ))?;
    Ok(())
}

fn held(connection: &mut Connection, table: &str) -> Result<Checksum> {
    let batches = connection.query_arrow(&checksum_sql(table))?;
    Ok(Checksum::from_sql_row(&batches[0]))
}

fn check(what: &str, got: &Checksum, want: &Checksum) -> Result<()> {
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

fn insert_case(
    bench: &Bench,
    variant: String,
    flavor: &'static str,
    api: &'static str,
    connections: usize,
    times_s: Vec<f64>,
) -> Measured {
    Measured {
        workload: "insert.bulk",
        variant,
        flavor,
        api,
        connections,
        rows: bench.rows,
        bytes_per_row: BYTES_PER_ROW,
        times_s,
        checksum: Checksum::of(bench.data),
    }
}

/// The five insert shapes.
pub fn inserts(bench: &Bench) -> Result<Vec<Measured>> {
    let mut out = Vec::new();
    let want = Checksum::of(bench.data);
    let mut connection = (bench.connect)()?;
    let table = "bench_insert";

    let times = timed(
        bench,
        &mut connection,
        |c| recreate(c, table),
        |c, _| row_insert(c, table, bench.data).map(drop),
    )?;
    check("row API", &held(&mut connection, table)?, &want)?;
    out.push(insert_case(
        bench,
        "row API, 1 connection".into(),
        "sync",
        "RowInserter",
        1,
        times,
    ));

    let times = timed(
        bench,
        &mut connection,
        |c| recreate(c, table),
        |c, _| {
            c.insert_batches(table, InsertMode::Append, bench.data)
                .map(drop)
        },
    )?;
    check("Arrow", &held(&mut connection, table)?, &want)?;
    out.push(insert_case(
        bench,
        "Arrow, 1 connection".into(),
        "sync",
        "ArrowInserter",
        1,
        times,
    ));

    let asynchronous = bench.runtime.block_on(AsyncConnection::connect_with(
        connection.address(),
        connection.options().clone(),
    ))?;
    let times = timed(
        bench,
        &mut connection,
        |c| recreate(c, table),
        |_, _| {
            bench.runtime.block_on(async {
                let mut inserter = asynchronous
                    .arrow_inserter(table, &schema(), InsertMode::Append)
                    .await?;
                for batch in bench.data {
                    inserter.write(batch.clone()).await?;
                }
                inserter.finish().await.map(drop)
            })
        },
    )?;
    check("async Arrow", &held(&mut connection, table)?, &want)?;
    out.push(insert_case(
        bench,
        "Arrow, 1 connection".into(),
        "async",
        "AsyncArrowInserter",
        1,
        times,
    ));

    let n = bench.workers;
    let times = timed(
        bench,
        &mut connection,
        |c| recreate(c, table),
        |c, _| {
            insert_chunks(c, table, &schema(), InsertMode::Append, n, |i, sender| {
                for batch in bench.data.iter().skip(i).step_by(n) {
                    sender.send(batch.clone())?;
                }
                Ok(())
            })
            .map(drop)
        },
    )?;
    check("chunk senders", &held(&mut connection, table)?, &want)?;
    out.push(insert_case(
        bench,
        format!("ChunkSender × {n}, 1 connection"),
        "sync",
        "insert_chunks",
        1,
        times,
    ));

    let mut workers: Vec<Connection> = (0..n).map(|_| (bench.connect)()).collect::<Result<_>>()?;
    let tables: Vec<String> = (0..n).map(|i| format!("bench_insert_w{i}")).collect();
    let times = timed(
        bench,
        &mut (&mut connection, &mut workers),
        |(c, _)| tables.iter().try_for_each(|t| recreate(c, t)),
        |(_, workers), _| {
            on_connections(workers, |i, worker| {
                worker.insert_batches(&tables[i], InsertMode::Append, &bench.worker_data[i])
            })
            .map(drop)
        },
    )?;
    let mut measured = insert_case(
        bench,
        format!("Arrow × {n} connections"),
        "parallel",
        "ArrowInserter",
        n,
        times,
    );
    measured.rows = 0;
    measured.checksum = Checksum::default();
    for (i, t) in tables.iter().enumerate() {
        check(
            t,
            &held(&mut connection, t)?,
            &Checksum::of(&bench.worker_data[i]),
        )?;
        measured.rows += bench.worker_data[i]
            .iter()
            .map(|b| b.num_rows() as u64)
            .sum::<u64>();
        let part = Checksum::of(&bench.worker_data[i]);
        measured.checksum = sum(&measured.checksum, &part);
    }
    out.push(measured);
    for t in &tables {
        connection.execute(&format!("DROP TABLE {t}"))?;
    }
    connection.execute(&format!("DROP TABLE {table}"))?;
    Ok(out)
}

fn sum(a: &Checksum, b: &Checksum) -> Checksum {
    let add = |x: Option<i64>, y: Option<i64>| Some(x.unwrap_or(0) + y.unwrap_or(0));
    Checksum {
        count: a.count + b.count,
        sum_id: a.sum_id + b.sum_id,
        sum_sensor_id: add(a.sum_sensor_id, b.sum_sensor_id),
        sum_timestamp_offset: add(a.sum_timestamp_offset, b.sum_timestamp_offset),
        sum_value: a.sum_value + b.sum_value,
    }
}

/// The row API: every value added one at a time from the generated columns.
fn row_insert(connection: &mut Connection, table: &str, data: &[RecordBatch]) -> Result<u64> {
    use arrow_array::{Float64Array, Int32Array};
    let mut inserter = connection.row_inserter(table, &schema(), InsertMode::Append)?;
    for batch in data {
        let ids = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        let sensors = batch
            .column(1)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        let values = batch
            .column(2)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        let stamps = batch
            .column(3)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        for row in 0..batch.num_rows() {
            inserter.add_i32(ids.value(row))?;
            inserter.add_i32(sensors.value(row))?;
            inserter.add_f64(values.value(row))?;
            inserter.add_i64(stamps.value(row))?;
            inserter.end_row()?;
        }
    }
    inserter.finish()
}

/// What a query's result must hold.
enum Expect {
    Scan(Checksum),
    /// `query.aggregation`: this many groups covering this many rows.
    Groups {
        groups: i64,
        rows: i64,
    },
}

impl Expect {
    fn of(workload: &str, batches: &[RecordBatch]) -> Expect {
        match workload {
            "query.full_scan" => Expect::Scan(Checksum::of(batches)),
            "query.filtered" => Expect::Scan(Checksum::filtered(batches)),
            _ => {
                let rows: i64 = batches.iter().map(|b| b.num_rows() as i64).sum();
                Expect::Groups {
                    groups: rows.min(10),
                    rows,
                }
            }
        }
    }

    fn result_rows(&self) -> u64 {
        match self {
            Expect::Scan(sum) => sum.count as u64,
            Expect::Groups { groups, .. } => *groups as u64,
        }
    }

    fn checksum(&self) -> Checksum {
        match self {
            Expect::Scan(sum) => *sum,
            Expect::Groups { groups, rows } => Checksum {
                count: *groups,
                sum_id: *rows,
                ..Checksum::default()
            },
        }
    }

    /// Checks the batches received (kept only on the checking run).
    fn check(&self, batches: &[RecordBatch]) -> Result<()> {
        match self {
            Expect::Scan(want) => check("scan", &Checksum::of(batches), want),
            Expect::Groups { groups, rows } => {
                let got_groups: i64 = batches.iter().map(|b| b.num_rows() as i64).sum();
                let got_rows: i64 = batches
                    .iter()
                    .map(|b| {
                        let n =
                            arrow_cast::cast(b.column(1), &arrow_schema::DataType::Int64).unwrap();
                        n.as_any()
                            .downcast_ref::<Int64Array>()
                            .unwrap()
                            .values()
                            .iter()
                            .sum::<i64>()
                    })
                    .sum();
                if (got_groups, got_rows) == (*groups, *rows) {
                    Ok(())
                } else {
                    Err(fail(format!(
                        "aggregation: {got_groups} groups of {got_rows} rows"
                    )))
                }
            }
        }
    }
}

/// One query on a sync connection: counts rows, and on the checking run keeps and checks them.
fn query_sync(
    connection: &mut Connection,
    sql: &str,
    expect: &Expect,
    checking: bool,
) -> Result<u64> {
    let mut rows = 0u64;
    let mut kept = Vec::new();
    for batch in connection.query(sql)? {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        if checking {
            kept.push(batch);
        }
    }
    if checking {
        expect.check(&kept)?;
    }
    if rows != expect.result_rows() {
        return Err(fail(format!(
            "{sql}: {rows} rows, expected {}",
            expect.result_rows()
        )));
    }
    Ok(rows)
}

/// The three queries, each on one connection (sync and async) and on N connections.
pub fn queries(bench: &Bench, bytes_per_row: &dyn Fn(&str) -> u64) -> Result<Vec<Measured>> {
    let mut out = Vec::new();
    let mut connection = (bench.connect)()?;
    let asynchronous = AsyncConnection::from_sync((bench.connect)()?);
    let n = bench.workers;
    let mut workers: Vec<Connection> = (0..n).map(|_| (bench.connect)()).collect::<Result<_>>()?;
    for (workload, template) in [
        ("query.full_scan", FULL_SCAN),
        ("query.filtered", FILTERED),
        ("query.aggregation", AGGREGATION),
    ] {
        let sql = template.replace("{t}", "bench_m");
        let expect = Expect::of(workload, bench.data);
        let case = |variant: String, flavor, api, connections, rows, checksum, times_s| Measured {
            workload,
            variant,
            flavor,
            api,
            connections,
            rows,
            bytes_per_row: bytes_per_row(workload),
            times_s,
            checksum,
        };
        let times = timed(
            bench,
            &mut connection,
            |_| Ok(()),
            |c, rep| query_sync(c, &sql, &expect, rep == 0).map(drop),
        )?;
        out.push(case(
            "1 connection".into(),
            "sync",
            "Connection::query",
            1,
            expect.result_rows(),
            expect.checksum(),
            times,
        ));

        let times = timed(
            bench,
            &mut (),
            |_| Ok(()),
            |_, rep| {
                bench.runtime.block_on(async {
                    let mut stream = asynchronous.query(&sql);
                    let (mut rows, mut kept) = (0u64, Vec::new());
                    while let Some(batch) = stream.next_batch().await {
                        let batch = batch?;
                        rows += batch.num_rows() as u64;
                        if rep == 0 {
                            kept.push(batch);
                        }
                    }
                    if rep == 0 {
                        expect.check(&kept)?;
                    }
                    if rows == expect.result_rows() {
                        Ok(())
                    } else {
                        Err(fail(format!("async {sql}: {rows} rows")))
                    }
                })
            },
        )?;
        out.push(case(
            "1 connection".into(),
            "async",
            "AsyncConnection::query",
            1,
            expect.result_rows(),
            expect.checksum(),
            times,
        ));

        let expects: Vec<Expect> = bench
            .worker_data
            .iter()
            .map(|d| Expect::of(workload, d))
            .collect();
        let total: u64 = expects.iter().map(Expect::result_rows).sum();
        let times = timed(
            bench,
            &mut workers,
            |_| Ok(()),
            |workers, rep| {
                on_connections(workers, |i, worker| {
                    let sql = template.replace("{t}", &format!("bench_m_w{i}"));
                    query_sync(worker, &sql, &expects[i], rep == 0)
                })
                .map(drop)
            },
        )?;
        let checksum = expects
            .iter()
            .fold(Checksum::default(), |a, e| sum(&a, &e.checksum()));
        out.push(case(
            format!("{n} parallel connections"),
            "parallel",
            "Connection::query",
            n,
            total,
            checksum,
            times,
        ));
    }
    Ok(out)
}
