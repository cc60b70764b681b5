//! Summaries, ratios, targets, and the two result files: `rpc.md` for people and
//! `rpc.json` for tools.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::peer::PeerRun;
use crate::placement::{CROSS_CPU, ONE_THREAD, SAME_CPU};
use crate::plan::{implementation, Measurement, Plan};
use crate::stats::Spread;

/// The figures of one measurement: medians [min–max] over its reps.
#[derive(Clone, Copy, Debug)]
pub struct Figure {
    /// Per-operation p50, seconds.
    pub p50_s: Spread,
    /// Per-operation p99, seconds.
    pub p99_s: Spread,
    /// Operations per second.
    pub ops_per_s: Spread,
    /// Column bytes per second (both directions counted), GB/s (10^9).
    pub gb_per_s: Spread,
}

impl Figure {
    /// Summarises a measurement's reps.
    pub fn of(m: &Measurement) -> Figure {
        let ops_per_s = Spread::of(m.reps.iter().map(|r| r.ops_per_s()));
        Figure {
            p50_s: Spread::of(m.reps.iter().map(|r| r.p50_s)),
            p99_s: Spread::of(m.reps.iter().map(|r| r.p99_s)),
            ops_per_s,
            gb_per_s: ops_per_s.scaled(m.bytes_per_op as f64 / 1e9),
        }
    }
}

/// Facts about the machine, for the "machine" line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Machine {
    /// `nproc`.
    pub nproc: String,
    /// First `model name` of /proc/cpuinfo.
    pub cpu_model: String,
    /// `uname -r`.
    pub kernel: String,
    /// UTC date and time of the run.
    pub date: String,
    /// `git describe`-like commit of the tree measured.
    pub commit: String,
}

impl Machine {
    /// Reads the facts (missing ones become "unknown").
    pub fn probe() -> Machine {
        let try_command = |program: &str, args: &[&str]| {
            std::process::Command::new(program)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let command = |program: &str, args: &[&str]| {
            try_command(program, args).unwrap_or_else(|| "unknown".to_string())
        };
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|line| line.starts_with("model name"))
                    .and_then(|line| line.split_once(':'))
                    .map(|(_, model)| model.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        let mut commit = command("git", &["rev-parse", "--short", "HEAD"]);
        let status = try_command("git", &["status", "--porcelain", "--untracked-files=no"]);
        if status.is_some_and(|changes| !changes.is_empty()) {
            commit.push_str(" (with uncommitted changes)");
        }
        Machine {
            nproc: command("nproc", &[]),
            cpu_model,
            kernel: command("uname", &["-r"]),
            date: command("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
            commit,
        }
    }
}

/// Everything one run produced.
pub struct Run<'a> {
    /// The counts used.
    pub plan: &'a Plan,
    /// quiver's and the baselines' measurements, then the peer's.
    pub measurements: &'a [Measurement],
    /// The peer's versions and failure, if any.
    pub peer: &'a PeerRun,
    /// Errors of quiver's own runs (a section that could not run).
    pub failures: &'a [String],
    /// The machine.
    pub machine: &'a Machine,
    /// Wall time of the whole suite, seconds.
    pub wall_s: f64,
}

impl Run<'_> {
    /// A cross-CPU figure (every figure has one).
    fn find(
        &self,
        workload: &str,
        variant: &str,
        transport: &str,
        implementation: &str,
    ) -> Option<Figure> {
        self.find_at(workload, variant, transport, implementation, CROSS_CPU.name)
    }

    fn find_at(
        &self,
        workload: &str,
        variant: &str,
        transport: &str,
        implementation: &str,
        placement: &str,
    ) -> Option<Figure> {
        self.measurements
            .iter()
            .find(|m| {
                m.is(workload, variant, transport, implementation, placement) && !m.reps.is_empty()
            })
            .map(Figure::of)
    }

    /// A figure of one thread alone (memcpy, in-memory steps).
    fn find_one_thread(&self, workload: &str, variant: &str) -> Option<Figure> {
        let implementation = if workload.starts_with("baseline") {
            implementation::RAW
        } else {
            implementation::QUIVER
        };
        self.find_at(workload, variant, "memory", implementation, ONE_THREAD)
    }

    fn rtt_at(&self, transport: &str, placement: &str) -> Option<Figure> {
        self.find_at(
            "baseline.rtt-1byte",
            "rtt-1byte",
            transport,
            implementation::RAW,
            placement,
        )
    }

    fn memcpy(&self) -> Option<Figure> {
        self.find_one_thread("baseline.memcpy", "memcpy")
    }

    fn pipe_bandwidth(&self) -> Option<Figure> {
        self.find(
            "baseline.pipe-bandwidth",
            "pipe-bandwidth",
            "pipe",
            implementation::RAW,
        )
    }
}

/// The 1-byte round trip that bounds a transport from below.
fn rtt_transport_for(transport: &str) -> &'static str {
    match transport {
        "pipe" => "pipe-threads",
        "subprocess" => "pipe",
        "unix" => "unix",
        _ => "tcp",
    }
}

fn rtt_label(transport: &str) -> &'static str {
    match transport {
        "pipe-threads" => "pipe between threads",
        "pipe" => "pipe between processes",
        "unix" => "unix socket between processes",
        _ => "tcp loopback between processes",
    }
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

fn is_bulk(workload: &str) -> bool {
    workload.starts_with("large")
        || workload.starts_with("breakdown")
        || workload == "baseline.memcpy"
        || workload == "baseline.pipe-bandwidth"
}

/// One ratio attached to a record.
#[derive(Serialize)]
struct Ratio {
    baseline: String,
    metric: &'static str,
    value: f64,
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

fn ratios_for(run: &Run<'_>, m: &Measurement, figure: &Figure) -> Vec<Ratio> {
    let mut ratios = Vec::new();
    let mut push = |baseline: String, metric: &'static str, value: f64| {
        if value.is_finite() {
            ratios.push(Ratio {
                baseline,
                metric,
                value,
            });
        }
    };
    let workload = m.workload.as_str();
    if workload.starts_with("unary") {
        let rtt_transport = rtt_transport_for(&m.transport);
        if let Some(rtt) = run.rtt_at(rtt_transport, &m.placement) {
            push(
                format!(
                    "raw 1-byte round trip, {}, {}",
                    rtt_label(rtt_transport),
                    m.placement
                ),
                "p50 / baseline p50",
                figure.p50_s.median / rtt.p50_s.median,
            );
        }
    }
    if m.implementation == implementation::QUIVER && !workload.starts_with("breakdown") {
        if let Some(peer) = run.find_at(
            workload,
            &m.variant,
            &m.transport,
            implementation::VGI_RPC,
            &m.placement,
        ) {
            if workload.starts_with("unary") {
                push(
                    "vgi-rpc, same transport".into(),
                    "vgi-rpc p50 / quiver p50",
                    peer.p50_s.median / figure.p50_s.median,
                );
            }
            push(
                "vgi-rpc, same transport".into(),
                "quiver ops/s / vgi-rpc ops/s",
                figure.ops_per_s.median / peer.ops_per_s.median,
            );
        }
    }
    if is_bulk(workload) && workload != "baseline.memcpy" {
        if let Some(memcpy) = run.memcpy() {
            push(
                "memcpy 16 MiB".into(),
                "GB/s / memcpy GB/s",
                figure.gb_per_s.median / memcpy.gb_per_s.median,
            );
        }
        if workload != "baseline.pipe-bandwidth" {
            if let Some(pipe) = run.pipe_bandwidth() {
                push(
                    "raw pipe, 1 MiB writes, between processes".into(),
                    "GB/s / pipe GB/s",
                    figure.gb_per_s.median / pipe.gb_per_s.median,
                );
            }
        }
        if m.variant == "shm" {
            if let Some(inline) = run.find_at(
                workload,
                "inline",
                &m.transport,
                &m.implementation,
                &m.placement,
            ) {
                push(
                    format!("{} inline, same transport", m.implementation),
                    "shm GB/s / inline GB/s",
                    figure.gb_per_s.median / inline.gb_per_s.median,
                );
            }
        }
    }
    ratios
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

/// A stated goal and how this run did against it.
#[derive(Serialize)]
struct Target {
    target: String,
    measured: Option<f64>,
    comparison: &'static str,
    threshold: f64,
    met: Option<bool>,
    detail: String,
}

fn target(
    name: String,
    measured: Option<f64>,
    comparison: &'static str,
    threshold: f64,
    detail: String,
) -> Target {
    let met = measured.map(|v| {
        if comparison == "≤" {
            v <= threshold
        } else {
            v >= threshold
        }
    });
    Target {
        target: name,
        measured,
        comparison,
        threshold,
        met,
        detail,
    }
}

fn targets(run: &Run<'_>) -> Vec<Target> {
    use implementation::{QUIVER, VGI_RPC};
    let mut out = Vec::new();
    for placement in [CROSS_CPU.name, SAME_CPU.name] {
        let q = run.find_at("unary.add", "inline", "subprocess", QUIVER, placement);
        let rtt = run.rtt_at("pipe", placement);
        if q.is_none() && placement == SAME_CPU.name {
            continue;
        }
        out.push(target(
            format!("unary p50, subprocess ≤ 1.5× raw 1-byte pipe round trip between processes ({placement})"),
            q.zip(rtt).map(|(q, r)| q.p50_s.median / r.p50_s.median),
            "≤",
            1.5,
            match (q, rtt) {
                (Some(q), Some(r)) => format!("{} vs {}", time(q.p50_s.median), time(r.p50_s.median)),
                _ => "not measured".into(),
            },
        ));
    }
    for placement in [CROSS_CPU.name, SAME_CPU.name] {
        let q = run.find_at("unary.add", "inline", "subprocess", QUIVER, placement);
        let v = run.find_at("unary.add", "inline", "subprocess", VGI_RPC, placement);
        if q.is_none() && v.is_none() && placement == SAME_CPU.name {
            continue;
        }
        out.push(target(
            format!("unary p50, subprocess ≥ 8× faster than vgi-rpc ({placement})"),
            q.zip(v).map(|(q, v)| v.p50_s.median / q.p50_s.median),
            "≥",
            8.0,
            match (q, v) {
                (Some(q), Some(v)) => format!(
                    "quiver {} vs vgi-rpc {}",
                    time(q.p50_s.median),
                    time(v.p50_s.median)
                ),
                _ => "not measured".into(),
            },
        ));
    }
    for placement in [CROSS_CPU.name, SAME_CPU.name] {
        for transport in ["pipe", "subprocess"] {
            let q = run.find_at("producer.1k", "inline", transport, QUIVER, placement);
            let v = run.find_at("producer.1k", "inline", transport, VGI_RPC, placement);
            if q.is_none() && v.is_none() && placement == SAME_CPU.name {
                continue;
            }
            out.push(target(
                format!(
                    "producer 1K-row batches/s, {} ≥ 5× vgi-rpc ({placement})",
                    transport_label(transport)
                ),
                q.zip(v)
                    .map(|(q, v)| q.ops_per_s.median / v.ops_per_s.median),
                "≥",
                5.0,
                match (q, v) {
                    (Some(q), Some(v)) => {
                        format!(
                            "{}/s vs {}/s",
                            count(q.ops_per_s.median),
                            count(v.ops_per_s.median)
                        )
                    }
                    _ => "not measured".into(),
                },
            ));
        }
    }
    let memcpy = run.memcpy();
    for (workload, direction) in [
        ("large.server-to-client", "server→client"),
        ("large.client-to-server", "client→server"),
    ] {
        let shm = run.find(workload, "shm", "subprocess", QUIVER);
        let inline = run.find(workload, "inline", "subprocess", QUIVER);
        out.push(target(
            format!("16 MiB over shm, subprocess, {direction} ≥ 0.6× memcpy"),
            shm.zip(memcpy)
                .map(|(s, m)| s.gb_per_s.median / m.gb_per_s.median),
            "≥",
            0.6,
            match (shm, memcpy) {
                (Some(s), Some(m)) => format!(
                    "{} vs {} GB/s",
                    gbps(s.gb_per_s.median),
                    gbps(m.gb_per_s.median)
                ),
                _ => "not measured".into(),
            },
        ));
        out.push(target(
            format!("16 MiB over shm, subprocess, {direction} ≥ 4× quiver inline"),
            shm.zip(inline)
                .map(|(s, i)| s.gb_per_s.median / i.gb_per_s.median),
            "≥",
            4.0,
            match (shm, inline) {
                (Some(s), Some(i)) => format!(
                    "{} vs {} GB/s",
                    gbps(s.gb_per_s.median),
                    gbps(i.gb_per_s.median)
                ),
                _ => "not measured".into(),
            },
        ));
    }
    out
}

/// Writes `rpc.json` and `rpc.md` under `dir`; returns the markdown.
pub fn write(run: &Run<'_>, dir: &Path) -> std::io::Result<String> {
    std::fs::create_dir_all(dir)?;
    let records: Vec<Record> = run
        .measurements
        .iter()
        .filter(|m| !m.reps.is_empty())
        .map(|m| record(run, m))
        .collect();
    let json = serde_json::json!({
        "suite": "rpc",
        "machine": run.machine,
        "plan": run.plan,
        "peer": {"info": run.peer.info, "failure": run.peer.failure},
        "failures": run.failures,
        "wall_s": run.wall_s,
        "targets": targets(run),
        "records": records,
    });
    std::fs::write(
        dir.join("rpc.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    let markdown = markdown(run);
    std::fs::write(dir.join("rpc.md"), &markdown)?;
    Ok(markdown)
}

fn transport_label(transport: &str) -> &'static str {
    match transport {
        "pipe" => "in-process pipe",
        "subprocess" => "subprocess stdio",
        "unix" => "unix socket",
        "tcp" => "tcp loopback",
        "pipe-threads" => "pipe, two threads",
        _ => "memory",
    }
}

/// Seconds as µs or ms with three significant digits.
fn time(seconds: f64) -> String {
    if seconds < 1e-3 {
        format!("{:.1} µs", seconds * 1e6)
    } else {
        format!("{:.2} ms", seconds * 1e3)
    }
}

fn time_spread(s: Spread) -> String {
    if s.median < 1e-3 {
        format!(
            "{:.1} µs [{:.1}–{:.1}]",
            s.median * 1e6,
            s.min * 1e6,
            s.max * 1e6
        )
    } else {
        format!(
            "{:.2} ms [{:.2}–{:.2}]",
            s.median * 1e3,
            s.min * 1e3,
            s.max * 1e3
        )
    }
}

fn count(x: f64) -> String {
    if x >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if x >= 1e3 {
        format!("{:.2}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn count_spread(s: Spread) -> String {
    format!("{} [{}–{}]", count(s.median), count(s.min), count(s.max))
}

fn gbps(x: f64) -> String {
    format!("{x:.2}")
}

fn gbps_spread(s: Spread) -> String {
    format!("{:.2} [{:.2}–{:.2}]", s.median, s.min, s.max)
}

fn ratio(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.0}×")
    } else {
        format!("{x:.2}×")
    }
}

fn or_dash(x: Option<String>) -> String {
    x.unwrap_or_else(|| "—".to_string())
}

fn markdown(run: &Run<'_>) -> String {
    use implementation::{QUIVER, VGI_RPC};
    let mut md = String::new();
    let m = run.machine;
    let info = &run.peer.info;
    let _ = writeln!(md, "# `./quiver bench rpc`\n");
    let _ = writeln!(
        md,
        "**machine:** nproc {}, {}, Linux {}, {} · commit {} · vgi-rpc {} on Python {} (pyarrow {}) · suite wall time {:.0} s\n",
        m.nproc,
        m.cpu_model,
        m.kernel,
        m.date,
        m.commit,
        if info.vgi_rpc.is_empty() { "—" } else { &info.vgi_rpc },
        info.python.split_whitespace().next().unwrap_or("—"),
        if info.pyarrow.is_empty() { "—" } else { &info.pyarrow },
        run.wall_s,
    );
    let p = run.plan;
    let _ = writeln!(
        md,
        "Every figure is **median [min–max] over {} reps**, measured in this one run. A rep times each operation \
         after warm-up (unary: {} warm-up + {} calls; 1K-row streams: {} + {} steps; 16 MiB batches: {} + {} steps; \
         raw round trips: {}); p50/p99 are per-operation percentiles within a rep and throughput is operations over \
         the rep's wall time. The reps are interleaved: each round measures one rep of the baselines, of quiver and \
         of vgi-rpc, rotating their order from round to round, so a slow spell of this noisy 2-vCPU VM lands on all \
         of them. Read ratios, not absolute numbers.\n",
        p.reps,
        p.unary_warmup,
        p.unary_ops,
        p.stream_warmup,
        p.stream_ops,
        p.large_warmup,
        p.large_ops,
        p.rtt_ops,
    );
    for failure in run.failures {
        let _ = writeln!(md, "> **quiver section failed:** {failure}\n");
    }
    if let Some(failure) = &run.peer.failure {
        let _ = writeln!(
            md,
            "> **vgi-rpc peer failed** (its figures are missing or partial): {failure}\n"
        );
    }

    // Targets.
    let _ = writeln!(md, "## Targets\n");
    let _ = writeln!(md, "| target | measured | met? |\n|---|---|---|");
    for t in targets(run) {
        let verdict = match t.met {
            Some(true) => "**met**",
            Some(false) => "**missed**",
            None => "not measured",
        };
        let measured = t
            .measured
            .map(|v| format!("{} ({})", ratio(v), t.detail))
            .unwrap_or_else(|| t.detail.clone());
        let _ = writeln!(md, "| {} | {} | {} |", t.target, measured, verdict);
    }
    md.push('\n');

    // Unary.
    let _ = writeln!(md, "## Unary `add(a: float, b: float) -> float`\n");
    let _ = writeln!(
        md,
        "| transport | quiver p50 | quiver p99 | quiver calls/s | vgi-rpc p50 | vgi-rpc p99 | vgi-rpc calls/s | \
         vgi-rpc ÷ quiver (p50) | raw 1-byte RTT p50 | quiver ÷ RTT | vgi-rpc ÷ RTT |\n\
         |---|---|---|---|---|---|---|---|---|---|---|"
    );
    for (transport, variant, placement, label) in [
        (
            "pipe",
            "inline",
            CROSS_CPU.name,
            "in-process pipe (server thread)",
        ),
        ("subprocess", "inline", CROSS_CPU.name, "subprocess stdio"),
        (
            "unix",
            "inline",
            CROSS_CPU.name,
            "unix socket (server process)",
        ),
        (
            "tcp",
            "inline",
            CROSS_CPU.name,
            "tcp loopback (server process)",
        ),
        (
            "subprocess",
            "shm",
            CROSS_CPU.name,
            "subprocess stdio, shm on",
        ),
        (
            "pipe",
            "inline",
            SAME_CPU.name,
            "**same CPU:** in-process pipe",
        ),
        (
            "subprocess",
            "inline",
            SAME_CPU.name,
            "**same CPU:** subprocess stdio",
        ),
    ] {
        let q = run.find_at("unary.add", variant, transport, QUIVER, placement);
        let v = run.find_at("unary.add", variant, transport, VGI_RPC, placement);
        if q.is_none() && v.is_none() {
            continue;
        }
        let rtt = run.rtt_at(rtt_transport_for(transport), placement);
        let _ = writeln!(
            md,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            or_dash(q.map(|f| time_spread(f.p50_s))),
            or_dash(q.map(|f| time_spread(f.p99_s))),
            or_dash(q.map(|f| count_spread(f.ops_per_s))),
            or_dash(v.map(|f| time_spread(f.p50_s))),
            or_dash(v.map(|f| time_spread(f.p99_s))),
            or_dash(v.map(|f| count_spread(f.ops_per_s))),
            or_dash(
                q.zip(v)
                    .map(|(q, v)| ratio(v.p50_s.median / q.p50_s.median))
            ),
            or_dash(rtt.map(|r| format!(
                "{} ({})",
                time(r.p50_s.median),
                rtt_label(rtt_transport_for(transport))
            ))),
            or_dash(
                q.zip(rtt)
                    .map(|(q, r)| ratio(q.p50_s.median / r.p50_s.median))
            ),
            or_dash(
                v.zip(rtt)
                    .map(|(v, r)| ratio(v.p50_s.median / r.p50_s.median))
            ),
        );
    }
    let _ = writeln!(
        md,
        "\nAll rows but the last two pin the client to one CPU and the server to the other (cross-cpu); the \
         **same CPU** rows pin both to one CPU, where every wake-up is a local context switch. The RTT column \
         is the raw round trip of the same placement.\n"
    );
    let _ = writeln!(
        md,
        "Shm on: the client owns a {} MiB segment and advertises it on every request; `add`'s 16-byte payload \
         stays inline (below the 128 KiB threshold), so this row is the cost of having shm on.\n",
        p.shm_segment_bytes >> 20
    );

    // Small streams.
    let _ = writeln!(md, "## Streams of 1K-row batches (int64, float64, utf8)\n");
    let _ = writeln!(
        md,
        "| workload | transport | quiver per s | quiver step p50 | vgi-rpc per s | vgi-rpc step p50 | quiver ÷ vgi-rpc |\n\
         |---|---|---|---|---|---|---|"
    );
    for placement in [CROSS_CPU.name, SAME_CPU.name] {
        for (workload, label) in [
            ("producer.1k", "producer, batches/s"),
            ("exchange.echo-1k", "exchange (echo), round trips/s"),
        ] {
            for transport in ["pipe", "subprocess"] {
                let q = run.find_at(workload, "inline", transport, QUIVER, placement);
                let v = run.find_at(workload, "inline", transport, VGI_RPC, placement);
                if q.is_none() && v.is_none() {
                    continue;
                }
                let where_ = if placement == SAME_CPU.name {
                    format!("**same CPU:** {}", transport_label(transport))
                } else {
                    transport_label(transport).to_string()
                };
                let _ = writeln!(
                    md,
                    "| {label} | {where_} | {} | {} | {} | {} | {} |",
                    or_dash(q.map(|f| count_spread(f.ops_per_s))),
                    or_dash(q.map(|f| time_spread(f.p50_s))),
                    or_dash(v.map(|f| count_spread(f.ops_per_s))),
                    or_dash(v.map(|f| time_spread(f.p50_s))),
                    or_dash(
                        q.zip(v)
                            .map(|(q, v)| ratio(q.ops_per_s.median / v.ops_per_s.median))
                    ),
                );
            }
        }
    }
    md.push('\n');

    // Large batches.
    let memcpy = run.memcpy();
    let pipe_bw = run.pipe_bandwidth();
    let _ = writeln!(
        md,
        "## 16 MiB batches (2M int64 rows), GB/s of column data\n"
    );
    let _ = writeln!(
        md,
        "| direction | transport | path | quiver GB/s | vgi-rpc GB/s | quiver ÷ vgi-rpc | quiver ÷ memcpy | \
         quiver ÷ raw pipe | shm ÷ inline (quiver) | shm ÷ inline (vgi-rpc) |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for (workload, label) in [
        ("large.server-to-client", "server→client (producer)"),
        (
            "large.server-to-client+sum",
            "server→client, client sums every value",
        ),
        (
            "large.client-to-server",
            "client→server (exchange, 1-row reply)",
        ),
        ("large.echo", "both ways (echo; 32 MiB per step)"),
    ] {
        for transport in ["pipe", "subprocess"] {
            for variant in ["inline", "shm"] {
                let q = run.find(workload, variant, transport, QUIVER);
                let v = run.find(workload, variant, transport, VGI_RPC);
                if q.is_none() && v.is_none() {
                    continue;
                }
                let shm_gain = |implementation: &str| {
                    if variant != "shm" {
                        return None;
                    }
                    let shm = run.find(workload, "shm", transport, implementation)?;
                    let inline = run.find(workload, "inline", transport, implementation)?;
                    Some(ratio(shm.gb_per_s.median / inline.gb_per_s.median))
                };
                let _ = writeln!(
                    md,
                    "| {label} | {} | {variant} | {} | {} | {} | {} | {} | {} | {} |",
                    transport_label(transport),
                    or_dash(q.map(|f| gbps_spread(f.gb_per_s))),
                    or_dash(v.map(|f| gbps_spread(f.gb_per_s))),
                    or_dash(
                        q.zip(v)
                            .map(|(q, v)| ratio(q.gb_per_s.median / v.gb_per_s.median))
                    ),
                    or_dash(
                        q.zip(memcpy)
                            .map(|(q, m)| ratio(q.gb_per_s.median / m.gb_per_s.median))
                    ),
                    or_dash(
                        q.zip(pipe_bw)
                            .map(|(q, b)| ratio(q.gb_per_s.median / b.gb_per_s.median))
                    ),
                    or_dash(shm_gain(QUIVER)),
                    or_dash(shm_gain(VGI_RPC)),
                );
            }
        }
    }
    let _ = writeln!(
        md,
        "\nBoth servers hand out one pre-built batch, so no row is generated during timing. A step ends when the \
         client holds the result as Arrow arrays: over shm that result is decoded in place over the segment \
         (zero-copy, on both implementations), so only the `+sum` row makes the client read the 16 MiB. \
         client→server sends the batch in an exchange whose reply is one row (the row count), so its time is \
         dominated by the upload; the server does not read the values either. Echo moves the batch both ways \
         and counts 32 MiB per step. Segment: {} MiB, created by the client; shm threshold 128 KiB (both). \
         Caveat: this VM has a 32 MiB L3 cache, so a reused 16 MiB buffer can stay largely in cache while memcpy's \
         source + destination (32 MiB) do not; a shm figure above memcpy means the copies it does stay in cache, \
         not that it beats memory bandwidth.\n",
        p.shm_segment_bytes >> 20
    );

    // Breakdown.
    let steps: Vec<&Measurement> = run
        .measurements
        .iter()
        .filter(|m| {
            m.workload.starts_with("breakdown.")
                && m.bytes_per_op == p.large_bytes()
                && !m.reps.is_empty()
        })
        .collect();
    if !steps.is_empty() {
        let _ = writeln!(
            md,
            "### Where a 16 MiB batch's time goes in quiver (each step alone, in one process)\n"
        );
        let _ = writeln!(
            md,
            "| step | time per 16 MiB | GB/s | ÷ memcpy |\n|---|---|---|---|"
        );
        for step in steps {
            let f = Figure::of(step);
            // A step that does not scale with the bytes (microseconds for 16 MiB)
            // has no meaningful bandwidth.
            let fixed = f.p50_s.median < 20e-6;
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {} |",
                step.variant,
                time_spread(f.p50_s),
                if fixed {
                    "fixed cost".to_string()
                } else {
                    gbps_spread(f.gb_per_s)
                },
                if fixed {
                    "—".to_string()
                } else {
                    or_dash(memcpy.map(|m| ratio(f.gb_per_s.median / m.gb_per_s.median)))
                },
            );
        }
        let _ = writeln!(
            md,
            "\nThe shm sender is `gather-into-segment` (encode, then one copy of the body into the \
             segment); the shm reader is `resolve-from-segment`. The inline sender is `encode-gather` followed by \
             `writev(2)` into the pipe (the kernel's copy, not timed here); the inline reader pays \
             `zeroed-receive-buffer` and the kernel's copy out of the pipe. `encode-into-vec` is for comparison: \
             the cost of encoding with a body copy. Buffers come from the allocator's free lists here; a process \
             whose allocator hands them back to the kernel pays a page fault per 4 KiB on top.\n"
        );
    }
    let server_cpu = run.find_one_thread("breakdown.unary-server-cpu", "unary-server-cpu");
    let client_cpu = run.find_one_thread("breakdown.unary-client-cpu", "unary-client-cpu");
    if let (Some(server_cpu), Some(client_cpu)) = (server_cpu, client_cpu) {
        let cpu_s = server_cpu.p50_s.median + client_cpu.p50_s.median;
        let both = |f: &dyn Fn(&str) -> Option<String>| {
            format!(
                "{} | {}",
                or_dash(f(CROSS_CPU.name)),
                or_dash(f(SAME_CPU.name))
            )
        };
        let _ = writeln!(md, "### Where a unary call's time goes in quiver\n");
        let _ = writeln!(md, "| part | cross-cpu | same-cpu |\n|---|---|---|");
        let client = time_spread(client_cpu.p50_s);
        let server = time_spread(server_cpu.p50_s);
        let _ = writeln!(md, "| client CPU: encode request, decode reply (`Client::call` over memory) | {client} | {client} |");
        let _ = writeln!(
            md,
            "| server CPU: decode, dispatch, `add`, encode reply (`Server::serve` over memory, mean) | {server} | {server} |"
        );
        let _ = writeln!(
            md,
            "| raw 1-byte round trip, pipe between processes | {} |",
            both(&|pl| run.rtt_at("pipe", pl).map(|r| time_spread(r.p50_s)))
        );
        let _ = writeln!(
            md,
            "| **floor: CPU + round trip** | {} |",
            both(&|pl| run
                .rtt_at("pipe", pl)
                .map(|r| format!("**{}**", time(r.p50_s.median + cpu_s))))
        );
        let _ = writeln!(
            md,
            "| measured: unary p50, subprocess | {} |",
            both(&|pl| run
                .find_at("unary.add", "inline", "subprocess", QUIVER, pl)
                .map(|m| time_spread(m.p50_s)))
        );
        let _ = writeln!(
            md,
            "\nThe CPU rows are measured without any transport (requests and replies replayed from memory), \
             so they hold for both placements. Whatever the measured p50 has above the floor is not broken down \
             further: it is what a real call pays beyond a 1-byte exchange (more bytes through the kernel, cache \
             refills after each switch).\n"
        );
    }

    // Baselines.
    let _ = writeln!(md, "## Baselines (same run)\n");
    let _ = writeln!(
        md,
        "| baseline | p50 | p99 | per second | GB/s |\n|---|---|---|---|---|"
    );
    for (transport, placement) in [
        ("pipe", CROSS_CPU.name),
        ("pipe-threads", CROSS_CPU.name),
        ("unix", CROSS_CPU.name),
        ("tcp", CROSS_CPU.name),
        ("pipe", SAME_CPU.name),
        ("pipe-threads", SAME_CPU.name),
    ] {
        if let Some(f) = run.rtt_at(transport, placement) {
            let _ = writeln!(
                md,
                "| 1-byte round trip, {}, {placement} | {} | {} | {} | — |",
                rtt_label(transport),
                time_spread(f.p50_s),
                time_spread(f.p99_s),
                count_spread(f.ops_per_s),
            );
        }
    }
    for placement in [CROSS_CPU.name, SAME_CPU.name] {
        let bandwidth = run.find_at(
            "baseline.pipe-bandwidth",
            "pipe-bandwidth",
            "pipe",
            implementation::RAW,
            placement,
        );
        if let Some(f) = bandwidth {
            let _ = writeln!(
                md,
                "| pipe between processes, 1 MiB writes, 16 MiB per step, {placement} | {} | {} | {} | {} |",
                time_spread(f.p50_s),
                time_spread(f.p99_s),
                count_spread(f.ops_per_s),
                gbps_spread(f.gb_per_s),
            );
        }
    }
    if let Some(f) = memcpy {
        let _ = writeln!(
            md,
            "| memcpy 16 MiB (both buffers touched) | {} | {} | {} | {} |",
            time_spread(f.p50_s),
            time_spread(f.p99_s),
            count_spread(f.ops_per_s),
            gbps_spread(f.gb_per_s),
        );
    }
    md.push('\n');
    md.push_str(METHOD_NOTES);
    md
}

const METHOD_NOTES: &str = "## How it is measured\n\n\
- **Same protocol, both sides.** `BenchService` 1.0.0 (`add`, `produce`, `echo`, `produce_large`, `sink`, \
`echo_large`) is defined once in Rust (`crates/quiver-bench/src/service.rs`) and once with vgi-rpc's own \
Protocol/Stream API (`bench/peers/vgi_rpc_bench.py`). quiver's figures are a quiver client against a quiver \
server; vgi-rpc's are a vgi-rpc client against a vgi-rpc server. Nothing crosses implementations here (the \
conformance suites do that).\n\
- **Transports.** *in-process pipe*: server on a thread of the client's process over two OS pipes \
(`pipe_pair` / vgi-rpc `serve_pipe`). *subprocess*: the worker is a child process on its stdin/stdout (quiver: \
this binary's hidden `serve`; vgi-rpc: `connect([python, script, serve])`). *unix* / *tcp*: the worker is a \
child process listening on a Unix socket / 127.0.0.1, one connection. *shm*: the subprocess transport with a \
client-owned segment (quiver `Client::with_shm`, vgi-rpc `ShmPipeTransport` + `ShmSegment.create`).\n\
- **Placement.** Every process and thread is pinned. *cross-cpu* (all figures unless marked): client on CPU 0, \
server on CPU 1, each end with its own core as an engine and its worker would have. *same CPU*: both on CPU 0. \
On this VM the choice decides what a wake-up costs: a round trip across the two vCPUs wakes a halted vCPU \
through the hypervisor (guest halt-polling is off here), one on a single vCPU is a local context switch. Left \
unpinned, the scheduler picks either from one run to the next, so unpinned figures flip between the two regimes. \
Cross-cpu figures are dominated by wake-ups, same-cpu figures by CPU work per call.\n\
- **Baselines.** Round trips write one byte and read it back through an echo peer (this binary re-executed \
as `raw-peer`, or a thread). Pipe bandwidth writes 16 MiB in 1 MiB `write(2)`s to a child that acknowledges \
with one byte (default 64 KiB pipe buffer, as the RPC transports use). memcpy copies 16 MiB between two \
pre-touched buffers.\n\
- **Ratios** use medians. `÷ RTT` compares an RPC call with the cheapest possible exchange of one byte over \
the same kind of channel (in-process pipe vs a pipe between two threads; subprocess vs a pipe between two \
processes). Records with every rep's summary and each ratio are in `rpc.json`.\n";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::PeerInfo;
    use serde_json::Value;

    /// Rebuilds the run a saved `rpc.json` describes: its records carry every rep as measured.
    fn run_parts(saved: &Value) -> (Plan, Vec<Measurement>, PeerRun, Vec<String>, Machine, f64) {
        let plan: Plan = serde_json::from_value(saved["plan"].clone()).unwrap();
        let measurements = saved["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|record| Measurement {
                workload: record["workload"].as_str().unwrap().to_string(),
                variant: record["variant"].as_str().unwrap().to_string(),
                transport: record["transport"].as_str().unwrap().to_string(),
                implementation: record["implementation"].as_str().unwrap().to_string(),
                placement: record["placement"].as_str().unwrap().to_string(),
                rows_per_op: record["rows"].as_u64().unwrap(),
                bytes_per_op: record["bytes"].as_u64().unwrap(),
                reps: serde_json::from_value(record["rep_results"].clone()).unwrap(),
            })
            .collect();
        let peer = PeerRun {
            info: serde_json::from_value::<PeerInfo>(saved["peer"]["info"].clone()).unwrap(),
            measurements: Vec::new(),
            failure: serde_json::from_value(saved["peer"]["failure"].clone()).unwrap(),
        };
        let failures = serde_json::from_value(saved["failures"].clone()).unwrap();
        let machine = serde_json::from_value(saved["machine"].clone()).unwrap();
        (
            plan,
            measurements,
            peer,
            failures,
            machine,
            saved["wall_s"].as_f64().unwrap(),
        )
    }

    /// The committed `bench/results/rpc.{json,md}` re-rendered from the json's own records are
    /// the committed files, byte for byte: the report is a pure function of the measurements.
    #[test]
    fn saved_results_render_to_the_saved_files() {
        let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/results");
        let saved_json = std::fs::read_to_string(results.join("rpc.json")).unwrap();
        let saved_md = std::fs::read_to_string(results.join("rpc.md")).unwrap();
        let saved: Value = serde_json::from_str(&saved_json).unwrap();
        let (plan, measurements, peer, failures, machine, wall_s) = run_parts(&saved);
        assert!(!measurements.is_empty());
        let run = Run {
            plan: &plan,
            measurements: &measurements,
            peer: &peer,
            failures: &failures,
            machine: &machine,
            wall_s,
        };
        let dir = std::env::temp_dir().join(format!("quiver-bench-report-{}", std::process::id()));
        let markdown = write(&run, &dir).unwrap();
        let json = std::fs::read_to_string(dir.join("rpc.json")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(markdown, saved_md);
        let rendered: Value = serde_json::from_str(&json).unwrap();
        assert_same(&rendered, &saved, "rpc.json");
    }

    /// JSON equality up to the last bits of a float: reading a float back from text is not
    /// always exact (serde_json's default parser), so a re-rendered value may differ in its
    /// 17th significant digit.
    fn assert_same(rendered: &Value, saved: &Value, at: &str) {
        match (rendered, saved) {
            (Value::Number(r), Value::Number(s)) => {
                let (r, s) = (r.as_f64().unwrap(), s.as_f64().unwrap());
                assert!(
                    (r - s).abs() <= 1e-12 * s.abs().max(f64::MIN_POSITIVE),
                    "{at}: {r} != {s}"
                );
            }
            (Value::Array(r), Value::Array(s)) => {
                assert_eq!(r.len(), s.len(), "{at}: lengths differ");
                for (index, (r, s)) in r.iter().zip(s).enumerate() {
                    assert_same(r, s, &format!("{at}[{index}]"));
                }
            }
            (Value::Object(r), Value::Object(s)) => {
                assert_eq!(
                    r.keys().collect::<Vec<_>>(),
                    s.keys().collect::<Vec<_>>(),
                    "{at}: keys differ"
                );
                for (key, r) in r {
                    assert_same(r, &s[key], &format!("{at}.{key}"));
                }
            }
            _ => assert_eq!(rendered, saved, "{at}"),
        }
    }
}
