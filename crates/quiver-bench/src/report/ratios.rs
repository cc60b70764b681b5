//! The ratios a record carries: each figure against its baselines (the raw round trip, memcpy,
//! the raw pipe), the peer on the same cell, and shm against inline.

use serde::Serialize;

use crate::plan::{implementation, Measurement};

use super::summary::{is_bulk, rtt_label, rtt_transport_for, Figure, Run};

/// One ratio attached to a record.
#[derive(Serialize)]
pub(super) struct Ratio {
    baseline: String,
    metric: &'static str,
    value: f64,
}

pub(super) fn ratios_for(run: &Run<'_>, m: &Measurement, figure: &Figure) -> Vec<Ratio> {
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
