//! The server's numbers, in Prometheus' text exposition (`metrics_http.rs` serves them): sessions,
//! connections waiting to authenticate, statements, rows and bytes in and out, authentication
//! failures, connections closed before authenticating, and errors by kind. One set per process
//! (a process serves at most once at a time), so the parts that count need no handle to reach it.

use std::sync::LazyLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Which door a number is about: `tcp`, `unix` or `flight_sql`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DoorLabels {
    /// The door.
    pub door: String,
}

/// An error's kind (the protocol's `kind`: `sql`, `limit`, `busy`, ...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// The kind.
    pub kind: String,
}

/// Why a connection was closed before it authenticated.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClosedLabels {
    /// The door.
    pub door: String,
    /// `auth_deadline` or `unauthenticated_evicted`.
    pub reason: String,
}

/// Every number the server keeps.
pub struct Metrics {
    registry: Registry,
    /// Authenticated sessions open now (a Flight SQL call's or transaction's session included).
    pub sessions: Gauge,
    /// Sessions opened since start, by door.
    pub sessions_opened: Family<DoorLabels, Counter>,
    /// Connections waiting to authenticate now, by door.
    pub unauthenticated: Family<DoorLabels, Gauge>,
    /// Connections closed before they authenticated, by door and reason.
    pub unauthenticated_closed: Family<ClosedLabels, Counter>,
    /// Wrong credentials (and attempts during a lockout), by door.
    pub auth_failures: Family<DoorLabels, Counter>,
    /// Statements run.
    pub statements: Counter,
    /// Statements slower than the slow-statement threshold.
    pub slow_statements: Counter,
    /// Errors answered, by kind.
    pub errors: Family<KindLabels, Counter>,
    /// Rows and bytes inserted, and read out of results.
    pub rows_in: Counter,
    /// See `rows_in`.
    pub bytes_in: Counter,
    /// See `rows_in`.
    pub rows_out: Counter,
    /// See `rows_in`.
    pub bytes_out: Counter,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The process's numbers.
pub fn metrics() -> &'static Metrics {
    &METRICS
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("quiver_server");
        let sessions = Gauge::default();
        registry.register("sessions", "Authenticated sessions open", sessions.clone());
        let sessions_opened = Family::<DoorLabels, Counter>::default();
        registry.register(
            "sessions_opened",
            "Sessions opened, by door",
            sessions_opened.clone(),
        );
        let unauthenticated = Family::<DoorLabels, Gauge>::default();
        registry.register(
            "unauthenticated_connections",
            "Connections waiting to authenticate, by door",
            unauthenticated.clone(),
        );
        let unauthenticated_closed = Family::<ClosedLabels, Counter>::default();
        registry.register(
            "unauthenticated_closed",
            "Connections closed before they authenticated, by door and reason",
            unauthenticated_closed.clone(),
        );
        let auth_failures = Family::<DoorLabels, Counter>::default();
        registry.register(
            "auth_failures",
            "Wrong credentials and attempts during a lockout, by door",
            auth_failures.clone(),
        );
        let statements = Counter::default();
        registry.register("statements", "Statements run", statements.clone());
        let slow_statements = Counter::default();
        registry.register(
            "slow_statements",
            "Statements slower than the slow-statement threshold",
            slow_statements.clone(),
        );
        let errors = Family::<KindLabels, Counter>::default();
        registry.register("errors", "Errors answered, by kind", errors.clone());
        let [rows_in, bytes_in, rows_out, bytes_out] = std::array::from_fn(|_| Counter::default());
        registry.register("rows_in", "Rows inserted", rows_in.clone());
        registry.register(
            "bytes_in",
            "Arrow bytes of the batches inserted",
            bytes_in.clone(),
        );
        registry.register("rows_out", "Result rows sent", rows_out.clone());
        registry.register(
            "bytes_out",
            "Arrow bytes of the result batches sent",
            bytes_out.clone(),
        );
        Metrics {
            registry,
            sessions,
            sessions_opened,
            unauthenticated,
            unauthenticated_closed,
            auth_failures,
            statements,
            slow_statements,
            errors,
            rows_in,
            bytes_in,
            rows_out,
            bytes_out,
        }
    }

    /// The text exposition of every number.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    /// Counts one error of `kind`.
    pub fn error(&self, kind: Option<&str>) {
        let kind = kind.unwrap_or("internal").to_string();
        self.errors.get_or_create(&KindLabels { kind }).inc();
    }

    /// Counts one wrong credential at `door`.
    pub fn auth_failure(&self, door: &str) {
        let door = door.to_string();
        self.auth_failures.get_or_create(&DoorLabels { door }).inc();
    }

    /// Counts a session opened at `door`.
    pub fn sessions_opened_at(&self, door: crate::admission::Door) {
        let door = door.as_str().to_string();
        self.sessions_opened
            .get_or_create(&DoorLabels { door })
            .inc();
    }

    /// Counts a batch read out of a result.
    pub fn batch_out(&self, rows: usize, bytes: usize) {
        self.rows_out.inc_by(rows as u64);
        self.bytes_out.inc_by(bytes as u64);
    }

    /// Counts a batch inserted.
    pub fn batch_in(&self, rows: usize, bytes: usize) {
        self.rows_in.inc_by(rows as u64);
        self.bytes_in.inc_by(bytes as u64);
    }

    /// The gauge of connections waiting to authenticate at `door`.
    pub fn unauthenticated_at(&self, door: &str) -> Gauge {
        let door = door.to_string();
        self.unauthenticated
            .get_or_create(&DoorLabels { door })
            .clone()
    }

    /// Counts a connection closed before it authenticated.
    pub fn unauthenticated_closed(&self, door: &str, reason: &str) {
        let labels = ClosedLabels {
            door: door.to_string(),
            reason: reason.to_string(),
        };
        self.unauthenticated_closed.get_or_create(&labels).inc();
    }
}
