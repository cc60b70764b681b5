//! Worker logs: plain lines on stderr (stdout carries only protocol bytes),
//! filtered by the level the launcher asked for. A line that cannot be written (the launcher
//! closed its end) is dropped: see `quiver-process`'s `stderr.rs`.

use std::sync::atomic::{AtomicU8, Ordering};

/// How much a worker says on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    /// Only failures.
    Error = 0,
    /// Failures and surprises.
    Warn = 1,
    /// Lifecycle events (start, stop).
    Info = 2,
    /// Every call.
    Debug = 3,
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Warn as u8);

/// Sets the process-wide level.
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

/// Whether `level` is printed.
pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

/// Prints `message` at `level`.
pub fn log(level: Level, message: impl AsRef<str>) {
    if enabled(level) {
        // Never `eprintln!`: a launcher that stopped reading must not take the worker down.
        quiver_process::log_line!(
            "quiver-vgi [{}] {}: {}",
            std::process::id(),
            format!("{level:?}").to_lowercase(),
            message.as_ref()
        );
    }
}

/// Parses `--log-level` values (Python logging names accepted).
pub fn parse_level(text: &str) -> Option<Level> {
    Some(match text.to_ascii_lowercase().as_str() {
        "error" | "critical" => Level::Error,
        "warn" | "warning" => Level::Warn,
        "info" => Level::Info,
        "debug" | "trace" => Level::Debug,
        _ => return None,
    })
}
