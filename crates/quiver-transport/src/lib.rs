//! How bytes move between two peers, and nothing about what they mean.
//!
//! Every transport yields a [`Connection`]: a buffered reader and an unbuffered
//! writer. The RPC layer above gathers each message into one buffer and writes it
//! with one call, so the writer needs no buffering of its own; the reader is
//! buffered so that small messages cost one `read(2)` rather than several.
//!
//! [`fd_io`] holds readers and writers whose waits stop at a deadline or when the caller's
//! interrupt check fires; launchers use them for connections to workers. Every reader polls for
//! its peer for a few microseconds before it sleeps (`spin`). Worker processes
//! themselves (spawning, supervision, the launch line, cleanup) live in `quiver-process`.
#![warn(missing_docs)]

mod connection;
pub mod fd_io;
mod pipe;
mod pipe_size;
pub mod socket;
mod spin;
mod stdio;
mod subprocess;

pub use connection::{Connection, TransportKind, READ_BUFFER_BYTES};
pub use pipe::pipe_pair;
pub use pipe_size::grow_pipe;
pub use quiver_process::{Child, StderrMode};
pub use spin::{spin_micros, SPIN_MICROS_DEFAULT};
pub use stdio::stdio_connection;
pub use subprocess::{spawn, spawn_command};
