//! The where stage of a compile: the tenant's condition (bound from the key, never the
//! request), then each filter whose param has a value, every value a bound placeholder.

use std::collections::BTreeMap;

use crate::value::Value;

use super::request::Given;
use super::{bind, quote};
use crate::project::{Endpoint, FilterOp};

/// The statement's conditions, binding their values into `values` in order.
pub(super) fn conditions(
    endpoint: &Endpoint,
    given: &BTreeMap<&str, Given>,
    tenant: Option<&str>,
    values: &mut Vec<Value>,
) -> Vec<String> {
    let mut conditions = Vec::new();
    if let (Some(column), Some(tenant)) = (&endpoint.tenant_column, tenant) {
        let placeholder = bind(values, Value::Str(tenant.to_string()), None);
        conditions.push(format!("{} = {placeholder}", quote(column)));
    }
    for filter in &endpoint.filters {
        if let Some(value) = given.get(filter.param.as_str()) {
            conditions.push(condition(&quote(&filter.column), filter.op, value, values));
        }
    }
    conditions
}

fn condition(column: &str, op: FilterOp, value: &Given, values: &mut Vec<Value>) -> String {
    match (op, value) {
        (FilterOp::IsNull, Given::One(parsed)) => match parsed.value {
            Value::Bool(true) => format!("{column} IS NULL"),
            _ => format!("{column} IS NOT NULL"),
        },
        (FilterOp::In, Given::Many(list)) => {
            let placeholders: Vec<String> = list
                .iter()
                .map(|parsed| bind(values, parsed.value.clone(), parsed.cast))
                .collect();
            format!("{column} IN ({})", placeholders.join(", "))
        }
        (FilterOp::Between, Given::Many(list)) => {
            let low = bind(values, list[0].value.clone(), list[0].cast);
            let high = bind(values, list[1].value.clone(), list[1].cast);
            format!("{column} BETWEEN {low} AND {high}")
        }
        (FilterOp::Prefix, Given::One(parsed)) => {
            let placeholder = bind(values, parsed.value.clone(), parsed.cast);
            format!("starts_with({column}, {placeholder})")
        }
        (op, Given::One(parsed)) => {
            let placeholder = bind(values, parsed.value.clone(), parsed.cast);
            format!("{column} {} {placeholder}", comparison(op))
        }
        (_, Given::Many(_)) => unreachable!("only in and between take several values"),
    }
}

fn comparison(op: FilterOp) -> &'static str {
    match op {
        FilterOp::Eq => "=",
        FilterOp::Ne => "<>",
        FilterOp::Lt => "<",
        FilterOp::Lte => "<=",
        FilterOp::Gt => ">",
        FilterOp::Gte => ">=",
        _ => unreachable!("one-value filters are handled above"),
    }
}
