//! The supervised child, with real processes.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use quiver_process::{read_announcement, Announcement, Child, StderrMode};

fn sh(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", script]);
    command
}

#[test]
fn a_dying_process_is_described_with_its_last_words() {
    let mut command = sh("echo one >&2; echo two >&2; exit 3");
    command.stdin(Stdio::null()).stdout(Stdio::null());
    let mut child = Child::spawn(command, StderrMode::Tail).unwrap();
    assert_eq!(
        child.describe_state(Duration::from_secs(30)),
        "exited with status 3"
    );
    assert_eq!(child.stderr_tail(Duration::from_secs(30)), "one\ntwo");
}

#[test]
fn terminate_kills_a_child_that_ignores_sigterm_and_reaps_it() {
    let mut command = sh("trap '' TERM; echo ready; sleep 60");
    command.stdin(Stdio::null()).stdout(Stdio::piped());
    let mut child = Child::spawn(command, StderrMode::Null).unwrap();
    let stdout = child.take_stdout().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    child.terminate(Duration::from_millis(100));
    let status = child.try_wait().expect("reaped");
    assert_eq!(
        quiver_process::describe_status(status),
        "was killed by signal 9 (SIGKILL)"
    );
}

#[test]
fn the_announcement_is_found_after_other_lines() {
    let mut command = sh("echo starting; echo UNIX:/tmp/x.sock; sleep 60");
    command.stdin(Stdio::null()).stdout(Stdio::piped());
    let mut child = Child::spawn(command, StderrMode::Null).unwrap();
    let stdout = child.take_stdout().unwrap();
    let found = read_announcement(&stdout, Duration::from_secs(30), &|| false).unwrap();
    assert_eq!(found, Announcement::Unix("/tmp/x.sock".into()));
    child.terminate(Duration::from_secs(5));
}

#[test]
fn a_silent_worker_times_out_and_a_dead_one_is_noticed() {
    let mut command = sh("sleep 60");
    command.stdin(Stdio::null()).stdout(Stdio::piped());
    let mut child = Child::spawn(command, StderrMode::Null).unwrap();
    let stdout = child.take_stdout().unwrap();
    let started = Instant::now();
    let error = read_announcement(&stdout, Duration::from_millis(200), &|| false).unwrap_err();
    assert!(matches!(
        error,
        quiver_process::announce::AnnounceError::TimedOut(_)
    ));
    assert!(started.elapsed() >= Duration::from_millis(200));
    let error = read_announcement(&stdout, Duration::from_secs(30), &|| true).unwrap_err();
    assert!(matches!(
        error,
        quiver_process::announce::AnnounceError::Stopped
    ));
    child.terminate(Duration::from_secs(5));

    let mut command = sh("exit 0");
    command.stdin(Stdio::null()).stdout(Stdio::piped());
    let mut child = Child::spawn(command, StderrMode::Null).unwrap();
    let stdout = child.take_stdout().unwrap();
    let error = read_announcement(&stdout, Duration::from_secs(30), &|| false).unwrap_err();
    assert!(matches!(
        error,
        quiver_process::announce::AnnounceError::Exited
    ));
}

/// The parent-death signal is tied to the spawner thread, not to the thread that asked: a child
/// spawned from a short-lived thread lives on after that thread ends.
#[test]
fn a_child_outlives_the_thread_that_asked_for_it() {
    let mut child = std::thread::spawn(|| {
        let mut command = sh("sleep 60");
        command.stdin(Stdio::null()).stdout(Stdio::null());
        Child::spawn(command, StderrMode::Null).unwrap()
    })
    .join()
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !child.exited(),
        "the child died with the thread that spawned it"
    );
    child.terminate(Duration::from_secs(5));
}

/// A child dies when the process that spawned it dies, even by SIGKILL: a middle process (this
/// test binary re-run) spawns a grandchild through `Child`, prints its pid, and is killed.
#[test]
fn a_child_dies_with_its_parent_even_by_sigkill() {
    if std::env::var_os("QUIVER_PROCESS_TEST_MIDDLE").is_some() {
        return;
    }
    let mut middle = Command::new(std::env::current_exe().unwrap());
    middle
        .args([
            "--exact",
            "middle_process",
            "--nocapture",
            "--include-ignored",
        ])
        .env("QUIVER_PROCESS_TEST_MIDDLE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: setsid between fork and exec; async-signal-safe.
    unsafe {
        middle.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut middle = middle.spawn().unwrap();
    let stdout = middle.stdout.take().unwrap();
    let mut reader = std::io::BufReader::new(stdout);
    let mut grandchild = None;
    for _ in 0..200 {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut reader, &mut line).unwrap() == 0 {
            break;
        }
        if let Some(pid) = line.trim().strip_prefix("GRANDCHILD:") {
            grandchild = Some(pid.parse::<i32>().unwrap());
            break;
        }
    }
    let grandchild = grandchild.expect("the middle process names its child");
    assert!(quiver_process::pid_alive(grandchild));
    middle.kill().unwrap();
    let killed = Instant::now();
    middle.wait().unwrap();
    // The grandchild is reparented (to init or a subreaper) and reaped there; wait for it to go.
    let deadline = killed + Duration::from_secs(30);
    while quiver_process::pid_alive(grandchild) && !is_zombie(grandchild) {
        assert!(
            Instant::now() < deadline,
            "the grandchild outlived its parent by 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "grandchild gone {:?} after SIGKILL of its parent",
        killed.elapsed()
    );
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// The middle process of the test above; does nothing unless run by it.
#[test]
#[ignore = "run only as the middle process of a_child_dies_with_its_parent_even_by_sigkill"]
fn middle_process() {
    if std::env::var_os("QUIVER_PROCESS_TEST_MIDDLE").is_none() {
        return;
    }
    let spawned = std::thread::spawn(|| {
        let mut command = sh("sleep 120");
        command.stdin(Stdio::null()).stdout(Stdio::null());
        Child::spawn(command, StderrMode::Null).unwrap()
    })
    .join()
    .unwrap();
    println!("GRANDCHILD:{}", spawned.pid());
    std::mem::forget(spawned);
    std::thread::sleep(Duration::from_secs(120));
}
