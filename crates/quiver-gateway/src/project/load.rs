//! `load`: a project directory (offloader's layout) read and checked into [`Project`], every
//! problem reported at once with its file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::diagnostics::Diagnostics;
use super::endpoint::read_endpoint;
use super::keys::load_keys_into;
use super::model::{
    AuthMode, Column, ColumnType, ConnectionSettings, CorsOrigins, Dataset, DoubleSums, Project,
    ReadyPolicy, RepeatedParams, Settings, SnapshotSource, ALL_UNCHECKED,
};
use super::yaml::{parse_file, Fields, Node, Reader, Value};

/// The project file's names, in the order looked for.
pub const PROJECT_FILES: [&str; 2] = ["offloader.yml", "gateway.yml"];

/// Bounds on what a project may hold.
pub const MAX_DATASETS: usize = 1000;
pub const MAX_ENDPOINTS: usize = 1000;
pub const MAX_COLUMNS: usize = 1000;

/// Defaults of the project file's `gateway:` section.
pub const DEFAULT_MATERIALIZE_PARALLELISM: usize = 2;
pub const DEFAULT_MATERIALIZE_BUDGET_SECONDS: u64 = 300;
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 256 * 1024 * 1024;
pub const DEFAULT_POOL_SIZE: usize = 4;
pub const DEFAULT_POOL_WAIT_MS: u64 = 2000;
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;
pub const DEFAULT_CONNECTIONS_MAX: usize = 8192;
pub const DEFAULT_ADMIN_CONNECTIONS_MAX: usize = 256;
pub const DEFAULT_PER_PEER_CONNECTIONS_MAX: usize = 1024;
pub const DEFAULT_HEADER_READ_TIMEOUT_MS: u64 = 10_000;

/// Reads the project in `dir` and checks all of it.
pub fn load(dir: &Path) -> Result<Project, Diagnostics> {
    let (project, diagnostics) = read(dir);
    match project {
        Some(project) if diagnostics.is_empty() => Ok(project),
        _ => Err(diagnostics),
    }
}

/// Reads the project in `dir`: what of it loaded (`None` when the project file itself did not),
/// and every problem found; `check` goes on from here to the manifests and their parts.
pub fn read(dir: &Path) -> (Option<Project>, Diagnostics) {
    let mut diagnostics = Diagnostics::default();
    let Some(project_file) = PROJECT_FILES
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
    else {
        diagnostics.push(
            dir,
            0,
            format!("no project file: expected {}", PROJECT_FILES.join(" or ")),
        );
        return (None, diagnostics);
    };
    let Some(root) = parse_file(&project_file, &mut diagnostics) else {
        return (None, diagnostics);
    };
    let mut reader = Reader {
        file: project_file.clone(),
        diagnostics: &mut diagnostics,
    };
    let layout = read_project_file(&mut reader, &root, dir);

    let mut datasets: Vec<Dataset> = Vec::new();
    // Datasets whose files have problems, as far as they were read: endpoints over them are still
    // checked (one pass finds every problem), but they are no part of the project.
    let mut drafts: Vec<Dataset> = Vec::new();
    let mut dataset_lines: BTreeMap<String, (PathBuf, usize)> = BTreeMap::new();
    for file in yaml_files(
        &layout.datasets_dir,
        "datasets_dir",
        &mut diagnostics,
        &project_file,
    ) {
        let Some(node) = parse_file(&file, &mut diagnostics) else {
            continue;
        };
        let mut reader = Reader {
            file: file.clone(),
            diagnostics: &mut diagnostics,
        };
        let problems_before = reader.diagnostics.len();
        let Some(dataset) = read_dataset(&mut reader, &node) else {
            continue;
        };
        let sound = reader.diagnostics.len() == problems_before;
        match define(
            &mut dataset_lines,
            &mut reader,
            "dataset",
            &dataset.id,
            node.line,
            MAX_DATASETS,
        ) {
            Defined::First if sound => datasets.push(dataset),
            Defined::First => drafts.push(dataset),
            Defined::Again => continue,
            Defined::OverLimit => break,
        }
    }

    let checkable: Vec<Dataset> = datasets.iter().chain(&drafts).cloned().collect();
    let mut endpoints = Vec::new();
    // Names of endpoint files that failed their checks: keys granting them are not also reported.
    let mut failed_endpoints = BTreeSet::new();
    let mut endpoint_lines: BTreeMap<String, (PathBuf, usize)> = BTreeMap::new();
    for file in yaml_files(
        &layout.endpoints_dir,
        "endpoints_dir",
        &mut diagnostics,
        &project_file,
    ) {
        let Some(node) = parse_file(&file, &mut diagnostics) else {
            continue;
        };
        let mut reader = Reader {
            file: file.clone(),
            diagnostics: &mut diagnostics,
        };
        let Some(endpoint) = read_endpoint(&mut reader, &node, &checkable, layout.settings.auth)
        else {
            if let Value::Map(entries) = &node.value {
                if let Some(Value::Str(name)) = entries
                    .iter()
                    .find(|e| e.key == "name")
                    .map(|e| &e.value.value)
                {
                    failed_endpoints.insert(name.clone());
                }
            }
            continue;
        };
        match define(
            &mut endpoint_lines,
            &mut reader,
            "endpoint",
            &endpoint.name,
            node.line,
            MAX_ENDPOINTS,
        ) {
            Defined::First => endpoints.push(endpoint),
            Defined::Again => continue,
            Defined::OverLimit => break,
        }
    }

    let mut reader = Reader {
        file: project_file.clone(),
        diagnostics: &mut diagnostics,
    };
    if let (ReadyPolicy::Required(required), Some(line)) =
        (&layout.settings.ready, layout.ready_line)
    {
        for id in required {
            if !dataset_lines.contains_key(id) {
                reader.error(
                    line,
                    format!("`ready` names dataset `{id}`, which is not defined"),
                );
            }
        }
    }

    let keys = match &layout.keys_file {
        Some(path) => load_keys_into(
            path,
            Some((&endpoints, &failed_endpoints)),
            &mut diagnostics,
        ),
        None => {
            if layout.settings.auth == AuthMode::Required {
                diagnostics.push(
                    &project_file,
                    layout.auth_line.unwrap_or(root.line),
                    "`auth: required` needs a `keys` file (or set `auth: none` for a public API)",
                );
            }
            Vec::new()
        }
    };

    for item in endpoints
        .iter_mut()
        .flat_map(|endpoint| endpoint.select.iter_mut())
    {
        item.double_sums = layout.settings.double_sums;
    }
    let project = Project {
        root: dir.to_path_buf(),
        settings: layout.settings,
        datasets,
        endpoints,
        keys_file: layout.keys_file,
        keys,
    };
    (Some(project), diagnostics)
}

/// The `*.yml` / `*.yaml` files of a directory, sorted by name (so problems come in a stable order).
fn yaml_files(
    dir: &Path,
    field: &str,
    diagnostics: &mut Diagnostics,
    project_file: &Path,
) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            diagnostics.push(
                project_file,
                0,
                format!("{field} `{}` cannot be read: {error}", dir.display()),
            );
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.is_file()
                && matches!(
                    path.extension().and_then(|ext| ext.to_str()),
                    Some("yml" | "yaml")
                )
        })
        .collect();
    files.sort();
    files
}

/// What the project file says: settings and where the other files are.
struct Layout {
    /// The project directory.
    root: PathBuf,
    settings: Settings,
    datasets_dir: PathBuf,
    endpoints_dir: PathBuf,
    keys_file: Option<PathBuf>,
    ready_line: Option<usize>,
    auth_line: Option<usize>,
}

/// What [`define`] found of a name.
enum Defined {
    First,
    /// Defined before: reported, this one skipped.
    Again,
    /// Past the limit of its kind: reported, the rest of its kind skipped.
    OverLimit,
}

/// Records where a `kind` (dataset, endpoint) named `name` is defined, at most `max` of them; a
/// second definition of a name is reported with the first one's place.
fn define(
    seen: &mut BTreeMap<String, (PathBuf, usize)>,
    reader: &mut Reader<'_>,
    kind: &str,
    name: &str,
    line: usize,
    max: usize,
) -> Defined {
    if let Some((first_file, first_line)) = seen.get(name) {
        reader.error(
            line,
            format!(
                "{kind} `{name}` is already defined at {}:{first_line}",
                first_file.display()
            ),
        );
        return Defined::Again;
    }
    if seen.len() == max {
        reader.error(0, format!("more than {max} {kind}s"));
        return Defined::OverLimit;
    }
    seen.insert(name.to_owned(), (reader.file.clone(), line));
    Defined::First
}

fn read_project_file(reader: &mut Reader<'_>, root: &Node, dir: &Path) -> Layout {
    let mut layout = Layout {
        root: dir.to_path_buf(),
        settings: Settings {
            auth: AuthMode::Required,
            ready: ReadyPolicy::All,
            materialize_parallelism: DEFAULT_MATERIALIZE_PARALLELISM,
            materialize_budget: Duration::from_secs(DEFAULT_MATERIALIZE_BUDGET_SECONDS),
            refresh_interval: None,
            cache_max_bytes: DEFAULT_CACHE_MAX_BYTES,
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
        },
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

/// quiver's own settings, under the project file's `gateway:`.
fn read_gateway_section(reader: &mut Reader<'_>, node: &Node, layout: &mut Layout) {
    let Some(fields) = reader.mapping(
        node,
        "`gateway`",
        &[
            "ready",
            "materialize",
            "refresh_interval_seconds",
            "cache",
            "pool",
            "request_timeout_ms",
            "connections",
            "data_roots",
            "repeated_params",
            "cors_origins",
            "keyed_revalidation",
            "double_sums",
        ],
        &[],
    ) else {
        return;
    };
    if let Some(node) = fields.get("ready") {
        layout.ready_line = Some(node.line);
        match &node.value {
            Value::Str(text) if text == "all" => layout.settings.ready = ReadyPolicy::All,
            Value::Str(text) if text == "any" => layout.settings.ready = ReadyPolicy::Any,
            Value::Seq(_) => {
                if let Some(ids) = reader.identifiers(node, "a `ready` dataset") {
                    if ids.is_empty() {
                        reader.error(node.line, "`ready` lists no dataset");
                    }
                    layout.settings.ready =
                        ReadyPolicy::Required(ids.into_iter().map(|(id, _)| id).collect());
                }
            }
            _ => reader.error(
                node.line,
                "`ready` must be `all`, `any` or a list of dataset ids",
            ),
        }
    }
    let settings = &mut layout.settings;
    let materialize = fields.get("materialize").and_then(|node| {
        reader.mapping(
            node,
            "`materialize`",
            &["parallelism", "budget_seconds"],
            &[],
        )
    });
    if let Some(materialize) = materialize {
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
    let pool = fields
        .get("pool")
        .and_then(|node| reader.mapping(node, "`pool`", &["size", "wait_ms"], &[]));
    if let Some(pool) = pool {
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
    if let Some(value) = fields
        .get("request_timeout_ms")
        .and_then(|node| reader.integer(node, "`request_timeout_ms`", 1, 3_600_000))
    {
        settings.request_timeout = Duration::from_millis(value as u64);
    }
    if let Some(node) = fields.get("connections") {
        read_connections(reader, node, &mut settings.connections);
    }
    if let Some(node) = fields.get("cors_origins") {
        let text = match &node.value {
            Value::Seq(items) => items
                .iter()
                .map(|item| reader.string(item, "a `cors_origins` entry"))
                .collect::<Option<Vec<String>>>()
                .map(|origins| origins.join(",")),
            _ => reader.string(node, "`cors_origins`"),
        };
        if let Some(text) = text {
            settings.cors = CorsOrigins::parse(&text);
        }
    }
    if let Some(value) = fields
        .get("keyed_revalidation")
        .and_then(|node| reader.boolean(node, "`keyed_revalidation`"))
    {
        settings.keyed_revalidation = value;
    }
    if let Some(node) = fields.get("double_sums") {
        match reader.string(node, "`double_sums`").as_deref() {
            Some("bigint") => settings.double_sums = DoubleSums::Bigint,
            Some("double") => settings.double_sums = DoubleSums::Double,
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
    if let Some(node) = fields.get("repeated_params") {
        match reader.string(node, "`repeated_params`").as_deref() {
            Some("last") => settings.repeated_params = RepeatedParams::Last,
            Some("refuse") => settings.repeated_params = RepeatedParams::Refuse,
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
    if let Some(roots) = fields
        .get("data_roots")
        .and_then(|node| read_data_roots(reader, node, &layout.root))
    {
        settings.data_roots = roots;
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

/// One `datasets/*.yml`.
fn read_dataset(reader: &mut Reader<'_>, node: &Node) -> Option<Dataset> {
    let fields = reader.mapping(
        node,
        "a dataset",
        &[
            "id",
            "description",
            "schema",
            "tenant_column",
            "manifest",
            "source",
            "materialize_budget_seconds",
        ],
        &["owner"],
    )?;
    let id = fields
        .required(reader, "id", "a dataset")
        .and_then(|node| reader.identifier(node, "a dataset id"));
    let description = fields
        .get("description")
        .and_then(|node| reader.string(node, "`description`"));
    let schema = read_schema(reader, &fields);
    let tenant_column = match fields.get("tenant_column") {
        Some(node) => {
            let column = reader.identifier(node, "`tenant_column`");
            let known = |name: &str| {
                !schema.unchecked.contains(name) && !schema.unchecked.contains(ALL_UNCHECKED)
            };
            if let Some(column) = column.as_ref().filter(|column| known(column)) {
                match schema.columns.iter().find(|c| &c.name == column) {
                    None => reader.error(
                        node.line,
                        format!("`tenant_column` `{column}` is not a column of the schema"),
                    ),
                    Some(c) if c.column_type != ColumnType::Varchar => reader.error(
                        node.line,
                        format!("`tenant_column` `{column}` must be VARCHAR (tenants are text)"),
                    ),
                    Some(_) => {}
                }
            }
            column
        }
        None => None,
    };
    if let Some(line) = fields.key_line("source") {
        reader.error(
            line,
            "`source:` (a self-discovering remote snapshot) is not supported: point `manifest:` at the manifest (a path or s3://bucket/key)",
        );
    }
    let source = match fields.get("manifest") {
        Some(node) => match reader.string(node, "`manifest`") {
            Some(text) if text.starts_with("s3://") => {
                if text.len() <= "s3://".len() || !text["s3://".len()..].contains('/') {
                    reader.error(node.line, "`manifest` must be s3://bucket/key");
                    None
                } else {
                    Some(SnapshotSource::ObjectStore(text))
                }
            }
            Some(text) if text.contains("://") => {
                reader.error(
                    node.line,
                    "`manifest` must be a path or s3://bucket/key (no other schemes)",
                );
                None
            }
            Some(text) if text.is_empty() => {
                reader.error(node.line, "`manifest` is empty");
                None
            }
            // As written: the snapshot side resolves it against the project root, once.
            Some(text) => Some(SnapshotSource::Manifest(text.into())),
            None => None,
        },
        None => {
            if fields.get("source").is_none() {
                reader.error(fields.line, "a dataset needs `manifest`");
            }
            None
        }
    };
    let materialize_budget = fields
        .get("materialize_budget_seconds")
        .and_then(|node| reader.integer(node, "`materialize_budget_seconds`", 1, 86_400))
        .map(|seconds| Duration::from_secs(seconds as u64));
    let manifest_at = (
        reader.file.clone(),
        fields.key_line("manifest").unwrap_or(fields.line),
    );
    // With problems above, what was read still serves to check the endpoints over this dataset
    // (the caller keeps it apart from the project); a missing source is never read from.
    Some(Dataset {
        id: id?,
        description,
        schema: schema.columns,
        tenant_column,
        source: source.unwrap_or_else(|| SnapshotSource::Manifest(PathBuf::new())),
        manifest_at,
        materialize_budget,
        unchecked_columns: schema.unchecked,
    })
}

/// The columns that passed their checks, and the names of those that did not (`*` when which
/// names is not known).
struct Schema {
    columns: Vec<Column>,
    unchecked: BTreeSet<String>,
}

fn read_schema(reader: &mut Reader<'_>, fields: &Fields<'_>) -> Schema {
    let mut schema = Schema {
        columns: Vec::new(),
        unchecked: BTreeSet::from([ALL_UNCHECKED.to_string()]),
    };
    let Some(node) = fields.required(reader, "schema", "a dataset") else {
        return schema;
    };
    let Some(items) = reader.sequence(node, "`schema`") else {
        return schema;
    };
    if items.is_empty() {
        reader.error(node.line, "`schema` lists no column");
        return schema;
    }
    if items.len() > MAX_COLUMNS {
        reader.error(
            node.line,
            format!("`schema` lists more than {MAX_COLUMNS} columns"),
        );
        return schema;
    }
    schema.unchecked.clear();
    let Schema { columns, unchecked } = &mut schema;
    let mut seen = BTreeSet::new();
    for item in items {
        let Some(column) =
            reader.mapping(item, "a schema column", &["name", "type"], &["description"])
        else {
            unchecked.insert(ALL_UNCHECKED.to_string());
            continue;
        };
        let name = column
            .required(reader, "name", "a schema column")
            .and_then(|node| reader.identifier(node, "a column name"));
        let column_type = column
            .required(reader, "type", "a schema column")
            .and_then(|node| {
                let text = reader.string(node, "a column type")?;
                let parsed = parse_column_type(&text);
                if parsed.is_none() {
                    reader.error(
                        node.line,
                        format!(
                            "unknown column type `{}` (DATE, TIMESTAMP, VARCHAR, INTEGER, BIGINT, DOUBLE, BOOLEAN, JSON)",
                            super::yaml::printable(&text)
                        ),
                    );
                }
                parsed
            });
        if let Some(name) = &name {
            if !seen.insert(name.clone()) {
                reader.error(item.line, format!("column `{name}` is listed twice"));
                continue;
            }
        }
        match (name, column_type) {
            (Some(name), Some(column_type)) => columns.push(Column { name, column_type }),
            (Some(name), None) => {
                unchecked.insert(name);
            }
            (None, _) => {
                unchecked.insert(ALL_UNCHECKED.to_string());
            }
        }
    }
    schema
}

/// A schema type's name, in any case.
pub fn parse_column_type(text: &str) -> Option<ColumnType> {
    Some(match text.to_ascii_uppercase().as_str() {
        "DATE" => ColumnType::Date,
        "TIMESTAMP" => ColumnType::Timestamp,
        "VARCHAR" => ColumnType::Varchar,
        "INTEGER" => ColumnType::Integer,
        "BIGINT" => ColumnType::Bigint,
        "DOUBLE" => ColumnType::Double,
        "BOOLEAN" => ColumnType::Boolean,
        "JSON" => ColumnType::Json,
        _ => return None,
    })
}
