//! The engine core driving the real `quiver-allinone` worker, without DuckDB: discovery, bind,
//! parallel table scans (stdio and `launch:`, shared memory off and on), scalar and table-in-out
//! calls, a worker killed mid-scan, split requests redeemed on another worker, and no process left
//! behind.
//!
//! Needs `target/<profile>/quiver-allinone` (built by `cargo build --workspace`; `./quiver test`
//! builds it before running the tests).

mod common;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use quiver_duckdb::attached::Attached;
use quiver_duckdb::bind::{bind, Bound};
use quiver_duckdb::stream::Stream;
use quiver_duckdb::{catalog, scalar, scan, splits, table_in_out, worker::Worker, FailureCode};
use quiver_vgi_contract::RawArguments;

use common::{allinone, attach};

fn function(attached: &Attached, name: &str) -> usize {
    attached
        .found
        .functions
        .iter()
        .position(|f| f.name == name)
        .unwrap_or_else(|| panic!("no function {name}"))
}

fn bind_numbers(attached: &Arc<Attached>, n: i64, batch_rows: Option<i64>) -> Bound {
    let mut args = RawArguments {
        positional: vec![Arc::new(Int64Array::from(vec![n])) as ArrayRef],
        named: vec![],
    };
    if let Some(rows) = batch_rows {
        args.named.push((
            "batch_rows".into(),
            Arc::new(Int64Array::from(vec![rows])) as ArrayRef,
        ));
    }
    bind(attached, function(attached, "numbers"), args, None).expect("bind numbers")
}

/// Sums column 0 of every batch of a parallel scan over `threads` streams.
fn parallel_sum(bound: &Bound, threads: usize, projection: Option<Vec<i64>>) -> (i64, i64, usize) {
    let (execution, primary) = scan::start(bound, projection, None).expect("start");
    let allowed = (execution.max_workers as usize).min(threads);
    let execution = Arc::new(execution);
    let mut streams = vec![primary];
    for _ in 1..allowed {
        streams.push(execution.join().expect("join"));
    }
    let handles: Vec<_> = streams
        .into_iter()
        .map(|mut stream| {
            std::thread::spawn(move || {
                let (mut sum, mut rows) = (0i64, 0i64);
                while let Some(batch) = stream.next_batch().expect("batch") {
                    let values = batch.column(0).as_primitive::<Int64Type>();
                    sum += values.values().iter().sum::<i64>();
                    rows += batch.num_rows() as i64;
                }
                stream.close().expect("close");
                (sum, rows)
            })
        })
        .collect();
    let (mut sum, mut rows) = (0, 0);
    for handle in handles {
        let (s, r) = handle.join().unwrap();
        sum += s;
        rows += r;
    }
    (sum, rows, allowed)
}

#[test]
fn discovery_lists_every_function_with_its_kind() {
    let attached = attach(&allinone());
    let mut names: Vec<(&str, catalog::Kind)> = attached
        .found
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.kind))
        .collect();
    names.sort_by_key(|(n, _)| *n);
    assert_eq!(
        names,
        [
            ("avg_double", catalog::Kind::Aggregate),
            ("concat_agg", catalog::Kind::Aggregate),
            ("echo", catalog::Kind::TableInOut),
            ("multiply", catalog::Kind::Scalar),
            ("numbers", catalog::Kind::Table),
            ("row_count", catalog::Kind::TableBuffering),
            ("split_numbers", catalog::Kind::Table),
            ("sum_int", catalog::Kind::Aggregate),
            ("upper_case", catalog::Kind::Scalar)
        ]
    );
    let numbers = &attached.found.functions[function(&attached, "numbers")];
    assert!(numbers.projection_pushdown && numbers.filter_pushdown);
    assert_eq!(numbers.max_workers, Some(4));
    assert!(!numbers.supports_splits);
    assert!(attached.found.functions[function(&attached, "split_numbers")].supports_splits);
}

#[test]
fn stdio_parallel_scan_sums_exactly() {
    let attached = attach(&allinone());
    let n = 3_000_000i64;
    let bound = bind_numbers(&attached, n, Some(100_000));
    assert_eq!(bound.output_schema.field(0).name(), "n");
    let (sum, rows, streams) = parallel_sum(&bound, 3, Some(vec![0]));
    assert_eq!((sum, rows), (n * (n - 1) / 2, n));
    assert_eq!(streams, 3);
    // The pooled processes serve the next scan: no new connection needed.
    let opened = attached.worker.connections_opened();
    let (sum, _, _) = parallel_sum(&bound, 3, None);
    assert_eq!(sum, n * (n - 1) / 2);
    assert_eq!(attached.worker.connections_opened(), opened);
}

#[test]
fn an_abandoned_scan_is_cancelled_and_its_connection_reused() {
    let attached = attach(&allinone());
    let n = 10_000_000i64;
    let bound = bind_numbers(&attached, n, Some(10_000));
    let (execution, mut primary) = scan::start(&bound, None, None).expect("start");
    assert!(primary.next_batch().expect("a batch").is_some());
    let opened = attached.worker.connections_opened();
    // A LIMIT stops reading: the stream is dropped mid-scan, cancelled, and its connection pooled.
    drop(primary);
    drop(execution);
    let (sum, rows, _) = parallel_sum(&bound, 1, None);
    assert_eq!((sum, rows), (n * (n - 1) / 2, n));
    assert_eq!(
        attached.worker.connections_opened(),
        opened,
        "the next scan reuses the cancelled stream's connection"
    );
}

#[test]
fn launch_scan_with_shared_memory() {
    // Env is process-wide: this test's worker is the only one opened while it is set.
    let _guard = ENV.lock().unwrap();
    std::env::set_var("VGI_RPC_SHM_SIZE_BYTES", (64u64 << 20).to_string());
    let attached = attach(&format!("launch:{}", allinone()));
    std::env::remove_var("VGI_RPC_SHM_SIZE_BYTES");
    let n = 5_000_000i64;
    let bound = bind_numbers(&attached, n, Some(1 << 20));
    let (sum, rows, streams) = parallel_sum(&bound, 2, None);
    assert_eq!((sum, rows, streams), (n * (n - 1) / 2, n, 2));
    let pids = attached.worker.pids();
    assert_eq!(pids.len(), 1, "one shared launch: process");
    drop(bound);
    attached.worker.shutdown();
    assert!(!alive(pids[0]), "the launched worker was reaped");
}

static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.split_whitespace()
                .nth(2)
                .is_none_or(|state| state != "Z")
        })
        .unwrap_or(false)
}

#[test]
fn bind_errors_are_the_workers() {
    let attached = attach(&allinone());
    let args = RawArguments {
        positional: vec![Arc::new(Int64Array::from(vec![-5])) as ArrayRef],
        named: vec![],
    };
    let error = match bind(&attached, function(&attached, "numbers"), args, None) {
        Err(e) => e,
        Ok(_) => panic!("numbers(-5) bound"),
    };
    assert_eq!(error.code, FailureCode::Remote, "{}", error.message);
    assert!(
        error.message.contains("bind of numbers()"),
        "{}",
        error.message
    );
}

#[test]
fn scalar_upper_case_round_trips() {
    let attached = attach(&allinone());
    let input = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
    let bound = bind(
        &attached,
        function(&attached, "upper_case"),
        RawArguments::default(),
        Some(input.clone()),
    )
    .expect("bind upper_case");
    let mut stream = scalar::start(&bound).expect("start");
    for _ in 0..3 {
        let batch = RecordBatch::try_new(
            input.clone(),
            vec![Arc::new(StringArray::from(vec![
                Some("abc"),
                None,
                Some("straße"),
            ]))],
        )
        .unwrap();
        let (out, more) = stream.exchange(Some(batch)).expect("exchange");
        assert!(!more);
        let out: Vec<Option<&str>> = out.column(0).as_string::<i32>().iter().collect();
        assert_eq!(out, [Some("ABC"), None, Some("STRASSE")]);
    }
    stream.close().expect("close");
}

#[test]
fn echo_passes_batches_through() {
    let attached = attach(&allinone());
    let input = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
    let bound = bind(
        &attached,
        function(&attached, "echo"),
        RawArguments::default(),
        Some(input.clone()),
    )
    .expect("bind echo");
    assert_eq!(bound.output_schema.as_ref(), input.as_ref());
    let mut stream = table_in_out::start(&bound).expect("start");
    let batch =
        RecordBatch::try_new(input, vec![Arc::new(Int64Array::from(vec![1, 2, 3]))]).unwrap();
    let (out, more) = stream.exchange(Some(batch.clone())).expect("exchange");
    assert_eq!((out, more), (batch, false));
    assert!(
        stream.finalize().expect("finalize").is_none(),
        "echo has no finalize"
    );
}

#[test]
fn a_worker_killed_mid_scan_is_an_error_naming_it() {
    let attached = attach(&format!("launch:{}", allinone()));
    let bound = bind_numbers(&attached, 1 << 40, Some(1 << 16));
    let (_execution, mut stream) = scan::start(&bound, None, None).expect("start");
    assert!(stream.next_batch().expect("first batch").is_some());
    let pid = attached.worker.pids()[0];
    // SAFETY: killing the worker we launched.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let error = loop {
        match stream.next_batch() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the scan ended normally"),
            Err(error) => break error,
        }
    };
    eprintln!("{}", error.message);
    assert_eq!(error.code, FailureCode::Worker);
    assert!(
        error.message.contains("worker 'w' (quiver-allinone)"),
        "{}",
        error.message
    );
    assert!(error.message.contains("SIGKILL"), "{}", error.message);
    assert!(!alive(pid), "reaped");
    // The next call relaunches the worker.
    let (sum, rows, _) = parallel_sum(&bind_numbers(&attached, 1000, None), 1, None);
    assert_eq!((sum, rows), (499_500, 1000));
}

#[test]
fn unknown_workers_fail_to_attach_with_their_words() {
    let error = match quiver_duckdb::attached::open(
        "sh -c 'echo no such catalog >&2; exit 2'",
        "w",
        None,
    ) {
        Err(e) => e,
        Ok(_) => panic!("attached to sh"),
    };
    assert_eq!(error.code, FailureCode::Worker);
    assert!(
        error.message.contains("no such catalog"),
        "{}",
        error.message
    );
    let _ = Worker::open("w", "unix:///nonexistent.sock").map(|w| w.label());
}

#[test]
fn split_requests_redeem_on_another_worker() {
    // What a distributed engine does (quiver's Spark source): plan on one worker, hand each
    // split's request to another process, which opens it on a worker of its own.
    let planner = attach(&allinone());
    let args = RawArguments {
        positional: vec![Arc::new(Int64Array::from(vec![1000])) as ArrayRef],
        named: vec![(
            "splits".into(),
            Arc::new(Int64Array::from(vec![7])) as ArrayRef,
        )],
    };
    let bound = bind(&planner, function(&planner, "split_numbers"), args, None).expect("bind");
    let (init, output) = scan::primary_init(&bound, None, None).expect("init");
    let requests = splits::plan(init, &bound, output.clone())
        .expect("plan")
        .requests();
    assert_eq!(requests.len(), 7);
    let redeemer = Worker::open("redeemer", &allinone()).expect("open");
    let mut seen = Vec::new();
    for request in &requests {
        let mut stream = Stream::open(&redeemer, request, "a split".into())
            .expect("redeem")
            .expecting(output.clone());
        while let Some(batch) = stream.next_batch().expect("batch") {
            seen.extend(
                batch
                    .column(0)
                    .as_primitive::<Int64Type>()
                    .values()
                    .iter()
                    .copied(),
            );
        }
        stream.close().expect("close");
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..1000).collect::<Vec<i64>>());
    assert!(redeemer
        .pids()
        .iter()
        .all(|pid| !planner.worker.pids().contains(pid)));
}
