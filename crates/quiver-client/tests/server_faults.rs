//! The client against the real server under faults: a cancelled statement (sync and async), a
//! server killed mid-query, a server stopped by dropping its `ServerProcess`, and a pool holding a
//! connection the server's death broke, a dropped async stream, a reply over the client's message
//! limit. Like `server.rs`, no test skips.

mod support;

use std::time::{Duration, Instant};

use quiver_client::{
    AsyncConnection, ConnectOptions, Connection, Error, Pool, ServerOptions, ServerProcess, Shm,
};
use support::real_server::{self, shared};

const WAIT_MAX: Duration = Duration::from_secs(30);

fn unix(server: &ServerProcess, shm: Shm) -> Connection {
    let address = server.unix_address().expect("a unix listener");
    server
        .connect_to(address, ConnectOptions::default().shm(shm))
        .unwrap()
}

#[test]
fn cancel_interrupts_a_running_query() {
    let mut connection = unix(shared(), Shm::Off);
    let handle = connection.cancel_handle();
    let canceller = std::thread::spawn(move || {
        let deadline = Instant::now() + WAIT_MAX;
        while Instant::now() < deadline {
            if handle.cancel().unwrap() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    });
    // Long enough for the cancel to land, bounded so a cancel that never lands fails the test
    // instead of hanging it.
    let slow = "SELECT count(*) FROM range(100000000000) a";
    let error = connection.query_arrow(slow).unwrap_err();
    assert!(
        canceller.join().unwrap(),
        "cancel never found the query running"
    );
    assert!(error.connection_usable(), "{error}");
    assert_eq!(connection.query_scalar_i64("SELECT 1").unwrap(), Some(1));
}

#[test]
fn a_cancel_takes_no_place_among_max_connections() {
    let server = ServerProcess::spawn(ServerOptions {
        max_connections: Some(1),
        ..real_server::options()
    })
    .unwrap();
    let mut connection = unix(&server, Shm::Off);
    assert!(
        server.connect().is_err(),
        "the one place is taken: a second session is refused"
    );
    let handle = connection.cancel_handle();
    let canceller = std::thread::spawn(move || {
        let deadline = Instant::now() + WAIT_MAX;
        while Instant::now() < deadline {
            if handle.cancel().unwrap() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    });
    let slow = "SELECT count(*) FROM range(100000000000) a";
    let error = connection.query_arrow(slow).unwrap_err();
    assert!(canceller.join().unwrap(), "the cancel never landed");
    assert!(error.connection_usable(), "{error}");
}

#[test]
fn a_killed_server_is_an_error_not_a_hang() {
    let server = real_server::spawn();
    let mut connection = unix(&server, Shm::Off);
    let pid = server.pid() as i32;
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut failure = None;
        for batch in connection
            .query("SELECT range FROM range(1000000000000)")
            .unwrap()
        {
            if let Err(error) = batch {
                failure = Some(error);
                break;
            }
        }
        let _ = done.send(failure);
    });
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signalling the server this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let failure = outcome
        .recv_timeout(WAIT_MAX)
        .expect("the query hung after the kill");
    let error = failure.expect("the stream ended cleanly after the kill");
    assert!(matches!(error, Error::Connection(_)), "{error}");
}

#[test]
fn dropping_the_server_process_stops_the_server() {
    let server = real_server::spawn();
    let pid = server.pid() as i32;
    let path = match server.unix_address().unwrap() {
        quiver_client::Address::Unix(path) => path.clone(),
        _ => unreachable!(),
    };
    assert!(quiver_process::pid_alive(pid));
    drop(server);
    let deadline = Instant::now() + WAIT_MAX;
    while quiver_process::pid_alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !quiver_process::pid_alive(pid),
        "the server outlived its ServerProcess"
    );
    assert!(!path.exists(), "the server left its socket behind");
}

#[test]
fn the_pool_discards_connections_a_dead_server_broke() {
    let server = real_server::spawn();
    let pool = Pool::new(
        server.unix_address().unwrap(),
        ConnectOptions::default(),
        2,
        WAIT_MAX,
    )
    .unwrap();
    let mut connection = pool.get().unwrap();
    assert_eq!(connection.query_scalar_i64("SELECT 1").unwrap(), Some(1));
    // SAFETY: signalling the server this test started.
    unsafe { libc::kill(server.pid() as i32, libc::SIGKILL) };
    let error = connection.execute("SELECT 1").unwrap_err();
    assert!(!error.connection_usable(), "{error}");
    assert!(connection.is_broken());
    drop(connection);
    assert_eq!(
        pool.open(),
        0,
        "a broken connection does not go back to the pool"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_query_is_cancelled_from_another_task() {
    let address = shared().unix_address().unwrap().clone();
    let connection = AsyncConnection::connect(address, None).await.unwrap();
    let canceller = connection.clone();
    let cancelling = tokio::spawn(async move {
        let deadline = Instant::now() + WAIT_MAX;
        while Instant::now() < deadline {
            if canceller.cancel().await.unwrap() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    });
    let error = connection
        .query_arrow("SELECT count(*) FROM range(100000000000) a")
        .await
        .unwrap_err();
    assert!(
        cancelling.await.unwrap(),
        "cancel never found the query running"
    );
    assert!(matches!(error, Error::Sql(_)), "{error}");
    let answer = connection.query_arrow("SELECT 5").await.unwrap();
    assert_eq!(answer[0].num_rows(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_async_stream_cancels_and_frees_the_connection() {
    let address = shared().unix_address().unwrap().clone();
    let connection = AsyncConnection::connect(address, None).await.unwrap();
    let mut stream = connection.query("SELECT * FROM range(100000000)");
    assert!(stream.next_batch().await.unwrap().is_ok());
    drop(stream);
    // The next call waits for the cancelled query to let the connection go, then runs.
    let batches = connection
        .query_arrow("SELECT * FROM range(3)")
        .await
        .unwrap();
    assert_eq!(batches[0].num_rows(), 3);
}

#[test]
fn a_reply_over_the_message_limit_is_refused() {
    let server = shared();
    let options = ConnectOptions {
        message_bytes_max: 64 << 10,
        shm: Shm::Off,
        ..ConnectOptions::default()
    };
    let mut connection = server
        .connect_to(server.unix_address().unwrap(), options)
        .unwrap();
    // One batch of ~122880 int64 rows is ~1 MiB, over the 64 KiB this client reads.
    let error = connection
        .query_arrow("SELECT * FROM range(1000000)")
        .unwrap_err();
    assert!(matches!(error, Error::Connection(_)), "{error}");
    assert!(connection.is_broken());
}
