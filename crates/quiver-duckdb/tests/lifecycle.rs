//! Workers never outlive their engine, and leave nothing behind: real processes, real signals.
//!
//! The engine is this test binary run again (`engine_process`, below), with its own
//! `XDG_RUNTIME_DIR` so that its private socket directory and its workers' parallel-scan work
//! files land where the test can see them. It attaches a stdio worker (mid-scan, so a work file
//! exists) and a `launch:` worker, names them, and is killed with SIGKILL.
//!
//! Needs `target/<profile>/quiver-allinone` (built by `cargo build --workspace`).

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Int64Array};
use quiver_duckdb::bind::bind;
use quiver_duckdb::scan;
use quiver_vgi_contract::RawArguments;

use common::{allinone, attach};

/// How long a worker may take to go after its engine dies before the test fails. The promise is
/// 5 s; the bound is generous so that a loaded machine does not fail the test.
const WORKER_EXIT_BOUND: Duration = Duration::from_secs(30);

fn fresh_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("quiver-lifecycle-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Pids whose parent is `parent`, from /proc.
fn children_of(parent: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The command name may hold spaces and parentheses: fields resume after the last ')'.
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            children.push(pid);
        }
    }
    children
}

fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Gone: no such process, or a zombie about to be reaped by its new parent.
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
    }
}

fn work_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("quiver-vgi"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "work"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn workers_end_with_their_engine_even_by_sigkill() {
    if std::env::var_os("QUIVER_LIFECYCLE_ENGINE").is_some() {
        return;
    }
    let runtime = fresh_dir("runtime");
    let mut engine = Command::new(std::env::current_exe().unwrap());
    engine
        .args([
            "--exact",
            "engine_process",
            "--nocapture",
            "--include-ignored",
        ])
        .env("QUIVER_LIFECYCLE_ENGINE", allinone())
        .env("XDG_RUNTIME_DIR", &runtime)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // SAFETY: setsid between fork and exec; async-signal-safe. Its own session keeps a stray
    // signal to the test's process group away from the engine, and the engine's away from us.
    unsafe {
        engine.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut engine = engine.spawn().unwrap();
    let mut ready = false;
    for line in BufReader::new(engine.stdout.take().unwrap()).lines() {
        if line.unwrap().trim() == "ENGINE READY" {
            ready = true;
            break;
        }
    }
    assert!(ready, "the engine process did not get ready");
    let workers = children_of(engine.id());
    let launch: Vec<u32> = workers
        .iter()
        .copied()
        .filter(|pid| cmdline(*pid).iter().any(|a| a == "--unix"))
        .collect();
    let stdio: Vec<u32> = workers
        .iter()
        .copied()
        .filter(|p| !launch.contains(p))
        .collect();
    assert_eq!(launch.len(), 1, "one launch: worker, among {workers:?}");
    assert!(!stdio.is_empty(), "stdio workers, among {workers:?}");
    let args = cmdline(launch[0]);
    let socket = PathBuf::from(&args[args.iter().position(|a| a == "--unix").unwrap() + 1]);
    assert!(
        socket.exists(),
        "the launch: worker listens at {}",
        socket.display()
    );
    assert!(
        !work_files(&runtime).is_empty(),
        "a stdio scan is in flight"
    );

    engine.kill().unwrap();
    let killed = Instant::now();
    engine.wait().unwrap();
    let mut exit_after = Vec::new();
    for (kind, pid) in stdio
        .iter()
        .map(|p| ("stdio", *p))
        .chain([("launch:", launch[0])])
    {
        while !gone(pid) {
            assert!(
                killed.elapsed() < WORKER_EXIT_BOUND,
                "{kind} worker {pid} still runs {WORKER_EXIT_BOUND:?} after its engine's SIGKILL"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        exit_after.push((kind, pid, killed.elapsed()));
    }
    eprintln!("worker exit after the engine's SIGKILL: {exit_after:?}");
    let deadline = Instant::now() + WORKER_EXIT_BOUND;
    while socket.exists() || !work_files(&runtime).is_empty() {
        assert!(
            Instant::now() < deadline,
            "left behind: socket {} exists={}, work files {:?}",
            socket.display(),
            socket.exists(),
            work_files(&runtime)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The dead engine's private directory is swept by the next engine that launches a worker.
    let private_dir = socket.parent().unwrap().to_path_buf();
    assert!(private_dir.exists());
    sweep_by_launching(&runtime);
    assert!(
        !private_dir.exists(),
        "{} was not swept",
        private_dir.display()
    );
    let _ = std::fs::remove_dir_all(&runtime);
}

/// Launches (and ends) a worker with `XDG_RUNTIME_DIR=runtime`, in a child engine, so that the
/// variable never changes in this process.
fn sweep_by_launching(runtime: &Path) {
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "engine_process",
            "--nocapture",
            "--include-ignored",
        ])
        .env("QUIVER_LIFECYCLE_ENGINE", allinone())
        .env("QUIVER_LIFECYCLE_LAUNCH_ONLY", "1")
        .env("XDG_RUNTIME_DIR", runtime)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

/// The engine of the test above; does nothing unless run by it.
#[test]
#[ignore = "run only as the engine process of workers_end_with_their_engine_even_by_sigkill"]
fn engine_process() {
    let Some(allinone) = std::env::var_os("QUIVER_LIFECYCLE_ENGINE") else {
        return;
    };
    let allinone = allinone.to_string_lossy().into_owned();
    let launched = attach(&format!("launch:{allinone}"));
    if std::env::var_os("QUIVER_LIFECYCLE_LAUNCH_ONLY").is_some() {
        launched.worker.shutdown();
        return;
    }
    let attached = attach(&allinone);
    let numbers = attached
        .found
        .functions
        .iter()
        .position(|f| f.name == "numbers")
        .expect("numbers");
    let args = RawArguments {
        positional: vec![Arc::new(Int64Array::from(vec![1_000_000_000i64])) as ArrayRef],
        named: vec![(
            "batch_rows".into(),
            Arc::new(Int64Array::from(vec![1000i64])) as ArrayRef,
        )],
    };
    let bound = bind(&attached, numbers, args, None).expect("bind");
    let (_execution, mut primary) = scan::start(&bound, None, None).expect("start");
    primary.next_batch().expect("a batch").expect("not done");
    println!("ENGINE READY");
    std::thread::sleep(Duration::from_secs(120));
}

/// A worker whose stderr nobody reads any more (the reader is gone before it starts, so every log
/// line fails with EPIPE) still serves, and exits cleanly (status 0) when its engine detaches.
#[test]
fn a_worker_with_a_closed_stderr_serves_and_exits_cleanly() {
    let dir = fresh_dir("stderr");
    let script = concat!(
        "d=$1; exec 3>&1; ",
        "{ while [ ! -e \"$d/reader-gone\" ]; do sleep 0.01; done; ",
        "\"$0\" --debug 2>&1 1>&3 3>&-; echo $? > \"$d/status\"; } ",
        "| { exec 0<&-; : > \"$d/reader-gone\"; }"
    );
    let location = format!("sh -c '{script}' {} {}", allinone(), dir.display());
    let attached = attach(&location);
    assert!(attached.found.functions.iter().any(|f| f.name == "numbers"));
    attached.worker.shutdown();
    let status_file = dir.join("status");
    let deadline = Instant::now() + WORKER_EXIT_BOUND;
    while !status_file.exists() {
        assert!(Instant::now() < deadline, "the worker did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(50));
    let status = std::fs::read_to_string(&status_file).unwrap();
    assert_eq!(status.trim(), "0", "the worker's exit status");
    let _ = std::fs::remove_dir_all(&dir);
}
