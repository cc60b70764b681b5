//! `insert.bulk` in six shapes: the row API, Arrow sync and async on one connection, chunk senders
//! feeding one connection, and Arrow on N connections, sync and async (one table each, as seed 002's
//! suite).

use arrow_array::{Array, Int64Array, RecordBatch};
use quiver_client::parallel::{insert_chunks, on_connections};
use quiver_client::{AsyncConnection, Connection, InsertMode, Result};

use crate::cases::{check, held, recreate, sum, timed, Bench, Measured};
use crate::rows::{schema, Checksum, BYTES_PER_ROW};

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

/// The table the one-connection shapes insert into.
const TABLE: &str = "bench_insert";

/// The six insert shapes.
pub fn inserts(bench: &Bench) -> Result<Vec<Measured>> {
    let mut connection = (bench.connect)()?;
    let mut out = vec![
        row_api(bench, &mut connection)?,
        arrow_sync(bench, &mut connection)?,
        arrow_async(bench, &mut connection)?,
        chunk_senders(bench, &mut connection)?,
    ];
    let tables: Vec<String> = (0..bench.workers)
        .map(|i| format!("bench_insert_w{i}"))
        .collect();
    let parallel = parallel_sync(bench, &mut connection, &tables)?;
    let (rows, checksum) = (parallel.rows, parallel.checksum);
    out.push(parallel);
    let mut parallel = parallel_async(bench, &mut connection, &tables)?;
    parallel.rows = rows;
    parallel.checksum = checksum;
    out.push(parallel);
    for t in &tables {
        connection.execute(&format!("DROP TABLE {t}"))?;
    }
    connection.execute(&format!("DROP TABLE {TABLE}"))?;
    Ok(out)
}

/// Times `run` into a fresh `TABLE`, then checks what the table holds.
fn one_connection(
    bench: &Bench,
    connection: &mut Connection,
    what: &str,
    run: impl FnMut(&mut Connection, usize) -> Result<()>,
) -> Result<Vec<f64>> {
    let times = timed(bench, connection, |c| recreate(c, TABLE), run)?;
    check(what, &held(connection, TABLE)?, &Checksum::of(bench.data))?;
    Ok(times)
}

fn row_api(bench: &Bench, connection: &mut Connection) -> Result<Measured> {
    let times = one_connection(bench, connection, "row API", |c, _| {
        row_insert(c, TABLE, bench.data).map(drop)
    })?;
    let variant = "row API, 1 connection".into();
    Ok(insert_case(bench, variant, "sync", "RowInserter", 1, times))
}

fn arrow_sync(bench: &Bench, connection: &mut Connection) -> Result<Measured> {
    let times = one_connection(bench, connection, "Arrow", |c, _| {
        c.insert_batches(TABLE, InsertMode::Append, bench.data)
            .map(drop)
    })?;
    let variant = "Arrow, 1 connection".into();
    Ok(insert_case(
        bench,
        variant,
        "sync",
        "ArrowInserter",
        1,
        times,
    ))
}

fn arrow_async(bench: &Bench, connection: &mut Connection) -> Result<Measured> {
    let asynchronous = bench.runtime.block_on(AsyncConnection::connect_with(
        connection.address(),
        connection.options().clone(),
    ))?;
    let times = one_connection(bench, connection, "async Arrow", |_, _| {
        bench.runtime.block_on(async {
            let mut inserter = asynchronous
                .arrow_inserter(TABLE, &schema(), InsertMode::Append)
                .await?;
            for batch in bench.data {
                inserter.write(batch.clone()).await?;
            }
            inserter.finish().await.map(drop)
        })
    })?;
    let variant = "Arrow, 1 connection".into();
    Ok(insert_case(
        bench,
        variant,
        "async",
        "AsyncArrowInserter",
        1,
        times,
    ))
}

fn chunk_senders(bench: &Bench, connection: &mut Connection) -> Result<Measured> {
    let n = bench.workers;
    let times = one_connection(bench, connection, "chunk senders", |c, _| {
        insert_chunks(c, TABLE, &schema(), InsertMode::Append, n, |i, sender| {
            for batch in bench.data.iter().skip(i).step_by(n) {
                sender.send(batch.clone())?;
            }
            Ok(())
        })
        .map(drop)
    })?;
    let variant = format!("ChunkSender × {n}, 1 connection");
    Ok(insert_case(
        bench,
        variant,
        "sync",
        "insert_chunks",
        1,
        times,
    ))
}

/// Checks each worker's table against the data it was given.
fn check_tables(bench: &Bench, connection: &mut Connection, tables: &[String]) -> Result<()> {
    for (i, t) in tables.iter().enumerate() {
        check(
            t,
            &held(connection, t)?,
            &Checksum::of(&bench.worker_data[i]),
        )?;
    }
    Ok(())
}

/// Arrow on N connections at once, one table each; the record counts every worker's rows.
fn parallel_sync(
    bench: &Bench,
    connection: &mut Connection,
    tables: &[String],
) -> Result<Measured> {
    let n = bench.workers;
    let mut workers: Vec<Connection> = (0..n).map(|_| (bench.connect)()).collect::<Result<_>>()?;
    let times = timed(
        bench,
        &mut (&mut *connection, &mut workers),
        |(c, _)| tables.iter().try_for_each(|t| recreate(c, t)),
        |(_, workers), _| {
            on_connections(workers, |i, worker| {
                worker.insert_batches(&tables[i], InsertMode::Append, &bench.worker_data[i])
            })
            .map(drop)
        },
    )?;
    check_tables(bench, connection, tables)?;
    let variant = format!("Arrow × {n} connections");
    let mut measured = insert_case(bench, variant, "parallel", "ArrowInserter", n, times);
    measured.rows = 0;
    measured.checksum = Checksum::default();
    for part in bench.worker_data {
        measured.rows += part.iter().map(|b| b.num_rows() as u64).sum::<u64>();
        measured.checksum = sum(&measured.checksum, &Checksum::of(part));
    }
    Ok(measured)
}

/// The seed's fastest shape: an async inserter per connection, all driven at once.
fn parallel_async(
    bench: &Bench,
    connection: &mut Connection,
    tables: &[String],
) -> Result<Measured> {
    let n = bench.workers;
    let asynchronous: Vec<AsyncConnection> = (0..n)
        .map(|_| (bench.connect)().map(AsyncConnection::from_sync))
        .collect::<Result<_>>()?;
    let times = timed(
        bench,
        connection,
        |c| tables.iter().try_for_each(|t| recreate(c, t)),
        |_, _| {
            bench.runtime.block_on(async {
                let tasks: Vec<_> = asynchronous
                    .iter()
                    .zip(tables)
                    .zip(bench.worker_data)
                    .map(|((worker, table), batches)| {
                        let (worker, table, batches) =
                            (worker.clone(), table.clone(), batches.clone());
                        tokio::spawn(async move {
                            let mut inserter = worker
                                .arrow_inserter(&table, &schema(), InsertMode::Append)
                                .await?;
                            for batch in batches {
                                inserter.write(batch).await?;
                            }
                            inserter.finish().await
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await
                        .map_err(|e| crate::cases::fail(e.to_string()))??;
                }
                Ok(())
            })
        },
    )?;
    check_tables(bench, connection, tables)?;
    let variant = format!("Arrow × {n} connections");
    Ok(insert_case(
        bench,
        variant,
        "async",
        "AsyncArrowInserter",
        n,
        times,
    ))
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
