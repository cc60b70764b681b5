//! The page stage of a compile: a cursor checked against the request it continues, and the
//! outer statement: the caller's columns (and hidden order keys), rows after the cursor's, the
//! total order, one row more than the limit, the offset.

use crate::value::Value;

use super::cursor::{self, CursorValue};
use super::keyset::after_predicate;
use super::{bind, quote, CursorSeed, OrderKey, ParamError};

/// The row a `?cursor=` continues after, once it is shown to be this request's: the same
/// endpoint, version and shape (params, tenant, sort), and the same snapshot.
pub(super) fn after(
    cursor: Option<&str>,
    offset_sent: bool,
    seed: &CursorSeed,
    order_len: usize,
) -> Result<Option<Vec<CursorValue>>, ParamError> {
    let Some(text) = cursor else {
        return Ok(None);
    };
    if offset_sent {
        return Err(ParamError::new(
            "params `cursor` and `offset` cannot be used together",
        ));
    }
    let cursor = cursor::verify(&seed.key, text)?;
    if cursor.endpoint != seed.endpoint
        || cursor.version != seed.version
        || cursor.shape != seed.shape
        || cursor.after.len() != order_len
    {
        return Err(cursor::invalid());
    }
    if cursor.snapshot_id != seed.snapshot_id {
        return Err(cursor::expired());
    }
    Ok(Some(cursor.after))
}

/// What the outer statement selects and how it pages.
pub(super) struct PageShape<'a> {
    pub(super) columns: &'a [String],
    pub(super) order: &'a [OrderKey],
    pub(super) after: Option<&'a [CursorValue]>,
    pub(super) limit: u64,
    pub(super) offset: u64,
}

impl PageShape<'_> {
    /// `SELECT <selected> FROM (<inner>) AS "q" [WHERE <after>] ORDER BY … LIMIT … OFFSET …`,
    /// and the columns it selects (the caller's, then hidden order keys).
    pub(super) fn outer(
        &self,
        inner: &str,
        values: &mut Vec<Value>,
    ) -> Result<(String, Vec<String>), ParamError> {
        let mut selected = self.columns.to_vec();
        for key in self.order {
            if !selected.contains(&key.output) {
                selected.push(key.output.clone());
            }
        }
        let selected_sql: Vec<String> = selected.iter().map(|name| quote(name)).collect();
        let mut sql = format!("SELECT {} FROM ({inner}) AS \"q\"", selected_sql.join(", "));
        if let Some(after) = self.after {
            sql.push_str(" WHERE ");
            sql.push_str(&after_predicate(self.order, after, values)?);
        }
        if !self.order.is_empty() {
            let keys: Vec<String> = self
                .order
                .iter()
                .map(|key| {
                    let direction = if key.descending { "DESC" } else { "ASC" };
                    format!("{} {direction} NULLS LAST", quote(&key.output))
                })
                .collect();
            sql.push_str(" ORDER BY ");
            sql.push_str(&keys.join(", "));
        }
        let limit = bind(values, Value::I64((self.limit + 1) as i64), None);
        let offset = bind(values, Value::I64(self.offset as i64), None);
        sql.push_str(&format!(" LIMIT {limit} OFFSET {offset}"));
        Ok((sql, selected))
    }
}
