//! `SIGTERM` as a stop request, in a process of its own (this test binary): the handler is
//! process-wide, so one test function runs the whole sequence.

use std::os::fd::AsRawFd;

use quiver_process::{cleanup, StopSignal};

fn readable_now(fd: i32) -> bool {
    let mut poll_fd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one pollfd we own, without waiting.
    let ready = unsafe { libc::poll(&mut poll_fd, 1, 0) };
    ready == 1 && poll_fd.revents & libc::POLLIN != 0
}

#[test]
fn sigterm_becomes_a_request_that_wakes_every_poller_and_leaves_the_registry_intact() {
    // Register first, so that the registry's own SIGTERM handler is in place: the stop must take
    // it over rather than leave it to kill the process.
    let path = std::env::temp_dir().join(format!("quiver-stop-{}", std::process::id()));
    std::fs::write(&path, b"registered").unwrap();
    let registration = cleanup::register_file(&path).unwrap();

    let stop = StopSignal::install()
        .unwrap()
        .expect("SIGTERM was ours to take");
    let again = StopSignal::install()
        .unwrap()
        .expect("installing twice is harmless");
    assert_eq!(stop.as_raw_fd(), again.as_raw_fd(), "one process-wide pipe");
    assert!(!stop.requested());
    assert!(!readable_now(stop.as_raw_fd()));

    // SAFETY: raise delivers SIGTERM to this thread; our handler only sets a flag.
    assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);

    assert!(
        stop.requested(),
        "the process is alive and knows it was asked to stop"
    );
    assert!(readable_now(stop.as_raw_fd()));
    assert!(
        readable_now(again.as_raw_fd()),
        "the wake-up stays readable for every poller"
    );
    assert!(path.exists(), "a stop request removes nothing by itself");

    std::fs::remove_file(&path).unwrap();
    cleanup::unregister(registration);
}
