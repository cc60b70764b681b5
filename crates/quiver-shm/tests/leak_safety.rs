//! Owned segment names must not outlive the process: signals, exit, panics.
//!
//! Each scenario runs in a child process: this test binary re-executed with `CHILD_MODE_ENV` set,
//! running only `child_entry`, which creates a segment, prints its name, and then misbehaves.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::shm_name_exists;
use quiver_shm::Segment;

const CHILD_MODE_ENV: &str = "QUIVER_SHM_LEAK_TEST_CHILD";
const NAME_LINE_PREFIX: &str = "SEGMENT_NAME=";

/// Not a test of its own: the body a child runs. Does nothing in the parent.
#[test]
fn child_entry() {
    let Ok(mode) = std::env::var(CHILD_MODE_ENV) else {
        return;
    };
    // The host ignores SIGINT before we install our guards (we must respect that), or has the
    // default disposition: set here, since a child inherits an ignored SIGINT from its parent
    // (as every command a non-interactive shell starts in the background does).
    let sigint = if mode == "sigint_ignored" {
        libc::SIG_IGN
    } else {
        libc::SIG_DFL
    };
    // SAFETY: setting a signal's disposition to SIG_IGN or SIG_DFL installs no handler code.
    unsafe { libc::signal(libc::SIGINT, sigint) };
    let segment = Segment::create(1 << 20).unwrap();
    println!("{NAME_LINE_PREFIX}{}", segment.name());
    match mode.as_str() {
        "wait" | "sigint_ignored" | "sigkill" => {
            // Wait for the parent's signal; give up after a minute so a broken test cannot hang.
            std::thread::sleep(Duration::from_secs(60));
            std::process::exit(9);
        }
        "exit" => std::process::exit(3),
        "panic" => panic!("deliberate panic while owning {}", segment.name()),
        other => panic!("unknown child mode {other}"),
    }
}

fn spawn_child(mode: &str) -> (Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(CHILD_MODE_ENV, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let line = line.unwrap();
        // libtest prints "test child_entry ... " before the child's own output, on the same line.
        if let Some((_, rest)) = line.split_once(NAME_LINE_PREFIX) {
            let name = rest.split_whitespace().next().unwrap_or_default();
            return (child, name.to_owned());
        }
    }
    panic!(
        "child ({mode}) exited without printing a segment name: {:?}",
        child.wait()
    );
}

fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill takes plain integers; the child is ours and not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

fn assert_killed_by_and_unlinked(child_mode: &str, signal_number: libc::c_int) {
    let (mut child, name) = spawn_child(child_mode);
    assert!(
        shm_name_exists(&name),
        "child's segment exists while it runs"
    );
    signal(&child, signal_number);
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(signal_number),
        "still dies *by* the signal: {status:?}"
    );
    assert!(
        !shm_name_exists(&name),
        "{name} leaked after signal {signal_number}"
    );
}

#[test]
fn sigterm_unlinks_and_still_terminates() {
    assert_killed_by_and_unlinked("wait", libc::SIGTERM);
}

#[test]
fn sigint_unlinks_and_still_terminates() {
    assert_killed_by_and_unlinked("wait", libc::SIGINT);
}

#[test]
fn a_host_that_ignores_sigint_keeps_its_segment() {
    let (mut child, name) = spawn_child("sigint_ignored");
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "SIGINT stayed ignored");
    assert!(shm_name_exists(&name), "and the segment was left alone");
    signal(&child, libc::SIGTERM);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGTERM));
    assert!(!shm_name_exists(&name));
}

#[test]
fn exit_without_unwinding_unlinks() {
    let (mut child, name) = spawn_child("exit");
    assert_eq!(child.wait().unwrap().code(), Some(3));
    assert!(!shm_name_exists(&name), "{name} leaked after process::exit");
}

#[test]
fn panic_in_a_child_process_unlinks() {
    let (mut child, name) = spawn_child("panic");
    assert!(!child.wait().unwrap().success());
    assert!(!shm_name_exists(&name), "{name} leaked after a panic");
}

#[test]
fn unwinding_panic_unlinks_via_drop() {
    let mut name = String::new();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let segment = Segment::create(1 << 20).unwrap();
        name = segment.name().to_owned();
        assert!(shm_name_exists(&name));
        panic!("deliberate");
    }));
    assert!(result.is_err());
    assert!(!shm_name_exists(&name));
    assert!(!quiver_shm::owned_segment_names().contains(&name));
}

#[test]
fn names_of_an_owner_killed_outright_are_swept_by_the_next_creator() {
    let (mut child, name) = spawn_child("sigkill");
    assert!(shm_name_exists(&name));
    signal(&child, libc::SIGKILL);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    assert!(
        shm_name_exists(&name),
        "nothing in the child could unlink it"
    );
    // Another test of this binary may sweep first; either way the name must be gone after ours.
    quiver_shm::sweep_dead_owners();
    assert!(
        !shm_name_exists(&name),
        "{name} survived a sweep after its owner died"
    );
}

#[test]
fn a_sweep_leaves_live_owners_and_foreign_names_alone() {
    let live = Segment::create(1 << 20).unwrap();
    // A Python/vgi-rpc style name: no owner pid, so never ours to remove.
    let foreign = std::ffi::CString::new("/psm_5eed0001").unwrap();
    // SAFETY: `foreign` is a valid C string; the descriptor is closed or owned below.
    let fd = unsafe { libc::shm_open(foreign.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o600) };
    assert!(fd >= 0);
    // SAFETY: fd was opened above and is closed once.
    unsafe { libc::close(fd) };
    quiver_shm::sweep_dead_owners();
    assert!(shm_name_exists(live.name()));
    assert!(shm_name_exists("psm_5eed0001"));
    // SAFETY: a valid C string naming a segment this test created.
    unsafe { libc::shm_unlink(foreign.as_ptr()) };
}
