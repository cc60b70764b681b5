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
        format!("{:.1} µs", seconds * 1e6)
    } else {
        format!("{:.2} ms", seconds * 1e3)
    }
}

pub(super) fn time_spread(s: Spread) -> String {
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
