//! The client's side of the wire, against an in-process stand-in server (`support/fake_server.rs`):
//! sessions and tokens, typed errors, streaming queries, inserts committed or rolled back, the
//! row inserter, chunk senders, the pool and the async connection. The same operations against
//! the real server (DuckDB serving) are in `server.rs`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use quiver_client::parallel::{insert_chunks, on_connections};
use quiver_client::{AsyncConnection, ConnectOptions, Connection, Error, InsertMode, Pool};
use support::fake_server;

fn int_schema() -> Schema {
    Schema::new(vec![Field::new("i", DataType::Int64, false)])
}

fn ints(start: i64, count: i64) -> RecordBatch {
    let column = Arc::new(Int64Array::from_iter_values(start..start + count));
    RecordBatch::try_new(Arc::new(int_schema()), vec![column]).unwrap()
}

fn count(connection: &mut Connection, table: &str) -> i64 {
    connection
        .query_scalar_i64(&format!("count {table}"))
        .unwrap()
        .unwrap()
}

#[test]
fn a_session_needs_the_token() {
    let server = fake_server::start(Some("secret"));
    let refused = Connection::connect(server.address(), Some("wrong")).unwrap_err();
    assert!(matches!(refused, Error::Unauthenticated(_)), "{refused}");
    let connection = Connection::connect(server.address(), Some("secret")).unwrap();
    assert_eq!(connection.session_id().len(), 32);
    assert_eq!(connection.session().database, ":memory:");
}

#[test]
fn a_sql_error_is_typed_and_the_connection_lives() {
    let server = fake_server::start(None);
    let mut connection = Connection::connect(server.address(), None).unwrap();
    let error = connection.execute("fail").unwrap_err();
    assert!(matches!(error, Error::Sql(_)), "{error}");
    assert_eq!(error.report().unwrap().error_type, "ParserException");
    assert!(error.connection_usable());
    let error = connection.query_arrow("scan missing").unwrap_err();
    assert!(error.to_string().contains("missing"), "{error}");
    assert_eq!(connection.execute("CREATE TABLE t (i INT)").unwrap(), 0);
}

#[test]
fn a_query_streams_one_batch_at_a_time() {
    let server = fake_server::start(None);
    let options = ConnectOptions {
        batch_rows: Some(1000),
        ..ConnectOptions::default()
    };
    let mut connection = Connection::connect_with(server.address(), &options).unwrap();
    let mut expected = 0i64;
    let mut batches = 0;
    for batch in connection.query("range 2000000").unwrap() {
        let batch = batch.unwrap();
        assert!(batch.num_rows() <= 1000);
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(column.value(0), expected);
        expected += batch.num_rows() as i64;
        batches += 1;
    }
    assert_eq!(expected, 2_000_000);
    assert_eq!(batches, 2000);
    // Dropped early: the query is cancelled and the connection is in step for the next call.
    let mut stream = connection.query("range 1000000").unwrap();
    assert_eq!(stream.next().unwrap().unwrap().num_rows(), 1000);
    drop(stream);
    let all = connection.query_arrow("range 10").unwrap();
    assert_eq!(all.iter().map(RecordBatch::num_rows).sum::<usize>(), 10);
}

#[test]
fn an_insert_commits_at_finish_and_rolls_back_on_drop() {
    let server = fake_server::start(None);
    let mut connection = Connection::connect(server.address(), None).unwrap();
    let mut inserter = connection
        .arrow_inserter("t", &int_schema(), InsertMode::Create)
        .unwrap();
    inserter.write(&ints(0, 100)).unwrap();
    inserter.write(&ints(100, 50)).unwrap();
    assert_eq!(inserter.finish().unwrap(), 150);
    assert_eq!(count(&mut connection, "t"), 150);

    let mut inserter = connection
        .arrow_inserter("t", &int_schema(), InsertMode::Append)
        .unwrap();
    inserter.write(&ints(0, 100)).unwrap();
    drop(inserter);
    assert_eq!(
        count(&mut connection, "t"),
        150,
        "a dropped insert leaves no rows"
    );

    let wrong = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)])),
        vec![Arc::new(arrow_array::Int32Array::from(vec![1]))],
    )
    .unwrap();
    let mut inserter = connection
        .arrow_inserter("t", &int_schema(), InsertMode::Append)
        .unwrap();
    let error = inserter.write(&wrong).unwrap_err();
    assert!(error.to_string().contains("'i'"), "{error}");
}

#[test]
fn the_row_inserter_builds_batches() {
    let server = fake_server::start(None);
    let mut connection = Connection::connect(server.address(), None).unwrap();
    let inserter = connection
        .arrow_inserter("rows", &int_schema(), InsertMode::Create)
        .unwrap();
    let mut rows = quiver_client::RowInserter::new(inserter, 7).unwrap();
    for i in 0..100 {
        rows.add_i64(i).unwrap();
        rows.end_row().unwrap();
    }
    assert!(rows.add_f64(1.0).unwrap_err().to_string().contains("Int64"));
    assert!(rows
        .add_null()
        .unwrap_err()
        .to_string()
        .contains("not nullable"));
    assert_eq!(rows.finish().unwrap(), 100);
    assert_eq!(count(&mut connection, "rows"), 100);
    let stored = server.tables.lock().unwrap()["rows"].len();
    assert_eq!(stored, 15, "100 rows in batches of 7");
}

#[test]
fn chunk_senders_feed_one_insert() {
    let server = fake_server::start(None);
    let mut connection = Connection::connect(server.address(), None).unwrap();
    let rows = insert_chunks(
        &mut connection,
        "c",
        &int_schema(),
        InsertMode::Create,
        4,
        |i, sender| {
            for chunk in 0..10 {
                sender.send(ints((i * 10 + chunk) as i64 * 1000, 1000))?;
            }
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(rows, 40_000);
    assert_eq!(count(&mut connection, "c"), 40_000);

    let failed = insert_chunks(
        &mut connection,
        "c",
        &int_schema(),
        InsertMode::Append,
        2,
        |i, sender| {
            sender.send(ints(0, 10))?;
            if i == 1 {
                return Err(Error::InvalidInput("builder gives up".into()));
            }
            Ok(())
        },
    );
    assert!(failed.unwrap_err().to_string().contains("gives up"));
    assert_eq!(
        count(&mut connection, "c"),
        40_000,
        "a failed chunk insert leaves no rows"
    );
}

#[test]
fn n_connections_insert_in_parallel() {
    let server = fake_server::start(None);
    let mut connections: Vec<Connection> = (0..3)
        .map(|_| Connection::connect(server.address(), None).unwrap())
        .collect();
    let rows = on_connections(&mut connections, |i, connection| {
        connection.insert_batches(
            &format!("p{i}"),
            InsertMode::Create,
            &[ints(0, 500), ints(500, 500)],
        )
    })
    .unwrap();
    assert_eq!(rows, 3000);
    for i in 0..3 {
        assert_eq!(count(&mut connections[0], &format!("p{i}")), 1000);
    }
}

#[test]
fn the_pool_lends_reuses_and_discards() {
    let server = fake_server::start(None);
    let pool = Pool::new(
        server.address(),
        ConnectOptions::default(),
        2,
        Duration::from_secs(30),
    )
    .unwrap();
    let first_id = {
        let mut a = pool.get().unwrap();
        let b = pool.get().unwrap();
        assert_eq!(pool.open(), 2);
        assert_ne!(a.session_id(), b.session_id());
        a.execute("SELECT 1").unwrap();
        a.session_id().to_string()
    };
    assert_eq!(pool.idle(), 2);
    let reused = pool.get().unwrap().session_id().to_string();
    let other = pool.get().unwrap().session_id().to_string();
    assert!(reused == first_id || other == first_id || pool.idle() == 2);
    {
        let mut broken = pool.get().unwrap();
        broken.discard();
    }
    assert_eq!(pool.open(), 1);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let mut connection = pool.get().unwrap();
                assert_eq!(connection.query_arrow("range 5").unwrap()[0].num_rows(), 5);
            });
        }
    });
    assert!(pool.open() <= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_connection_streams_and_inserts() {
    let server = fake_server::start(None);
    let connection = AsyncConnection::connect(server.address(), None)
        .await
        .unwrap();
    let mut inserter = connection
        .arrow_inserter("a", &int_schema(), InsertMode::Create)
        .await
        .unwrap();
    for start in (0..10_000).step_by(1000) {
        inserter.write(ints(start, 1000)).await.unwrap();
    }
    assert_eq!(inserter.finish().await.unwrap(), 10_000);

    let mut dropped = connection
        .arrow_inserter("a", &int_schema(), InsertMode::Append)
        .await
        .unwrap();
    dropped.write(ints(0, 10)).await.unwrap();
    drop(dropped);

    let mut stream = connection.query("range 500000");
    let mut rows = 0;
    while let Some(batch) = stream.next_batch().await {
        rows += batch.unwrap().num_rows();
    }
    assert_eq!(rows, 500_000);
    let counted = connection.query_arrow("count a").await.unwrap();
    let column = counted[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(column.value(0), 10_000);
    let error = connection.execute("fail").await.unwrap_err();
    assert!(matches!(error, Error::Sql(_)));
}

#[test]
fn shared_memory_carries_large_batches_both_ways() {
    let server = fake_server::start(None);
    let options = ConnectOptions::default().shm(quiver_client::Shm::Bytes(64 << 20));
    let mut connection = Connection::connect_with(server.address(), &options).unwrap();
    assert!(connection.uses_shm());
    let big = ints(0, 1 << 18); // 2 MiB: over the 128 KiB threshold
    let rows = connection
        .insert_batches("big", InsertMode::Create, &[big.clone(), big])
        .unwrap();
    assert_eq!(rows, 1 << 19);
    let mut total = 0i64;
    let mut sum = 0i64;
    for batch in connection.query("range 3000000").unwrap() {
        let batch = batch.unwrap();
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        total += column.len() as i64;
        sum += column.values().iter().sum::<i64>();
    }
    assert_eq!(total, 3_000_000);
    assert_eq!(sum, 3_000_000i64 * 2_999_999 / 2);
    let off = ConnectOptions::default().shm(quiver_client::Shm::Off);
    assert!(!Connection::connect_with(server.address(), &off)
        .unwrap()
        .uses_shm());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_async_stream_cancels_and_frees_the_connection() {
    let server = fake_server::start(None);
    let connection = AsyncConnection::connect(server.address(), None)
        .await
        .unwrap();
    let mut stream = connection.query("range 100000000");
    assert!(stream.next_batch().await.unwrap().is_ok());
    drop(stream);
    // The next call waits for the cancelled query to let the connection go, then runs.
    let batches = connection.query_arrow("range 3").await.unwrap();
    assert_eq!(batches[0].num_rows(), 3);
}

#[test]
fn a_reply_over_the_message_limit_is_refused() {
    let server = fake_server::start(None);
    let options = ConnectOptions {
        message_bytes_max: 64 << 10,
        shm: quiver_client::Shm::Off,
        ..ConnectOptions::default()
    };
    let mut connection = Connection::connect_with(server.address(), &options).unwrap();
    // One batch of 131072 int64 rows is 1 MiB, over the 64 KiB this client reads.
    let error = connection.query_arrow("range 1000000").unwrap_err();
    assert!(matches!(error, Error::Connection(_)), "{error}");
    assert!(connection.is_broken());
}
