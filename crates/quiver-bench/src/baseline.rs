//! The machine's own limits, measured in the same run: 1-byte round trips over a
//! pipe (between processes and between threads), a Unix socket and loopback TCP;
//! pipe bandwidth between processes in 1 MiB writes; and memcpy bandwidth.

use std::fs::File;
use std::hint::black_box;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use quiver_process::{Child, StderrMode};

use crate::placement::{pin_current_thread, Placement, CROSS_CPU, ONE_THREAD, SAME_CPU};
use crate::plan::{implementation, Measurement, Plan};
use crate::stats::{time_rep, try_time_rep};

/// Bytes per write in the pipe bandwidth baseline.
pub const PIPE_WRITE_BYTES: usize = 1 << 20;

type Result<T> = std::io::Result<T>;

/// Every baseline, in a fixed order.
pub fn run_all(plan: &Plan, log: &mut dyn FnMut(&str)) -> Result<Vec<Measurement>> {
    let mut out = Vec::new();
    for placement in placements() {
        placement.pin_client()?;
        log(&format!("baseline: 1-byte round trips, {}", placement.name));
        out.push(rtt_pipe_processes(plan, placement)?);
        out.push(rtt_pipe_threads(plan, placement)?);
        if placement == CROSS_CPU.available() {
            out.push(rtt_unix(plan, placement)?);
            out.push(rtt_tcp(plan, placement)?);
        }
    }
    for placement in placements() {
        placement.pin_client()?;
        log(&format!(
            "baseline: pipe bandwidth between processes, {}",
            placement.name
        ));
        out.push(pipe_bandwidth(plan, placement)?);
    }
    log("baseline: memcpy bandwidth");
    out.push(memcpy(plan));
    Ok(out)
}

/// Cross-CPU then same-CPU, or only same-CPU on a one-CPU machine.
pub fn placements() -> Vec<Placement> {
    if CROSS_CPU.available() == CROSS_CPU {
        vec![CROSS_CPU, SAME_CPU]
    } else {
        vec![SAME_CPU]
    }
}

fn raw_child(placement: Placement, args: &[&str]) -> Result<Child> {
    let mut command = Command::new(std::env::current_exe()?);
    command
        .arg("raw-peer")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    placement.pin_server_command(&mut command);
    Child::spawn(command, StderrMode::Inherit)
}

/// How long a raw peer gets to exit once its input is closed.
const RAW_PEER_EXIT_LIMIT: Duration = Duration::from_secs(60);

/// Waits for a raw peer whose input we closed to exit; an error if it hangs.
fn reap(child: &mut Child) -> Result<()> {
    if child.wait_for_exit(RAW_PEER_EXIT_LIMIT).is_some() {
        return Ok(());
    }
    child.terminate(Duration::ZERO);
    Err(std::io::Error::other(format!(
        "the raw peer did not exit within {RAW_PEER_EXIT_LIMIT:?} of its input closing"
    )))
}

fn measurement(variant: &str, transport: &str, placement: &str, bytes_per_op: u64) -> Measurement {
    Measurement {
        workload: format!("baseline.{variant}"),
        variant: variant.to_string(),
        transport: transport.to_string(),
        implementation: implementation::RAW.to_string(),
        placement: placement.to_string(),
        rows_per_op: 0,
        bytes_per_op,
        reps: Vec::new(),
    }
}

/// Times `plan.rtt_ops` 1-byte round trips per rep over `writer` → peer → `reader`.
fn rtt_reps(
    plan: &Plan,
    mut writer: impl Write,
    mut reader: impl Read,
    into: &mut Measurement,
) -> Result<()> {
    let mut round_trip = || -> Result<()> {
        writer.write_all(&[7])?;
        let mut back = [0u8; 1];
        reader.read_exact(&mut back)?;
        assert_eq!(back[0], 7, "echo peer returned a different byte");
        Ok(())
    };
    for _ in 0..plan.unary_warmup {
        round_trip()?;
    }
    for _ in 0..plan.reps {
        into.reps.push(try_time_rep(plan.rtt_ops, &mut round_trip)?);
    }
    Ok(())
}

fn rtt_pipe_processes(plan: &Plan, placement: Placement) -> Result<Measurement> {
    let mut child = raw_child(placement, &["--mode", "echo"])?;
    let writer = child.take_stdin().expect("piped stdin");
    let reader = child.take_stdout().expect("piped stdout");
    let mut m = measurement("rtt-1byte", "pipe", placement.name, 1);
    rtt_reps(plan, &writer, reader, &mut m)?;
    drop(writer);
    reap(&mut child)?;
    Ok(m)
}

fn rtt_pipe_threads(plan: &Plan, placement: Placement) -> Result<Measurement> {
    let (to_peer_read, to_peer_write) = os_pipe()?;
    let (from_peer_read, from_peer_write) = os_pipe()?;
    let server_cpu = placement.server_cpu;
    let peer = std::thread::spawn(move || {
        pin_current_thread(server_cpu).expect("pin echo thread");
        let (mut input, mut output) = (to_peer_read, from_peer_write);
        let mut byte = [0u8; 1];
        while matches!(input.read(&mut byte), Ok(1)) {
            if output.write_all(&byte).is_err() {
                break;
            }
        }
    });
    let mut m = measurement("rtt-1byte", "pipe-threads", placement.name, 1);
    rtt_reps(plan, &to_peer_write, from_peer_read, &mut m)?;
    drop(to_peer_write);
    peer.join().expect("echo thread");
    Ok(m)
}

fn rtt_unix(plan: &Plan, placement: Placement) -> Result<Measurement> {
    let path = std::env::temp_dir().join(format!("quiver-bench-{}-rtt.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    let mut child = raw_child(
        placement,
        &[
            "--mode",
            "echo",
            "--unix",
            path.to_str().expect("utf-8 temp path"),
        ],
    )?;
    let (stream, _) = listener.accept()?;
    let _ = std::fs::remove_file(&path);
    let mut m = measurement("rtt-1byte", "unix", placement.name, 1);
    rtt_reps(plan, &stream, &stream, &mut m)?;
    drop(stream);
    reap(&mut child)?;
    Ok(m)
}

fn rtt_tcp(plan: &Plan, placement: Placement) -> Result<Measurement> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?.to_string();
    let mut child = raw_child(placement, &["--mode", "echo", "--tcp", &address])?;
    let (stream, _) = listener.accept()?;
    stream.set_nodelay(true)?;
    let mut m = measurement("rtt-1byte", "tcp", placement.name, 1);
    rtt_reps(plan, &stream, &stream, &mut m)?;
    drop(stream);
    reap(&mut child)?;
    Ok(m)
}

/// One operation = one large-batch-sized transfer in 1 MiB writes, ended by the
/// reader's 1-byte acknowledgement.
fn pipe_bandwidth(plan: &Plan, placement: Placement) -> Result<Measurement> {
    let transfer_bytes = plan.large_bytes();
    assert_eq!(transfer_bytes % PIPE_WRITE_BYTES as u64, 0);
    let mut child = raw_child(
        placement,
        &["--mode", "sink", "--ack-every", &transfer_bytes.to_string()],
    )?;
    let mut writer = child.take_stdin().expect("piped stdin");
    let mut reader = child.take_stdout().expect("piped stdout");
    let chunk = vec![0x5au8; PIPE_WRITE_BYTES];
    let mut transfer = || -> Result<()> {
        for _ in 0..transfer_bytes / PIPE_WRITE_BYTES as u64 {
            writer.write_all(&chunk)?;
        }
        let mut ack = [0u8; 1];
        reader.read_exact(&mut ack)
    };
    let mut m = measurement("pipe-bandwidth", "pipe", placement.name, transfer_bytes);
    for _ in 0..plan.large_warmup {
        transfer()?;
    }
    for _ in 0..plan.reps {
        m.reps
            .push(try_time_rep(plan.large_ops * 2, &mut transfer)?);
    }
    drop(writer);
    reap(&mut child)?;
    Ok(m)
}

/// One operation = copying one large batch's bytes between two touched buffers.
fn memcpy(plan: &Plan) -> Measurement {
    let bytes = plan.large_bytes() as usize;
    let source: Vec<u8> = (0..bytes).map(|i| i as u8).collect();
    let mut destination = vec![1u8; bytes];
    let mut m = measurement("memcpy", "memory", ONE_THREAD, bytes as u64);
    for _ in 0..plan.large_warmup {
        destination.copy_from_slice(&source);
    }
    for _ in 0..plan.reps {
        let rep = time_rep(plan.large_ops * 2, || {
            destination.copy_from_slice(black_box(&source));
            black_box(&mut destination);
        });
        m.reps.push(rep);
    }
    m
}

/// One OS pipe as (read end, write end), close-on-exec.
fn os_pipe() -> Result<(File, File)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two fds into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}
