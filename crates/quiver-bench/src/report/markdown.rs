//! `rpc.md`: the run for people, table by table, with the prose that says how to read them.

use std::fmt::Write as _;

use crate::placement::{CROSS_CPU, SAME_CPU};
use crate::plan::implementation::{self, QUIVER, VGI_RPC};
use crate::plan::Measurement;

use super::format::{
    count_spread, gbps_spread, or_dash, ratio, time, time_spread, transport_label,
};
use super::summary::{rtt_label, rtt_transport_for, Figure, Run};
use super::targets::targets;

pub(super) fn markdown(run: &Run<'_>) -> String {
    let mut md = String::new();
    header(&mut md, run);
    targets_table(&mut md, run);
    unary(&mut md, run);
    streams(&mut md, run);
    large_batches(&mut md, run);
    large_breakdown(&mut md, run);
    unary_breakdown(&mut md, run);
    baselines(&mut md, run);
    md.push_str(METHOD_NOTES);
    md
}

/// The title, the machine, how to read the figures, and any section that failed.
fn header(md: &mut String, run: &Run<'_>) {
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
}

/// The targets, each with its measured ratio.
fn targets_table(md: &mut String, run: &Run<'_>) {
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
}

/// The unary table's rows: transport, variant, placement, label.
const UNARY_ROWS: &[(&str, &str, &str, &str)] = &[
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
];

/// Unary calls per transport and placement, beside the raw round trip.
fn unary(md: &mut String, run: &Run<'_>) {
    let p = run.plan;
    let _ = writeln!(md, "## Unary `add(a: float, b: float) -> float`\n");
    let _ = writeln!(
        md,
        "| transport | quiver p50 | quiver p99 | quiver calls/s | vgi-rpc p50 | vgi-rpc p99 | vgi-rpc calls/s | \
         vgi-rpc ÷ quiver (p50) | raw 1-byte RTT p50 | quiver ÷ RTT | vgi-rpc ÷ RTT |\n\
         |---|---|---|---|---|---|---|---|---|---|---|"
    );
    for &(transport, variant, placement, label) in UNARY_ROWS {
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
}

/// Streams of 1K-row batches.
fn streams(md: &mut String, run: &Run<'_>) {
    let _ = writeln!(md, "## Streams of 1K-row batches (int64, float64, utf8)\n");
    let _ = writeln!(
        md,
        "| workload | transport | quiver per s | quiver step p50 | vgi-rpc per s | vgi-rpc step p50 | quiver ÷ vgi-rpc |\n\
         |---|---|---|---|---|---|---|"
    );
    for placement in [CROSS_CPU.name, SAME_CPU.name] {
        for (workload, label) in [
            ("producer.1k", "producer, batches/s"),
            (
                "producer.1k-lockstep",
                "producer, one tick at a time, batches/s",
            ),
            ("exchange.echo-1k", "exchange (echo), round trips/s"),
        ] {
            for transport in ["pipe", "subprocess"] {
                let q = run.find_at(workload, "inline", transport, QUIVER, placement);
                // vgi-rpc's client always ticks one at a time.
                let peer_workload = workload.trim_end_matches("-lockstep");
                let v = run.find_at(peer_workload, "inline", transport, VGI_RPC, placement);
                if q.is_none() && (v.is_none() || peer_workload != workload) {
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
    // Runs from before ticks could go ahead have no lockstep rows, and no such note.
    let lockstep_measured = [CROSS_CPU.name, SAME_CPU.name].iter().any(|placement| {
        ["pipe", "subprocess"].iter().any(|transport| {
            run.find_at(
                "producer.1k-lockstep",
                "inline",
                transport,
                QUIVER,
                placement,
            )
            .is_some()
        })
    });
    if lockstep_measured {
        let _ = writeln!(
            md,
            "quiver's producer rows read the whole stream with {} ticks unanswered at most \
             (`ClientStream::set_ticks_ahead`): the server answers each tick in order, as for any \
             client, but produces while the client decodes. The one-tick-at-a-time rows are \
             quiver's lockstep client, the way vgi-rpc's client always runs.\n",
            crate::quiver_runs::PRODUCER_TICKS_AHEAD
        );
    }
}

/// 16 MiB batches each way, beside memcpy and the pipe.
fn large_batches(md: &mut String, run: &Run<'_>) {
    let p = run.plan;
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
                large_row(md, run, workload, label, transport, variant);
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
}

/// One row of the 16 MiB table: `workload` over `transport` and `variant`, both implementations,
/// beside memcpy, the raw pipe and the other variant (none when neither implementation ran it).
fn large_row(
    md: &mut String,
    run: &Run<'_>,
    workload: &str,
    label: &str,
    transport: &str,
    variant: &str,
) {
    let q = run.find(workload, variant, transport, QUIVER);
    let v = run.find(workload, variant, transport, VGI_RPC);
    if q.is_none() && v.is_none() {
        return;
    }
    let gb_ratio = |a: Option<Figure>, b: Option<Figure>| {
        or_dash(
            a.zip(b)
                .map(|(a, b)| ratio(a.gb_per_s.median / b.gb_per_s.median)),
        )
    };
    let shm_gain = |implementation: &str| match variant {
        "shm" => gb_ratio(
            run.find(workload, "shm", transport, implementation),
            run.find(workload, "inline", transport, implementation),
        ),
        _ => or_dash(None),
    };
    let _ = writeln!(
        md,
        "| {label} | {} | {variant} | {} | {} | {} | {} | {} | {} | {} |",
        transport_label(transport),
        or_dash(q.map(|f| gbps_spread(f.gb_per_s))),
        or_dash(v.map(|f| gbps_spread(f.gb_per_s))),
        gb_ratio(q, v),
        gb_ratio(q, run.memcpy()),
        gb_ratio(q, run.pipe_bandwidth()),
        shm_gain(QUIVER),
        shm_gain(VGI_RPC),
    );
}

/// Where a 16 MiB step spends its time, step by step.
fn large_breakdown(md: &mut String, run: &Run<'_>) {
    let p = run.plan;
    let memcpy = run.memcpy();
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
}

/// Where a unary call spends its time: the CPU of each side beside the raw round trip.
fn unary_breakdown(md: &mut String, run: &Run<'_>) {
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
}

/// The raw baselines measured in the same run.
fn baselines(md: &mut String, run: &Run<'_>) {
    let memcpy = run.memcpy();
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
