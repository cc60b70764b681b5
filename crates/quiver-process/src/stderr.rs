//! Writing to stderr without depending on anyone reading it.
//!
//! `eprintln!` panics when the write fails, and a worker's stderr is a pipe to a launcher that may
//! be gone (killed, or done reading): the first log line after that would take the worker down
//! mid-call, or, on a thread, leave it half alive. A worker's diagnostics are worth a try, never a
//! reason to stop or to stay: lines that cannot be written are dropped.

use std::io::Write;

/// Longest line written; longer ones are cut (a log line is for people, not data).
pub const LINE_BYTES_MAX: usize = 64 * 1024;

/// Writes `args` and a newline to stderr in one write; errors (a closed or full pipe) are ignored.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut text = args.to_string();
    if text.len() > LINE_BYTES_MAX {
        let mut cut = LINE_BYTES_MAX;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `eprintln!` that never panics: see [`line`].
#[macro_export]
macro_rules! log_line {
    ($($arg:tt)*) => {
        $crate::stderr::line(format_args!($($arg)*))
    };
}
