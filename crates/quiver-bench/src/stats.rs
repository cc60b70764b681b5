//! Repetitions and their summaries.
//!
//! One *rep* runs N operations back to back, timing each: it yields the p50 and
//! p99 of the per-operation times and the rep's throughput (N over the rep's wall
//! time). A figure is the median [min–max] of one of those over the reps. The
//! Python peer computes reps the same way (nearest-rank percentiles) and sends
//! them raw, so every summary in a report comes out of this one module.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One repetition of one workload.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Rep {
    /// Operations timed.
    pub ops: u64,
    /// Wall time of all of them, seconds.
    pub total_s: f64,
    /// Median per-operation time, seconds.
    pub p50_s: f64,
    /// 99th percentile per-operation time, seconds.
    pub p99_s: f64,
}

impl Rep {
    /// Operations per second over the rep's wall time.
    pub fn ops_per_s(&self) -> f64 {
        self.ops as f64 / self.total_s
    }
}

/// Runs `op` `ops` times, timing each call and the whole.
pub fn time_rep(ops: u64, mut op: impl FnMut()) -> Rep {
    assert!(ops > 0, "a rep needs at least one operation");
    let mut times_ns: Vec<u64> = Vec::with_capacity(ops as usize);
    let started = Instant::now();
    for _ in 0..ops {
        let op_started = Instant::now();
        op();
        times_ns.push(op_started.elapsed().as_nanos() as u64);
    }
    let total_s = started.elapsed().as_secs_f64();
    rep_from_times(&mut times_ns, total_s)
}

/// Like [`time_rep`] for a fallible operation: the first error ends the rep and
/// is returned.
pub fn try_time_rep<E>(ops: u64, mut op: impl FnMut() -> Result<(), E>) -> Result<Rep, E> {
    assert!(ops > 0, "a rep needs at least one operation");
    let mut times_ns: Vec<u64> = Vec::with_capacity(ops as usize);
    let started = Instant::now();
    for _ in 0..ops {
        let op_started = Instant::now();
        op()?;
        times_ns.push(op_started.elapsed().as_nanos() as u64);
    }
    let total_s = started.elapsed().as_secs_f64();
    Ok(rep_from_times(&mut times_ns, total_s))
}

/// A rep from per-operation times (nanoseconds) and the wall time.
pub fn rep_from_times(times_ns: &mut [u64], total_s: f64) -> Rep {
    times_ns.sort_unstable();
    Rep {
        ops: times_ns.len() as u64,
        total_s,
        p50_s: nearest_rank(times_ns, 0.50) as f64 * 1e-9,
        p99_s: nearest_rank(times_ns, 0.99) as f64 * 1e-9,
    }
}

/// Nearest-rank percentile of sorted values: the smallest value with at least
/// `q` of the values at or below it.
pub fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
    assert!(!sorted.is_empty());
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Median [min–max] of one quantity over the reps.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Spread {
    /// Median (mean of the middle two for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// Summarises `values` (at least one).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Spread {
        let mut values: Vec<f64> = values.into_iter().collect();
        assert!(!values.is_empty(), "no values to summarise");
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        Spread {
            median,
            min: values[0],
            max: values[n - 1],
        }
    }

    /// The same spread with every value multiplied by `factor` (> 0).
    pub fn scaled(self, factor: f64) -> Spread {
        Spread {
            median: self.median * factor,
            min: self.min * factor,
            max: self.max * factor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&values, 0.50), 50);
        assert_eq!(nearest_rank(&values, 0.99), 99);
        assert_eq!(nearest_rank(&[7], 0.99), 7);
    }

    #[test]
    fn spread_median_odd_and_even() {
        assert_eq!(
            Spread::of([3.0, 1.0, 2.0]),
            Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            }
        );
        assert_eq!(Spread::of([4.0, 1.0, 2.0, 3.0]).median, 2.5);
    }

    #[test]
    fn rep_throughput() {
        let mut times = vec![10, 30, 20, 40];
        let rep = rep_from_times(&mut times, 2.0);
        assert_eq!(rep.ops, 4);
        assert_eq!(rep.ops_per_s(), 2.0);
        assert!((rep.p50_s - 20e-9).abs() < 1e-15);
    }
}
