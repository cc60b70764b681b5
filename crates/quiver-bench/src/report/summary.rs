//! What the report reads a run through: each measurement summarised as a [`Figure`], looked
//! up by its cell, and the baselines a figure is compared with.

use crate::peer::PeerRun;
use crate::placement::{CROSS_CPU, ONE_THREAD};
use crate::plan::{implementation, Measurement, Plan};
use crate::stats::Spread;

use super::Machine;

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
    pub(super) fn find(
        &self,
        workload: &str,
        variant: &str,
        transport: &str,
        implementation: &str,
    ) -> Option<Figure> {
        self.find_at(workload, variant, transport, implementation, CROSS_CPU.name)
    }

    pub(super) fn find_at(
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
    pub(super) fn find_one_thread(&self, workload: &str, variant: &str) -> Option<Figure> {
        let implementation = if workload.starts_with("baseline") {
            implementation::RAW
        } else {
            implementation::QUIVER
        };
        self.find_at(workload, variant, "memory", implementation, ONE_THREAD)
    }

    pub(super) fn rtt_at(&self, transport: &str, placement: &str) -> Option<Figure> {
        self.find_at(
            "baseline.rtt-1byte",
            "rtt-1byte",
            transport,
            implementation::RAW,
            placement,
        )
    }

    pub(super) fn memcpy(&self) -> Option<Figure> {
        self.find_one_thread("baseline.memcpy", "memcpy")
    }

    pub(super) fn pipe_bandwidth(&self) -> Option<Figure> {
        self.find(
            "baseline.pipe-bandwidth",
            "pipe-bandwidth",
            "pipe",
            implementation::RAW,
        )
    }
}

/// The 1-byte round trip that bounds a transport from below.
pub(super) fn rtt_transport_for(transport: &str) -> &'static str {
    match transport {
        "pipe" => "pipe-threads",
        "subprocess" => "pipe",
        "unix" => "unix",
        _ => "tcp",
    }
}

pub(super) fn rtt_label(transport: &str) -> &'static str {
    match transport {
        "pipe-threads" => "pipe between threads",
        "pipe" => "pipe between processes",
        "unix" => "unix socket between processes",
        _ => "tcp loopback between processes",
    }
}

pub(super) fn is_bulk(workload: &str) -> bool {
    workload.starts_with("large")
        || workload.starts_with("breakdown")
        || workload == "baseline.memcpy"
        || workload == "baseline.pipe-bandwidth"
}
