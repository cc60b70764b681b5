//! An endpoint's `query` (group_by, filters, order_by; `select` is `select.rs`) and its
//! output-column lists (`columns`, `sort`), checked against the dataset's columns and the
//! declared params.

use std::collections::{BTreeMap, BTreeSet};

use super::bounds::MAX_FILTERS;
use super::model::{ColumnType, Dataset, Filter, FilterOp, OrderBy, Param, ParamType};
use super::select::Select;
use super::yaml::{printable, Fields, Node, Reader};

pub(super) fn read_group_by(
    reader: &mut Reader<'_>,
    query: &Fields<'_>,
    dataset: &Dataset,
) -> Option<Vec<String>> {
    let Some(node) = query.get("group_by") else {
        return Some(Vec::new());
    };
    let names = reader.identifiers(node, "a `group_by` column")?;
    let mut group_by = Vec::with_capacity(names.len());
    let mut complete = true;
    for (name, line) in names {
        match dataset.column(&name) {
            None if dataset.is_unchecked(&name) => complete = false,
            None => {
                reader.error(
                    line,
                    format!(
                        "`group_by` column `{name}` is not in dataset `{}`",
                        dataset.id
                    ),
                );
                complete = false;
            }
            Some(column) if column.column_type == ColumnType::Json => {
                reader.error(
                    line,
                    format!("`group_by` column `{name}` is JSON (not groupable)"),
                );
                complete = false;
            }
            Some(_) if group_by.contains(&name) => {
                reader.error(line, format!("`group_by` lists `{name}` twice"));
                complete = false;
            }
            Some(_) => group_by.push(name),
        }
    }
    complete.then_some(group_by)
}

pub(super) fn read_filters(
    reader: &mut Reader<'_>,
    query: &Fields<'_>,
    dataset: &Dataset,
    params: &[Param],
    declared: &BTreeSet<String>,
) -> Option<Vec<Filter>> {
    let Some(node) = query.get("filters") else {
        return Some(Vec::new());
    };
    let items = reader.sequence(node, "`filters`")?;
    if items.len() > MAX_FILTERS {
        reader.error(node.line, format!("more than {MAX_FILTERS} filters"));
        return None;
    }
    let mut filters: Vec<Filter> = Vec::with_capacity(items.len());
    let mut complete = true;
    for item in items {
        let Some((column, op, param)) = filter_fields(reader, item) else {
            complete = false;
            continue;
        };
        let filter = Filter { column, op, param };
        match check_filter(
            reader, item.line, &filter, dataset, params, declared, &filters,
        ) {
            Checked::Refused => complete = false,
            Checked::Kept { sound } => {
                complete &= sound;
                filters.push(filter);
            }
        }
    }
    complete.then_some(filters)
}

/// A filter entry's `column`, `op` and `param`, each read (and reported when bad).
fn filter_fields(reader: &mut Reader<'_>, item: &Node) -> Option<(String, FilterOp, String)> {
    let fields = reader.mapping(item, "a filter", &["column", "op", "param"], &[])?;
    let column = fields
        .required(reader, "column", "a filter")
        .and_then(|node| reader.identifier(node, "a filter column"));
    let op = fields.required(reader, "op", "a filter").and_then(|node| {
        let text = reader.string(node, "`op`")?;
        let op = parse_filter_op(&text);
        if op.is_none() {
            reader.error(
                node.line,
                format!(
                    "unknown filter `op` `{}` (eq, ne, lt, lte, gt, gte, in, between, prefix, is_null)",
                    printable(&text)
                ),
            );
        }
        op
    });
    let param = fields
        .required(reader, "param", "a filter")
        .and_then(|node| reader.identifier(node, "a filter param"));
    Some((column?, op?, param?))
}

/// What the checks made of one filter.
enum Checked {
    /// Not part of the query (reported, or over a column whose checks were skipped).
    Refused,
    /// Part of the query; `sound` is false when its param's `default` does not fit it (reported).
    Kept { sound: bool },
}

/// Checks `filter` (at `line`) against the dataset's columns, the declared params and the
/// filters before it.
fn check_filter(
    reader: &mut Reader<'_>,
    line: usize,
    filter: &Filter,
    dataset: &Dataset,
    params: &[Param],
    declared: &BTreeSet<String>,
    earlier: &[Filter],
) -> Checked {
    let Filter {
        column,
        op,
        param: param_name,
    } = filter;
    let Some(column_type) = dataset.column(column).map(|c| c.column_type) else {
        if !dataset.is_unchecked(column) {
            reader.error(
                line,
                format!(
                    "filter column `{column}` is not in dataset `{}`",
                    dataset.id
                ),
            );
        }
        return Checked::Refused;
    };
    let Some(param) = params.iter().find(|param| &param.name == param_name) else {
        if !declared.contains(param_name) {
            reader.error(
                line,
                format!("filter param `{param_name}` is not declared in `params`"),
            );
        }
        return Checked::Refused;
    };
    let refusal = if dataset.tenant_column.as_deref() == Some(column.as_str()) {
        Some(format!(
            "column `{column}` is the tenant column: it is bound from the key, never filtered by a param"
        ))
    } else if let Err(message) = filter_fits(*op, column_type, param) {
        Some(format!(
            "filter on `{column}` with param `{param_name}`: {message}"
        ))
    } else if shares_a_multi_value_param(*op, param_name, earlier) {
        Some(format!(
            "param `{param_name}` of an `in`/`between` filter may serve one filter only"
        ))
    } else {
        None
    };
    if let Some(message) = refusal {
        reader.error(line, message);
        return Checked::Refused;
    }
    let default_fits = match &param.default {
        Some(default) => check_default_arity(*op, param, default),
        None => Ok(()),
    };
    if let Err(message) = &default_fits {
        reader.error(
            line,
            format!("`default` of param `{param_name}`: {message}"),
        );
    }
    Checked::Kept {
        sound: default_fits.is_ok(),
    }
}

/// Whether a filter with `op` would share `param` with an earlier filter while either of them
/// takes several values (`in`, `between`): such a param serves one filter only.
fn shares_a_multi_value_param(op: FilterOp, param: &str, earlier: &[Filter]) -> bool {
    let multi = |op: FilterOp| matches!(op, FilterOp::In | FilterOp::Between);
    earlier
        .iter()
        .find(|other| other.param == param)
        .is_some_and(|other| multi(op) || multi(other.op))
}

/// A filter op's name in a project file (the inverse of [`parse_filter_op`]).
pub fn filter_op_name(op: FilterOp) -> &'static str {
    match op {
        FilterOp::Eq => "eq",
        FilterOp::Ne => "ne",
        FilterOp::Lt => "lt",
        FilterOp::Lte => "lte",
        FilterOp::Gt => "gt",
        FilterOp::Gte => "gte",
        FilterOp::In => "in",
        FilterOp::Between => "between",
        FilterOp::Prefix => "prefix",
        FilterOp::IsNull => "is_null",
    }
}

pub fn parse_filter_op(text: &str) -> Option<FilterOp> {
    Some(match text {
        "eq" => FilterOp::Eq,
        "ne" => FilterOp::Ne,
        "lt" => FilterOp::Lt,
        "lte" => FilterOp::Lte,
        "gt" => FilterOp::Gt,
        "gte" => FilterOp::Gte,
        "in" => FilterOp::In,
        "between" => FilterOp::Between,
        "prefix" => FilterOp::Prefix,
        "is_null" => FilterOp::IsNull,
        _ => return None,
    })
}

/// Whether a param of its type may be compared with a column of its type by `op`.
fn filter_fits(op: FilterOp, column: ColumnType, param: &Param) -> Result<(), String> {
    use ParamType as P;
    let kind = param.param_type;
    match op {
        FilterOp::IsNull => {
            return if kind == P::Boolean {
                Ok(())
            } else {
                Err("`is_null` needs a boolean param".into())
            };
        }
        FilterOp::Prefix => {
            return if column == ColumnType::Varchar && matches!(kind, P::String | P::Enum) {
                Ok(())
            } else {
                Err("`prefix` needs a VARCHAR column and a string or enum param".into())
            };
        }
        _ => {}
    }
    let comparable = match column {
        ColumnType::Varchar => matches!(kind, P::String | P::Enum),
        ColumnType::Integer | ColumnType::Bigint | ColumnType::Double => {
            matches!(kind, P::Integer | P::Number)
        }
        ColumnType::Date => kind == P::Date,
        ColumnType::Timestamp => matches!(kind, P::Timestamp | P::Date),
        ColumnType::Boolean => kind == P::Boolean,
        ColumnType::Json => false,
    };
    if !comparable {
        return Err(format!(
            "a {} column cannot be compared with a {} param",
            column.sql(),
            kind.name()
        ));
    }
    let ordered = !matches!(op, FilterOp::Eq | FilterOp::Ne | FilterOp::In);
    if ordered && column == ColumnType::Boolean {
        return Err("a BOOLEAN column has no order: use eq, ne or in".into());
    }
    if op == FilterOp::In && kind == P::Boolean {
        return Err("`in` over booleans: use eq".into());
    }
    Ok(())
}

/// A default of an `in` filter lists values; of a `between`, exactly two; else one value.
fn check_default_arity(op: FilterOp, param: &Param, default: &str) -> Result<(), String> {
    let pieces: Vec<&str> = default.split(',').collect();
    match op {
        FilterOp::In if pieces.len() > param.max_values => {
            Err(format!("lists more than {} values", param.max_values))
        }
        FilterOp::In => Ok(()),
        FilterOp::Between if pieces.len() != 2 => {
            Err("`between` needs two values `low,high`".into())
        }
        FilterOp::Between => Ok(()),
        _ if pieces.len() > 1 && param.param_type != ParamType::String => {
            Err("lists several values but the filter takes one".into())
        }
        _ => Ok(()),
    }
}

/// `order_by`: output columns, each once, none JSON.
pub(super) fn read_order_by(
    reader: &mut Reader<'_>,
    query: &Fields<'_>,
    outputs: &BTreeMap<String, ColumnType>,
    select: &Select,
) -> Option<Vec<OrderBy>> {
    let Some(node) = query.get("order_by") else {
        return Some(Vec::new());
    };
    let items = reader.sequence(node, "`order_by`")?;
    let mut order_by: Vec<OrderBy> = Vec::with_capacity(items.len());
    let mut complete = true;
    for item in items {
        let Some(fields) = reader.mapping(item, "an `order_by` entry", &["column", "dir"], &[])
        else {
            complete = false;
            continue;
        };
        let column = fields
            .required(reader, "column", "an `order_by` entry")
            .and_then(|node| reader.identifier(node, "an `order_by` column"));
        let descending = match fields.get("dir") {
            None => Some(false),
            Some(node) => match reader.string(node, "`dir`").as_deref() {
                Some("asc") => Some(false),
                Some("desc") => Some(true),
                Some(other) => {
                    reader.error(
                        node.line,
                        format!("`dir` must be asc or desc, not `{}`", printable(other)),
                    );
                    None
                }
                None => None,
            },
        };
        let (Some(column), Some(descending)) = (column, descending) else {
            complete = false;
            continue;
        };
        match outputs.get(&column) {
            None if select.is_unchecked(&column) => complete = false,
            None => {
                reader.error(
                    item.line,
                    format!("`order_by` column `{column}` is not a `select` output"),
                );
                complete = false;
            }
            Some(ColumnType::Json) => {
                reader.error(
                    item.line,
                    format!("`order_by` column `{column}` is JSON (not orderable)"),
                );
                complete = false;
            }
            Some(_) if order_by.iter().any(|other| other.column == column) => {
                reader.error(item.line, format!("`order_by` lists `{column}` twice"));
                complete = false;
            }
            Some(_) => order_by.push(OrderBy { column, descending }),
        }
    }
    complete.then_some(order_by)
}

/// A list of output columns (`columns`, `sort`), each once; `orderable`: none JSON.
pub(super) fn read_output_list(
    reader: &mut Reader<'_>,
    node: &Node,
    what: &str,
    outputs: &BTreeMap<String, ColumnType>,
    select: &Select,
    orderable: bool,
) -> Option<Vec<String>> {
    let names = reader.identifiers(node, what)?;
    let mut list: Vec<String> = Vec::with_capacity(names.len());
    let mut complete = true;
    for (name, line) in names {
        match outputs.get(&name) {
            None if select.is_unchecked(&name) => complete = false,
            None => {
                reader.error(
                    line,
                    format!("{what} column `{name}` is not a `select` output"),
                );
                complete = false;
            }
            Some(ColumnType::Json) if orderable => {
                reader.error(
                    line,
                    format!("{what} column `{name}` is JSON (not orderable)"),
                );
                complete = false;
            }
            Some(_) if list.contains(&name) => {
                reader.error(line, format!("{what} lists `{name}` twice"));
                complete = false;
            }
            Some(_) => list.push(name),
        }
    }
    complete.then_some(list)
}
