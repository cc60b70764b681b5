//! `rpc.json`: the run for tools, one record per measurement with every rep as measured.

use serde::Serialize;

use crate::plan::Measurement;
use crate::stats::Spread;

use super::ratios::{ratios_for, Ratio};
use super::summary::{is_bulk, Figure, Run};
use super::targets::targets;

/// The whole `rpc.json` document.
pub(super) fn document(run: &Run<'_>) -> serde_json::Value {
    let records: Vec<Record> = run
        .measurements
        .iter()
        .filter(|m| !m.reps.is_empty())
        .map(|m| record(run, m))
        .collect();
    serde_json::json!({
        "suite": "rpc",
        "machine": run.machine,
        "plan": run.plan,
        "peer": {"info": run.peer.info, "failure": run.peer.failure},
        "failures": run.failures,
        "wall_s": run.wall_s,
        "targets": targets(run),
        "records": records,
    })
}

fn throughput_unit(workload: &str) -> &'static str {
    if workload.starts_with("unary") {
        "calls/s"
    } else if workload.starts_with("producer") {
        "batches/s"
    } else if workload.starts_with("exchange") || workload.contains("rtt") {
        "round trips/s"
    } else {
        "ops/s"
    }
}

#[derive(Serialize)]
struct Throughput {
    unit: &'static str,
    median: f64,
    min: f64,
    max: f64,
}

#[derive(Serialize)]
struct Record {
    workload: String,
    variant: String,
    transport: String,
    implementation: String,
    placement: String,
    reps: usize,
    ops_per_rep: u64,
    /// Per-operation p50 latency: median over reps, and its extremes.
    median_s: f64,
    min_s: f64,
    max_s: f64,
    p99_s: Spread,
    throughput: Throughput,
    rows: u64,
    bytes: u64,
    rows_per_s: f64,
    mb_per_s: f64,
    gb_per_s: Option<Spread>,
    ratios: Vec<Ratio>,
    /// Every rep as measured (ops, wall time, p50, p99).
    rep_results: Vec<crate::stats::Rep>,
}

fn record(run: &Run<'_>, m: &Measurement) -> Record {
    let figure = Figure::of(m);
    let bulk = is_bulk(&m.workload);
    Record {
        workload: m.workload.clone(),
        variant: m.variant.clone(),
        transport: m.transport.clone(),
        implementation: m.implementation.clone(),
        placement: m.placement.clone(),
        reps: m.reps.len(),
        ops_per_rep: m.reps.first().map(|r| r.ops).unwrap_or(0),
        median_s: figure.p50_s.median,
        min_s: figure.p50_s.min,
        max_s: figure.p50_s.max,
        p99_s: figure.p99_s,
        throughput: Throughput {
            unit: throughput_unit(&m.workload),
            median: figure.ops_per_s.median,
            min: figure.ops_per_s.min,
            max: figure.ops_per_s.max,
        },
        rows: m.rows_per_op,
        bytes: m.bytes_per_op,
        rows_per_s: figure.ops_per_s.median * m.rows_per_op as f64,
        mb_per_s: figure.gb_per_s.median * 1e3,
        gb_per_s: bulk.then_some(figure.gb_per_s),
        ratios: ratios_for(run, m, &figure),
        rep_results: m.reps.clone(),
    }
}
