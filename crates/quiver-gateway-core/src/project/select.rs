//! An endpoint's `select`: its entries read and checked against the dataset's columns, and,
//! where the query aggregates or groups, against its `group_by`.

use std::collections::{BTreeMap, BTreeSet};

use super::bounds::MAX_SELECT;
use super::model::{Aggregate, ColumnType, Dataset, DoubleSums, SelectItem, ALL_UNCHECKED};
use super::yaml::{printable, Fields, Node, Reader, Value};

/// What `select` declares: the items that passed their checks, the outputs of those that did not
/// (`*` when not known; lists naming them are not told they are missing), and whether all passed.
pub(super) struct Select {
    pub items: Vec<SelectItem>,
    pub unchecked_outputs: BTreeSet<String>,
    pub complete: bool,
}

impl Select {
    fn failed() -> Select {
        Select {
            items: Vec::new(),
            unchecked_outputs: BTreeSet::from([ALL_UNCHECKED.to_string()]),
            complete: false,
        }
    }

    /// The declared outputs and their types, as far as known.
    pub fn outputs(&self, dataset: &Dataset) -> BTreeMap<String, ColumnType> {
        self.items
            .iter()
            .map(|item| (item.output.clone(), item.output_type(dataset)))
            .collect()
    }

    pub fn is_unchecked(&self, output: &str) -> bool {
        self.unchecked_outputs.contains(output) || self.unchecked_outputs.contains(ALL_UNCHECKED)
    }
}

/// One `select` entry, read.
enum Entry {
    /// Usable; `sound` is false when its `agg` does not suit its column (reported).
    Item { item: SelectItem, sound: bool },
    /// Not usable (reported, or over a column whose checks were skipped): the output it would
    /// have had, `*` when not known.
    Unchecked(String),
}

pub(super) fn read_select(
    reader: &mut Reader<'_>,
    query: &Fields<'_>,
    dataset: &Dataset,
    group_by: Option<&[String]>,
) -> Select {
    let Some(node) = query.required(reader, "select", "`query`") else {
        return Select::failed();
    };
    let Some(entries) = reader.sequence(node, "`select`") else {
        return Select::failed();
    };
    if entries.is_empty() || entries.len() > MAX_SELECT {
        reader.error(
            node.line,
            format!("`select` must list 1..={MAX_SELECT} columns"),
        );
        return Select::failed();
    }
    let mut select = Select {
        items: Vec::with_capacity(entries.len()),
        unchecked_outputs: BTreeSet::new(),
        complete: true,
    };
    // Each item's line, for the grouping checks.
    let mut lines = Vec::with_capacity(entries.len());
    for entry in entries {
        match read_entry(reader, entry, dataset) {
            Entry::Unchecked(output) => {
                select.unchecked_outputs.insert(output);
                select.complete = false;
            }
            Entry::Item { item, .. } if select.items.iter().any(|o| o.output == item.output) => {
                reader.error(
                    entry.line,
                    format!("`select` output `{}` is listed twice", item.output),
                );
                select.complete = false;
            }
            Entry::Item { item, sound } => {
                select.complete &= sound;
                select.items.push(item);
                lines.push(entry.line);
            }
        }
    }
    match group_by {
        Some(group_by) => {
            let line = query.key_line("select").unwrap_or(node.line);
            select.complete &= check_grouping(reader, line, &select.items, &lines, group_by);
        }
        None => select.complete = false,
    }
    select
}

/// One entry of `select` (`column`, `as`, `agg`), checked against `dataset`.
fn read_entry(reader: &mut Reader<'_>, entry: &Node, dataset: &Dataset) -> Entry {
    let Some(fields) = reader.mapping(entry, "a `select` entry", &["as", "column", "agg"], &[])
    else {
        return Entry::Unchecked(ALL_UNCHECKED.to_string());
    };
    let column = fields
        .required(reader, "column", "a `select` entry")
        .and_then(|node| reader.identifier(node, "a `select` column"));
    let output = match fields.get("as") {
        Some(node) => reader.identifier(node, "a `select` output (`as`)"),
        None => column.clone(),
    };
    // `Some(None)`: no `agg`; `None`: a bad one.
    let aggregate = match fields.get("agg") {
        None => Some(None),
        Some(node) => read_aggregate(reader, node).map(Some),
    };
    let (Some(column), Some(output), Some(aggregate)) = (column, output, aggregate) else {
        // The output it was meant to have, as written, when that much is legible.
        let output = fields
            .get("as")
            .or_else(|| fields.get("column"))
            .and_then(|node| match &node.value {
                Value::Str(text) => Some(text.clone()),
                _ => None,
            });
        return Entry::Unchecked(output.unwrap_or_else(|| ALL_UNCHECKED.to_string()));
    };
    let Some(column_type) = dataset.column(&column).map(|c| c.column_type) else {
        if !dataset.is_unchecked(&column) {
            reader.error(
                entry.line,
                format!(
                    "`select` column `{column}` is not in dataset `{}`",
                    dataset.id
                ),
            );
        }
        return Entry::Unchecked(output);
    };
    let sound = aggregate_suits(reader, entry.line, &column, column_type, aggregate);
    Entry::Item {
        item: SelectItem {
            output,
            column,
            aggregate,
            // The project file's setting, applied once every file is read.
            double_sums: DoubleSums::Bigint,
        },
        sound,
    }
}

/// `agg`'s value; `None` (reported) when it names no aggregate.
fn read_aggregate(reader: &mut Reader<'_>, node: &Node) -> Option<Aggregate> {
    match reader.string(node, "`agg`").as_deref() {
        Some("sum") => Some(Aggregate::Sum),
        Some("avg") => Some(Aggregate::Avg),
        Some("min") => Some(Aggregate::Min),
        Some("max") => Some(Aggregate::Max),
        Some("count") => Some(Aggregate::Count),
        Some(other) => {
            reader.error(
                node.line,
                format!(
                    "`agg` must be sum, avg, min, max or count, not `{}`",
                    printable(other)
                ),
            );
            None
        }
        None => None,
    }
}

/// Whether `aggregate` applies to a column of `column_type` (else reported).
fn aggregate_suits(
    reader: &mut Reader<'_>,
    line: usize,
    column: &str,
    column_type: ColumnType,
    aggregate: Option<Aggregate>,
) -> bool {
    let numeric = matches!(
        column_type,
        ColumnType::Integer | ColumnType::Bigint | ColumnType::Double
    );
    match aggregate {
        Some(Aggregate::Sum | Aggregate::Avg) if !numeric => {
            reader.error(line, format!("`agg` of `{column}` needs a numeric column"));
            false
        }
        Some(Aggregate::Min | Aggregate::Max) if column_type == ColumnType::Json => {
            reader.error(
                line,
                format!("`agg` of JSON column `{column}` is not supported"),
            );
            false
        }
        _ => true,
    }
}

/// An aggregating `select` needs a `group_by`, and then (as with any `group_by`) every item it
/// does not aggregate must be grouped by. `lines[i]` is `items[i]`'s line. Reports each problem;
/// whether there was none.
fn check_grouping(
    reader: &mut Reader<'_>,
    select_line: usize,
    items: &[SelectItem],
    lines: &[usize],
    group_by: &[String],
) -> bool {
    let mut sound = true;
    let aggregated = items.iter().any(|item| item.aggregate.is_some());
    if aggregated && group_by.is_empty() {
        reader.error(
            select_line,
            "`select` uses `agg`, so `query` needs `group_by`",
        );
        sound = false;
    }
    if aggregated || !group_by.is_empty() {
        for (item, line) in items.iter().zip(lines) {
            if item.aggregate.is_none() && !group_by.contains(&item.column) {
                reader.error(
                    *line,
                    format!(
                        "`select` column `{}` is neither aggregated nor in `group_by`",
                        item.column
                    ),
                );
                sound = false;
            }
        }
    }
    sound
}
