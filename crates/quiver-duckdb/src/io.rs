//! Waits on a worker that never block forever: `quiver-transport`'s `fd_io`, with the query's
//! interrupt check installed per call by `ffi::guard_interruptible`.

pub use quiver_transport::fd_io::{stopped, with_deadline, FdReader, FdWriter, Stopped};
