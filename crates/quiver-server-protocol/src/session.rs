//! What `connect` answers: who the server is and the session's id, the capability another
//! connection needs to cancel this session's statements.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StringArray, StructArray};
use arrow_schema::{DataType, Field, Fields};
use quiver_wire::ErrorReport;

use crate::errors;

/// The session a `connect` opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// quiver's version on the server, e.g. `0.1.0`.
    pub server_version: String,
    /// The DuckDB library serving, e.g. `v2.0.0`.
    pub duckdb_version: String,
    /// The session's id: 32 lowercase hex digits (128 random bits). Knowing it is what `cancel`
    /// asks for, so the server never lists it.
    pub session_id: String,
    /// The database the server opened (a path, or `:memory:`).
    pub database: String,
}

const SERVER_VERSION: &str = "server_version";
const DUCKDB_VERSION: &str = "duckdb_version";
const SESSION_ID: &str = "session_id";
const DATABASE: &str = "database";

/// Length of a session id in hex digits.
pub const SESSION_ID_HEX_DIGITS: usize = 32;

fn fields() -> Fields {
    Fields::from(
        [SERVER_VERSION, DUCKDB_VERSION, SESSION_ID, DATABASE]
            .map(|name| Field::new(name, DataType::Utf8, false))
            .to_vec(),
    )
}

/// The `result` field of `connect`.
pub fn connect_result() -> Field {
    Field::new("result", DataType::Struct(fields()), false)
}

/// Whether `id` has the shape of a session id (checked before any lookup).
pub fn is_session_id(id: &str) -> bool {
    id.len() == SESSION_ID_HEX_DIGITS
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl SessionInfo {
    /// The one-element struct array `connect` replies with.
    pub fn to_array(&self) -> ArrayRef {
        let columns: Vec<ArrayRef> = [
            &self.server_version,
            &self.duckdb_version,
            &self.session_id,
            &self.database,
        ]
        .map(|value| Arc::new(StringArray::from(vec![value.as_str()])) as ArrayRef)
        .to_vec();
        Arc::new(StructArray::new(fields(), columns, None))
    }

    /// Reads `connect`'s reply.
    pub fn from_array(array: &dyn Array) -> Result<SessionInfo, ErrorReport> {
        let malformed = |what: &str| errors::protocol(format!("connect reply: {what}"));
        let array = array
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(|| malformed("not a struct"))?;
        if array.len() != 1 {
            return Err(malformed("not one row"));
        }
        let text = |name: &str| -> Result<String, ErrorReport> {
            let column = array
                .column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                .ok_or_else(|| malformed(&format!("no utf8 field {name}")))?;
            if column.is_null(0) {
                return Err(malformed(&format!("{name} is null")));
            }
            Ok(column.value(0).to_string())
        };
        Ok(SessionInfo {
            server_version: text(SERVER_VERSION)?,
            duckdb_version: text(DUCKDB_VERSION)?,
            session_id: text(SESSION_ID)?,
            database: text(DATABASE)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let info = SessionInfo {
            server_version: "0.1.0".into(),
            duckdb_version: "v2.0.0".into(),
            session_id: "0123456789abcdef0123456789abcdef".into(),
            database: ":memory:".into(),
        };
        let array = info.to_array();
        assert_eq!(array.data_type(), connect_result().data_type());
        assert_eq!(SessionInfo::from_array(array.as_ref()).unwrap(), info);
        assert!(is_session_id(&info.session_id));
        assert!(!is_session_id("0123456789ABCDEF0123456789abcdef"));
        assert!(!is_session_id("short"));
    }
}
