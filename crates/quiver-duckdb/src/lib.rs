//! The Rust core of quiver's DuckDB extension: the engine side of VGI (`vgi.v2`).
//!
//! The extension (`extension/`) is thin C++ glue compiled against DuckDB's headers; everything with
//! behaviour lives here, behind a small C ABI declared by hand in `extension/include/quiver_core.h`:
//! launching and reaching workers (`worker.rs`, on `quiver-process` and `quiver-transport`; the
//! `launch:` sockets' private directories in `socket_dir.rs`), discovering their functions
//! (`catalog.rs`, `attached.rs`), binding calls (`bind.rs`) and running them — table scans across
//! threads (`scan.rs`, split-planned ones in `splits.rs`), scalar calls (`scalar.rs`), table-in-out
//! calls (`table_in_out.rs`), buffered table calls (`table_buffering.rs`), all as
//! `init` streams (`stream.rs`, `calls.rs`) — with pushed-down filters (`filters.rs`) — and
//! aggregate calls, all-unary on one pinned connection (`aggregate.rs`). The bench
//! flavour alone (feature `bench-functions`) adds `numbers.rs`, the benchmark's in-process ceiling.
//! Data crosses the boundary only as Arrow C Data Interface structs (`arrow_c.rs`): DuckDB's own
//! converters write and read them, and worker output read from shared memory is handed over in
//! place.
//!
//! Conventions of every exported function (`ffi.rs`):
//! - returns [`QUIVER_OK`] (0) on success, a [`FailureCode`] (`QUIVER_ERR_*` in C) otherwise;
//! - on failure writes a NUL-terminated message (truncated to fit) into `err[..err_cap]`;
//! - never unwinds into C++: panics are caught and reported as [`FailureCode::Internal`];
//! - calls that wait on a worker take the caller's interrupt check and stop when it fires.

#![warn(missing_docs)]

use std::ffi::{c_char, CStr};

pub mod aggregate;
mod arrow_c;
pub mod attached;
pub mod attached_docs;
pub mod bind;
pub mod calls;
pub mod catalog;
pub mod catalog_docs;
pub mod ffi;
pub mod filters;
pub mod negotiate;
#[cfg(feature = "bench-functions")]
pub mod numbers;
pub mod scalar;
pub mod scan;
mod socket_dir;
pub mod splits;
pub mod stream;
pub mod table_buffering;
pub mod table_in_out;
pub mod worker;

pub use ffi::{Failure, FailureCode, QUIVER_OK};

/// Version of the C ABI in `quiver_core.h`; bump on any change to a signature or convention.
pub const QUIVER_CORE_ABI_VERSION: u32 = 4;

static VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => panic!("version contains a NUL"),
    };

/// The C ABI version the core was built with ([`QUIVER_CORE_ABI_VERSION`]); the glue refuses a mismatch.
#[no_mangle]
pub extern "C" fn quiver_core_abi_version() -> u32 {
    QUIVER_CORE_ABI_VERSION
}

/// The core's version (the workspace version, e.g. `0.1.0`) as a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn quiver_core_version() -> *const c_char {
    VERSION.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_the_workspace_version() {
        // SAFETY: quiver_core_version returns a static NUL-terminated string.
        let version = unsafe { CStr::from_ptr(quiver_core_version()) };
        assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert_eq!(quiver_core_abi_version(), QUIVER_CORE_ABI_VERSION);
    }
}
