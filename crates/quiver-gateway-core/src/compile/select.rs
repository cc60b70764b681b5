//! The select stage of a compile: each output (a column, or an aggregate of one cast to its
//! output type) over the snapshot's relation, the conditions, and the grouping.

use super::quote;
use crate::project::{Aggregate, ColumnType, Dataset, Endpoint};

/// The endpoint's outputs and their types.
pub(super) fn outputs(endpoint: &Endpoint, dataset: &Dataset) -> Vec<(String, ColumnType)> {
    endpoint
        .select
        .iter()
        .map(|item| (item.output.clone(), item.output_type(dataset)))
        .collect()
}

/// `SELECT <outputs> FROM <relation> [WHERE <conditions>] [GROUP BY …]`.
pub(super) fn inner(
    endpoint: &Endpoint,
    dataset: &Dataset,
    relation: &str,
    conditions: &[String],
) -> String {
    let items: Vec<String> = endpoint
        .select
        .iter()
        .map(|item| {
            let column = quote(&item.column);
            let expression = match item.aggregate {
                None => column,
                // Cast to the output type: sums of integers are HUGEINT in DuckDB.
                Some(aggregate) => format!(
                    "CAST({}({column}) AS {})",
                    function(aggregate),
                    item.output_type(dataset).sql()
                ),
            };
            format!("{expression} AS {}", quote(&item.output))
        })
        .collect();
    let mut inner = format!("SELECT {} FROM {relation}", items.join(", "));
    if !conditions.is_empty() {
        inner.push_str(" WHERE ");
        inner.push_str(&conditions.join(" AND "));
    }
    if !endpoint.group_by.is_empty() {
        let group_by: Vec<String> = endpoint
            .group_by
            .iter()
            .map(|column| quote(column))
            .collect();
        inner.push_str(" GROUP BY ");
        inner.push_str(&group_by.join(", "));
    }
    inner
}

fn function(aggregate: Aggregate) -> &'static str {
    match aggregate {
        Aggregate::Sum => "sum",
        Aggregate::Avg => "avg",
        Aggregate::Min => "min",
        Aggregate::Max => "max",
        Aggregate::Count => "count",
    }
}
