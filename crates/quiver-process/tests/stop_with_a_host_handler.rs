//! A host that chose what `SIGTERM` does keeps its choice: no graceful stop is installed.

use quiver_process::StopSignal;

fn terminate_disposition() -> libc::sighandler_t {
    // SAFETY: a plain sigaction query into a zeroed struct.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        assert_eq!(
            libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut current),
            0
        );
        current.sa_sigaction
    }
}

#[test]
fn an_ignored_sigterm_stays_ignored() {
    // SAFETY: setting SIGTERM to SIG_IGN in this test process only.
    unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
    assert!(StopSignal::install().unwrap().is_none());
    assert_eq!(terminate_disposition(), libc::SIG_IGN);
}
