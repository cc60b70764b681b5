//! The server's log: one line on stderr per event (a session opened or closed, a connection closed
//! before it authenticated, a failed authentication, a failed or slow statement), as
//! `quiver server: <event> key=value ...` or, when asked for, one JSON object per line. Nothing a
//! client presents as a credential is ever a field.

use std::fmt::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

/// Longest text field written (an error message, a statement's start).
const FIELD_CHARS_MAX: usize = 512;

/// How events are written.
#[derive(Clone, Copy, Debug, Default)]
pub struct EventLog {
    /// One JSON object per line instead of `key=value` text.
    pub json: bool,
    /// Statements at least this slow are logged; `None`: none are.
    pub slow_statement: Option<Duration>,
}

/// One field's value.
pub enum Field<'a> {
    /// Text (cut to [`FIELD_CHARS_MAX`] characters).
    Text(&'a str),
    /// A count.
    Count(u64),
    /// A duration, written in milliseconds.
    Millis(Duration),
}

impl EventLog {
    /// Writes `event` with `fields`.
    pub fn emit(&self, event: &str, fields: &[(&str, Field<'_>)]) {
        let line = if self.json {
            json_line(event, fields)
        } else {
            text_line(event, fields)
        };
        quiver_process::log_line!("{line}");
    }
}

fn cut(text: &str) -> &str {
    match text.char_indices().nth(FIELD_CHARS_MAX) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

fn json_line(event: &str, fields: &[(&str, Field<'_>)]) -> String {
    let mut object = Map::new();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    object.insert("ts".into(), Value::from(now.as_millis() as f64 / 1000.0));
    object.insert("event".into(), Value::from(event));
    for (key, field) in fields {
        let (key, value) = match field {
            Field::Text(text) => (key.to_string(), Value::from(cut(text))),
            Field::Count(n) => (key.to_string(), Value::from(*n)),
            Field::Millis(d) => (format!("{key}_ms"), Value::from(d.as_secs_f64() * 1000.0)),
        };
        object.insert(key, value);
    }
    Value::Object(object).to_string()
}

fn text_line(event: &str, fields: &[(&str, Field<'_>)]) -> String {
    let mut line = format!("quiver server: {event}");
    for (key, field) in fields {
        let _ = match field {
            Field::Text(text) => {
                let text = cut(text);
                if !text.is_empty() && text.chars().all(|c| c.is_ascii_graphic() && c != '"') {
                    write!(line, " {key}={text}")
                } else {
                    // Quoted as JSON quotes a string: spaces, quotes and newlines stay on one line.
                    write!(line, " {key}={}", Value::from(text))
                }
            }
            Field::Count(n) => write!(line, " {key}={n}"),
            Field::Millis(d) => write!(line, " {key}_ms={:.1}", d.as_secs_f64() * 1000.0),
        };
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_json_lines_carry_the_fields() {
        let fields = [
            ("peer", Field::Text("127.0.0.1:5")),
            ("error", Field::Text("no such table \"t\"\nat line 1")),
            ("failures", Field::Count(3)),
            ("took", Field::Millis(Duration::from_millis(1500))),
        ];
        let text = text_line("auth_failed", &fields);
        assert_eq!(
            text,
            "quiver server: auth_failed peer=127.0.0.1:5 error=\"no such table \\\"t\\\"\\nat line 1\" failures=3 took_ms=1500.0"
        );
        let json: Value = serde_json::from_str(&json_line("auth_failed", &fields)).unwrap();
        assert_eq!(json["event"], "auth_failed");
        assert_eq!(json["peer"], "127.0.0.1:5");
        assert_eq!(json["failures"], 3);
        assert_eq!(json["took_ms"], 1500.0);
        assert!(json["ts"].as_f64().unwrap() > 1.0e9);
        assert_eq!(cut(&"é".repeat(600)).chars().count(), FIELD_CHARS_MAX);
    }
}
