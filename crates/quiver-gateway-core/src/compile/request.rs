//! The first stage of a compile: the query string's params read as offloader reads them (the
//! last value of a name wins), checked against the endpoint's declared params, its combinations,
//! the reserved `limit`/`offset`/`columns` and quiver's `sort`/`cursor`/`format`; declared
//! params defaulted and parsed into bindable values.

use std::collections::{BTreeMap, BTreeSet};

use super::{ParamError, MAX_OFFSET, MAX_QUERY_PAIRS, MAX_VALUE_BYTES};
use crate::project::values::{parse_value, Parsed};
use crate::project::{Endpoint, FilterOp, Param, EXTRA_PARAMS, RESERVED_PARAMS};

/// The params sent, by name (the last value of a name sent twice), each known to the endpoint.
pub(super) fn sent<'q>(
    endpoint: &Endpoint,
    query: &'q [(String, String)],
) -> Result<BTreeMap<&'q str, &'q str>, ParamError> {
    if query.len() > MAX_QUERY_PAIRS {
        return Err(ParamError::new(format!(
            "more than {MAX_QUERY_PAIRS} query params"
        )));
    }
    let mut sent = BTreeMap::new();
    for (name, value) in query {
        if value.len() > MAX_VALUE_BYTES {
            return Err(ParamError::new(format!(
                "param \"{}\" is longer than {MAX_VALUE_BYTES} bytes",
                shown_name(name).unwrap_or("(not a valid name)")
            )));
        }
        let known = RESERVED_PARAMS.contains(&name.as_str())
            || EXTRA_PARAMS.contains(&name.as_str())
            || endpoint.param(name).is_some();
        if !known {
            return Err(ParamError::new(match shown_name(name) {
                Some(name) => format!("unknown param \"{name}\""),
                None => "unknown param".to_string(),
            }));
        }
        // A name sent twice: the last value wins, as offloader reads a query string (a project
        // may refuse it instead, before compile: `gateway: repeated_params: refuse`).
        sent.insert(name.as_str(), value.as_str());
    }
    Ok(sent)
}

/// The declared params the caller sent (before defaults; reserved params never count) are one of
/// the endpoint's combinations, if it lists any. The allowed combinations are not listed: they
/// describe the data's shape.
pub(super) fn check_combinations(
    endpoint: &Endpoint,
    sent: &BTreeMap<&str, &str>,
) -> Result<(), ParamError> {
    let Some(combinations) = &endpoint.combinations else {
        return Ok(());
    };
    let names: BTreeSet<String> = sent
        .keys()
        .filter(|name| endpoint.param(name).is_some())
        .map(|name| name.to_string())
        .collect();
    if combinations.contains(&names) {
        Ok(())
    } else {
        Err(ParamError::new(
            "params do not match an allowed combination",
        ))
    }
}

/// Each declared param: sent, else defaulted, else absent (and its filters are skipped).
pub(super) fn given<'e>(
    endpoint: &'e Endpoint,
    sent: &BTreeMap<&str, &str>,
) -> Result<BTreeMap<&'e str, Given>, ParamError> {
    let mut given = BTreeMap::new();
    for param in &endpoint.params {
        let raw = match (sent.get(param.name.as_str()), &param.default) {
            (Some(raw), _) => *raw,
            (None, Some(default)) => default.as_str(),
            (None, None) if param.required => {
                return Err(ParamError::new(format!(
                    "missing required param \"{}\"",
                    param.name
                )));
            }
            (None, None) => continue,
        };
        let op = endpoint
            .filters
            .iter()
            .find(|filter| filter.param == param.name)
            .map(|filter| filter.op);
        given.insert(param.name.as_str(), parse_given(param, op, raw)?);
    }
    Ok(given)
}

/// One param's value: a list for `in` (sorted, duplicates collapsed), two for `between`.
fn parse_given(param: &Param, op: Option<FilterOp>, raw: &str) -> Result<Given, ParamError> {
    let parse = |piece: &str| {
        parse_value(param, piece)
            .map_err(|message| ParamError::new(format!("param \"{}\" {message}", param.name)))
    };
    let pieces: Vec<&str> = raw.split(',').collect();
    match op {
        Some(FilterOp::In) => {
            if pieces.len() > param.max_values {
                return Err(ParamError::new(format!(
                    "param `{}` lists more than {} values",
                    param.name, param.max_values
                )));
            }
            let mut list = pieces
                .into_iter()
                .map(parse)
                .collect::<Result<Vec<_>, _>>()?;
            list.sort_by(|a, b| a.canonical.cmp(&b.canonical));
            list.dedup_by(|a, b| a.canonical == b.canonical);
            Ok(Given::Many(list))
        }
        Some(FilterOp::Between) => {
            if pieces.len() != 2 {
                return Err(ParamError::new(format!(
                    "param `{}` must be two values `low,high`",
                    param.name
                )));
            }
            let list = pieces
                .into_iter()
                .map(parse)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Given::Many(list))
        }
        _ => Ok(Given::One(parse(raw)?)),
    }
}

/// The tenant bound into the statement: the key's, required by a tenant-scoped endpoint.
pub(super) fn tenant<'t>(
    endpoint: &Endpoint,
    tenant: Option<&'t str>,
) -> Result<Option<&'t str>, ParamError> {
    match (&endpoint.tenant_column, tenant) {
        (Some(_), None) => Err(ParamError::new(
            "this endpoint needs a key bound to a tenant",
        )),
        (Some(_), Some(tenant)) => Ok(Some(tenant)),
        (None, _) => Ok(None),
    }
}

/// The declared params' canonical values, by name.
pub(super) fn canonical<'e>(
    given: &BTreeMap<&'e str, Given>,
) -> BTreeMap<&'e str, serde_json::Value> {
    given
        .iter()
        .map(|(name, value)| (*name, value.canonical()))
        .collect()
}

/// The order's canonical text: `name`, or `-name` descending.
pub(super) fn sort_canonical(sort: &[(String, bool)]) -> Vec<String> {
    sort.iter()
        .map(|(name, descending)| {
            if *descending {
                format!("-{name}")
            } else {
                name.clone()
            }
        })
        .collect()
}

/// A filter param's checked value.
pub(super) enum Given {
    One(Parsed),
    Many(Vec<Parsed>),
}

impl Given {
    pub(super) fn canonical(&self) -> serde_json::Value {
        match self {
            Given::One(parsed) => parsed.canonical.clone().into(),
            Given::Many(list) => list
                .iter()
                .map(|parsed| serde_json::Value::from(parsed.canonical.clone()))
                .collect(),
        }
    }
}

/// A caller's name (of a param or a column) fit to repeat in a message: only when it is
/// identifier-shaped (offloader's `^[A-Za-z0-9_]{1,63}$`).
fn shown_name(name: &str) -> Option<&str> {
    let plain = !name.is_empty()
        && name.len() <= 63
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    plain.then_some(name)
}

/// One of quiver's own params, unless the endpoint declares a param of that name (which wins).
pub fn extra_param<'a>(
    endpoint: &Endpoint,
    sent: &BTreeMap<&str, &'a str>,
    name: &str,
) -> Option<&'a str> {
    if endpoint.param(name).is_some() {
        return None;
    }
    sent.get(name).copied()
}

/// `?columns=a,b`: pieces trimmed, each in the allowlist, duplicates collapsed; the response
/// keeps the endpoint's column order. The allowlist is never listed in an error.
pub(super) fn columns(endpoint: &Endpoint, raw: Option<&str>) -> Result<Vec<String>, ParamError> {
    let Some(raw) = raw else {
        return Ok(endpoint.columns.clone());
    };
    let mut wanted: BTreeSet<&str> = BTreeSet::new();
    for piece in raw.split(',').map(str::trim) {
        if piece.is_empty() {
            return Err(ParamError::new(
                "columns must be a comma-separated list of columns",
            ));
        }
        if !endpoint.columns.iter().any(|allowed| allowed == piece) {
            return Err(ParamError::new(match shown_name(piece) {
                Some(name) => format!("unknown column \"{name}\""),
                None => "unknown column".to_string(),
            }));
        }
        wanted.insert(piece);
    }
    Ok(endpoint
        .columns
        .iter()
        .filter(|column| wanted.contains(column.as_str()))
        .cloned()
        .collect())
}

/// `?limit=`: a whole integer (a leading `+` allowed) within `1..=max_limit`.
pub(super) fn limit(raw: Option<&str>, max: u64) -> Result<Option<u64>, ParamError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    match raw.parse::<i64>() {
        Ok(value) if value > 0 && value as u64 > max => {
            Err(ParamError::new(format!("limit exceeds max of {max}")))
        }
        Ok(value) if value > 0 => Ok(Some(value as u64)),
        _ => Err(ParamError::new("limit must be a positive integer")),
    }
}

/// `?offset=`: a whole integer, zero or more.
pub(super) fn offset(raw: Option<&str>) -> Result<Option<u64>, ParamError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    match raw.parse::<i64>() {
        Ok(value) if value >= 0 && value as u64 <= MAX_OFFSET => Ok(Some(value as u64)),
        _ => Err(ParamError::new("offset must be a non-negative integer")),
    }
}

/// `?sort=a,-b` within the endpoint's sort allowlist; without it, the endpoint's `order_by`.
pub(super) fn sort(
    endpoint: &Endpoint,
    raw: Option<&str>,
) -> Result<Vec<(String, bool)>, ParamError> {
    let Some(raw) = raw else {
        return Ok(endpoint
            .order_by
            .iter()
            .map(|order| (order.column.clone(), order.descending))
            .collect());
    };
    if endpoint.sort_allowlist.is_empty() {
        return Err(ParamError::new(
            "param `sort` is not allowed on this endpoint",
        ));
    }
    let mut sort: Vec<(String, bool)> = Vec::new();
    for piece in raw.split(',') {
        let (name, descending) = match piece.strip_prefix('-') {
            Some(name) => (name, true),
            None => (piece, false),
        };
        if !endpoint
            .sort_allowlist
            .iter()
            .any(|allowed| allowed == name)
        {
            return Err(ParamError::new(format!(
                "param `sort` names a column that is not sortable (sortable: {})",
                endpoint.sort_allowlist.join(", ")
            )));
        }
        if sort.iter().any(|(other, _)| other == name) {
            return Err(ParamError::new("param `sort` lists a column twice"));
        }
        sort.push((name.to_string(), descending));
    }
    Ok(sort)
}
