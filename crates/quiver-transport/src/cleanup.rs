//! Removes a listening socket's path when the process is terminated by a signal.
//!
//! `Drop` covers normal exits; `SIGTERM`/`SIGINT` end the process without running
//! it, which would leave a stale socket file behind. The handler does only
//! async-signal-safe work (`unlink`, then the previous handler or the default
//! action re-raised), so the process still dies by the same signal.

use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

static SOCKET_PATH: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
/// Whether the handlers are installed; guards writes to `PREVIOUS`.
static INSTALLED: Mutex<bool> = Mutex::new(false);
/// The dispositions replaced, chained to from the handler. Written once, under
/// `INSTALLED`, before the handler can run.
static mut PREVIOUS: [Option<libc::sigaction>; 2] = [None, None];

const SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGINT];

/// Unlinks `path` if the process is terminated by SIGTERM or SIGINT. Only one
/// path is tracked per process; a later call replaces it.
pub fn remove_on_termination(path: &Path) {
    let Ok(c_path) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return;
    };
    let old = SOCKET_PATH.swap(c_path.into_raw(), Ordering::SeqCst);
    if !old.is_null() {
        // SAFETY: the pointer came from CString::into_raw above, in an earlier call.
        drop(unsafe { CString::from_raw(old) });
    }
    let mut installed = INSTALLED.lock().expect("signal setup lock");
    if *installed {
        return;
    }
    for (index, signal) in SIGNALS.into_iter().enumerate() {
        // SAFETY: installing a handler with a zeroed, then filled sigaction; the
        // previous disposition is stored before the handler can observe it.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            let mut previous: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, std::ptr::null(), &mut previous);
            PREVIOUS[index] = Some(previous);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    *installed = true;
}

/// Forgets the tracked path (the listener removed it itself).
pub fn forget_on_termination() {
    let old = SOCKET_PATH.swap(std::ptr::null_mut(), Ordering::SeqCst);
    if !old.is_null() {
        // SAFETY: the pointer came from CString::into_raw.
        drop(unsafe { CString::from_raw(old) });
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    let path = SOCKET_PATH.load(Ordering::SeqCst);
    // SAFETY: unlink, sigaction and raise are async-signal-safe; the path stays
    // allocated until replaced, and replacement never happens in a handler.
    unsafe {
        if !path.is_null() {
            libc::unlink(path);
        }
        let index = if signal == libc::SIGTERM { 0 } else { 1 };
        #[allow(static_mut_refs)]
        let previous = PREVIOUS[index];
        match previous {
            Some(action)
                if action.sa_sigaction != libc::SIG_DFL
                    && action.sa_sigaction != libc::SIG_IGN
                    && action.sa_flags & libc::SA_SIGINFO == 0 =>
            {
                let handler: extern "C" fn(libc::c_int) = std::mem::transmute(action.sa_sigaction);
                handler(signal);
            }
            _ => {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
        }
    }
}
