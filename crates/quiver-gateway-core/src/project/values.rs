//! A param's value as sent (or defaulted): checked against its type, normalized, and made ready to
//! bind. Shared by `compile` (callers' values) and the project load (defaults).

use crate::value::Value;

use super::model::{Param, ParamType};

/// A caller's (or a default's) value once checked: what is bound, how the SQL casts it, and its
/// canonical text.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    /// The value bound into the statement.
    pub value: Value,
    /// `Some("DATE")`: the placeholder is `CAST($n AS DATE)` (dates and timestamps travel as text).
    pub cast: Option<&'static str>,
    /// The value's one spelling (after aliases), for the request's canonical text.
    pub canonical: String,
}

/// A value ending in spaces as it was probably sent: a query string's literal `+` decodes to a
/// space, so `EMERALD+` arrives as `EMERALD `. offloader retries aliases and enum members with it.
fn plus_restored(raw: &str) -> Option<String> {
    raw.ends_with(' ')
        .then(|| format!("{}+", raw.trim_end_matches(' ')))
}

/// Checks one value of `param` (after its aliases); the error says what was expected, never the
/// value itself.
pub fn parse_value(param: &Param, raw: &str) -> Result<Parsed, String> {
    let restored = plus_restored(raw);
    let aliased = param.aliases.get(raw).or_else(|| {
        restored
            .as_ref()
            .and_then(|restored| param.aliases.get(restored))
    });
    let raw = aliased.map_or(raw, String::as_str);
    let text = |value: Value, canonical: String, cast| Parsed {
        value,
        cast,
        canonical,
    };
    match param.param_type {
        ParamType::String => Ok(text(Value::Str(raw.to_string()), raw.to_string(), None)),
        ParamType::Enum => {
            let member = |value: &str| param.allowed.iter().find(|allowed| *allowed == value);
            let found = member(raw).or_else(|| plus_restored(raw).and_then(|r| member(&r)));
            match found {
                Some(value) => Ok(text(Value::Str(value.clone()), value.clone(), None)),
                // Neither the value nor the members are shown: the members describe the data.
                None => Err("is not an allowed value".to_string()),
            }
        }
        ParamType::Integer => {
            let value: i64 = raw.parse().map_err(|_| "must be an integer".to_string())?;
            if let Some(min) = param.min {
                if value < min {
                    return Err(format!("must be at least {min}"));
                }
            }
            if let Some(max) = param.max {
                if value > max {
                    return Err(format!("exceeds max of {max}"));
                }
            }
            Ok(text(Value::I64(value), value.to_string(), None))
        }
        ParamType::Number => match raw.parse::<f64>() {
            Ok(value) if value.is_finite() && !raw.trim().is_empty() => {
                Ok(text(Value::F64(value), value.to_string(), None))
            }
            _ => Err("must be a finite number".into()),
        },
        ParamType::Boolean => match raw {
            "true" => Ok(text(Value::Bool(true), "true".into(), None)),
            "false" => Ok(text(Value::Bool(false), "false".into(), None)),
            _ => Err("must be true or false".into()),
        },
        ParamType::Date => {
            let valid = raw.len() == 10
                && chrono::NaiveDate::parse_from_str(raw, "%Y-%m-%d")
                    .is_ok_and(|date| date.format("%Y-%m-%d").to_string() == raw);
            if valid {
                Ok(text(
                    Value::Str(raw.to_string()),
                    raw.to_string(),
                    Some("DATE"),
                ))
            } else {
                Err("must be an ISO date (YYYY-MM-DD)".into())
            }
        }
        ParamType::Timestamp => match chrono::DateTime::parse_from_rfc3339(raw) {
            Ok(time) => {
                // TIMESTAMP columns hold UTC wall time: the caller's offset is applied here.
                let utc = time
                    .with_timezone(&chrono::Utc)
                    .format("%Y-%m-%d %H:%M:%S%.f")
                    .to_string();
                Ok(text(Value::Str(utc.clone()), utc, Some("TIMESTAMP")))
            }
            Err(_) => Err("must be an RFC 3339 timestamp (e.g. 2026-01-31T12:00:00Z)".into()),
        },
    }
}
