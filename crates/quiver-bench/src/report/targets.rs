//! The stated goals of `./quiver bench rpc`, and how a run did against each.

use serde::Serialize;

use crate::placement::{CROSS_CPU, SAME_CPU};
use crate::plan::implementation::{QUIVER, VGI_RPC};

use super::format::{count, gbps, time, transport_label};
use super::summary::Run;

/// A stated goal and how this run did against it.
#[derive(Serialize)]
pub(super) struct Target {
    pub(super) target: String,
    pub(super) measured: Option<f64>,
    comparison: &'static str,
    threshold: f64,
    pub(super) met: Option<bool>,
    pub(super) detail: String,
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

pub(super) fn targets(run: &Run<'_>) -> Vec<Target> {
    let mut out = Vec::new();
    unary_rtt_targets(run, &mut out);
    unary_peer_targets(run, &mut out);
    producer_targets(run, &mut out);
    large_targets(run, &mut out);
    out
}

/// Unary calls against the raw round trip of their placement.
fn unary_rtt_targets(run: &Run<'_>, out: &mut Vec<Target>) {
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
}

/// Unary calls against vgi-rpc's.
fn unary_peer_targets(run: &Run<'_>, out: &mut Vec<Target>) {
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
}

/// Streams of 1K-row batches against vgi-rpc's.
fn producer_targets(run: &Run<'_>, out: &mut Vec<Target>) {
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
}

/// 16 MiB batches over shm against memcpy and against quiver inline.
fn large_targets(run: &Run<'_>, out: &mut Vec<Target>) {
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
}
