//! A gateway project once loaded and checked: what every other part of the gateway reads.
//!
//! The layout and fields are offloader's (an offloader project loads unchanged); quiver's additions
//! are marked. Nothing here is raw YAML: `project::load` turns files into these types and reports
//! every problem with its file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

/// A whole project: the project file, its datasets, endpoints and keys.
#[derive(Clone, Debug)]
pub struct Project {
    /// The directory holding the project file; relative paths in the project are taken from here.
    pub root: PathBuf,
    /// The project file's settings.
    pub settings: Settings,
    /// Every dataset the project serves, in the order read.
    pub datasets: Vec<Dataset>,
    /// Every endpoint the project serves, in the order read.
    pub endpoints: Vec<Endpoint>,
    /// The keys file, when the project has one (`auth: required`); reloaded while serving.
    pub keys_file: Option<PathBuf>,
    /// The keys the keys file holds (none when `auth: none`).
    pub keys: Vec<Key>,
}

impl Project {
    /// The dataset with this `id`, if any.
    pub fn dataset(&self, id: &str) -> Option<&Dataset> {
        self.datasets.iter().find(|dataset| dataset.id == id)
    }

    /// The endpoint with this `name`, if any.
    pub fn endpoint(&self, name: &str) -> Option<&Endpoint> {
        self.endpoints.iter().find(|endpoint| endpoint.name == name)
    }
}

/// The project file (`offloader.yml`, or `gateway.yml`): offloader's fields, and quiver's under
/// its `gateway:` section.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Whether endpoints need an API key (`auth`).
    pub auth: AuthMode,
    /// quiver: when `/ready` answers 200.
    pub ready: ReadyPolicy,
    /// quiver: how many datasets materialize at once.
    pub materialize_parallelism: usize,
    /// quiver: how long one dataset's materialize may take (a dataset may set its own).
    pub materialize_budget: Duration,
    /// quiver: how often manifests are checked for a newer snapshot; `None`: only at start and on
    /// the admin port's refresh.
    pub refresh_interval: Option<Duration>,
    /// quiver: the response cache's bound in bytes (all formats and encodings together).
    pub cache_max_bytes: u64,
    /// `gateway: lookup: max_bytes`: the snapshot rows (and their indexes) held in memory for
    /// keyed lookups, all datasets together; 0 turns keyed lookups off.
    pub lookup_max_bytes: u64,
    /// quiver: how many connections to the server the pool holds.
    pub pool_size: usize,
    /// quiver: how long a request waits for a free connection before it answers `503`.
    pub pool_wait: Duration,
    /// quiver: a request's whole time, after which it answers `503`.
    pub request_timeout: Duration,
    /// quiver: both ports' connection bounds and header-read deadline.
    pub connections: ConnectionSettings,
    /// quiver: the directories local manifests and their parts must resolve inside (symlinks
    /// followed); the project directory unless `data_roots` says otherwise.
    pub data_roots: Vec<PathBuf>,
    /// quiver: what a query string naming a param twice means (offloader: the last value wins).
    pub repeated_params: RepeatedParams,
    /// Which browser origins the public port allows (offloader's `OFFLOADER_CORS_ORIGINS`).
    pub cors: CorsOrigins,
    /// quiver: keyed responses carry an ETag and answer `If-None-Match` with `304` (offloader's
    /// are `no-store` with no ETag, the default).
    pub keyed_revalidation: bool,
    /// quiver: what `sum` of a DOUBLE column yields (offloader casts every sum to BIGINT).
    pub double_sums: DoubleSums,
}

/// The origins CORS allows, read as offloader reads `OFFLOADER_CORS_ORIGINS`: comma-separated,
/// each trimmed, empty pieces dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CorsOrigins {
    /// No CORS headers; a preflight is routed like any request.
    Off,
    /// Exactly `*`: any origin, without credentials.
    Any,
    /// These origins (exact, case-sensitive), with credentials; `*` among others is literal.
    Listed(Vec<String>),
}

impl CorsOrigins {
    /// Reads a comma-separated origins list as offloader does: empty means off, a lone `*` any.
    pub fn parse(text: &str) -> CorsOrigins {
        let origins: Vec<String> = text
            .split(',')
            .map(str::trim)
            .filter(|origin| !origin.is_empty())
            .map(str::to_string)
            .collect();
        match origins.as_slice() {
            [] => CorsOrigins::Off,
            [only] if only == "*" => CorsOrigins::Any,
            _ => CorsOrigins::Listed(origins),
        }
    }
}

/// A query string that names a param more than once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepeatedParams {
    /// The last value wins, silently (offloader's reading, and the default).
    Last,
    /// `422 invalid_param`: which value was meant is not the gateway's guess to make.
    Refuse,
}

/// What `sum` of a DOUBLE column yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoubleSums {
    /// Rounded to a BIGINT, as offloader casts every sum (the default).
    Bigint,
    /// The DOUBLE sum itself.
    Double,
}

/// quiver: how many connections the ports hold, and how long a request head may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// The public port's bound on open connections.
    pub max: usize,
    /// The admin port's.
    pub admin_max: usize,
    /// Either port's bound on connections from one address.
    pub per_peer_max: usize,
    /// How long a request head may take to arrive whole (a kept-alive connection waits that long
    /// for its next request); silent and trickling connections are closed past it.
    pub header_read_timeout: Duration,
}

/// Who may call endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMode {
    /// Every request carries `Authorization: Bearer <token>` of an active key granted the endpoint.
    Required,
    /// Public; allowed only when no endpoint is tenant-scoped.
    None,
}

/// When the gateway reports ready.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadyPolicy {
    /// Every dataset serves a snapshot.
    All,
    /// At least one does.
    Any,
    /// These do (the others may still be loading or failed).
    Required(BTreeSet<String>),
}

/// A dataset: a table the gateway serves, the columns it expects, where its snapshots come from.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// The dataset's name, which endpoints' `dataset` refers to.
    pub id: String,
    /// Free text for the catalog and OpenAPI document.
    pub description: Option<String>,
    /// The columns a snapshot must hold, as the project declares them.
    pub schema: Vec<Column>,
    /// The column a key's tenant is matched against; `None`: the dataset is not tenant-scoped.
    pub tenant_column: Option<String>,
    /// Where the dataset's manifest is read from.
    pub source: SnapshotSource,
    /// Where `manifest:` is written (its file and line), for `check`'s reports.
    pub manifest_at: (PathBuf, usize),
    /// quiver: this dataset's own materialize budget.
    pub materialize_budget: Option<Duration>,
    /// Only while checking a dataset file that has problems: the columns whose definition failed.
    /// Endpoints over it are still checked, and are not told such a column does not exist. Empty
    /// in a loaded project.
    pub unchecked_columns: BTreeSet<String>,
}

impl Dataset {
    /// The declared column with this name, if any.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.schema.iter().find(|column| column.name == name)
    }

    /// Whether `name` is a column whose definition failed (see `unchecked_columns`).
    pub fn is_unchecked(&self, name: &str) -> bool {
        self.unchecked_columns.contains(name) || self.unchecked_columns.contains(ALL_UNCHECKED)
    }
}

/// In `unchecked_columns`: which columns failed is not known (the schema itself did).
pub const ALL_UNCHECKED: &str = "*";

/// Where a dataset's snapshot manifest is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotSource {
    /// A manifest file (JSON, offloader's shape), resolved against the project root.
    Manifest(PathBuf),
    /// quiver: a manifest in object storage, `s3://bucket/key` (credentials and endpoint from the
    /// environment, never the project).
    ObjectStore(String),
}

/// A column a dataset declares: its name and type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The column's name in the snapshot.
    pub name: String,
    /// The type the snapshot's column must have.
    pub column_type: ColumnType,
}

/// The column types a dataset may declare (offloader's set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// `DATE`.
    Date,
    /// `TIMESTAMP` (without time zone).
    Timestamp,
    /// `VARCHAR`.
    Varchar,
    /// `INTEGER` (32-bit).
    Integer,
    /// `BIGINT` (64-bit).
    Bigint,
    /// `DOUBLE`.
    Double,
    /// `BOOLEAN`.
    Boolean,
    /// A nested column (`STRUCT`/`MAP`/`LIST` in the snapshot), served as nested JSON.
    Json,
}

impl ColumnType {
    /// The DuckDB type name.
    pub fn sql(self) -> &'static str {
        match self {
            ColumnType::Date => "DATE",
            ColumnType::Timestamp => "TIMESTAMP",
            ColumnType::Varchar => "VARCHAR",
            ColumnType::Integer => "INTEGER",
            ColumnType::Bigint => "BIGINT",
            ColumnType::Double => "DOUBLE",
            ColumnType::Boolean => "BOOLEAN",
            ColumnType::Json => "JSON",
        }
    }
}

/// An endpoint: `GET /v1/endpoints/<name>`, a query over one dataset that callers shape only
/// through declared params.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The endpoint's name: its path segment under `/v1/endpoints/`.
    pub name: String,
    /// The endpoint's version, reported in each response's `meta` and bound into its cursors.
    pub version: u32,
    /// The `id` of the dataset it reads.
    pub dataset: String,
    /// Free text for the catalog and OpenAPI document.
    pub description: Option<String>,
    /// Whether it reads the materialized table or the snapshot's files.
    pub serving_mode: ServingMode,
    /// The column the caller's key's tenant is bound to (the dataset's `tenant_column`).
    pub tenant_column: Option<String>,
    /// `freshness.max_staleness_minutes`: the snapshot age past which the dataset counts as stale.
    pub max_staleness: Option<Duration>,
    /// The query params a caller may send, as declared.
    pub params: Vec<Param>,
    /// Exact sets of caller-sent param names allowed together; `None`: any subset.
    pub combinations: Option<Vec<BTreeSet<String>>>,
    /// The output columns, in order.
    pub select: Vec<SelectItem>,
    /// The filters, each bound to one declared param.
    pub filters: Vec<Filter>,
    /// The columns grouped by, when the select list aggregates.
    pub group_by: Vec<String>,
    /// The fixed order of rows (offloader's `order_by`).
    pub order_by: Vec<OrderBy>,
    /// quiver: output columns a caller may sort by with `?sort=a,-b` (in place of `order_by`).
    pub sort_allowlist: Vec<String>,
    /// The output columns a response may contain.
    pub columns: Vec<String>,
    /// Rows per page when the caller sends no `limit`.
    pub default_limit: u64,
    /// The largest `limit` a caller may send.
    pub max_limit: u64,
    /// Whether responses are cached until the snapshot changes.
    pub cache: CachePolicy,
}

impl Endpoint {
    /// The declared param with this name, if any.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|param| param.name == name)
    }
}

/// Which relation an endpoint's query reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServingMode {
    /// Reads the materialized snapshot table.
    LocalTable,
    /// Reads the snapshot's files per request.
    RemoteScan,
}

impl ServingMode {
    /// The mode's name in a project file.
    pub fn as_str(self) -> &'static str {
        match self {
            ServingMode::LocalTable => "local_table",
            ServingMode::RemoteScan => "remote_scan",
        }
    }
}

/// Whether an endpoint's responses are kept in the response cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CachePolicy {
    /// Every request queries.
    None,
    /// Responses are cached until the dataset's snapshot changes.
    Snapshot,
}

/// A query param a caller may send.
#[derive(Clone, Debug)]
pub struct Param {
    /// The param's name in the query string.
    pub name: String,
    /// What its values must be.
    pub param_type: ParamType,
    /// Whether a request without it (and without a default) is refused.
    pub required: bool,
    /// Applied when the caller omits the param; already checked against the type.
    pub default: Option<String>,
    /// For `enum`: the allowed values.
    pub allowed: Vec<String>,
    /// For `integer`: the smallest value allowed.
    pub min: Option<i64>,
    /// For `integer`: the largest value allowed.
    pub max: Option<i64>,
    /// A caller's value rewritten to a stored one before filtering.
    pub aliases: BTreeMap<String, String>,
    /// quiver: for `in`, the most values one request may list.
    pub max_values: usize,
}

/// A param's type: how a caller's text is checked and bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// Any text.
    String,
    /// A 64-bit integer, within the param's `min`/`max`.
    Integer,
    /// An ISO 8601 date (`YYYY-MM-DD`).
    Date,
    /// One of the param's `allowed` values.
    Enum,
    /// quiver: a double.
    Number,
    /// quiver: `true`/`false`.
    Boolean,
    /// quiver: an RFC 3339 timestamp.
    Timestamp,
}

impl ParamType {
    /// The type's name in a project file.
    pub fn name(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Date => "date",
            ParamType::Enum => "enum",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
            ParamType::Timestamp => "timestamp",
        }
    }
}

/// Query params every endpoint has (offloader's three); a project may not declare them.
pub const RESERVED_PARAMS: [&str; 3] = ["limit", "offset", "columns"];
/// quiver's own query params: an endpoint has each unless it declares a param of the same name,
/// which then wins (a project written for offloader may use these names).
pub const EXTRA_PARAMS: [&str; 3] = ["sort", "cursor", "format"];

/// One output column: a dataset column, or an aggregate of one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectItem {
    /// The column's name in the response.
    pub output: String,
    /// The dataset column it reads.
    pub column: String,
    /// The aggregate applied to the column; `None`: the column itself.
    pub aggregate: Option<Aggregate>,
    /// The project's `double_sums`, for a `sum` of a DOUBLE column.
    pub double_sums: DoubleSums,
}

/// An aggregate in an endpoint's select list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// `sum`: a BIGINT, or a DOUBLE when the project keeps DOUBLE sums.
    Sum,
    /// `avg`: a DOUBLE.
    Avg,
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `count` of non-NULL values.
    Count,
}

/// A filter, applied only when its param has a value (sent or defaulted). The operator is fixed by
/// the project: a caller chooses values, never operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// The dataset column the filter tests.
    pub column: String,
    /// How the column is compared with the param's value.
    pub op: FilterOp,
    /// The declared param whose value is compared.
    pub param: String,
}

/// A filter's comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterOp {
    /// `eq`: equal.
    Eq,
    /// `gte`: greater than or equal.
    Gte,
    /// `lte`: less than or equal.
    Lte,
    /// quiver: `ne`, not equal.
    Ne,
    /// quiver: `lt`, less than.
    Lt,
    /// quiver: `gt`, greater than.
    Gt,
    /// Comma-separated values (at most the param's `max_values`).
    In,
    /// Two comma-separated values, both ends included.
    Between,
    /// The column's text starts with the value.
    Prefix,
    /// `true`: the column is NULL; `false`: it is not.
    IsNull,
}

/// One term of an endpoint's fixed row order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderBy {
    /// The output column ordered by.
    pub column: String,
    /// Whether the order is descending.
    pub descending: bool,
}

/// An API key: only the SHA-256 of its token is known.
#[derive(Clone, Debug)]
pub struct Key {
    /// The key's name: what the access log and rate limits know it by; never its token.
    pub id: String,
    /// The SHA-256 digest of the key's token, what a presented token is compared with.
    pub token_sha256: [u8; 32],
    /// The one tenant it reads; `None` for a key of non-tenant endpoints.
    pub tenant: Option<String>,
    /// The names of the endpoints the key may call.
    pub endpoints: BTreeSet<String>,
    /// Whether the key is in force; an inactive key is refused.
    pub active: bool,
    /// quiver: seconds since the Unix epoch after which the key is refused.
    pub expires_at: Option<u64>,
    /// quiver: requests per second this key may make (a burst of as many), `None`: unlimited.
    pub rate_limit_per_second: Option<u32>,
}

impl SelectItem {
    /// The type of this output column: what the compiled statement yields. Sums are BIGINT, as
    /// offloader casts them (never DuckDB's 128-bit HUGEINT; a DOUBLE column's sum rounded),
    /// unless the project keeps DOUBLE sums.
    pub fn output_type(&self, dataset: &Dataset) -> ColumnType {
        let column_type = dataset
            .column(&self.column)
            .map_or(ColumnType::Varchar, |column| column.column_type);
        match self.aggregate {
            None | Some(Aggregate::Min | Aggregate::Max) => column_type,
            Some(Aggregate::Sum)
                if column_type == ColumnType::Double && self.double_sums == DoubleSums::Double =>
            {
                ColumnType::Double
            }
            Some(Aggregate::Sum | Aggregate::Count) => ColumnType::Bigint,
            Some(Aggregate::Avg) => ColumnType::Double,
        }
    }
}
