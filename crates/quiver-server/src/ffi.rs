//! The C ABI between the server and DuckDB, stated in `extension/include/quiver_server.h`: the
//! operations table the C++ side hands over (mirrored here, `#[repr(C)]`), and the
//! `quiver_serve_*` functions the C++ side calls. Nothing here unwinds into C.

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;

use std::time::Duration;

use crate::admission::AdmissionLimits;
use crate::events::EventLog;
use crate::server::{self as listen, Running, ServeOptions};

/// `QUIVER_SERVER_ABI_VERSION` of the header this mirrors.
pub const ABI_VERSION: u32 = 3;
/// `QUIVER_SERVER_OK`.
pub const OK: i32 = 0;
/// `QUIVER_SERVER_NO_COUNT`.
pub const NO_COUNT: i64 = -1;

/// `quiver_server_error`.
#[repr(C)]
pub struct RawError {
    /// DuckDB's exception type name, NUL-terminated.
    pub type_name: [c_char; 64],
    /// DuckDB's message, NUL-terminated.
    pub message: [c_char; 4096],
}

impl RawError {
    pub(crate) fn new() -> Box<RawError> {
        Box::new(RawError {
            type_name: [0; 64],
            message: [0; 4096],
        })
    }

    fn text(bytes: &[c_char]) -> String {
        // SAFETY: c_char and u8 have the same size; the C side NUL-terminates within the array.
        let bytes: &[u8] =
            unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast(), bytes.len()) };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    }

    pub(crate) fn type_name(&self) -> String {
        Self::text(&self.type_name)
    }

    pub(crate) fn message(&self) -> String {
        Self::text(&self.message)
    }
}

/// Opaque `quiver_server_session`.
#[repr(C)]
pub struct RawSession {
    _private: [u8; 0],
}
/// Opaque `quiver_server_prepared`.
#[repr(C)]
pub struct RawPrepared {
    _private: [u8; 0],
}
/// Opaque `quiver_server_cursor`.
#[repr(C)]
pub struct RawCursor {
    _private: [u8; 0],
}

type Stream = *mut FFI_ArrowArrayStream;

/// `quiver_server_ops`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Ops {
    pub abi_version: u32,
    pub db: *mut c_void,
    pub open_session: extern "C" fn(*mut c_void, *mut *mut RawSession, *mut RawError) -> i32,
    pub close_session: extern "C" fn(*mut RawSession),
    pub interrupt: extern "C" fn(*mut RawSession),
    pub in_transaction: extern "C" fn(*mut RawSession) -> i32,
    pub execute: extern "C" fn(
        *mut RawSession,
        *const c_char,
        usize,
        Stream,
        Stream,
        *mut i64,
        *mut RawError,
    ) -> i32,
    pub query: extern "C" fn(
        *mut RawSession,
        *const c_char,
        usize,
        Stream,
        i64,
        *mut *mut RawCursor,
        *mut RawError,
    ) -> i32,
    pub prepare: extern "C" fn(
        *mut RawSession,
        *const c_char,
        usize,
        *mut *mut RawPrepared,
        *mut i64,
        *mut FFI_ArrowSchema,
        *mut RawError,
    ) -> i32,
    pub execute_prepared: extern "C" fn(*mut RawPrepared, Stream, *mut i64, *mut RawError) -> i32,
    pub query_prepared:
        extern "C" fn(*mut RawPrepared, Stream, i64, *mut *mut RawCursor, *mut RawError) -> i32,
    pub close_prepared: extern "C" fn(*mut RawPrepared),
    pub prepared_parameter_types:
        extern "C" fn(*mut RawPrepared, *mut FFI_ArrowSchema, *mut RawError) -> i32,
    pub cursor_schema: extern "C" fn(*mut RawCursor, *mut FFI_ArrowSchema, *mut RawError) -> i32,
    pub cursor_next:
        extern "C" fn(*mut RawCursor, *mut FFI_ArrowArray, *mut i32, *mut RawError) -> i32,
    pub cursor_close: extern "C" fn(*mut RawCursor),
}

// SAFETY: the table is immutable and its functions are safe to call from any thread under the
// header's conventions (one thread per session at a time; interrupt from any thread).
unsafe impl Send for Ops {}
// SAFETY: as above.
unsafe impl Sync for Ops {}

/// `quiver_serve_options`.
#[repr(C)]
pub struct RawServeOptions {
    pub token: *const c_char,
    pub no_auth: i32,
    pub max_connections: i64,
    pub message_bytes_max: i64,
    pub database: *const c_char,
    pub duckdb_version: *const c_char,
    pub tls_cert: *const c_char,
    pub tls_key: *const c_char,
    pub auth_deadline_ms: i64,
    pub unauthenticated_max: i64,
    pub slow_statement_ms: i64,
    pub log_json: i32,
    pub metrics: *const c_char,
}

static RUNNING: Mutex<Option<Running>> = Mutex::new(None);

/// `QUIVER_SERVER_ABI_VERSION` as built.
#[no_mangle]
pub extern "C" fn quiver_serve_abi_version() -> u32 {
    ABI_VERSION
}

fn write_text(text: &str, out: *mut c_char, capacity: usize) {
    if out.is_null() || capacity == 0 {
        return;
    }
    let length = text.len().min(capacity - 1);
    // SAFETY: the caller gave `capacity` writable bytes at `out`.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), out, length);
        *out.add(length) = 0;
    }
}

/// # Safety
/// `text` is NULL or a NUL-terminated string.
unsafe fn optional_text(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: per this function's contract.
    Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// `value` when it is positive (the header's "<= 0: the default").
fn positive(value: i64) -> Option<u64> {
    u64::try_from(value).ok().filter(|&n| n > 0)
}

fn admission_limits(options: &RawServeOptions) -> AdmissionLimits {
    let defaults = AdmissionLimits::default();
    AdmissionLimits {
        deadline: positive(options.auth_deadline_ms)
            .map(Duration::from_millis)
            .unwrap_or(defaults.deadline),
        unauthenticated_max: positive(options.unauthenticated_max)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .unwrap_or(defaults.unauthenticated_max),
    }
}

/// Starts serving; see `quiver_server.h`.
///
/// # Safety
/// Pointers as the header states: `ops` valid until `quiver_serve_stop` returns, strings
/// NUL-terminated, `bound` and `err` writable for their capacities.
#[no_mangle]
pub unsafe extern "C" fn quiver_serve_start(
    ops: *const Ops,
    listen_urls: *const c_char,
    options: *const RawServeOptions,
    bound: *mut c_char,
    bound_cap: usize,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<String, String> {
        if ops.is_null() || listen_urls.is_null() || options.is_null() {
            return Err("null argument".into());
        }
        // SAFETY: checked non-null; valid per the contract.
        let (ops, options) = unsafe { (*ops, &*options) };
        if ops.abi_version != ABI_VERSION {
            return Err(format!(
                "the DuckDB side speaks server ABI {}, the server {ABI_VERSION}",
                ops.abi_version
            ));
        }
        // SAFETY: NUL-terminated per the contract.
        let listen = unsafe { optional_text(listen_urls) }.unwrap_or_default();
        let options = ServeOptions {
            // SAFETY: NULL or NUL-terminated per the contract.
            token: unsafe { optional_text(options.token) },
            no_auth: options.no_auth != 0,
            max_connections: usize::try_from(options.max_connections)
                .ok()
                .filter(|&n| n > 0),
            message_bytes_max: u64::try_from(options.message_bytes_max)
                .ok()
                .filter(|&n| n > 0),
            // SAFETY: as above.
            database: unsafe { optional_text(options.database) }
                .unwrap_or_else(|| ":memory:".into()),
            // SAFETY: as above.
            duckdb_version: unsafe { optional_text(options.duckdb_version) }.unwrap_or_default(),
            // SAFETY: as above.
            tls_cert: unsafe { optional_text(options.tls_cert) },
            // SAFETY: as above.
            tls_key: unsafe { optional_text(options.tls_key) },
            admission: admission_limits(options),
            events: EventLog {
                json: options.log_json != 0,
                // 0 logs every statement; below 0, none.
                slow_statement: u64::try_from(options.slow_statement_ms)
                    .ok()
                    .map(Duration::from_millis),
            },
            // SAFETY: as above.
            metrics: unsafe { optional_text(options.metrics) },
        };
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        if running.is_some() {
            return Err("this process is serving already".into());
        }
        let (server, announcements) = listen::start(ops, &listen, options)?;
        *running = Some(server);
        Ok(announcements.join("\n"))
    }));
    match outcome {
        Ok(Ok(lines)) => {
            write_text(&lines, bound, bound_cap);
            OK
        }
        Ok(Err(message)) => {
            write_text(&message, err, err_cap);
            1
        }
        Err(_) => {
            write_text("internal error: the server panicked", err, err_cap);
            2
        }
    }
}

/// Stops serving; see `quiver_server.h`.
#[no_mangle]
pub extern "C" fn quiver_serve_stop() -> i32 {
    let outcome = catch_unwind(|| {
        let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).take();
        match running {
            Some(running) => {
                running.stop();
                1
            }
            None => 0,
        }
    });
    outcome.unwrap_or(1)
}
