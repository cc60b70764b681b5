//! Counters and a time split for the shared-memory debug summary.

use std::time::Duration;

/// What one connection moved through shared memory, and where its busy time went.
#[derive(Clone, Debug, Default)]
pub struct ShmStats {
    /// Batches sent (eligible or not).
    pub outbound_total: u64,
    /// Batches sent through the segment.
    pub outbound_shm: u64,
    /// Of those, batches framed around buffers already in the segment (no copy).
    pub outbound_in_place: u64,
    /// Bytes written into the segment.
    pub outbound_bytes: u64,
    /// Batches received (pointers or inline).
    pub inbound_total: u64,
    /// Batches received through the segment.
    pub inbound_shm: u64,
    /// Bytes read from the segment.
    pub inbound_bytes: u64,
    /// Batches that qualified but did not fit.
    pub fallbacks: u64,
    /// Time resolving pointers.
    pub resolve: Duration,
    /// Time in method bodies.
    pub process: Duration,
    /// Time encoding output (into the segment or the pipe).
    pub emit: Duration,
    /// Time waiting for the peer.
    pub waiting: Duration,
    /// When the current wait began, while one is under way.
    pub wait_started: Option<std::time::Instant>,
}

impl ShmStats {
    /// The two summary lines: batch counts, and the busy-time split.
    pub fn summary(&self, connection: &str, side: &str) -> String {
        let busy = self.resolve + self.process + self.emit;
        let total = busy + self.waiting;
        let share = |part: Duration| {
            if total.is_zero() {
                0.0
            } else {
                100.0 * part.as_secs_f64() / total.as_secs_f64()
            }
        };
        format!(
            "[quiver-shm] conn closed {connection}: outbound shm={}/{} batches ({:.1}%, {} in place), inbound shm={}/{} batches ({:.1}%), fallbacks={}\n\
             [quiver-shm] timeline {connection}: {side}-busy={:.1} ms (resolve={:.1} process={:.1} emit={:.1}), waiting={:.1} ms, {side} {:.0}% / peer {:.0}%",
            self.outbound_shm,
            self.outbound_total,
            percent(self.outbound_shm, self.outbound_total),
            self.outbound_in_place,
            self.inbound_shm,
            self.inbound_total,
            percent(self.inbound_shm, self.inbound_total),
            self.fallbacks,
            ms(busy),
            ms(self.resolve),
            ms(self.process),
            ms(self.emit),
            ms(self.waiting),
            share(busy),
            share(self.waiting),
        )
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
