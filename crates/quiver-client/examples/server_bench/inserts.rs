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

/// The six insert shapes.
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
    let checksum = measured.checksum;
    let rows = measured.rows;
    out.push(measured);

    // The seed's fastest shape: an async inserter per connection, all driven at once.
    let asynchronous: Vec<AsyncConnection> = (0..n)
        .map(|_| (bench.connect)().map(AsyncConnection::from_sync))
        .collect::<Result<_>>()?;
    let times = timed(
        bench,
        &mut connection,
        |c| tables.iter().try_for_each(|t| recreate(c, t)),
        |_, _| {
            bench.runtime.block_on(async {
                let tasks: Vec<_> = asynchronous
                    .iter()
                    .enumerate()
                    .map(|(i, worker)| {
                        let (worker, table) = (worker.clone(), tables[i].clone());
                        let batches = bench.worker_data[i].clone();
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
    for (i, t) in tables.iter().enumerate() {
        check(
            t,
            &held(&mut connection, t)?,
            &Checksum::of(&bench.worker_data[i]),
        )?;
    }
    let mut measured = insert_case(
        bench,
        format!("Arrow × {n} connections"),
        "async",
        "AsyncArrowInserter",
        n,
        times,
    );
    measured.rows = rows;
    measured.checksum = checksum;
    out.push(measured);
    for t in &tables {
        connection.execute(&format!("DROP TABLE {t}"))?;
    }
    connection.execute(&format!("DROP TABLE {table}"))?;
    Ok(out)
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
