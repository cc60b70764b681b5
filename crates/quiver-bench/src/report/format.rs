//! How figures are written in `rpc.md`: times, counts, bandwidths and ratios.

use crate::stats::Spread;

pub(super) fn transport_label(transport: &str) -> &'static str {
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
pub(super) fn time(seconds: f64) -> String {
    if seconds < 1e-3 {
        format!("{:.1} µs", micros(seconds))
    } else {
        format!("{:.2} ms", millis(seconds))
    }
}

pub(super) fn time_spread(s: Spread) -> String {
    if s.median < 1e-3 {
        let [median, min, max] = [s.median, s.min, s.max].map(micros);
        format!("{median:.1} µs [{min:.1}–{max:.1}]")
    } else {
        let [median, min, max] = [s.median, s.min, s.max].map(millis);
        format!("{median:.2} ms [{min:.2}–{max:.2}]")
    }
}

/// Times are measured in whole nanoseconds: rounded back to them first, a time reads the same
/// whether it comes from the run or from `rpc.json` (12,950 ns is 12.9 µs both ways, where the
/// two floating-point products straddle the rounding point).
fn whole_nanos(seconds: f64) -> f64 {
    (seconds * 1e9).round()
}

fn micros(seconds: f64) -> f64 {
    whole_nanos(seconds) / 1e3
}

fn millis(seconds: f64) -> f64 {
    whole_nanos(seconds) / 1e6
}

pub(super) fn count(x: f64) -> String {
    if x >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if x >= 1e3 {
        format!("{:.2}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

pub(super) fn count_spread(s: Spread) -> String {
    format!("{} [{}–{}]", count(s.median), count(s.min), count(s.max))
}

pub(super) fn gbps(x: f64) -> String {
    format!("{x:.2}")
}

pub(super) fn gbps_spread(s: Spread) -> String {
    format!("{:.2} [{:.2}–{:.2}]", s.median, s.min, s.max)
}

pub(super) fn ratio(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.0}×")
    } else {
        format!("{x:.2}×")
    }
}

pub(super) fn or_dash(x: Option<String>) -> String {
    x.unwrap_or_else(|| "—".to_string())
}
