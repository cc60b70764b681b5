//! Keyed lookups: the requests a server statement is not needed for. An endpoint whose rows are
//! found by equality (the tenant's, and each `eq` filter's whose param always has a value), then
//! narrowed by plain comparisons, can be answered from the snapshot's rows held in memory: found
//! through a hash index on the equality columns, filtered, put in the response's total order
//! and paged exactly as the statement would.
//! Which endpoints qualify is decided here, beside the statement they stand in for; the index
//! and the answering live with the snapshot, in the serving crate.

use std::collections::BTreeMap;

use super::request::Given;
use crate::project::{ColumnType, Dataset, Endpoint, Filter, FilterOp, ParamType, ServingMode};
use crate::value::Value;

/// A request whose rows equality on `columns` selects (a NULL never equals anything), then
/// `residual` conditions narrow: in the compiled total order, from `offset` on.
#[derive(Clone, Debug, PartialEq)]
pub struct Lookup {
    /// The dataset columns the rows are found by: the tenant's first, then each filter's whose
    /// param always has a value (required or defaulted).
    pub columns: Vec<String>,
    /// Each column's value, as the statement binds it.
    pub values: Vec<Value>,
    /// Each column's type.
    pub types: Vec<ColumnType>,
    /// The request's other filters, applied to the rows found.
    pub residual: Vec<Residual>,
    /// The rows skipped before the page.
    pub offset: u64,
}

/// One filter applied to the rows a lookup found: `column <op> value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Residual {
    /// The dataset column compared.
    pub column: String,
    /// The comparison: `eq`, `ne`, `lt`, `lte`, `gt` or `gte`.
    pub op: FilterOp,
    /// The value, as the statement binds it.
    pub value: Value,
    /// The column's type.
    pub column_type: ColumnType,
}

/// Whether a param of `param` type is compared with a `column` column exactly as a lookup
/// compares it (the same type on both sides, so no coercion is involved).
fn same_type(param: ParamType, column: ColumnType) -> bool {
    matches!(
        (param, column),
        (ParamType::Integer, ColumnType::Integer | ColumnType::Bigint)
            | (ParamType::String | ParamType::Enum, ColumnType::Varchar)
            | (ParamType::Date, ColumnType::Date)
            | (ParamType::Boolean, ColumnType::Boolean)
    )
}

/// The columns an endpoint's requests are looked up by, when a lookup can answer them: a
/// `local_table` endpoint without aggregates or grouping, whose outputs all have an order (rows
/// that tie in the total order are then the same bytes in a response), whose filters all
/// compare (`eq`, `ne`, `lt`, `lte`, `gt`, `gte`) a param of the column's own type, with at
/// least one column always compared for equality: the tenant's, or an `eq` filter's whose param
/// is required or defaulted.
pub fn key_columns(endpoint: &Endpoint, dataset: &Dataset) -> Option<Vec<(String, ColumnType)>> {
    if endpoint.serving_mode != ServingMode::LocalTable || !endpoint.group_by.is_empty() {
        return None;
    }
    let plain_outputs = endpoint.select.iter().all(|item| {
        item.aggregate.is_none()
            && dataset
                .column(&item.column)
                .is_some_and(|column| column.column_type != ColumnType::Json)
    });
    if !plain_outputs {
        return None;
    }
    let mut columns = Vec::new();
    if let Some(tenant) = &endpoint.tenant_column {
        if dataset.column(tenant)?.column_type != ColumnType::Varchar {
            return None;
        }
        columns.push((tenant.clone(), ColumnType::Varchar));
    }
    for filter in &endpoint.filters {
        let param = endpoint.param(&filter.param)?;
        let column = dataset.column(&filter.column)?;
        let compares = matches!(
            filter.op,
            FilterOp::Eq
                | FilterOp::Ne
                | FilterOp::Lt
                | FilterOp::Lte
                | FilterOp::Gt
                | FilterOp::Gte
        );
        if !compares || !same_type(param.param_type, column.column_type) {
            return None;
        }
        if is_key(endpoint, filter, &columns) {
            columns.push((filter.column.clone(), column.column_type));
        }
    }
    (!columns.is_empty()).then_some(columns)
}

/// Whether `filter` is one of the key's equalities (given `key`, the columns before it).
fn is_key(endpoint: &Endpoint, filter: &Filter, key: &[(String, ColumnType)]) -> bool {
    let always_given = endpoint
        .param(&filter.param)
        .is_some_and(|param| param.required || param.default.is_some());
    filter.op == FilterOp::Eq && always_given && key.iter().all(|(name, _)| *name != filter.column)
}

/// This request as a lookup, when its endpoint qualifies and no cursor continues an earlier page
/// (a cursor's predicate is the statement's to apply).
pub(super) fn lookup(
    endpoint: &Endpoint,
    dataset: &Dataset,
    given: &BTreeMap<&str, Given>,
    tenant: Option<&str>,
    continues_cursor: bool,
    offset: u64,
) -> Option<Lookup> {
    if continues_cursor {
        return None;
    }
    let key = key_columns(endpoint, dataset)?;
    let mut values = Vec::with_capacity(key.len());
    if endpoint.tenant_column.is_some() {
        values.push(Value::Str(tenant?.to_string()));
    }
    let mut residual = Vec::new();
    let mut seen: Vec<(String, ColumnType)> = key.iter().take(values.len()).cloned().collect();
    for filter in &endpoint.filters {
        let value = match given.get(filter.param.as_str()) {
            Some(Given::One(parsed)) => parsed.value.clone(),
            Some(Given::Many(_)) => return None,
            None => continue,
        };
        let column_type = dataset.column(&filter.column)?.column_type;
        if is_key(endpoint, filter, &seen) {
            seen.push((filter.column.clone(), column_type));
            values.push(value);
        } else {
            residual.push(Residual {
                column: filter.column.clone(),
                op: filter.op,
                value,
                column_type,
            });
        }
    }
    if seen != key {
        return None;
    }
    let (columns, types) = key.into_iter().unzip();
    Some(Lookup {
        columns,
        values,
        types,
        residual,
        offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::tests::{key, project};
    use crate::compile::{compile, Compiled};
    use crate::project::{Filter, Param, Project};

    /// `usage_daily` of the fixture project reshaped: an `account` eq filter (required or not),
    /// a `min_calls` gte filter, no JSON output, no other filter.
    fn by_account(project: &Project, required: bool, param_type: ParamType) -> Endpoint {
        let mut endpoint = project.endpoint("usage_daily").unwrap().clone();
        endpoint.select.retain(|item| item.column != "stats");
        endpoint.columns.retain(|column| column != "stats");
        endpoint.tenant_column = None;
        let mut account = endpoint.param("account_prefix").unwrap().clone();
        account.name = "account".into();
        account.required = required;
        account.param_type = param_type;
        let min_calls: Param = endpoint.param("min_calls").unwrap().clone();
        endpoint.params = vec![account, min_calls];
        endpoint.filters = vec![
            Filter {
                column: "account_id".into(),
                op: FilterOp::Eq,
                param: "account".into(),
            },
            Filter {
                column: "api_calls".into(),
                op: FilterOp::Gte,
                param: "min_calls".into(),
            },
        ];
        endpoint
    }

    fn compiled(project: &Project, endpoint: &Endpoint, query: &[(&str, &str)]) -> Compiled {
        let dataset = project.dataset(&endpoint.dataset).unwrap();
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        compile(endpoint, dataset, "\"t\"", "s1", &query, None, &key()).unwrap()
    }

    #[test]
    fn an_always_given_equality_is_the_key_and_the_rest_is_residual() {
        let project = project();
        let endpoint = by_account(&project, true, ParamType::String);
        let dataset = project.dataset("usage").unwrap();
        assert_eq!(
            key_columns(&endpoint, dataset),
            Some(vec![("account_id".to_string(), ColumnType::Varchar)])
        );
        let lookup = compiled(&project, &endpoint, &[("account", "a1"), ("offset", "3")])
            .lookup
            .expect("a lookup");
        assert_eq!(lookup.values, vec![Value::Str("a1".into())]);
        assert_eq!(lookup.offset, 3);
        // `min_calls` defaults to 0: always a residual comparison.
        assert_eq!(
            lookup.residual,
            vec![Residual {
                column: "api_calls".into(),
                op: FilterOp::Gte,
                value: Value::I64(0),
                column_type: ColumnType::Bigint,
            }]
        );
    }

    #[test]
    fn what_a_lookup_cannot_answer_stays_a_statement() {
        let project = project();
        let dataset = project.dataset("usage").unwrap();
        // No always-given equality: nothing to find rows by.
        let optional = by_account(&project, false, ParamType::String);
        assert_eq!(key_columns(&optional, dataset), None);
        // A JSON output, an aggregate, a filter that is not a comparison, a file scan.
        let original = project.endpoint("usage_daily").unwrap();
        assert_eq!(key_columns(original, dataset), None);
        assert_eq!(
            key_columns(project.endpoint("usage_summary").unwrap(), dataset),
            None
        );
        let mut remote = by_account(&project, true, ParamType::String);
        remote.serving_mode = ServingMode::RemoteScan;
        assert_eq!(key_columns(&remote, dataset), None);
        // A cursor continues with the statement's predicate.
        let endpoint = by_account(&project, true, ParamType::String);
        let first = compiled(&project, &endpoint, &[("account", "a1"), ("limit", "1")]);
        assert!(first.lookup.is_some());
        let page = arrow_array::RecordBatch::try_from_iter(first.selected.iter().map(|name| {
            let column: arrow_array::ArrayRef = match name.as_str() {
                "usage_date" => std::sync::Arc::new(arrow_array::Date32Array::from(vec![1, 2])),
                "api_calls" => std::sync::Arc::new(arrow_array::Int64Array::from(vec![1, 2])),
                _ => std::sync::Arc::new(arrow_array::StringArray::from(vec!["a", "b"])),
            };
            (name.clone(), column)
        }))
        .unwrap();
        let cursor = first.finish(vec![page]).unwrap().next_cursor.unwrap();
        let next = compiled(
            &project,
            &endpoint,
            &[("account", "a1"), ("cursor", cursor.as_str())],
        );
        assert!(next.lookup.is_none());
    }
}
