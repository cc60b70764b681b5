//! `Server-Timing`: where a request's time went, as named phases since it began.

use std::time::Instant;

/// Most phases one request records.
const PHASES_MAX: usize = 8;

pub struct Timings {
    started: Instant,
    last: Instant,
    phases: Vec<(&'static str, f64)>,
}

impl Timings {
    pub fn start() -> Timings {
        let now = Instant::now();
        Timings {
            started: now,
            last: now,
            phases: Vec::with_capacity(PHASES_MAX),
        }
    }

    /// Ends the phase `name` now.
    pub fn mark(&mut self, name: &'static str) {
        assert!(self.phases.len() < PHASES_MAX, "a request has few phases");
        let now = Instant::now();
        let ms = now.duration_since(self.last).as_secs_f64() * 1000.0;
        self.phases.push((name, ms));
        self.last = now;
    }

    /// `name;dur=<ms>, …, total;dur=<ms>`, written into one string (every response has one).
    pub fn header(&self) -> String {
        use std::fmt::Write;
        let total = self.started.elapsed().as_secs_f64() * 1000.0;
        let mut header = String::with_capacity(24 * (self.phases.len() + 1));
        for (name, ms) in self.phases.iter().chain([&("total", total)]) {
            if !header.is_empty() {
                header.push_str(", ");
            }
            let _ = write!(header, "{name};dur={ms:.3}");
        }
        header
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_then_total() {
        let mut timings = Timings::start();
        timings.mark("auth");
        timings.mark("compile");
        let header = timings.header();
        let names: Vec<&str> = header
            .split(", ")
            .map(|part| part.split(';').next().unwrap())
            .collect();
        assert_eq!(names, ["auth", "compile", "total"]);
        assert!(header.contains("dur="));
    }
}
