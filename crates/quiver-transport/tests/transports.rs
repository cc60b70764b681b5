//! Every transport carries bytes both ways, and waits end at EOF, a deadline or an interrupt.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use quiver_transport::fd_io::{self, FdReader, FdWriter, Stopped};
use quiver_transport::socket::{connect_tcp, connect_unix, TcpListener, UnixListener};
use quiver_transport::{pipe_pair, spawn, Connection, TransportKind};

/// Sends `ping` from `a`, echoes it back from `b`, checks it arrives.
fn round_trip(a: &mut Connection, b: &mut Connection) {
    a.writer.write_all(b"ping").unwrap();
    let mut got = [0u8; 4];
    b.reader.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"ping");
    b.writer.write_all(b"pong").unwrap();
    a.reader.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"pong");
}

fn temp_socket(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "quiver-transport-{tag}-{}.sock",
        std::process::id()
    ))
}

#[test]
fn a_pipe_pair_carries_bytes_both_ways_then_ends_at_eof() {
    let (mut a, mut b) = pipe_pair().unwrap();
    assert_eq!(a.kind, TransportKind::Pipe);
    round_trip(&mut a, &mut b);
    drop(a);
    let mut rest = Vec::new();
    assert_eq!(
        b.reader.read_to_end(&mut rest).unwrap(),
        0,
        "EOF once the peer closes"
    );
}

#[test]
fn unix_sockets_connect_accept_and_remove_their_path() {
    let path = temp_socket("unix");
    let listener = UnixListener::bind(&path).unwrap();
    assert!(path.exists());
    let accepting = std::thread::spawn(move || {
        let mut server = listener.accept().unwrap();
        let mut got = [0u8; 4];
        server.reader.read_exact(&mut got).unwrap();
        server.writer.write_all(&got).unwrap();
        listener
    });
    let mut client = connect_unix(&path).unwrap();
    assert_eq!(client.kind, TransportKind::Unix);
    client.writer.write_all(b"echo").unwrap();
    let mut got = [0u8; 4];
    client.reader.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"echo");
    let listener = accepting.join().unwrap();
    let registered = quiver_process::cleanup::registered(quiver_process::cleanup::Kind::File);
    assert!(registered.contains(&path.to_string_lossy().into_owned()));
    drop(listener);
    assert!(!path.exists(), "the listener removes its socket");
    let registered = quiver_process::cleanup::registered(quiver_process::cleanup::Kind::File);
    assert!(!registered.contains(&path.to_string_lossy().into_owned()));
}

#[test]
fn tcp_connects_and_accepts_on_a_free_port() {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.port().unwrap();
    let accepting = std::thread::spawn(move || server.accept().unwrap());
    let mut client = connect_tcp(format!("127.0.0.1:{port}")).unwrap();
    let mut served = accepting.join().unwrap();
    assert_eq!(client.kind, TransportKind::Tcp);
    assert!(!client.kind.is_local());
    round_trip(&mut client, &mut served);
}

#[test]
fn a_stdio_child_echoes_and_exits_when_its_input_closes() {
    let (mut child, mut connection) = spawn("cat", &[]).unwrap();
    connection.writer.write_all(b"through cat\n").unwrap();
    let mut got = [0u8; 12];
    connection.reader.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"through cat\n");
    drop(connection);
    let status = child
        .wait_for_exit(Duration::from_secs(30))
        .expect("cat exits at EOF");
    assert!(status.success());
}

#[test]
fn a_deadline_stops_a_silent_peer_and_eof_follows_its_close() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let mut reader = FdReader::new(OwnedFd::from(ours.try_clone().unwrap())).unwrap();
    let mut writer = FdWriter::new(OwnedFd::from(ours)).unwrap();
    let mut peer = theirs;
    peer.write_all(b"hello").unwrap();
    let mut buf = [0u8; 5];
    reader.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"hello");
    writer.write_all(b"back").unwrap();
    let mut back = [0u8; 4];
    peer.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"back");
    let started = Instant::now();
    let error =
        fd_io::with_deadline(Duration::from_millis(120), || reader.read(&mut buf)).unwrap_err();
    assert_eq!(fd_io::stopped(&error), Some(Stopped::TimedOut));
    assert!(started.elapsed() >= Duration::from_millis(100));
    drop(peer);
    assert_eq!(
        reader.read(&mut buf).unwrap(),
        0,
        "EOF after the peer closes"
    );
}

static STOP: AtomicBool = AtomicBool::new(false);

fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

#[test]
fn the_interrupt_check_stops_a_wait_and_is_scoped_to_its_call() {
    let (ours, _theirs) = UnixStream::pair().unwrap();
    let mut reader = FdReader::new(OwnedFd::from(ours)).unwrap();
    let stopper = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(100));
        STOP.store(true, Ordering::SeqCst);
    });
    let mut buf = [0u8; 1];
    let error = fd_io::with_interrupt_check(stop_requested, || reader.read(&mut buf)).unwrap_err();
    assert_eq!(fd_io::stopped(&error), Some(Stopped::Interrupted));
    stopper.join().unwrap();
    assert!(!fd_io::interrupted(), "the check ends with its call");
}

#[test]
fn a_unix_connection_for_a_launcher_waits_interruptibly() {
    let path = temp_socket("launcher");
    let listener = UnixListener::bind(&path).unwrap();
    let mut client = fd_io::connect_unix(&path, "test worker").unwrap();
    let mut served = listener.accept().unwrap();
    round_trip(&mut client, &mut served);
    let mut buf = [0u8; 1];
    let error = fd_io::with_deadline(Duration::from_millis(50), || client.reader.read(&mut buf))
        .unwrap_err();
    assert_eq!(fd_io::stopped(&error), Some(Stopped::TimedOut));
}
