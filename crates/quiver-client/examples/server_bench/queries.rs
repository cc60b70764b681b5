//! The three queries (full scan, filtered, aggregation), each on one connection (sync and async)
//! and on N connections, one table each.

use arrow_array::{Array, Int64Array, RecordBatch};
use quiver_client::parallel::on_connections;
use quiver_client::{AsyncConnection, Connection, Result};

use crate::cases::{check, fail, sum, timed, Bench, Measured, QUERIES};
use crate::rows::Checksum;

/// What a query's result must hold.
pub enum Expect {
    Scan(Checksum),
    /// `query.aggregation`: this many groups covering this many rows.
    Groups {
        groups: i64,
        rows: i64,
    },
}

impl Expect {
    pub fn of(workload: &str, batches: &[RecordBatch]) -> Expect {
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

    pub fn result_rows(&self) -> u64 {
        match self {
            Expect::Scan(sum) => sum.count as u64,
            Expect::Groups { groups, .. } => *groups as u64,
        }
    }

    pub fn checksum(&self) -> Checksum {
        match self {
            Expect::Scan(sum) => *sum,
            Expect::Groups { groups, rows } => Checksum {
                count: *groups,
                sum_id: *rows,
                ..Checksum::default()
            },
        }
    }

    /// Fails unless `sql` gave the expected number of rows.
    pub fn rows_were(&self, sql: &str, rows: u64) -> Result<()> {
        if rows == self.result_rows() {
            return Ok(());
        }
        Err(fail(format!(
            "{sql}: {rows} rows, expected {}",
            self.result_rows()
        )))
    }

    /// Checks the batches received (kept only on the checking run).
    pub fn check(&self, batches: &[RecordBatch]) -> Result<()> {
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
    expect.rows_were(sql, rows)?;
    Ok(rows)
}

/// One query whose whole result is collected before any of it is dropped (checked when
/// `checking`).
fn query_whole(
    connection: &mut Connection,
    sql: &str,
    expect: &Expect,
    checking: bool,
) -> Result<()> {
    let batches = connection.query_arrow(sql)?;
    let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
    if checking {
        expect.check(&batches)?;
    }
    expect.rows_were(sql, rows)
}

/// The three queries, each on one connection (sync and async) and on N connections.
pub fn queries(bench: &Bench, bytes_per_row: &dyn Fn(&str) -> u64) -> Result<Vec<Measured>> {
    let mut out = Vec::new();
    let mut connection = (bench.connect)()?;
    let asynchronous = AsyncConnection::from_sync((bench.connect)()?);
    let n = bench.workers;
    let mut workers: Vec<Connection> = (0..n).map(|_| (bench.connect)()).collect::<Result<_>>()?;
    for (workload, template) in QUERIES {
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
        // A run on one connection: every row of the query, checked.
        let one = |flavor, api, times| {
            let (rows, checksum) = (expect.result_rows(), expect.checksum());
            case("1 connection".into(), flavor, api, 1, rows, checksum, times)
        };
        let times = timed(
            bench,
            &mut connection,
            |_| Ok(()),
            |c, rep| query_sync(c, &sql, &expect, rep == 0).map(drop),
        )?;
        out.push(one("sync", "Connection::query", times));

        if workload == "query.full_scan" {
            // The whole result held at once, as Node's executeQueryToArrow and Python's
            // to-table calls hold it: every batch lands in fresh memory, none is reused.
            let times = timed(
                bench,
                &mut connection,
                |_| Ok(()),
                |c, rep| query_whole(c, &sql, &expect, rep == 0),
            )?;
            out.push(one("sync", "Connection::query_arrow (whole result)", times));
        }

        let times = timed(
            bench,
            &mut (),
            |_| Ok(()),
            |_, rep| query_async(bench, &asynchronous, &sql, &expect, rep == 0),
        )?;
        out.push(one("async", "AsyncConnection::query", times));

        let (times, total, checksum) = query_parallel(bench, &mut workers, workload, template)?;
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

/// One async read of `sql`, every batch counted (kept and checked when `keep`).
fn query_async(
    bench: &Bench,
    connection: &AsyncConnection,
    sql: &str,
    expect: &Expect,
    keep: bool,
) -> Result<()> {
    bench.runtime.block_on(async {
        let mut stream = connection.query(sql);
        let (mut rows, mut kept) = (0u64, Vec::new());
        while let Some(batch) = stream.next_batch().await {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            if keep {
                kept.push(batch);
            }
        }
        if keep {
            expect.check(&kept)?;
        }
        expect.rows_were(sql, rows)
    })
}

/// `template` on every worker connection at once, each over its own table: the times, and the
/// rows and checksum of all of them together.
fn query_parallel(
    bench: &Bench,
    workers: &mut Vec<Connection>,
    workload: &str,
    template: &str,
) -> Result<(Vec<f64>, u64, Checksum)> {
    let expects: Vec<Expect> = bench
        .worker_data
        .iter()
        .map(|d| Expect::of(workload, d))
        .collect();
    let total: u64 = expects.iter().map(Expect::result_rows).sum();
    let times = timed(
        bench,
        workers,
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
    Ok((times, total, checksum))
}
