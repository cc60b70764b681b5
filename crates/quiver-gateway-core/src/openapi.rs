//! The project's OpenAPI 3.1 document (the admin port's `/openapi.json`): one `GET` path per
//! endpoint with its params (types, enums, bounds, defaults, the reserved params), the success
//! envelope with the row schema of its output columns, and the error envelope of every failure.

use serde_json::{json, Map, Value};

use crate::compile::MAX_OFFSET;
use crate::project::{AuthMode, ColumnType, Endpoint, FilterOp, ParamType, Project};

/// The `?format=` names and the media types they stand for (also chosen by `Accept`).
pub const FORMATS: [(&str, &str); 5] = [
    ("json", "application/json"),
    ("ndjson", "application/x-ndjson"),
    ("csv", "text/csv"),
    ("arrow", "application/vnd.apache.arrow.stream"),
    ("parquet", "application/vnd.apache.parquet"),
];

/// The project's OpenAPI 3 document: every endpoint's path, params and response shape.
pub fn document(project: &Project) -> Value {
    let mut paths = Map::new();
    for endpoint in &project.endpoints {
        paths.insert(
            format!("/v1/endpoints/{}", endpoint.name),
            json!({ "get": operation(project, endpoint) }),
        );
    }
    let mut components = json!({
        "schemas": schemas(),
        "responses": error_responses(),
    });
    if project.settings.auth == AuthMode::Required {
        components["securitySchemes"] = json!({
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "An API key's token; only its SHA-256 is stored."
            }
        });
    }
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "quiver gateway",
            "version": "1",
            "description": "Read-only endpoints over DuckDB snapshots. Callers choose param values, never SQL."
        },
        "paths": paths,
        "components": components,
    });
    if project.settings.auth == AuthMode::Required {
        document["security"] = json!([{ "bearer": [] }]);
    }
    document
}

/// The shapes every endpoint's answers share: the error envelope and the response's `meta`.
fn schemas() -> Value {
    json!({
        "Error": {
            "type": "object",
            "required": ["error", "meta"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["family", "message"],
                    "properties": {
                        "family": {
                            "type": "string",
                            "enum": ["invalid_param", "unauthorized", "not_found", "rate_limited",
                                     "not_ready", "timeout", "internal"]
                        },
                        "message": { "type": "string" }
                    }
                },
                "meta": {
                    "type": "object",
                    "required": ["request_id"],
                    "properties": { "request_id": { "type": "string" } }
                }
            }
        },
        "Meta": {
            "type": "object",
            "required": ["request_id", "endpoint", "version", "snapshot_id", "generated_at", "row_count",
                         "serving_mode", "cache", "freshness"],
            "properties": {
                "request_id": { "type": "string" },
                "endpoint": { "type": "string" },
                "version": { "type": "integer" },
                "snapshot_id": { "type": "string" },
                "generated_at": { "type": "string", "format": "date-time" },
                "row_count": { "type": "integer", "minimum": 0 },
                "serving_mode": { "type": "string", "enum": ["local_table", "remote_scan"] },
                "cache": {
                    "type": "string",
                    "enum": ["hit", "miss", "off"],
                    "description": "Whether the body came from the response cache (`off`: the endpoint caches nothing)."
                },
                "freshness": {
                    "type": "object",
                    "properties": {
                        "watermark": { "type": ["string", "null"], "format": "date-time" },
                        "age_seconds": { "type": ["integer", "null"] },
                        "max_staleness_minutes": { "type": ["integer", "null"] },
                        "stale": { "type": "boolean" }
                    }
                },
                "next_cursor": {
                    "type": "string",
                    "description": "Present when more rows follow: pass it as `cursor` for the next page."
                }
            }
        }
    })
}

fn error_responses() -> Value {
    let error = |description: &str| {
        json!({
            "description": description,
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
        })
    };
    json!({
        "InvalidParam": error("invalid_param: a param is unknown, missing, or of the wrong type or range"),
        "Unauthorized": error("unauthorized: no key, or an unknown, revoked or expired one"),
        "NotFound": error("not_found: no such endpoint, or the key is not granted it (the same answer)"),
        "RateLimited": error("rate_limited: the key's rate limit; see Retry-After"),
        "Unavailable": error("not_ready: no snapshot yet, or the service is busy; see Retry-After"),
        "Timeout": error("timeout: the request ran past its time"),
        "Internal": error("internal"),
    })
}

fn operation(project: &Project, endpoint: &Endpoint) -> Value {
    let mut parameters: Vec<Value> = endpoint
        .params
        .iter()
        .map(|param| declared_parameter(endpoint, param))
        .collect();
    parameters.extend(quiver_parameters(endpoint));
    let content = content(project, endpoint);
    let mut responses = json!({
        "200": { "description": "The page of rows.", "content": content },
        "304": { "description": "Not modified (If-None-Match matched the ETag)." },
        "404": { "$ref": "#/components/responses/NotFound" },
        "406": { "description": "No acceptable format." },
        "422": { "$ref": "#/components/responses/InvalidParam" },
        "429": { "$ref": "#/components/responses/RateLimited" },
        "500": { "$ref": "#/components/responses/Internal" },
        "503": { "$ref": "#/components/responses/Unavailable" },
        "504": { "$ref": "#/components/responses/Timeout" },
    });
    if project.settings.auth == AuthMode::Required {
        responses["401"] = json!({ "$ref": "#/components/responses/Unauthorized" });
    }
    let mut operation = json!({
        "operationId": endpoint.name,
        "summary": endpoint.description.clone().unwrap_or_else(|| format!("{} (dataset {})", endpoint.name, endpoint.dataset)),
        "parameters": parameters,
        "responses": responses,
        "x-quiver": {
            "version": endpoint.version,
            "dataset": endpoint.dataset,
            "serving_mode": endpoint.serving_mode.as_str(),
            "tenant_scoped": endpoint.tenant_column.is_some(),
        },
    });
    if let Some(combinations) = &endpoint.combinations {
        let sets: Vec<Vec<&String>> = combinations
            .iter()
            .map(|set| set.iter().collect())
            .collect();
        operation["x-quiver"]["combinations"] = json!(sets);
    }
    operation
}

/// A parameter the endpoint declares, described by the filter that reads it.
fn declared_parameter(endpoint: &Endpoint, param: &crate::project::Param) -> Value {
    let op = endpoint
        .filters
        .iter()
        .find(|filter| filter.param == param.name)
        .map(|filter| filter.op);
    let mut schema = param_schema(param);
    let mut description = String::new();
    match op {
        Some(FilterOp::In) => {
            description = format!("Comma-separated values, at most {}.", param.max_values);
            schema = json!({ "type": "string" });
        }
        Some(FilterOp::Between) => {
            description = "Two comma-separated values `low,high`, both included.".into();
            schema = json!({ "type": "string" });
        }
        Some(FilterOp::IsNull) => {
            description = "true: rows where the column is empty; false: where it is not.".into();
        }
        _ => {}
    }
    if let Some(default) = &param.default {
        schema["default"] = typed_default(param.param_type, default);
    }
    if !param.aliases.is_empty() {
        let aliases: Vec<String> = param
            .aliases
            .iter()
            .map(|(from, to)| format!("`{from}` → `{to}`"))
            .collect();
        description.push_str(&format!(" Aliases: {}.", aliases.join(", ")));
    }
    json!({
        "name": param.name,
        "in": "query",
        "required": param.required && param.default.is_none(),
        "schema": schema,
        "description": description.trim(),
    })
}

/// The parameters every endpoint has (`limit`, `offset`, `columns`, `cursor`, `format`, and `sort`
/// where it allows one), after the declared ones.
fn quiver_parameters(endpoint: &Endpoint) -> Vec<Value> {
    let mut parameters = Vec::new();
    parameters.push(json!({
        "name": "limit", "in": "query", "required": false,
        "schema": { "type": "integer", "minimum": 1, "maximum": endpoint.max_limit, "default": endpoint.default_limit },
        "description": "Rows per page."
    }));
    parameters.push(json!({
        "name": "offset", "in": "query", "required": false,
        "schema": { "type": "integer", "minimum": 0, "maximum": MAX_OFFSET, "default": 0 },
        "description": "Rows to skip (not with `cursor`)."
    }));
    parameters.push(json!({
        "name": "columns", "in": "query", "required": false,
        "schema": { "type": "string" },
        "description": format!("Comma-separated subset of: {}.", endpoint.columns.join(", "))
    }));
    if !endpoint.sort_allowlist.is_empty() {
        parameters.push(json!({
            "name": "sort", "in": "query", "required": false,
            "schema": { "type": "string" },
            "description": format!("Comma-separated columns, `-` for descending, of: {}.", endpoint.sort_allowlist.join(", "))
        }));
    }
    parameters.push(json!({
        "name": "cursor", "in": "query", "required": false,
        "schema": { "type": "string" },
        "description": "The previous page's `meta.next_cursor`."
    }));
    parameters.push(json!({
        "name": "format", "in": "query", "required": false,
        "schema": { "type": "string", "enum": FORMATS.iter().map(|(name, _)| *name).collect::<Vec<_>>() },
        "description": "The response format, in place of `Accept`."
    }));
    parameters
}

/// The 200 answer's media types, with a row's columns typed from the dataset.
fn content(project: &Project, endpoint: &Endpoint) -> Map<String, Value> {
    let dataset = project.dataset(&endpoint.dataset);
    let visible = |name: &String| {
        endpoint
            .select
            .iter()
            .find(|item| &item.output == name)
            .zip(dataset)
            .map_or(ColumnType::Json, |(item, dataset)| {
                item.output_type(dataset)
            })
    };
    let mut properties = Map::new();
    for name in &endpoint.columns {
        properties.insert(name.clone(), column_schema(visible(name)));
    }
    let row = json!({ "type": "object", "properties": properties });
    let mut content = Map::new();
    content.insert(
        "application/json".into(),
        json!({
            "schema": {
                "type": "object",
                "required": ["data", "meta"],
                "properties": {
                    "data": { "type": "array", "items": row },
                    "meta": { "$ref": "#/components/schemas/Meta" }
                }
            }
        }),
    );
    content.insert(
        "application/x-ndjson".into(),
        json!({ "schema": { "type": "string", "description": "One row object per line." } }),
    );
    content.insert("text/csv".into(), json!({ "schema": { "type": "string" } }));
    for media in [
        "application/vnd.apache.arrow.stream",
        "application/vnd.apache.parquet",
    ] {
        content.insert(
            media.into(),
            json!({ "schema": { "type": "string", "contentMediaType": media } }),
        );
    }
    content
}

fn param_schema(param: &crate::project::Param) -> Value {
    let mut schema = match param.param_type {
        ParamType::String => json!({ "type": "string" }),
        ParamType::Integer => json!({ "type": "integer", "format": "int64" }),
        ParamType::Number => json!({ "type": "number" }),
        ParamType::Boolean => json!({ "type": "boolean" }),
        ParamType::Date => json!({ "type": "string", "format": "date" }),
        ParamType::Timestamp => json!({ "type": "string", "format": "date-time" }),
        ParamType::Enum => json!({ "type": "string", "enum": param.allowed }),
    };
    if let Some(min) = param.min {
        schema["minimum"] = json!(min);
    }
    if let Some(max) = param.max {
        schema["maximum"] = json!(max);
    }
    schema["x-quiver-type"] = json!(param.param_type.name());
    schema
}

/// A default in its JSON type where it has one (an integer default is a JSON integer).
fn typed_default(param_type: ParamType, default: &str) -> Value {
    match param_type {
        ParamType::Integer => default
            .parse::<i64>()
            .map_or_else(|_| json!(default), |v| json!(v)),
        ParamType::Number => default
            .parse::<f64>()
            .map_or_else(|_| json!(default), |v| json!(v)),
        ParamType::Boolean => default
            .parse::<bool>()
            .map_or_else(|_| json!(default), |v| json!(v)),
        _ => json!(default),
    }
}

/// A response column's JSON schema; every column may be null.
fn column_schema(column_type: ColumnType) -> Value {
    match column_type {
        ColumnType::Date => json!({ "type": ["string", "null"], "format": "date" }),
        ColumnType::Timestamp => json!({ "type": ["string", "null"], "format": "date-time" }),
        ColumnType::Varchar => json!({ "type": ["string", "null"] }),
        ColumnType::Integer => json!({ "type": ["integer", "null"], "format": "int32" }),
        ColumnType::Bigint => json!({ "type": ["integer", "null"], "format": "int64" }),
        ColumnType::Double => json!({ "type": ["number", "null"] }),
        ColumnType::Boolean => json!({ "type": ["boolean", "null"] }),
        ColumnType::Json => json!({ "description": "A nested JSON value." }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::load;
    use crate::project::load_tests::good_project;

    #[test]
    fn one_path_per_endpoint_with_typed_params_rows_and_errors() {
        let dir = good_project();
        let project = load(&dir.dir).unwrap();
        let document = document(&project);
        assert_eq!(document["openapi"], "3.1.0");
        assert_eq!(document["paths"].as_object().unwrap().len(), 2);
        let summary = &document["paths"]["/v1/endpoints/usage_summary"]["get"];
        let param = |name: &str| {
            summary["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == name)
                .unwrap_or_else(|| panic!("param {name}"))
                .clone()
        };
        assert_eq!(param("from")["schema"]["format"], "date");
        assert_eq!(param("from")["required"], true);
        assert_eq!(param("region")["schema"]["enum"], json!(["eu", "us"]));
        assert!(param("regions")["description"]
            .as_str()
            .unwrap()
            .contains("at most 2"));
        assert_eq!(param("limit")["schema"]["maximum"], 100);
        assert_eq!(param("limit")["schema"]["default"], 50);
        assert!(param("sort")["description"]
            .as_str()
            .unwrap()
            .contains("account_id"));
        let row = &summary["responses"]["200"]["content"]["application/json"]["schema"]
            ["properties"]["data"]["items"];
        assert_eq!(
            row["properties"]["api_calls_total"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(
            row["properties"]["storage_gb_avg"]["type"],
            json!(["number", "null"])
        );
        assert_eq!(
            summary["responses"]["422"]["$ref"],
            "#/components/responses/InvalidParam"
        );
        assert_eq!(
            summary["responses"]["401"]["$ref"],
            "#/components/responses/Unauthorized"
        );
        assert_eq!(document["security"], json!([{ "bearer": [] }]));
        let daily = &document["paths"]["/v1/endpoints/usage_daily"]["get"];
        let min_calls = daily["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "min_calls")
            .unwrap();
        assert_eq!(min_calls["schema"]["minimum"], 0);
        assert_eq!(min_calls["schema"]["default"], 0);
        assert_eq!(min_calls["required"], false);
        assert!(daily["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["name"] != "sort"));
        let stats = &daily["responses"]["200"]["content"]["application/json"]["schema"]
            ["properties"]["data"]["items"]["properties"]["stats"];
        assert!(
            stats.get("type").is_none(),
            "a JSON column is any JSON value"
        );
    }
}
