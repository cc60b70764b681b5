//! The admin port's `/docs` and `/schema`: the project's endpoints described in the shapes
//! offloader's tools read (sorted by name; what a caller may send, what comes back, how it
//! fails). Built from the loaded project alone; nothing here depends on a snapshot.

use serde_json::{json, Value};

use crate::project::query::filter_op_name;
use crate::project::{AuthMode, ColumnType, Endpoint, Param, Project};

/// The name `/docs`, `/schema` and `/status` give the service.
pub const SERVICE: &str = "quiver-gateway";

/// The project file's `version:` (1, the only one there is): offloader's `config_version`.
pub const CONFIG_VERSION: u32 = 1;

fn sorted(project: &Project) -> Vec<&Endpoint> {
    let mut endpoints: Vec<&Endpoint> = project.endpoints.iter().collect();
    endpoints.sort_by(|a, b| a.name.cmp(&b.name));
    endpoints
}

fn path(endpoint: &Endpoint) -> String {
    format!("/v1/endpoints/{}", endpoint.name)
}

fn auth(project: &Project) -> Value {
    match project.settings.auth {
        AuthMode::Required => json!({
            "mode": "required",
            "scheme": "bearer",
            "note": "Send Authorization: Bearer <api key>; a key reads only its own tenant's rows.",
        }),
        AuthMode::None => json!({
            "mode": "none",
            "scheme": null,
            "note": "Public: no key is needed and any Authorization header is ignored.",
        }),
    }
}

fn param(param: &Param) -> Value {
    json!({
        "name": param.name,
        "type": param.param_type.name(),
        "required": param.required,
        "enum": (!param.allowed.is_empty()).then_some(&param.allowed),
        "default": param.default,
        "aliases": param.aliases,
    })
}

fn combinations(endpoint: &Endpoint) -> Value {
    json!(endpoint.combinations)
}

fn pagination(endpoint: &Endpoint) -> Value {
    json!({"default_limit": endpoint.default_limit, "max_limit": endpoint.max_limit})
}

/// Whether a response column holds nested JSON.
fn nested(project: &Project, endpoint: &Endpoint, output: &str) -> bool {
    let dataset = project.dataset(&endpoint.dataset);
    endpoint
        .select
        .iter()
        .find(|item| item.output == output)
        .zip(dataset)
        .is_some_and(|(item, dataset)| item.output_type(dataset) == ColumnType::Json)
}

/// `/schema`: each endpoint's contract, for code generators.
pub fn schema(project: &Project) -> Value {
    let endpoints: Vec<Value> = sorted(project)
        .into_iter()
        .map(|endpoint| {
            json!({
                "name": endpoint.name,
                "version": endpoint.version,
                "method": "GET",
                "path": path(endpoint),
                "description": endpoint.description,
                "public": project.settings.auth == AuthMode::None,
                "tenant_scoped": endpoint.tenant_column.is_some(),
                "params": endpoint.params.iter().map(param).collect::<Vec<_>>(),
                "combinations": combinations(endpoint),
                "filters": endpoint.filters.iter().map(|filter| json!({
                    "column": filter.column, "op": filter_op_name(filter.op), "param": filter.param,
                })).collect::<Vec<_>>(),
                "response_columns": endpoint.columns.iter().map(|column| json!({
                    "name": column, "nested": nested(project, endpoint, column),
                })).collect::<Vec<_>>(),
                "column_selection": "columns=<comma-separated subset of response_columns>",
                "pagination": pagination(endpoint),
            })
        })
        .collect();
    json!({
        "service": SERVICE,
        "config_version": CONFIG_VERSION,
        "auth": auth(project),
        "count": endpoints.len(),
        "endpoints": endpoints,
    })
}

/// The params every endpoint has, as `/docs` lists them after the declared ones.
fn built_in_params(endpoint: &Endpoint) -> [Value; 3] {
    [
        json!({"name": "limit", "type": "integer", "required": false,
               "default": endpoint.default_limit, "max": endpoint.max_limit}),
        json!({"name": "offset", "type": "integer", "required": false, "default": 0}),
        json!({"name": "columns", "type": "string", "required": false,
               "description": "a comma-separated subset of the response columns"}),
    ]
}

/// The errors a caller of `endpoint` can get.
fn errors(project: &Project) -> Vec<Value> {
    let mut errors = vec![
        json!({"status": 422, "family": "invalid_param", "when": "a param is unknown, missing or invalid"}),
        json!({"status": 404, "family": "not_found", "when": "the endpoint does not exist or the key may not call it"}),
        json!({"status": 503, "family": "not_ready", "when": "the endpoint's data has no snapshot yet"}),
        json!({"status": 500, "family": "internal", "when": "the request failed inside the service"}),
    ];
    if project.settings.auth == AuthMode::Required {
        errors.insert(
            0,
            json!({"status": 401, "family": "unauthorized", "when": "the bearer token is missing, unknown or revoked"}),
        );
    }
    errors
}

fn snippets(project: &Project, endpoint: &Endpoint) -> Value {
    let path = path(endpoint);
    let keyed = project.settings.auth == AuthMode::Required;
    let curl_auth = if keyed {
        " -H 'Authorization: Bearer $API_KEY'"
    } else {
        ""
    };
    let fetch_auth = if keyed {
        ", { headers: { Authorization: `Bearer ${API_KEY}` } }"
    } else {
        ""
    };
    let python_auth = if keyed {
        ", headers={\"Authorization\": f\"Bearer {API_KEY}\"}"
    } else {
        ""
    };
    json!({
        "curl": format!("curl{curl_auth} \"$BASE_URL{path}\""),
        "typescript": format!("const response = await fetch(`${{BASE_URL}}{path}`{fetch_auth});"),
        "python": format!("response = requests.get(f\"{{BASE_URL}}{path}\"{python_auth})"),
    })
}

/// `/docs`: the catalog a developer reads, one entry per endpoint.
pub fn docs(project: &Project) -> Value {
    let endpoints: Vec<Value> = sorted(project)
        .into_iter()
        .map(|endpoint| {
            let mut params: Vec<Value> = endpoint.params.iter().map(param).collect();
            params.extend(built_in_params(endpoint));
            json!({
                "name": endpoint.name,
                "version": endpoint.version,
                "owner": null,
                "description": endpoint.description,
                "method": "GET",
                "path": path(endpoint),
                "auth": {
                    "scope": if project.settings.auth == AuthMode::Required { "key" } else { "public" },
                    "tenant": endpoint.tenant_column.is_some(),
                },
                "params": params,
                "combinations": combinations(endpoint),
                "pagination": pagination(endpoint),
                "response": {
                    "columns": endpoint.columns,
                    "snapshot_metadata": ["request_id", "endpoint", "version", "snapshot_id",
                        "generated_at", "row_count", "serving_mode", "cache", "freshness"],
                    "example": {"data": [], "meta": {"endpoint": endpoint.name, "version": endpoint.version}},
                },
                "freshness_minutes": endpoint.max_staleness.map(|staleness| staleness.as_secs() / 60),
                "errors": errors(project),
                "snippets": snippets(project, endpoint),
            })
        })
        .collect();
    json!({
        "service": SERVICE,
        "config_version": CONFIG_VERSION,
        "auth": auth(project),
        "endpoints": endpoints,
    })
}
