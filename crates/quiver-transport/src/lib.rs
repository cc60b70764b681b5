//! How bytes move between two peers, and nothing about what they mean.
//!
//! Every transport yields a [`Connection`]: a buffered reader and an unbuffered
//! writer. The RPC layer above gathers each message into one buffer and writes it
//! with one call, so the writer needs no buffering of its own; the reader is
//! buffered so that small messages cost one `read(2)` rather than several.
#![warn(missing_docs)]

mod cleanup;
mod connection;
mod pipe;
mod pipe_size;
pub mod socket;
mod stdio;
mod subprocess;

pub use cleanup::{forget_on_termination, remove_on_termination};
pub use connection::{Connection, TransportKind, READ_BUFFER_BYTES};
pub use pipe::pipe_pair;
pub use pipe_size::grow_pipe;
pub use stdio::stdio_connection;
pub use subprocess::{spawn, spawn_command, Child};
