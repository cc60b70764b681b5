//! Bounds on what a request may carry, checked before anything else reads it: the URI's length,
//! the headers' total size, the number of query pairs and each value's length. hyper bounds the
//! raw read (its buffer and header count); these are the gateway's own, tighter, limits.

use axum::http::HeaderMap;

use super::errors::{ApiError, Family};

/// Longest request target (path and query) in bytes.
pub const URI_BYTES_MAX: usize = 8 * 1024;
/// Most bytes of all header names and values together.
pub const HEADER_BYTES_MAX: usize = 16 * 1024;
/// Most `name=value` pairs in a query string, and the longest decoded value: the compile's own
/// bounds, checked here before the pairs are decoded at all.
pub use crate::compile::{
    MAX_QUERY_PAIRS as QUERY_PAIRS_MAX, MAX_VALUE_BYTES as PARAM_VALUE_BYTES_MAX,
};

pub fn check_uri(uri_length: usize) -> Result<(), ApiError> {
    if uri_length > URI_BYTES_MAX {
        return Err(ApiError::new(
            Family::UriTooLong,
            format!("the request target is over {URI_BYTES_MAX} bytes"),
        ));
    }
    Ok(())
}

pub fn check_headers(headers: &HeaderMap) -> Result<(), ApiError> {
    let bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if bytes > HEADER_BYTES_MAX {
        return Err(ApiError::new(
            Family::HeadersTooLarge,
            format!("the request's headers are over {HEADER_BYTES_MAX} bytes"),
        ));
    }
    Ok(())
}

/// The query string's pairs, decoded, in order; bounded in count and value length. A name given
/// twice is refused when `refuse_repeats` (the project's `repeated_params: refuse`); otherwise
/// every pair is kept and compile reads the last value of a name.
pub fn query_pairs(
    raw_query: Option<&str>,
    refuse_repeats: bool,
) -> Result<Vec<(String, String)>, ApiError> {
    let raw = raw_query.unwrap_or("");
    if raw.split('&').filter(|pair| !pair.is_empty()).count() > QUERY_PAIRS_MAX {
        return Err(ApiError::new(
            Family::InvalidParam,
            format!("a request may send at most {QUERY_PAIRS_MAX} params"),
        ));
    }
    let pairs: Vec<(String, String)> = serde_urlencoded_pairs(raw)?;
    for (index, (name, value)) in pairs.iter().enumerate() {
        if value.len() > PARAM_VALUE_BYTES_MAX || name.len() > PARAM_VALUE_BYTES_MAX {
            return Err(ApiError::new(
                Family::InvalidParam,
                format!(
                    "param '{}' is over {PARAM_VALUE_BYTES_MAX} bytes",
                    printable(name)
                ),
            ));
        }
        if refuse_repeats && pairs[..index].iter().any(|(earlier, _)| earlier == name) {
            return Err(ApiError::new(
                Family::InvalidParam,
                format!("param '{}' is given more than once", printable(name)),
            ));
        }
    }
    Ok(pairs)
}

fn serde_urlencoded_pairs(raw: &str) -> Result<Vec<(String, String)>, ApiError> {
    let uri: axum::http::Uri = format!("/?{raw}")
        .parse()
        .map_err(|_| ApiError::new(Family::InvalidParam, "the query string does not parse"))?;
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri)
        .map(|query| query.0)
        .map_err(|_| ApiError::new(Family::InvalidParam, "the query string does not parse"))
}

/// A param name as it may appear in a message: names are the caller's text too, so they are
/// shortened and stripped of anything but plain identifier characters.
pub fn printable(name: &str) -> String {
    name.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_decode_and_are_bounded() {
        let pairs = query_pairs(Some("a=1&b=x%20y&c="), true).unwrap();
        assert_eq!(
            pairs,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("c".into(), "".into())
            ]
        );
        assert!(query_pairs(None, true).unwrap().is_empty());
        let many: Vec<String> = (0..=QUERY_PAIRS_MAX).map(|i| format!("p{i}=1")).collect();
        let error = query_pairs(Some(&many.join("&")), false).unwrap_err();
        assert_eq!(error.family, Family::InvalidParam);
        let long = format!("a={}", "x".repeat(PARAM_VALUE_BYTES_MAX + 1));
        assert!(query_pairs(Some(&long), false)
            .unwrap_err()
            .message
            .contains("'a'"));
        let twice = query_pairs(Some("a=1&a=2"), true).unwrap_err();
        assert!(twice.message.contains("more than once"));
        assert_eq!(query_pairs(Some("a=1&a=2"), false).unwrap().len(), 2);
    }

    #[test]
    fn uri_and_header_bounds() {
        assert!(check_uri(URI_BYTES_MAX).is_ok());
        assert_eq!(
            check_uri(URI_BYTES_MAX + 1).unwrap_err().family,
            Family::UriTooLong
        );
        let mut headers = HeaderMap::new();
        headers.insert("x-a", "1".parse().unwrap());
        assert!(check_headers(&headers).is_ok());
        headers.insert("x-big", "y".repeat(HEADER_BYTES_MAX).parse().unwrap());
        assert_eq!(
            check_headers(&headers).unwrap_err().family,
            Family::HeadersTooLarge
        );
        assert_eq!(printable("a b<c>"), "a?b?c?");
    }
}
