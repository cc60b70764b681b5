//! The processes the harness starts from its own binary: the `BenchService`
//! worker (`serve`) and the raw byte peers of the baselines (`raw-peer`).
//!
//! A socket-serving child also watches its stdin and exits when the harness
//! closes it, so no worker outlives the run.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use quiver_rpc::{serve, Server, ServerConfig};
use quiver_shm::ShmConfig;

use crate::service::service;

/// Where a worker listens.
#[derive(Clone, Debug)]
pub enum Listen {
    /// Its own stdin/stdout.
    Stdio,
    /// A Unix socket at this path (prints `UNIX:<path>`).
    Unix(PathBuf),
    /// A TCP address (prints `PORT:<n>`).
    Tcp(String),
}

/// Serves `BenchService` until the client (stdio) or the harness (sockets) goes away.
pub fn serve_bench(listen: Listen) -> std::io::Result<()> {
    let shm = ShmConfig::from_env()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let server = Server::new(
        service(),
        ServerConfig {
            shm,
            ..ServerConfig::default()
        },
    );
    match listen {
        Listen::Stdio => serve::serve_stdio(&server),
        Listen::Unix(path) => {
            exit_when_stdin_closes(Some(std::path::absolute(&path)?));
            serve::serve_unix(Arc::new(server), &path, None)
        }
        Listen::Tcp(address) => {
            exit_when_stdin_closes(None);
            serve::serve_tcp(Arc::new(server), &address, None)
        }
    }
}

/// Exits once the harness closes our stdin, removing the socket file first
/// (`process::exit` skips the listener's own cleanup).
fn exit_when_stdin_closes(socket_path: Option<PathBuf>) {
    std::thread::spawn(move || {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin().lock();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        if let Some(path) = socket_path {
            let _ = std::fs::remove_file(path);
        }
        std::process::exit(0);
    });
}

/// What a raw peer does with the bytes it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RawMode {
    /// Writes back every byte it reads.
    Echo,
    /// Reads `--ack-every` bytes, then writes one byte; repeats.
    Sink,
}

/// Runs a raw peer on stdin/stdout, or on a socket it connects to.
pub fn raw_peer(
    mode: RawMode,
    ack_every: u64,
    unix: Option<&Path>,
    tcp: Option<&str>,
) -> std::io::Result<()> {
    if let Some(path) = unix {
        let stream = UnixStream::connect(path)?;
        return run_raw(mode, ack_every, stream.try_clone()?, stream);
    }
    if let Some(address) = tcp {
        let stream = TcpStream::connect(address)?;
        stream.set_nodelay(true)?;
        return run_raw(mode, ack_every, stream.try_clone()?, stream);
    }
    // Unbuffered handles on fds 0 and 1: std's Stdout is line-buffered.
    use std::os::fd::FromRawFd;
    // SAFETY: fds 0 and 1 are open for the life of the process; ManuallyDrop keeps them open.
    let input = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(0) });
    // SAFETY: as for fd 0 above.
    let output = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) });
    run_raw(mode, ack_every, &*input, &*output)
}

fn run_raw(
    mode: RawMode,
    ack_every: u64,
    mut input: impl Read,
    mut output: impl Write,
) -> std::io::Result<()> {
    let mut buffer = vec![0u8; 1 << 20];
    let mut since_ack = 0u64;
    loop {
        let n = match input.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        match mode {
            RawMode::Echo => output.write_all(&buffer[..n])?,
            RawMode::Sink => {
                since_ack += n as u64;
                assert!(
                    since_ack <= ack_every,
                    "the writer sent more than one transfer before its ack"
                );
                if since_ack == ack_every {
                    output.write_all(&[1])?;
                    since_ack = 0;
                }
            }
        }
    }
}
