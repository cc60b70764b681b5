//! A socket worker stops gracefully on `SIGTERM`: it exits 0, removes its socket, and a
//! session whose client had already closed gets to log its end first, even when the
//! signal arrives before that session has read its end of file. Real processes, real
//! signals; every wait is a bounded poll, never a timing assertion.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use quiver_conformance::{PROTOCOL_NAME, PROTOCOL_VERSION};
use quiver_process::{read_announcement, Announcement};
use quiver_rpc::Client;
use quiver_shm::{Segment, ShmConfig};
use quiver_transport::socket::{connect_tcp, connect_unix};
use quiver_transport::Connection;

/// Generous bound for anything a loaded machine may be slow at.
const PATIENCE: Duration = Duration::from_secs(30);

struct Worker {
    process: std::process::Child,
    announcement: Announcement,
    socket: PathBuf,
    dir: PathBuf,
}

fn start_worker(tag: &str, shm_debug: bool) -> Worker {
    let dir = std::env::temp_dir().join(format!("quiver-graceful-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create test dir");
    let socket = dir.join("worker.sock");
    let worker = start_worker_with(&["--unix".as_ref(), socket.as_os_str()], dir, shm_debug);
    assert!(
        matches!(&worker.announcement, Announcement::Unix(path) if path == &worker.socket),
        "{:?} announces its socket",
        worker.announcement
    );
    assert!(
        worker.socket.exists(),
        "{} is listening",
        worker.socket.display()
    );
    worker
}

fn start_worker_with(args: &[&std::ffi::OsStr], dir: PathBuf, shm_debug: bool) -> Worker {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quiver-conformance-worker"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if shm_debug {
        command.env("VGI_RPC_SHM_DEBUG", "1");
    } else {
        command.env_remove("VGI_RPC_SHM_DEBUG");
    }
    let mut process = command.spawn().expect("spawn worker");
    let stdout = process.stdout.take().expect("stdout piped");
    let announcement = read_announcement(&stdout, PATIENCE, &|| false).expect("announcement");
    let socket = match &announcement {
        Announcement::Unix(path) => path.clone(),
        Announcement::Port(_) => PathBuf::new(),
    };
    Worker {
        process,
        announcement,
        socket,
        dir,
    }
}

fn client(socket: &Path, shm: bool) -> Client {
    call_noop(connect_unix(socket).expect("connect"), shm)
}

fn call_noop(connection: Connection, shm: bool) -> Client {
    let mut client = Client::new(connection).with_protocol(PROTOCOL_NAME, PROTOCOL_VERSION);
    if shm {
        let config = ShmConfig {
            segment_size_bytes: Some(4 << 20),
            ..ShmConfig::default()
        };
        client = client.with_shm(Segment::create(4 << 20).expect("segment"), &config);
    }
    let empty = RecordBatch::new_empty(Arc::new(Schema::empty()));
    client.call("void_noop", &empty).expect("void_noop");
    client
}

fn terminate(worker: &Worker) {
    // SAFETY: kill with a valid pid of a child we have not reaped.
    let status = unsafe { libc::kill(worker.process.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(status, 0, "kill(SIGTERM)");
}

/// Waits for the worker to exit (bounded) and returns its status and stderr.
fn wait_for_exit(mut worker: Worker) -> (ExitStatus, String, PathBuf) {
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = worker.process.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = worker.process.kill();
            let _ = worker.process.wait();
            panic!("worker still running {PATIENCE:?} after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    worker
        .process
        .stderr
        .take()
        .expect("stderr piped")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let _ = std::fs::remove_dir_all(&worker.dir);
    (status, stderr, worker.socket)
}

#[test]
fn a_terminated_worker_with_an_idle_connection_exits_0_and_removes_its_socket() {
    let worker = start_worker("idle", false);
    let open = client(&worker.socket, false);
    terminate(&worker);
    let (status, stderr, socket) = wait_for_exit(worker);
    assert_eq!(
        status.code(),
        Some(0),
        "exit status {status:?}; stderr:\n{stderr}"
    );
    assert!(!socket.exists(), "{} was left behind", socket.display());
    assert!(
        stderr.contains("session(s) still open"),
        "a session that never ends is given up on, and said so; stderr:\n{stderr}"
    );
    drop(open);
}

#[test]
fn a_session_whose_client_closed_logs_its_end_before_the_worker_exits() {
    // The race this guards against is lost only sometimes: run it a few times.
    for round in 0..5 {
        let worker = start_worker(&format!("closed-{round}"), true);
        let closed = client(&worker.socket, true);
        assert!(
            closed.shm_route().is_some(),
            "the client uses shared memory"
        );
        drop(closed);
        terminate(&worker);
        let (status, stderr, socket) = wait_for_exit(worker);
        assert_eq!(
            status.code(),
            Some(0),
            "round {round}: exit status {status:?}; stderr:\n{stderr}"
        );
        assert!(!socket.exists(), "round {round}: socket left behind");
        assert!(
            stderr.contains("[quiver-shm] conn closed"),
            "round {round}: the session's shared-memory summary is missing; stderr:\n{stderr}"
        );
        assert!(
            !stderr.contains("still open"),
            "round {round}: a closed session must not hold the stop; stderr:\n{stderr}"
        );
    }
}

#[test]
fn a_terminated_tcp_worker_exits_0() {
    let dir = std::env::temp_dir().join(format!("quiver-graceful-{}-tcp", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create test dir");
    let worker = start_worker_with(&["--tcp".as_ref(), "127.0.0.1:0".as_ref()], dir, false);
    let Announcement::Port(port) = worker.announcement else {
        panic!(
            "expected a PORT announcement, got {:?}",
            worker.announcement
        );
    };
    let closed = call_noop(connect_tcp(("127.0.0.1", port)).expect("connect"), false);
    drop(closed);
    terminate(&worker);
    let (status, stderr, _) = wait_for_exit(worker);
    assert_eq!(
        status.code(),
        Some(0),
        "exit status {status:?}; stderr:\n{stderr}"
    );
}
