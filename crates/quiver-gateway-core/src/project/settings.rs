//! The project file: where the other files are, offloader's settings, and quiver's own under
//! `gateway:` (defaults here), each problem reported with its line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::model::{
    AuthMode, ConnectionSettings, CorsOrigins, DoubleSums, ReadyPolicy, RepeatedParams, Settings,
};
use super::yaml::{Node, Reader, Value};

/// Defaults of the project file's `gateway:` section.
pub const DEFAULT_MATERIALIZE_PARALLELISM: usize = 2;
pub const DEFAULT_MATERIALIZE_BUDGET_SECONDS: u64 = 300;
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 256 * 1024 * 1024;
pub const DEFAULT_LOOKUP_MAX_BYTES: u64 = 256 * 1024 * 1024;
pub const DEFAULT_POOL_SIZE: usize = 4;
pub const DEFAULT_POOL_WAIT_MS: u64 = 2000;
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;
pub const DEFAULT_CONNECTIONS_MAX: usize = 8192;
pub const DEFAULT_ADMIN_CONNECTIONS_MAX: usize = 256;
pub const DEFAULT_PER_PEER_CONNECTIONS_MAX: usize = 1024;
pub const DEFAULT_HEADER_READ_TIMEOUT_MS: u64 = 10_000;

/// What the project file says: settings and where the other files are.
pub(super) struct Layout {
    /// The project directory.
    pub(super) root: PathBuf,
    pub(super) settings: Settings,
    pub(super) datasets_dir: PathBuf,
    pub(super) endpoints_dir: PathBuf,
    pub(super) keys_file: Option<PathBuf>,
    pub(super) ready_line: Option<usize>,
    pub(super) auth_line: Option<usize>,
}

pub(super) fn read_project_file(reader: &mut Reader<'_>, root: &Node, dir: &Path) -> Layout {
    let mut layout = Layout {
        root: dir.to_path_buf(),
        settings: default_settings(dir),
        datasets_dir: dir.join("datasets"),
        endpoints_dir: dir.join("endpoints"),
        keys_file: None,
        ready_line: None,
        auth_line: None,
    };
    let Some(fields) = reader.mapping(
        root,
        "the project file",
        &[
            "version",
            "datasets_dir",
            "endpoints_dir",
            "keys",
            "auth",
            "gateway",
        ],
        &["object_store_mode", "name", "description"],
    ) else {
        return layout;
    };
    if let Some(node) = fields.required(reader, "version", "the project file") {
        // Only version 1 exists; `integer` reports any other.
        let _ = reader.integer(node, "`version`", 1, 1);
    }
    if let Some(path) = fields
        .get("datasets_dir")
        .and_then(|node| reader.string(node, "`datasets_dir`"))
    {
        layout.datasets_dir = dir.join(path);
    }
    if let Some(path) = fields
        .get("endpoints_dir")
        .and_then(|node| reader.string(node, "`endpoints_dir`"))
    {
        layout.endpoints_dir = dir.join(path);
    }
    if let Some(path) = fields
        .get("keys")
        .and_then(|node| reader.string(node, "`keys`"))
    {
        layout.keys_file = Some(dir.join(path));
    }
    if let Some(node) = fields.get("auth") {
        layout.auth_line = Some(node.line);
        match reader.string(node, "`auth`").as_deref() {
            Some("required") => layout.settings.auth = AuthMode::Required,
            Some("none") => layout.settings.auth = AuthMode::None,
            Some(other) => reader.error(
                node.line,
                format!(
                    "`auth` must be `required` or `none`, not `{}`",
                    super::yaml::printable(other)
                ),
            ),
            None => {}
        }
    }
    if let Some(node) = fields.get("gateway") {
        read_gateway_section(reader, node, &mut layout);
    }
    layout
}

/// The settings of a project file that says nothing under `gateway:`.
fn default_settings(dir: &Path) -> Settings {
    Settings {
        auth: AuthMode::Required,
        ready: ReadyPolicy::All,
        materialize_parallelism: DEFAULT_MATERIALIZE_PARALLELISM,
        materialize_budget: Duration::from_secs(DEFAULT_MATERIALIZE_BUDGET_SECONDS),
        refresh_interval: None,
        cache_max_bytes: DEFAULT_CACHE_MAX_BYTES,
        lookup_max_bytes: DEFAULT_LOOKUP_MAX_BYTES,
        pool_size: DEFAULT_POOL_SIZE,
        pool_wait: Duration::from_millis(DEFAULT_POOL_WAIT_MS),
        request_timeout: Duration::from_millis(DEFAULT_REQUEST_TIMEOUT_MS),
        data_roots: vec![dir.to_path_buf()],
        repeated_params: RepeatedParams::Last,
        cors: CorsOrigins::Off,
        keyed_revalidation: false,
        double_sums: DoubleSums::Bigint,
        connections: ConnectionSettings {
            max: DEFAULT_CONNECTIONS_MAX,
            admin_max: DEFAULT_ADMIN_CONNECTIONS_MAX,
            per_peer_max: DEFAULT_PER_PEER_CONNECTIONS_MAX,
            header_read_timeout: Duration::from_millis(DEFAULT_HEADER_READ_TIMEOUT_MS),
        },
    }
}

/// quiver's own settings, under the project file's `gateway:`.
fn read_gateway_section(reader: &mut Reader<'_>, node: &Node, layout: &mut Layout) {
    let Some(fields) = reader.mapping(node, "`gateway`", &GATEWAY_FIELDS, &[]) else {
        return;
    };
    if let Some(node) = fields.get("ready") {
        layout.ready_line = Some(node.line);
        read_ready(reader, node, &mut layout.settings.ready);
    }
    let settings = &mut layout.settings;
    if let Some(node) = fields.get("materialize") {
        read_materialize(reader, node, settings);
    }
    if let Some(value) = fields
        .get("refresh_interval_seconds")
        .and_then(|node| reader.integer(node, "`refresh_interval_seconds`", 1, 86_400 * 7))
    {
        settings.refresh_interval = Some(Duration::from_secs(value as u64));
    }
    let cache = fields
        .get("cache")
        .and_then(|node| reader.mapping(node, "`cache`", &["max_bytes"], &[]));
    if let Some(value) = cache
        .and_then(|cache| cache.get("max_bytes"))
        .and_then(|node| reader.integer(node, "`max_bytes`", 0, 1 << 40))
    {
        settings.cache_max_bytes = value as u64;
    }
    let lookup = fields
        .get("lookup")
        .and_then(|node| reader.mapping(node, "`lookup`", &["max_bytes"], &[]));
    if let Some(value) = lookup
        .and_then(|lookup| lookup.get("max_bytes"))
        .and_then(|node| reader.integer(node, "`max_bytes`", 0, 1 << 40))
    {
        settings.lookup_max_bytes = value as u64;
    }
    if let Some(node) = fields.get("pool") {
        read_pool(reader, node, settings);
    }
    if let Some(value) = fields
        .get("request_timeout_ms")
        .and_then(|node| reader.integer(node, "`request_timeout_ms`", 1, 3_600_000))
    {
        settings.request_timeout = Duration::from_millis(value as u64);
    }
    if let Some(node) = fields.get("connections") {
        read_connections(reader, node, &mut settings.connections);
    }
    if let Some(text) = fields
        .get("cors_origins")
        .and_then(|node| read_cors_origins(reader, node))
    {
        settings.cors = CorsOrigins::parse(&text);
    }
    if let Some(value) = fields
        .get("keyed_revalidation")
        .and_then(|node| reader.boolean(node, "`keyed_revalidation`"))
    {
        settings.keyed_revalidation = value;
    }
    if let Some(node) = fields.get("double_sums") {
        read_double_sums(reader, node, &mut settings.double_sums);
    }
    if let Some(node) = fields.get("repeated_params") {
        read_repeated_params(reader, node, &mut settings.repeated_params);
    }
    if let Some(roots) = fields
        .get("data_roots")
        .and_then(|node| read_data_roots(reader, node, &layout.root))
    {
        settings.data_roots = roots;
    }
}

/// The fields the `gateway:` section may set.
const GATEWAY_FIELDS: [&str; 13] = [
    "ready",
    "materialize",
    "refresh_interval_seconds",
    "cache",
    "lookup",
    "pool",
    "request_timeout_ms",
    "connections",
    "data_roots",
    "repeated_params",
    "cors_origins",
    "keyed_revalidation",
    "double_sums",
];

/// `ready`: `all`, `any` or a list of dataset ids (checked against the datasets later).
fn read_ready(reader: &mut Reader<'_>, node: &Node, ready: &mut ReadyPolicy) {
    match &node.value {
        Value::Str(text) if text == "all" => *ready = ReadyPolicy::All,
        Value::Str(text) if text == "any" => *ready = ReadyPolicy::Any,
        Value::Seq(_) => {
            if let Some(ids) = reader.identifiers(node, "a `ready` dataset") {
                if ids.is_empty() {
                    reader.error(node.line, "`ready` lists no dataset");
                }
                *ready = ReadyPolicy::Required(ids.into_iter().map(|(id, _)| id).collect());
            }
        }
        _ => reader.error(
            node.line,
            "`ready` must be `all`, `any` or a list of dataset ids",
        ),
    }
}

/// `materialize`: `parallelism` (1..=64) and `budget_seconds` (up to a day).
fn read_materialize(reader: &mut Reader<'_>, node: &Node, settings: &mut Settings) {
    let Some(materialize) = reader.mapping(
        node,
        "`materialize`",
        &["parallelism", "budget_seconds"],
        &[],
    ) else {
        return;
    };
    if let Some(value) = materialize
        .get("parallelism")
        .and_then(|node| reader.integer(node, "`parallelism`", 1, 64))
    {
        settings.materialize_parallelism = value as usize;
    }
    if let Some(value) = materialize
        .get("budget_seconds")
        .and_then(|node| reader.integer(node, "`budget_seconds`", 1, 86_400))
    {
        settings.materialize_budget = Duration::from_secs(value as u64);
    }
}

/// `pool`: `size` (1..=256 connections) and `wait_ms` (up to ten minutes).
fn read_pool(reader: &mut Reader<'_>, node: &Node, settings: &mut Settings) {
    let Some(pool) = reader.mapping(node, "`pool`", &["size", "wait_ms"], &[]) else {
        return;
    };
    if let Some(value) = pool
        .get("size")
        .and_then(|node| reader.integer(node, "`size`", 1, 256))
    {
        settings.pool_size = value as usize;
    }
    if let Some(value) = pool
        .get("wait_ms")
        .and_then(|node| reader.integer(node, "`wait_ms`", 0, 600_000))
    {
        settings.pool_wait = Duration::from_millis(value as u64);
    }
}

/// `cors_origins`: a comma-separated string or a list, as one comma-separated string.
fn read_cors_origins(reader: &mut Reader<'_>, node: &Node) -> Option<String> {
    match &node.value {
        Value::Seq(items) => items
            .iter()
            .map(|item| reader.string(item, "a `cors_origins` entry"))
            .collect::<Option<Vec<String>>>()
            .map(|origins| origins.join(",")),
        _ => reader.string(node, "`cors_origins`"),
    }
}

/// `double_sums`: `bigint` or `double`.
fn read_double_sums(reader: &mut Reader<'_>, node: &Node, double_sums: &mut DoubleSums) {
    match reader.string(node, "`double_sums`").as_deref() {
        Some("bigint") => *double_sums = DoubleSums::Bigint,
        Some("double") => *double_sums = DoubleSums::Double,
        Some(other) => reader.error(
            node.line,
            format!(
                "`double_sums` must be `bigint` or `double`, not `{}`",
                super::yaml::printable(other)
            ),
        ),
        None => {}
    }
}

/// `repeated_params`: `last` or `refuse`.
fn read_repeated_params(reader: &mut Reader<'_>, node: &Node, repeated: &mut RepeatedParams) {
    match reader.string(node, "`repeated_params`").as_deref() {
        Some("last") => *repeated = RepeatedParams::Last,
        Some("refuse") => *repeated = RepeatedParams::Refuse,
        Some(other) => reader.error(
            node.line,
            format!(
                "`repeated_params` must be `last` or `refuse`, not `{}`",
                super::yaml::printable(other)
            ),
        ),
        None => {}
    }
}

/// `gateway: data_roots:` — directories, relative to the project directory or absolute.
fn read_data_roots(reader: &mut Reader<'_>, node: &Node, dir: &Path) -> Option<Vec<PathBuf>> {
    let items = reader.sequence(node, "`data_roots`")?;
    if items.is_empty() {
        reader.error(node.line, "`data_roots` lists no directory");
        return None;
    }
    let mut roots = Vec::with_capacity(items.len());
    for item in items {
        let path = dir.join(reader.string(item, "a `data_roots` entry")?);
        if !path.is_dir() {
            reader.error(
                item.line,
                format!("data root `{}` is not a directory", path.display()),
            );
            return None;
        }
        roots.push(path);
    }
    Some(roots)
}

/// `gateway: connections:` (both ports).
fn read_connections(reader: &mut Reader<'_>, node: &Node, settings: &mut ConnectionSettings) {
    let Some(fields) = reader.mapping(
        node,
        "`connections`",
        &["max", "admin_max", "per_peer_max", "header_read_timeout_ms"],
        &[],
    ) else {
        return;
    };
    let mut count = |key: &str, value: &mut usize| {
        if let Some(read) = fields
            .get(key)
            .and_then(|node| reader.integer(node, &format!("`{key}`"), 1, 1 << 20))
        {
            *value = read as usize;
        }
    };
    count("max", &mut settings.max);
    count("admin_max", &mut settings.admin_max);
    count("per_peer_max", &mut settings.per_peer_max);
    if let Some(value) = fields
        .get("header_read_timeout_ms")
        .and_then(|node| reader.integer(node, "`header_read_timeout_ms`", 1, 3_600_000))
    {
        settings.header_read_timeout = Duration::from_millis(value as u64);
    }
}
