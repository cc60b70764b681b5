//! The admin port's `/metrics`: offloader's metrics named `quiver_gateway_*`, plus the cache's,
//! the pool wait, materialize durations and load shedding, in Prometheus' text exposition
//! (OpenMetrics). Request-path numbers are recorded as they happen; numbers owned elsewhere (the
//! snapshots, the cache, the pool) are read in at each scrape through [`Scrape`].

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// The label of requests to a path that names no endpoint: unknown names never become labels, so
/// the number of series stays bounded by the project.
pub const UNKNOWN_ENDPOINT: &str = "_unknown";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub endpoint: String,
    pub status_class: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    pub endpoint: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DatasetLabels {
    pub dataset: String,
}

type GaugeF64 = Gauge<f64, AtomicU64>;

/// What a scrape reads from the parts that own it.
#[derive(Clone, Debug, Default)]
pub struct Scrape {
    pub ready: bool,
    pub pool_connections: i64,
    pub pool_busy: i64,
    pub cache_entries: i64,
    pub cache_bytes: i64,
    /// Evictions since start, as the cache counts them.
    pub cache_evictions: u64,
    /// Bytes keyed lookups hold (snapshot rows and their indexes).
    pub lookup_bytes: i64,
    pub keys_reload_failed: u64,
    pub datasets: Vec<DatasetScrape>,
}

#[derive(Clone, Debug, Default)]
pub struct DatasetScrape {
    pub dataset: String,
    pub snapshot_age_seconds: Option<f64>,
    pub stale: bool,
    /// Whether the last refresh (or materialize) succeeded.
    pub refresh_ok: bool,
    pub materialize_seconds: Option<f64>,
}

pub struct Metrics {
    registry: Registry,
    ready: Gauge,
    pool_connections: Gauge,
    pool_busy: Gauge,
    snapshot_age_seconds: Family<DatasetLabels, GaugeF64>,
    snapshot_stale: Family<DatasetLabels, Gauge>,
    refresh_ok: Family<DatasetLabels, Gauge>,
    materialize_duration_seconds: Family<DatasetLabels, GaugeF64>,
    requests: Family<RequestLabels, Counter>,
    request_duration_seconds: Family<EndpointLabels, Histogram>,
    cache_hits: Counter,
    cache_misses: Counter,
    cache_evictions: Counter,
    cache_bytes: Gauge,
    cache_entries: Gauge,
    lookups: Counter,
    lookup_bytes: Gauge,
    pool_wait_seconds: Histogram,
    load_shed: Counter,
    keys_reload_failed: Counter,
    /// Evictions already added to the counter, to add only what is new at each scrape.
    evictions_seen: Mutex<(u64, u64)>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Every metric at zero, registered in the exposition's order.
    pub fn new() -> Metrics {
        let mut metrics = Metrics {
            registry: Registry::with_prefix("quiver_gateway"),
            ready: Gauge::default(),
            pool_connections: Gauge::default(),
            pool_busy: Gauge::default(),
            snapshot_age_seconds: Family::default(),
            snapshot_stale: Family::default(),
            refresh_ok: Family::default(),
            materialize_duration_seconds: Family::default(),
            requests: Family::default(),
            request_duration_seconds: Family::new_with_constructor(
                seconds_histogram as fn() -> Histogram,
            ),
            cache_hits: Counter::default(),
            cache_misses: Counter::default(),
            cache_evictions: Counter::default(),
            cache_bytes: Gauge::default(),
            cache_entries: Gauge::default(),
            lookups: Counter::default(),
            lookup_bytes: Gauge::default(),
            pool_wait_seconds: seconds_histogram(),
            load_shed: Counter::default(),
            keys_reload_failed: Counter::default(),
            evictions_seen: Mutex::new((0, 0)),
        };
        metrics.register_state();
        metrics.register_requests();
        metrics.register_waits();
        metrics
    }

    /// The gateway's, its pool's and each dataset's state.
    fn register_state(&mut self) {
        let registry = &mut self.registry;
        let up: Gauge = Gauge::default();
        up.set(1);
        registry.register("up", "1 while the gateway runs", up);
        registry.register("ready", "1 when /ready answers 200", self.ready.clone());
        registry.register(
            "pool_connections",
            "Connections to the quiver server, open",
            self.pool_connections.clone(),
        );
        registry.register(
            "pool_busy",
            "Connections to the quiver server lent to requests",
            self.pool_busy.clone(),
        );
        registry.register(
            "snapshot_age_seconds",
            "Seconds since the serving snapshot's watermark",
            self.snapshot_age_seconds.clone(),
        );
        registry.register(
            "snapshot_stale",
            "1 when the serving snapshot is older than its endpoints allow",
            self.snapshot_stale.clone(),
        );
        registry.register(
            "refresh_ok",
            "1 when the dataset's last refresh succeeded",
            self.refresh_ok.clone(),
        );
        registry.register(
            "materialize_duration_seconds",
            "How long the dataset's last materialize took",
            self.materialize_duration_seconds.clone(),
        );
    }

    /// Endpoint requests and the response cache.
    fn register_requests(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "requests",
            "Endpoint requests by status class",
            self.requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Endpoint request duration",
            self.request_duration_seconds.clone(),
        );
        registry.register(
            "cache_hits",
            "Responses served from the cache",
            self.cache_hits.clone(),
        );
        registry.register(
            "cache_misses",
            "Responses the cache did not hold",
            self.cache_misses.clone(),
        );
        registry.register(
            "cache_evictions",
            "Responses the cache dropped for room",
            self.cache_evictions.clone(),
        );
        registry.register(
            "cache_bytes",
            "Bytes the cache holds",
            self.cache_bytes.clone(),
        );
        registry.register(
            "cache_entries",
            "Responses the cache holds",
            self.cache_entries.clone(),
        );
        registry.register(
            "lookups",
            "Bodies made from snapshot rows in memory, without a statement on the server",
            self.lookups.clone(),
        );
        registry.register(
            "lookup_bytes",
            "Bytes the snapshot rows and indexes of keyed lookups hold",
            self.lookup_bytes.clone(),
        );
    }

    /// Waiting and refusals: for a connection, at admission, and of a keys file.
    fn register_waits(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "pool_wait_seconds",
            "How long requests waited for a connection",
            self.pool_wait_seconds.clone(),
        );
        registry.register(
            "load_shed",
            "Requests refused at once because too many were waiting",
            self.load_shed.clone(),
        );
        registry.register(
            "keys_reload_failed",
            "Changes to the keys file that did not load (the keys in force stayed)",
            self.keys_reload_failed.clone(),
        );
    }

    /// One endpoint request answered. `endpoint` must be a project's endpoint name or
    /// [`UNKNOWN_ENDPOINT`].
    pub fn record_request(&self, endpoint: &str, status: u16, seconds: f64) {
        let status_class = format!("{}xx", status / 100);
        self.requests
            .get_or_create(&RequestLabels {
                endpoint: endpoint.to_owned(),
                status_class,
            })
            .inc();
        self.request_duration_seconds
            .get_or_create(&EndpointLabels {
                endpoint: endpoint.to_owned(),
            })
            .observe(seconds);
    }

    pub fn record_cache(&self, hit: bool) {
        if hit {
            self.cache_hits.inc();
        } else {
            self.cache_misses.inc();
        }
    }

    pub fn record_lookup(&self) {
        self.lookups.inc();
    }

    pub fn record_pool_wait(&self, seconds: f64) {
        self.pool_wait_seconds.observe(seconds);
    }

    pub fn record_load_shed(&self) {
        self.load_shed.inc();
    }

    /// The text exposition, with the scraped numbers read in first.
    pub fn render(&self, scrape: &Scrape) -> String {
        self.ready.set(i64::from(scrape.ready));
        self.pool_connections.set(scrape.pool_connections);
        self.pool_busy.set(scrape.pool_busy);
        self.cache_entries.set(scrape.cache_entries);
        self.cache_bytes.set(scrape.cache_bytes);
        self.lookup_bytes.set(scrape.lookup_bytes);
        {
            let mut seen = self
                .evictions_seen
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let (evictions, reload_failures) = &mut *seen;
            self.cache_evictions
                .inc_by(scrape.cache_evictions.saturating_sub(*evictions));
            *evictions = (*evictions).max(scrape.cache_evictions);
            self.keys_reload_failed
                .inc_by(scrape.keys_reload_failed.saturating_sub(*reload_failures));
            *reload_failures = (*reload_failures).max(scrape.keys_reload_failed);
        }
        for dataset in &scrape.datasets {
            let labels = DatasetLabels {
                dataset: dataset.dataset.clone(),
            };
            match dataset.snapshot_age_seconds {
                Some(age) => {
                    self.snapshot_age_seconds.get_or_create(&labels).set(age);
                }
                None => {
                    self.snapshot_age_seconds.remove(&labels);
                }
            }
            self.snapshot_stale
                .get_or_create(&labels)
                .set(i64::from(dataset.stale));
            self.refresh_ok
                .get_or_create(&labels)
                .set(i64::from(dataset.refresh_ok));
            if let Some(seconds) = dataset.materialize_seconds {
                self.materialize_duration_seconds
                    .get_or_create(&labels)
                    .set(seconds);
            }
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String does not fail");
        text
    }
}

/// Buckets from 0.5 ms to about 16 s, doubling.
fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_and_counts() {
        let metrics = Metrics::new();
        metrics.record_request("orders", 200, 0.01);
        metrics.record_request("orders", 200, 0.02);
        metrics.record_request(UNKNOWN_ENDPOINT, 404, 0.001);
        metrics.record_cache(true);
        metrics.record_load_shed();
        let scrape = Scrape {
            ready: true,
            cache_evictions: 3,
            datasets: vec![DatasetScrape {
                dataset: "orders".into(),
                snapshot_age_seconds: Some(12.5),
                stale: false,
                refresh_ok: true,
                materialize_seconds: Some(0.25),
            }],
            ..Scrape::default()
        };
        let text = metrics.render(&scrape);
        assert!(text.contains("quiver_gateway_up 1"), "{text}");
        assert!(text.contains("quiver_gateway_ready 1"), "{text}");
        assert!(
            text.contains(
                "quiver_gateway_requests_total{endpoint=\"orders\",status_class=\"2xx\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains("quiver_gateway_cache_hits_total 1"), "{text}");
        assert!(
            text.contains("quiver_gateway_cache_evictions_total 3"),
            "{text}"
        );
        assert!(text.contains("quiver_gateway_load_shed_total 1"), "{text}");
        assert!(
            text.contains("quiver_gateway_snapshot_age_seconds{dataset=\"orders\"} 12.5"),
            "{text}"
        );
        assert!(text.contains("quiver_gateway_request_duration_seconds_bucket"));
        // A second scrape adds only new evictions.
        let text = metrics.render(&Scrape {
            cache_evictions: 4,
            ..scrape
        });
        assert!(
            text.contains("quiver_gateway_cache_evictions_total 4"),
            "{text}"
        );
    }
}
