//! CORS on the public port, as offloader answers it. Off unless origins are configured. With
//! `*`, every response allows any origin (no credentials). With a list, every response says
//! `Vary: Origin`, and a listed `Origin` is echoed with credentials allowed. A preflight (any
//! `OPTIONS`) is answered `204` here, before routing and authentication; it names the methods,
//! headers and lifetime only for an allowed origin.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::gateway::Gateway;
use crate::project::CorsOrigins;

const ALLOW_METHODS: &str = "GET, OPTIONS";
const ALLOW_HEADERS: &str = "authorization, content-type, if-none-match";
const MAX_AGE_SECONDS: &str = "600";

pub async fn layer(State(gateway): State<Arc<Gateway>>, request: Request, next: Next) -> Response {
    let project = gateway.project();
    let cors = &project.settings.cors;
    if *cors == CorsOrigins::Off {
        return next.run(request).await;
    }
    let origin = request.headers().get(header::ORIGIN).cloned();
    let preflight = request.method() == Method::OPTIONS;
    let mut response = if preflight {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(request).await
    };
    let allowed = allow(cors, origin.as_ref(), response.headers_mut());
    if preflight && allowed {
        let headers = response.headers_mut();
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(ALLOW_METHODS),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(ALLOW_HEADERS),
        );
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(MAX_AGE_SECONDS),
        );
    }
    response
}

/// Writes the allow headers every response carries; whether the origin is allowed.
fn allow(cors: &CorsOrigins, origin: Option<&HeaderValue>, headers: &mut HeaderMap) -> bool {
    match cors {
        CorsOrigins::Off => false,
        CorsOrigins::Any => {
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
            true
        }
        CorsOrigins::Listed(origins) => {
            add_vary(headers, "origin");
            let listed = origin.filter(|origin| {
                origin
                    .to_str()
                    .is_ok_and(|text| origins.iter().any(|allowed| allowed == text))
            });
            let Some(origin) = listed else {
                return false;
            };
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
            true
        }
    }
}

/// Adds `name` to the response's `Vary` (kept as one header).
fn add_vary(headers: &mut HeaderMap, name: &str) {
    let value = match headers
        .get(header::VARY)
        .and_then(|value| value.to_str().ok())
    {
        Some(existing) if !existing.is_empty() => format!("{existing}, {name}"),
        _ => name.to_string(),
    };
    if let Ok(value) = HeaderValue::from_str(&value) {
        headers.insert(header::VARY, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_as_offloader_reads_its_variable() {
        assert_eq!(CorsOrigins::parse(""), CorsOrigins::Off);
        assert_eq!(CorsOrigins::parse(" , "), CorsOrigins::Off);
        assert_eq!(CorsOrigins::parse(" * "), CorsOrigins::Any);
        assert_eq!(
            CorsOrigins::parse("https://a.example, *,"),
            CorsOrigins::Listed(vec!["https://a.example".into(), "*".into()])
        );
    }

    #[test]
    fn a_listed_origin_is_echoed_and_vary_is_added() {
        let cors = CorsOrigins::Listed(vec!["https://a.example".into()]);
        let mut headers = HeaderMap::new();
        headers.insert(header::VARY, HeaderValue::from_static("Accept"));
        let origin = HeaderValue::from_static("https://a.example");
        assert!(allow(&cors, Some(&origin), &mut headers));
        assert_eq!(headers[header::VARY], "Accept, origin");
        assert_eq!(
            headers[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "https://a.example"
        );
        let mut headers = HeaderMap::new();
        let other = HeaderValue::from_static("https://A.example");
        assert!(!allow(&cors, Some(&other), &mut headers));
        assert_eq!(headers[header::VARY], "origin");
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));
    }
}
