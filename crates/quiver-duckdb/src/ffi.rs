//! The mechanics every exported function shares: return codes, error messages into the caller's
//! buffer, panics caught at the boundary, opaque handles, C strings, and the caller's interrupt
//! check (a callback the glue passes in; blocking I/O polls it while this thread waits on a worker).

use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Success: what every exported function returns when it did its job.
pub const QUIVER_OK: i32 = 0;

/// Why an exported function failed. The numbers are the `QUIVER_ERR_*` values of
/// `extension/include/quiver_core.h`; they become a bare `i32` only when returned to C.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureCode {
    /// The caller passed an invalid argument (message in `err`).
    Invalid = 1,
    /// A bug inside the core: a panic or an arrow-rs error that should not happen.
    Internal = 2,
    /// The worker raised an error (a bad argument, an unknown function...): the message is the
    /// worker's.
    Remote = 3,
    /// The worker could not be reached, died, or broke the protocol; the message names the worker
    /// and ends with the tail of its stderr when we have it.
    Worker = 4,
    /// The caller's interrupt check fired while we waited on the worker; the stream was abandoned.
    Interrupted = 5,
}

impl FailureCode {
    /// The `QUIVER_ERR_*` number returned across the C ABI.
    pub const fn to_c(self) -> i32 {
        self as i32
    }

    /// The code a C return value stands for; `None` for [`QUIVER_OK`] and unknown numbers.
    pub const fn from_c(code: i32) -> Option<FailureCode> {
        match code {
            1 => Some(FailureCode::Invalid),
            2 => Some(FailureCode::Internal),
            3 => Some(FailureCode::Remote),
            4 => Some(FailureCode::Worker),
            5 => Some(FailureCode::Interrupted),
            _ => None,
        }
    }
}

/// A failed call: why, and a message for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What kind of failure, as the caller branches on it.
    pub code: FailureCode,
    /// A complete sentence for the SQL user.
    pub message: String,
}

impl Failure {
    /// A failure with `code`.
    pub fn new(code: FailureCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// The caller passed something invalid.
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(FailureCode::Invalid, message)
    }

    /// A bug on our side.
    pub fn internal(message: impl Into<String>) -> Failure {
        Failure::new(FailureCode::Internal, message)
    }

    /// The worker is unreachable, died, or broke the protocol.
    pub fn worker(message: impl Into<String>) -> Failure {
        Failure::new(FailureCode::Worker, message)
    }
}

impl From<arrow_schema::ArrowError> for Failure {
    fn from(error: arrow_schema::ArrowError) -> Failure {
        Failure::internal(format!("arrow: {error}"))
    }
}

/// Result of the core's internal functions.
pub type Outcome<T> = Result<T, Failure>;

/// Runs `body`, turning its error or panic into a return code and a message in `err`.
pub fn guard(err: *mut c_char, err_cap: usize, body: impl FnOnce() -> Outcome<()>) -> i32 {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        Err(Failure::internal(format!(
            "panic in quiver core: {message}"
        )))
    });
    match outcome {
        Ok(()) => QUIVER_OK,
        Err(failure) => {
            write_error(err, err_cap, &failure.message);
            failure.code.to_c()
        }
    }
}

/// Runs `body` with `interrupt` as this thread's interrupt check (see [`interrupted`]).
pub fn guard_interruptible(
    interrupt: Interrupt,
    err: *mut c_char,
    err_cap: usize,
    body: impl FnOnce() -> Outcome<()>,
) -> i32 {
    let previous = INTERRUPT.with(|slot| slot.replace(interrupt.check.map(|f| (f, interrupt.ctx))));
    let code =
        quiver_transport::fd_io::with_interrupt_check(interrupted, || guard(err, err_cap, body));
    INTERRUPT.with(|slot| slot.set(previous));
    code
}

/// Copies `message` into `err[..err_cap]`, truncated at a UTF-8 boundary, always NUL-terminated.
pub(crate) fn write_error(err: *mut c_char, err_cap: usize, message: &str) {
    if err.is_null() || err_cap == 0 {
        return;
    }
    let mut len = message.len().min(err_cap - 1);
    while !message.is_char_boundary(len) {
        len -= 1;
    }
    // SAFETY: the caller promised `err_cap` writable bytes at `err`; we write `len + 1 <= err_cap`.
    unsafe {
        std::ptr::copy_nonoverlapping(message.as_ptr(), err.cast::<u8>(), len);
        *err.add(len) = 0;
    }
}

/// A NUL-terminated UTF-8 argument.
///
/// # Safety
/// `text` must be null or point to a NUL-terminated string that outlives `'a`.
pub unsafe fn str_arg<'a>(text: *const c_char, what: &str) -> Outcome<&'a str> {
    if text.is_null() {
        return Err(Failure::invalid(format!("{what} is null")));
    }
    // SAFETY: non-null and NUL-terminated by the contract above.
    unsafe { CStr::from_ptr(text) }
        .to_str()
        .map_err(|_| Failure::invalid(format!("{what} is not valid UTF-8")))
}

/// The object behind a handle the caller passed in.
///
/// # Safety
/// `handle` must be null or a pointer this core returned and the caller has not freed.
pub unsafe fn handle<'a, T>(handle: *const T, what: &str) -> Outcome<&'a T> {
    // SAFETY: by the contract above.
    unsafe { handle.as_ref() }.ok_or_else(|| Failure::invalid(format!("{what} is null")))
}

/// Mutable access to the object behind a handle.
///
/// # Safety
/// As [`handle`], and no other reference to the object may be live.
pub unsafe fn handle_mut<'a, T>(handle: *mut T, what: &str) -> Outcome<&'a mut T> {
    // SAFETY: by the contract above.
    unsafe { handle.as_mut() }.ok_or_else(|| Failure::invalid(format!("{what} is null")))
}

/// Writes `value` through an out-pointer.
///
/// # Safety
/// `out` must be null or valid for one write of `T`.
pub unsafe fn write_out<T>(out: *mut T, value: T, what: &str) -> Outcome<()> {
    if out.is_null() {
        return Err(Failure::invalid(format!("{what} is null")));
    }
    // SAFETY: non-null and valid for one write by the contract above.
    unsafe { std::ptr::write(out, value) };
    Ok(())
}

/// The caller's "has this query been interrupted?" callback (`quiver_interrupt` in C).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Interrupt {
    /// Returns non-zero once the query is interrupted; called from the calling thread only.
    pub check: Option<unsafe extern "C" fn(ctx: *mut c_void) -> i32>,
    /// Passed to `check`.
    pub ctx: *mut c_void,
}

impl Interrupt {
    /// No interrupt check.
    pub const NONE: Interrupt = Interrupt {
        check: None,
        ctx: std::ptr::null_mut(),
    };
}

type Check = (unsafe extern "C" fn(*mut c_void) -> i32, *mut c_void);

thread_local! {
    static INTERRUPT: Cell<Option<Check>> = const { Cell::new(None) };
}

/// Whether the current call's caller asked to stop (its interrupt check returns non-zero).
pub fn interrupted() -> bool {
    INTERRUPT.with(|slot| match slot.get() {
        // SAFETY: the glue passes a check that is valid for the duration of the call that
        // installed it, on this thread.
        Some((check, ctx)) => unsafe { check(ctx) != 0 },
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_truncated_and_terminated() {
        let mut buf = [1 as c_char; 8];
        let code = guard(buf.as_mut_ptr(), buf.len(), || {
            Err(Failure::worker("é worker died"))
        });
        assert_eq!(FailureCode::from_c(code), Some(FailureCode::Worker));
        // SAFETY: NUL-terminated by write_error.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
        assert_eq!(text, "é work");
    }

    #[test]
    fn panics_become_internal_errors() {
        let mut buf = [0 as c_char; 64];
        let code = guard(buf.as_mut_ptr(), buf.len(), || panic!("boom"));
        assert_eq!(FailureCode::from_c(code), Some(FailureCode::Internal));
    }

    #[test]
    fn failure_codes_keep_the_numbers_of_the_c_header() {
        let header = include_str!("../../../extension/include/quiver_core.h");
        let codes = [
            ("QUIVER_ERR_INVALID", FailureCode::Invalid),
            ("QUIVER_ERR_INTERNAL", FailureCode::Internal),
            ("QUIVER_ERR_REMOTE", FailureCode::Remote),
            ("QUIVER_ERR_WORKER", FailureCode::Worker),
            ("QUIVER_ERR_INTERRUPTED", FailureCode::Interrupted),
        ];
        for (name, code) in codes {
            let define = format!("#define {name} {}", code.to_c());
            assert!(header.contains(&define), "quiver_core.h lacks `{define}`");
            assert_eq!(FailureCode::from_c(code.to_c()), Some(code));
        }
        assert!(header.contains(&format!("#define QUIVER_OK {QUIVER_OK}")));
        assert_eq!(FailureCode::from_c(QUIVER_OK), None);
    }

    #[test]
    fn the_interrupt_check_is_scoped_to_the_call() {
        unsafe extern "C" fn yes(_: *mut c_void) -> i32 {
            1
        }
        let interrupt = Interrupt {
            check: Some(yes),
            ctx: std::ptr::null_mut(),
        };
        let mut seen = false;
        guard_interruptible(interrupt, std::ptr::null_mut(), 0, || {
            seen = interrupted();
            Ok(())
        });
        assert!(seen);
        assert!(!interrupted());
    }
}
