//! Per-key rate limits: a token bucket per key id holding at most `rate` tokens (a burst of as
//! many requests as the per-second rate), refilled continuously. The number of buckets is
//! bounded: when full, buckets that have refilled completely are dropped (a full bucket and an
//! absent one admit the same requests), and if none has, the oldest one goes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// Most buckets held at once.
pub const BUCKETS_MAX: usize = 65_536;

struct Bucket {
    tokens: f64,
    refilled_at: Instant,
}

pub struct RateLimiter {
    buckets: Mutex<HashMap<String, Bucket>>,
    buckets_max: usize,
}

impl Default for RateLimiter {
    fn default() -> Self {
        RateLimiter::new(BUCKETS_MAX)
    }
}

impl RateLimiter {
    pub fn new(buckets_max: usize) -> RateLimiter {
        assert!(buckets_max > 0, "a rate limiter holds at least one bucket");
        RateLimiter {
            buckets: Mutex::new(HashMap::new()),
            buckets_max,
        }
    }

    /// Takes one token from `key`'s bucket at `now`; when there is none, `Err` holds the whole
    /// seconds until one is back (at least 1).
    pub fn admit(&self, key: &str, rate_per_second: u32, now: Instant) -> Result<(), u64> {
        assert!(rate_per_second > 0, "a rate limit admits something");
        let capacity = f64::from(rate_per_second);
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !buckets.contains_key(key) && buckets.len() >= self.buckets_max {
            evict(&mut buckets, self.buckets_max, now);
        }
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket {
            tokens: capacity,
            refilled_at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.refilled_at);
        bucket.tokens = (bucket.tokens + elapsed.as_secs_f64() * capacity).min(capacity);
        bucket.refilled_at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let wait_seconds = (1.0 - bucket.tokens) / capacity;
        Err((wait_seconds.ceil() as u64).max(1))
    }

    pub fn buckets(&self) -> usize {
        self.buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len()
    }
}

fn evict(buckets: &mut HashMap<String, Bucket>, buckets_max: usize, now: Instant) {
    // A bucket idle for a whole second has refilled at any rate: it admits what a new one would.
    buckets.retain(|_, bucket| now.saturating_duration_since(bucket.refilled_at).as_secs() < 1);
    if buckets.len() >= buckets_max {
        let oldest = buckets
            .iter()
            .min_by_key(|(_, bucket)| bucket.refilled_at)
            .map(|(key, _)| key.clone());
        if let Some(oldest) = oldest {
            buckets.remove(&oldest);
        }
    }
    assert!(buckets.len() < buckets_max, "eviction made room");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_then_refusal_then_recovery() {
        let limiter = RateLimiter::default();
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.admit("k", 3, start), Ok(()));
        }
        assert_eq!(limiter.admit("k", 3, start), Err(1));
        // Another key has its own bucket.
        assert_eq!(limiter.admit("other", 3, start), Ok(()));
        let later = start + Duration::from_millis(400);
        assert_eq!(limiter.admit("k", 3, later), Ok(()));
        assert_eq!(limiter.admit("k", 3, later), Err(1));
    }

    #[test]
    fn buckets_stay_bounded() {
        let limiter = RateLimiter::new(4);
        let start = Instant::now();
        for index in 0..100 {
            let now = start + Duration::from_millis(index);
            assert_eq!(limiter.admit(&format!("key{index}"), 1000, now), Ok(()));
            assert!(limiter.buckets() <= 4);
        }
    }
}
