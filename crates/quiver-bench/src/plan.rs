//! What a run measures and how often, and the raw result of one measurement.
//!
//! The plan is handed to the Python peer as JSON so both implementations run the
//! same counts; the peer answers with [`Measurement`]s in the same shape.

use serde::{Deserialize, Serialize};

use crate::placement::{Placement, CROSS_CPU, SAME_CPU};
use crate::service::{LARGE_BYTES, LARGE_ROWS, SMALL_ROWS};
use crate::stats::Rep;

/// Counts for one run. `*_warmup` operations run untimed before each rep's
/// `*_ops` timed ones.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    /// Repetitions per figure.
    pub reps: u32,
    /// Unary calls.
    pub unary_warmup: u64,
    /// Unary calls timed per rep.
    pub unary_ops: u64,
    /// Small-batch stream steps (producer ticks, exchanges).
    pub stream_warmup: u64,
    /// Small-batch stream steps timed per rep.
    pub stream_ops: u64,
    /// Large-batch steps.
    pub large_warmup: u64,
    /// Large-batch steps timed per rep.
    pub large_ops: u64,
    /// Raw round trips timed per rep (baselines).
    pub rtt_ops: u64,
    /// Rows of a small batch.
    pub small_rows: u64,
    /// Rows of a large (int64) batch.
    pub large_rows: u64,
    /// Size of the shared-memory segment each shm client creates.
    pub shm_segment_bytes: u64,
    /// CPUs of client and server for `cross-cpu` figures.
    pub cross_cpu: [usize; 2],
    /// CPUs of client and server for `same-cpu` figures.
    pub same_cpu: [usize; 2],
}

impl Plan {
    /// The full suite (~1.5 min of measuring on a 2-core VM).
    pub fn full(reps: u32) -> Plan {
        Plan {
            reps,
            unary_warmup: 200,
            unary_ops: 2000,
            stream_warmup: 100,
            stream_ops: 2000,
            large_warmup: 2,
            large_ops: 10,
            rtt_ops: 2000,
            small_rows: SMALL_ROWS as u64,
            large_rows: LARGE_ROWS as u64,
            shm_segment_bytes: 64 << 20,
            cross_cpu: placement_cpus(CROSS_CPU),
            same_cpu: placement_cpus(SAME_CPU),
        }
    }

    /// A smoke run: same shape, a tenth of the work.
    pub fn quick(reps: u32) -> Plan {
        Plan {
            unary_warmup: 20,
            unary_ops: 200,
            stream_warmup: 10,
            stream_ops: 200,
            large_warmup: 1,
            large_ops: 3,
            rtt_ops: 200,
            ..Plan::full(reps)
        }
    }

    /// Bytes of column data in a large batch.
    pub fn large_bytes(&self) -> u64 {
        debug_assert_eq!(self.large_rows * 8, LARGE_BYTES);
        self.large_rows * 8
    }
}

fn placement_cpus(placement: Placement) -> [usize; 2] {
    let placement = placement.available();
    [placement.client_cpu, placement.server_cpu]
}

/// Implementation names, as they appear in records and tables.
pub mod implementation {
    /// This repository.
    pub const QUIVER: &str = "quiver";
    /// The peer.
    pub const VGI_RPC: &str = "vgi-rpc";
    /// Plain system calls and memory, no RPC.
    pub const RAW: &str = "raw";
}

/// Every rep of one workload on one transport by one implementation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measurement {
    /// `unary.add`, `producer.1k`, `exchange.echo-1k`, `large.server-to-client`, ...
    pub workload: String,
    /// `inline`, `shm`, or for baselines what was measured.
    pub variant: String,
    /// `pipe` (in-process), `subprocess`, `unix`, `tcp`, `pipe-threads`, `memory`.
    pub transport: String,
    /// `quiver`, `vgi-rpc` or `raw`.
    pub implementation: String,
    /// `cross-cpu`, `same-cpu` (see [`crate::placement`]) or `one-thread`.
    pub placement: String,
    /// Rows moved per operation.
    pub rows_per_op: u64,
    /// Bytes of column data moved per operation (both directions counted).
    pub bytes_per_op: u64,
    /// The repetitions, in order.
    pub reps: Vec<Rep>,
}

impl Measurement {
    /// Whether this is the given cell.
    pub fn is(
        &self,
        workload: &str,
        variant: &str,
        transport: &str,
        implementation: &str,
        placement: &str,
    ) -> bool {
        self.workload == workload
            && self.variant == variant
            && self.transport == transport
            && self.implementation == implementation
            && self.placement == placement
    }
}

/// Adds `new`'s reps to the matching measurements of `into` (same workload,
/// variant, transport and implementation), appending the ones not seen yet.
pub fn merge(into: &mut Vec<Measurement>, new: Vec<Measurement>) {
    for m in new {
        match into.iter_mut().find(|e| {
            e.is(
                &m.workload,
                &m.variant,
                &m.transport,
                &m.implementation,
                &m.placement,
            )
        }) {
            Some(existing) => existing.reps.extend(m.reps),
            None => into.push(m),
        }
    }
}
