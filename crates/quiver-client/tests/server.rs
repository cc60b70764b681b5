//! The client against the real server (DuckDB with quiver's extension serving, started through
//! `ServerProcess`): queries, prepared statements, inserts, parallel inserts, transactions, async,
//! the pool, shared memory on and off, typed errors, 16 clients at once (the faults are in
//! `server_faults.rs`). No test skips: without a server these fail and say how to get one.

mod support;

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use quiver_client::parallel::{insert_chunks, on_connections};
use quiver_client::{
    AsyncConnection, ConnectOptions, Connection, Error, InsertMode, Param, Pool, ServerOptions,
    ServerProcess, Shm,
};
use support::real_server::{options, shared, table};

const WAIT_MAX: Duration = Duration::from_secs(30);

fn schema() -> Schema {
    Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("value", DataType::Float64, true),
    ])
}

fn rows(start: i32, count: i32) -> RecordBatch {
    let ids = Int32Array::from_iter_values(start..start + count);
    let values = Float64Array::from_iter_values((start..start + count).map(|i| i as f64 * 0.5));
    RecordBatch::try_new(Arc::new(schema()), vec![Arc::new(ids), Arc::new(values)]).unwrap()
}

fn unix(server: &ServerProcess, shm: Shm) -> Connection {
    let address = server.unix_address().expect("a unix listener");
    server
        .connect_to(address, ConnectOptions::default().shm(shm))
        .unwrap()
}

fn tcp(server: &ServerProcess) -> Connection {
    let address = server.tcp_address().expect("a tcp listener");
    server
        .connect_to(address, ConnectOptions::default())
        .unwrap()
}

fn count(connection: &mut Connection, table: &str) -> i64 {
    connection
        .query_scalar_i64(&format!("SELECT count(*) FROM {table}"))
        .unwrap()
        .unwrap()
}

#[test]
fn tcp_needs_the_token() {
    let server = shared();
    let address = server.tcp_address().unwrap();
    let error = Connection::connect(address, Some("not-the-token")).unwrap_err();
    assert!(matches!(error, Error::Unauthenticated(_)), "{error}");
    assert_eq!(error.report().unwrap().message, "authentication failed");
    let connection = tcp(server);
    assert_eq!(connection.session_id().len(), 32);
}

#[test]
fn the_flight_sql_listener_is_read_from_the_announcement() {
    assert_eq!(
        shared().flight_sql_uri(),
        None,
        "no grpc listener was asked for"
    );
    let server = ServerProcess::spawn(ServerOptions {
        extra_args: vec!["--listen".into(), "grpc://127.0.0.1:0".into()],
        ..options()
    })
    .unwrap();
    let uri = server.flight_sql_uri().expect("a FLIGHT_SQL announcement");
    let port: u16 = uri
        .strip_prefix("grpc://127.0.0.1:")
        .unwrap_or_else(|| panic!("not a loopback grpc URI: {uri}"))
        .parse()
        .unwrap();
    assert_ne!(port, 0);
    std::net::TcpStream::connect(("127.0.0.1", port)).expect("the Flight SQL port listens");
    assert_eq!(
        tcp(&server).session_id().len(),
        32,
        "the spine serves beside it"
    );
}

#[test]
fn malformed_sql_is_a_typed_error_and_the_connection_lives() {
    let mut connection = unix(shared(), Shm::Off);
    let error = connection.execute("SELEC 1").unwrap_err();
    assert!(matches!(error, Error::Sql(_)), "{error}");
    assert_eq!(error.report().unwrap().error_type, "ParserException");
    let error = connection
        .query_arrow("SELECT * FROM no_such_table")
        .unwrap_err();
    assert_eq!(error.report().unwrap().error_type, "CatalogException");
    assert_eq!(
        connection.query_scalar_i64("SELECT 41 + 1").unwrap(),
        Some(42)
    );
}

#[test]
fn a_query_streams_millions_of_rows_a_batch_at_a_time() {
    for shm in [Shm::Off, Shm::Bytes(64 << 20)] {
        let mut connection = unix(shared(), shm);
        assert_eq!(connection.uses_shm(), shm != Shm::Off);
        let (mut total, mut sum, mut batches) = (0i64, 0i64, 0);
        for batch in connection
            .query("SELECT range AS i FROM range(3000000)")
            .unwrap()
        {
            let batch = batch.unwrap();
            assert!(batch.num_rows() as i64 <= quiver_server_protocol::limits::BATCH_ROWS_DEFAULT);
            let column = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            total += column.len() as i64;
            sum += column.values().iter().sum::<i64>();
            batches += 1;
        }
        assert_eq!(total, 3_000_000);
        assert_eq!(sum, 3_000_000i64 * 2_999_999 / 2);
        assert!(batches > 10, "the result came in {batches} batches");
        // An abandoned stream leaves the connection in step.
        let mut stream = connection
            .query("SELECT range FROM range(100000000)")
            .unwrap();
        stream.next().unwrap().unwrap();
        drop(stream);
        let all = connection
            .query_arrow("SELECT range FROM range(10)")
            .unwrap();
        assert_eq!(all.iter().map(RecordBatch::num_rows).sum::<usize>(), 10);
    }
}

#[test]
fn cached_statements_are_reused_bounded_and_rebound_after_the_table_changes() {
    let mut connection = unix(shared(), Shm::Off);
    let name = table("cached");
    connection
        .execute(&format!(
            "CREATE TABLE {name} AS SELECT range::INT AS id FROM range(10)"
        ))
        .unwrap();
    let sql = format!("SELECT count(*) FROM {name} WHERE id >= ?");
    let count = |connection: &mut Connection, threshold: i32| -> i64 {
        let row = quiver_client::params::row(&[threshold.into()]).unwrap();
        let batches: Vec<RecordBatch> = connection
            .query_cached(&sql, Some(&row))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        batches[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(0)
    };
    assert_eq!(count(&mut connection, 3), 7);
    assert_eq!(
        count(&mut connection, 8),
        2,
        "the same statement, new parameters"
    );
    assert_eq!(connection.cached_statements(), 1);
    assert!(
        connection.query_cached(&sql, None).is_err(),
        "a missing parameter is refused"
    );

    // The table replaced under the cached plan: DuckDB rebinds it.
    connection
        .execute(&format!(
            "CREATE OR REPLACE TABLE {name} AS SELECT range::INT AS id FROM range(100)"
        ))
        .unwrap();
    assert_eq!(count(&mut connection, 3), 97);

    // Bounded: the least recently used statements are closed on the server.
    for extra in 0..quiver_client::STATEMENT_CACHE_MAX + 8 {
        let other = format!("SELECT {extra} AS n");
        let batches: Vec<RecordBatch> = connection
            .query_cached(&other, None)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(batches[0].num_rows(), 1);
    }
    assert_eq!(
        connection.cached_statements(),
        quiver_client::STATEMENT_CACHE_MAX
    );
    assert_eq!(
        count(&mut connection, 50),
        50,
        "an evicted statement is prepared again"
    );
}

#[test]
fn prepared_statements_take_parameters() {
    let mut connection = unix(shared(), Shm::Off);
    let name = table("prepared");
    connection
        .execute(&format!(
            "CREATE TABLE {name} (id INT NOT NULL, value DOUBLE)"
        ))
        .unwrap();
    let inserted = connection
        .execute_with(&format!("INSERT INTO {name} VALUES (?, ?)"), &rows(0, 5))
        .unwrap();
    assert_eq!(inserted, 5);
    let mut statement = connection
        .prepare(&format!(
            "SELECT id, value FROM {name} WHERE id >= ? ORDER BY id"
        ))
        .unwrap();
    assert_eq!(statement.parameter_count(), 1);
    let threshold = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("p", DataType::Int32, false)])),
        vec![Arc::new(Int32Array::from(vec![3]))],
    )
    .unwrap();
    let result: Vec<RecordBatch> = statement
        .query(Some(&threshold))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let ids = result[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int32Array>()
        .unwrap();
    assert_eq!(ids.values().to_vec(), vec![3, 4]);
    assert!(
        statement.execute(None).is_err(),
        "a missing parameter is refused"
    );
    statement.close().unwrap();

    let typed = quiver_client::params::row(&[7.into(), Param::Null]).unwrap();
    let sql = format!("INSERT INTO {name} VALUES ($1, $2)");
    assert_eq!(connection.execute_with(&sql, &typed).unwrap(), 1);
    let nulls = connection
        .query_scalar_i64(&format!(
            "SELECT count(*) FROM {name} WHERE id = 7 AND value IS NULL"
        ))
        .unwrap();
    assert_eq!(nulls, Some(1));
}

#[test]
fn an_arrow_insert_commits_at_finish_and_rolls_back_on_drop() {
    for shm in [Shm::Off, Shm::Bytes(64 << 20)] {
        let mut connection = unix(shared(), shm);
        let name = table("arrow");
        let mut inserter = connection
            .arrow_inserter(&name, &schema(), InsertMode::Create)
            .unwrap();
        inserter.write(&rows(0, 200_000)).unwrap();
        inserter.write(&rows(200_000, 50)).unwrap();
        assert_eq!(inserter.finish().unwrap(), 200_050);
        assert_eq!(count(&mut connection, &name), 200_050);

        let mut inserter = connection
            .arrow_inserter(&name, &schema(), InsertMode::Append)
            .unwrap();
        inserter.write(&rows(0, 1000)).unwrap();
        drop(inserter);
        assert_eq!(
            count(&mut connection, &name),
            200_050,
            "a dropped insert leaves no rows"
        );
        let columns = connection.table_schema(&name).unwrap();
        assert_eq!(columns.field(0).name(), "id");
        assert!(connection
            .tables()
            .unwrap()
            .iter()
            .any(|t| t.table_name == name));
    }
}

#[test]
fn a_batch_built_in_the_output_space_is_inserted_in_place() {
    let mut connection = unix(shared(), Shm::Bytes(64 << 20));
    let count_rows: usize = 500_000;
    let space = connection.output_space();
    let (id_bytes, value_bytes) = (4 * count_rows, 8 * count_rows);
    let mut region = space
        .region(id_bytes.next_multiple_of(64) + value_bytes)
        .expect("a region of the segment");
    let mut ids = region.buffer(id_bytes).unwrap();
    let mut values = region.buffer(value_bytes).unwrap();
    for (i, (id, value)) in ids
        .typed_data_mut::<i32>()
        .iter_mut()
        .zip(values.typed_data_mut::<f64>())
        .enumerate()
    {
        (*id, *value) = (i as i32, i as f64 * 0.5);
    }
    drop(region);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::new(ids.into_buffer().into(), None)),
        Arc::new(Float64Array::new(values.into_buffer().into(), None)),
    ];
    let batch = RecordBatch::try_new(Arc::new(schema()), columns).unwrap();
    connection
        .execute("CREATE TABLE built_in_place (id INTEGER NOT NULL, value DOUBLE)")
        .unwrap();
    let mut inserter = connection
        .arrow_inserter("built_in_place", &schema(), InsertMode::Append)
        .unwrap();
    inserter.write(&batch).unwrap();
    drop(batch);
    assert_eq!(inserter.finish().unwrap(), count_rows as u64);
    let stats = connection.shm_stats().expect("a segment");
    assert_eq!(
        stats.outbound_in_place, 1,
        "the batch crossed without a copy"
    );
    let sum = connection
        .query_scalar_i64("SELECT sum(id)::BIGINT FROM built_in_place WHERE value = id * 0.5")
        .unwrap();
    let n = count_rows as i64;
    assert_eq!(sum, Some(n * (n - 1) / 2));
}

#[test]
fn an_insert_of_the_wrong_schema_names_the_column() {
    let mut connection = unix(shared(), Shm::Off);
    let name = table("typed");
    connection
        .insert_batches(&name, InsertMode::Create, &[rows(0, 3)])
        .unwrap();
    let other = Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("label", DataType::Utf8, true),
    ]);
    let error = connection
        .arrow_inserter(&name, &other, InsertMode::Append)
        .and_then(|mut inserter| {
            let labels = arrow_array::StringArray::from(vec!["x"]);
            let batch = RecordBatch::try_new(
                Arc::new(other.clone()),
                vec![Arc::new(Int32Array::from(vec![1])), Arc::new(labels)],
            )
            .unwrap();
            inserter.write(&batch)?;
            inserter.finish()
        })
        .unwrap_err();
    assert!(
        error.to_string().contains("label") || error.to_string().contains("value"),
        "{error}"
    );
    assert!(error.connection_usable());
    assert_eq!(count(&mut connection, &name), 3);
}

#[test]
fn the_row_inserter_and_both_chunk_sender_shapes_count_exactly() {
    let server = shared();
    let mut connection = unix(server, Shm::Off);
    let name = table("rows");
    let mut inserter = connection
        .row_inserter(&name, &schema(), InsertMode::Create)
        .unwrap();
    for i in 0..10_000 {
        inserter.add_i32(i).unwrap();
        if i % 2 == 0 {
            inserter.add_f64(i as f64).unwrap();
        } else {
            inserter.add_null().unwrap();
        }
        inserter.end_row().unwrap();
    }
    assert_eq!(inserter.finish().unwrap(), 10_000);
    let nulls = connection
        .query_scalar_i64(&format!("SELECT count(*) FROM {name} WHERE value IS NULL"))
        .unwrap();
    assert_eq!(nulls, Some(5_000));

    let name = table("chunks");
    let sent = insert_chunks(
        &mut connection,
        &name,
        &schema(),
        InsertMode::Create,
        3,
        |i, sender| {
            for chunk in 0..5 {
                sender.send(rows((i as i32 * 5 + chunk) * 10_000, 10_000))?;
            }
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(sent, 150_000);
    assert_eq!(count(&mut connection, &name), 150_000);

    let mut connections: Vec<Connection> = (0..2).map(|_| unix(server, Shm::Off)).collect();
    let prefix = table("parallel");
    let total = on_connections(&mut connections, |i, connection| {
        connection.insert_batches(
            &format!("{prefix}_{i}"),
            InsertMode::Create,
            &[rows(0, 70_000)],
        )
    })
    .unwrap();
    assert_eq!(total, 140_000);
    for i in 0..2 {
        assert_eq!(count(&mut connection, &format!("{prefix}_{i}")), 70_000);
    }
}

#[test]
fn transactions_span_calls() {
    let mut connection = unix(shared(), Shm::Off);
    let name = table("tx");
    connection
        .insert_batches(&name, InsertMode::Create, &[rows(0, 10)])
        .unwrap();
    connection.begin().unwrap();
    connection
        .insert_batches(&name, InsertMode::Append, &[rows(10, 10)])
        .unwrap();
    assert_eq!(count(&mut connection, &name), 20);
    connection.rollback().unwrap();
    assert_eq!(count(&mut connection, &name), 10);
}

#[test]
fn the_pool_shares_connections_between_threads() {
    let server = shared();
    let pool = Pool::new(
        server.unix_address().unwrap(),
        ConnectOptions::default(),
        2,
        WAIT_MAX,
    )
    .unwrap();
    std::thread::scope(|scope| {
        for _ in 0..6 {
            scope.spawn(|| {
                let mut connection = pool.get().unwrap();
                assert_eq!(connection.query_scalar_i64("SELECT 7").unwrap(), Some(7));
            });
        }
    });
    assert!(pool.open() <= 2 && pool.open() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_connection_streams_and_inserts() {
    let server = shared();
    let address = server.unix_address().unwrap().clone();
    let connection = AsyncConnection::connect(address, None).await.unwrap();
    let name = table("async");
    let mut inserter = connection
        .arrow_inserter(&name, &schema(), InsertMode::Create)
        .await
        .unwrap();
    for start in (0..500_000).step_by(100_000) {
        inserter.write(rows(start, 100_000)).await.unwrap();
    }
    assert_eq!(inserter.finish().await.unwrap(), 500_000);
    let mut stream = connection.query(&format!("SELECT id FROM {name}"));
    let mut total = 0;
    while let Some(batch) = stream.next_batch().await {
        total += batch.unwrap().num_rows();
    }
    assert_eq!(total, 500_000);
}

#[test]
fn sixteen_clients_insert_and_query_at_once() {
    let server = shared();
    let name = table("many");
    unix(server, Shm::Off)
        .execute(&format!(
            "CREATE TABLE {name} (id INT NOT NULL, value DOUBLE)"
        ))
        .unwrap();
    std::thread::scope(|scope| {
        for i in 0..16 {
            let name = &name;
            scope.spawn(move || {
                let mut connection = unix(server, Shm::Off);
                connection
                    .insert_batches(name, InsertMode::Append, &[rows(i * 1000, 1000)])
                    .unwrap();
                assert!(count(&mut connection, name) >= 1000);
            });
        }
    });
    let mut connection = unix(server, Shm::Off);
    assert_eq!(count(&mut connection, &name), 16_000);
    let sum = connection
        .query_scalar_i64(&format!("SELECT sum(id) FROM {name}"))
        .unwrap();
    assert_eq!(sum, Some(16_000 * 15_999 / 2));
}

#[test]
fn nothing_leaks_into_the_null_mask() {
    // Nulls written by the row inserter come back as nulls, values as values.
    let mut connection = unix(shared(), Shm::Off);
    let name = table("nulls");
    let mut inserter = connection
        .row_inserter(&name, &schema(), InsertMode::Create)
        .unwrap();
    inserter.add_i32(1).unwrap();
    inserter.add_null().unwrap();
    inserter.end_row().unwrap();
    inserter.add_i32(2).unwrap();
    inserter.add_f64(2.5).unwrap();
    inserter.end_row().unwrap();
    inserter.finish().unwrap();
    let batches = connection
        .query_arrow(&format!("SELECT value FROM {name} ORDER BY id"))
        .unwrap();
    let values = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    assert!(values.is_null(0));
    assert_eq!(values.value(1), 2.5);
}
