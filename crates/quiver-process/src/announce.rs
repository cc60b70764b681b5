//! The launch handshake: a worker started with `--unix <path>` (or `--tcp <address>`) prints one
//! line on stdout once it listens — `UNIX:<absolute path>` or `PORT:<port>` — and the launcher
//! connects there. This is vgi-rpc's convention, so Python workers announce the same way.
//!
//! The worker side writes it with [`announce`]; the launcher reads it with [`read_announcement`],
//! which skips other lines before it and gives up at a deadline.
//!
//! A quiver server announces its listeners in the same words, then the rest of what a client
//! needs ([`ServerLine`]): `FLIGHT_SQL:<uri>`, `METRICS:<url>`, `TOKEN:<hex>` (a generated token),
//! and `READY` last. Every line is written and parsed here and nowhere else.

use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Longest line read while looking for the announcement.
pub const ANNOUNCEMENT_LINE_BYTES_MAX: usize = 64 * 1024;
/// Most bytes read from a worker's stdout while looking for the announcement.
pub const ANNOUNCEMENT_SEARCH_BYTES_MAX: usize = 1024 * 1024;
/// How long one `poll(2)` waits before checking the caller's stop condition and the deadline.
const POLL_SLICE_MS: i32 = 50;

/// Where a launched worker listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Announcement {
    /// `UNIX:<path>`: a Unix-domain socket.
    Unix(PathBuf),
    /// `PORT:<port>`: a TCP port on the worker's host.
    Port(u16),
}

impl Announcement {
    /// Parses one line (surrounding whitespace ignored); `None` if it is not an announcement.
    pub fn parse(line: &str) -> Option<Announcement> {
        let line = line.trim();
        if let Some(path) = line.strip_prefix("UNIX:") {
            return (!path.is_empty()).then(|| Announcement::Unix(PathBuf::from(path)));
        }
        line.strip_prefix("PORT:")
            .and_then(|port| port.parse().ok())
            .map(Announcement::Port)
    }
}

impl std::fmt::Display for Announcement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Announcement::Unix(path) => write!(f, "UNIX:{}", path.display()),
            Announcement::Port(port) => write!(f, "PORT:{port}"),
        }
    }
}

/// One line of a quiver server's announcement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerLine {
    /// A spine listener: `UNIX:<path>` or `PORT:<port>`.
    Listener(Announcement),
    /// `FLIGHT_SQL:<uri>`: the Flight SQL listener, as the URI a client passes.
    FlightSql(String),
    /// `METRICS:<url>`: the Prometheus endpoint.
    Metrics(String),
    /// `TOKEN:<hex>`: the token the server generated for its TCP and gRPC listeners.
    Token(String),
    /// `READY`: everything is announced and the server serves.
    Ready,
}

impl ServerLine {
    /// Parses one line (surrounding whitespace ignored); `None` if it is none of the above.
    pub fn parse(line: &str) -> Option<ServerLine> {
        let line = line.trim();
        if line == "READY" {
            return Some(ServerLine::Ready);
        }
        if let Some(listener) = Announcement::parse(line) {
            return Some(ServerLine::Listener(listener));
        }
        let (kind, value) = line.split_once(':')?;
        let value = (!value.is_empty()).then(|| value.to_string())?;
        match kind {
            "FLIGHT_SQL" => Some(ServerLine::FlightSql(value)),
            "METRICS" => Some(ServerLine::Metrics(value)),
            "TOKEN" => Some(ServerLine::Token(value)),
            _ => None,
        }
    }
}

impl std::fmt::Display for ServerLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerLine::Listener(listener) => listener.fmt(f),
            ServerLine::FlightSql(uri) => write!(f, "FLIGHT_SQL:{uri}"),
            ServerLine::Metrics(url) => write!(f, "METRICS:{url}"),
            ServerLine::Token(token) => write!(f, "TOKEN:{token}"),
            ServerLine::Ready => f.write_str("READY"),
        }
    }
}

/// Writes the announcement line to stdout and flushes it (worker side).
pub fn announce(announcement: &Announcement) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{announcement}")?;
    stdout.flush()
}

/// Why no announcement was read.
#[derive(Debug)]
pub enum AnnounceError {
    /// The worker closed its stdout (it exited) before announcing.
    Exited,
    /// No announcement within the time allowed.
    TimedOut(Duration),
    /// The caller's stop condition fired (the query was interrupted).
    Stopped,
    /// The worker wrote too much, or too long a line, without announcing.
    Garbled(&'static str),
    /// Reading its stdout failed.
    Io(io::Error),
}

impl std::fmt::Display for AnnounceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnnounceError::Exited => f.write_str("it exited before printing UNIX:<path>"),
            AnnounceError::TimedOut(limit) => {
                write!(f, "no UNIX:<path> line within {} s", limit.as_secs_f64())
            }
            AnnounceError::Stopped => f.write_str("interrupted while waiting for UNIX:<path>"),
            AnnounceError::Garbled(why) => write!(f, "its stdout is not a UNIX:<path> line: {why}"),
            AnnounceError::Io(error) => write!(f, "reading its stdout failed: {error}"),
        }
    }
}

impl std::error::Error for AnnounceError {}

/// Reads `stdout` (a worker's, blocking or not) until an announcement line, skipping other lines,
/// for at most `limit`; `stop` is asked between waits and ends the search when it returns true.
/// Reads byte by byte so that nothing after the announcement is consumed.
pub fn read_announcement(
    stdout: &impl AsRawFd,
    limit: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<Announcement, AnnounceError> {
    let deadline = Instant::now() + limit;
    let fd = stdout.as_raw_fd();
    let mut line = Vec::new();
    let mut bytes_read = 0usize;
    loop {
        wait_readable(fd, deadline, limit, stop)?;
        let mut byte = 0u8;
        // SAFETY: reading one byte into a local.
        let n = unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) };
        if n < 0 {
            let error = io::Error::last_os_error();
            match error.kind() {
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => continue,
                _ => return Err(AnnounceError::Io(error)),
            }
        }
        if n == 0 {
            return Err(AnnounceError::Exited);
        }
        bytes_read += 1;
        if bytes_read > ANNOUNCEMENT_SEARCH_BYTES_MAX {
            return Err(AnnounceError::Garbled("too much output before it"));
        }
        if byte != b'\n' {
            if line.len() >= ANNOUNCEMENT_LINE_BYTES_MAX {
                return Err(AnnounceError::Garbled("a line too long"));
            }
            line.push(byte);
            continue;
        }
        if let Some(found) = Announcement::parse(&String::from_utf8_lossy(&line)) {
            return Ok(found);
        }
        line.clear();
    }
}

fn wait_readable(
    fd: i32,
    deadline: Instant,
    limit: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<(), AnnounceError> {
    loop {
        if stop() {
            return Err(AnnounceError::Stopped);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(AnnounceError::TimedOut(limit));
        }
        let slice_ms = (left.as_millis() as i32).clamp(1, POLL_SLICE_MS);
        let mut pollfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pollfd, 1, slice_ms) };
        if ready > 0 {
            return Ok(());
        }
        if ready < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(AnnounceError::Io(error));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_print_back() {
        let unix = Announcement::parse(" UNIX:/tmp/w.sock\n").unwrap();
        assert_eq!(unix, Announcement::Unix("/tmp/w.sock".into()));
        assert_eq!(unix.to_string(), "UNIX:/tmp/w.sock");
        assert_eq!(
            Announcement::parse("PORT:8080"),
            Some(Announcement::Port(8080))
        );
        assert_eq!(Announcement::parse("PORT:x"), None);
        assert_eq!(Announcement::parse("UNIX:"), None);
        assert_eq!(Announcement::parse("hello"), None);
    }

    #[test]
    fn server_lines_parse_and_print_back() {
        for line in [
            "UNIX:/tmp/q.sock",
            "PORT:4000",
            "FLIGHT_SQL:grpc://127.0.0.1:4001",
            "METRICS:http://127.0.0.1:9/metrics",
            "TOKEN:00ff",
            "READY",
        ] {
            assert_eq!(ServerLine::parse(line).unwrap().to_string(), line);
        }
        for line in ["TOKEN:", "READY!", "PORT:x", "hello"] {
            assert_eq!(ServerLine::parse(line), None, "{line}");
        }
    }
}
