//! An endpoint's `params` and `combinations`: names, types, defaults, enums, bounds, aliases.

use std::collections::{BTreeMap, BTreeSet};

use super::bounds::{
    DEFAULT_MAX_VALUES, HARD_MAX_VALUES, MAX_ALIASES, MAX_COMBINATIONS, MAX_ENUM_VALUES, MAX_PARAMS,
};
use super::model::RESERVED_PARAMS;
use super::model::{Param, ParamType};
use super::values::parse_value;
use super::yaml::{printable, Fields, Node, Reader, Value};

/// The params that passed their checks, the names of all declared ones, and whether all passed.
pub(super) fn read_params(
    reader: &mut Reader<'_>,
    fields: &Fields<'_>,
) -> (Vec<Param>, BTreeSet<String>, bool) {
    let mut declared = BTreeSet::new();
    let Some(node) = fields.get("params") else {
        return (Vec::new(), declared, true);
    };
    let Some(items) = reader.sequence(node, "`params`") else {
        return (Vec::new(), declared, false);
    };
    if items.len() > MAX_PARAMS {
        reader.error(node.line, format!("more than {MAX_PARAMS} params"));
        return (Vec::new(), declared, false);
    }
    let mut params: Vec<Param> = Vec::with_capacity(items.len());
    let mut complete = true;
    for item in items {
        if let Value::Map(entries) = &item.value {
            if let Some(Value::Str(name)) = entries
                .iter()
                .find(|e| e.key == "name")
                .map(|e| &e.value.value)
            {
                declared.insert(name.clone());
            }
        }
        match read_param(reader, item) {
            Some(param) => {
                if params.iter().any(|other| other.name == param.name) {
                    reader.error(
                        item.line,
                        format!("param `{}` is declared twice", param.name),
                    );
                    complete = false;
                } else {
                    params.push(param);
                }
            }
            None => complete = false,
        }
    }
    (params, declared, complete)
}

fn read_param(reader: &mut Reader<'_>, node: &Node) -> Option<Param> {
    let fields = reader.mapping(node, "a param", &FIELDS, &[])?;
    let name = fields
        .required(reader, "name", "a param")
        .and_then(|node| reader.identifier(node, "a param name"))
        .and_then(|name| unreserved(reader, node, name));
    let param_type = fields
        .required(reader, "type", "a param")
        .and_then(|node| read_type(reader, node));
    let required = match fields.get("required") {
        Some(node) => reader.boolean(node, "`required`"),
        None => Some(false),
    };
    let allowed = match fields.get("enum") {
        None => Some(Vec::new()),
        Some(node) => read_enum(reader, node),
    };
    let min = fields
        .get("min")
        .and_then(|node| reader.integer(node, "`min`", i64::MIN, i64::MAX));
    let max = fields
        .get("max")
        .and_then(|node| reader.integer(node, "`max`", i64::MIN, i64::MAX));
    let aliases = match fields.get("aliases") {
        None => Some(BTreeMap::new()),
        Some(node) => read_aliases(reader, node),
    };
    let max_values = fields
        .get("max_values")
        .map(|node| reader.integer(node, "`max_values`", 1, HARD_MAX_VALUES as i64))
        .unwrap_or(Some(DEFAULT_MAX_VALUES as i64))
        .map(|value| value as usize);

    let complete = required.is_some() && allowed.is_some() && aliases.is_some();
    let mut param = Param {
        name: name?,
        param_type: param_type?,
        required: required.unwrap_or(false),
        default: None,
        allowed: allowed.unwrap_or_default(),
        min,
        max,
        aliases: aliases.unwrap_or_default(),
        max_values: DEFAULT_MAX_VALUES,
    };
    // Each check runs (and reports) even when one before it failed.
    let fits_type = fits_its_type(reader, &fields, &param);
    // A wrong `max_values` ends the checks here, once the type's fields are reported.
    param.max_values = max_values?;
    let aliases_allowed = aliases_are_allowed(reader, &fields, &param);
    let mut default_fits = true;
    if let Some(node) = fields.get("default") {
        let (text, fits) = read_default(reader, node, &param)?;
        param.default = Some(text);
        default_fits = fits;
    }
    (complete && fits_type && aliases_allowed && default_fits).then_some(param)
}

/// The fields a param may set.
const FIELDS: [&str; 10] = [
    "name",
    "type",
    "required",
    "default",
    "enum",
    "min",
    "max",
    "aliases",
    "max_values",
    "description",
];

/// `name`, unless it is one every endpoint already has (the problem is at the param's line).
fn unreserved(reader: &mut Reader<'_>, param: &Node, name: String) -> Option<String> {
    if RESERVED_PARAMS.contains(&name.as_str()) {
        reader.error(
            param.line,
            format!(
                "param `{name}` is reserved (every endpoint has {})",
                RESERVED_PARAMS.join(", ")
            ),
        );
        None
    } else {
        Some(name)
    }
}

/// `type`: one of the param types' names.
fn read_type(reader: &mut Reader<'_>, node: &Node) -> Option<ParamType> {
    let text = reader.string(node, "a param type")?;
    let parsed = parse_param_type(&text);
    if parsed.is_none() {
        reader.error(
            node.line,
            format!(
                "unknown param type `{}` (string, integer, number, boolean, date, timestamp, enum)",
                printable(&text)
            ),
        );
    }
    parsed
}

/// `enum`: at most `MAX_ENUM_VALUES` distinct values.
fn read_enum(reader: &mut Reader<'_>, node: &Node) -> Option<Vec<String>> {
    let items = reader.sequence(node, "`enum`")?;
    if items.len() > MAX_ENUM_VALUES {
        reader.error(
            node.line,
            format!("`enum` lists more than {MAX_ENUM_VALUES} values"),
        );
        return None;
    }
    let mut values: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let value = reader.scalar_text(item, "an `enum` value")?;
        if values.contains(&value) {
            reader.error(
                item.line,
                format!("`enum` lists `{}` twice", printable(&value)),
            );
            return None;
        }
        values.push(value);
    }
    Some(values)
}

/// Whether the fields that belong to one type (`enum`, `min`, `max`) are set only for it, and
/// make sense together; every problem is reported.
fn fits_its_type(reader: &mut Reader<'_>, fields: &Fields<'_>, param: &Param) -> bool {
    let (name, param_type) = (&param.name, param.param_type);
    let mut fits = true;
    if param_type == ParamType::Enum && param.allowed.is_empty() {
        reader.error(
            fields.line,
            format!("enum param `{name}` needs a non-empty `enum` list"),
        );
        fits = false;
    }
    if param_type != ParamType::Enum && fields.get("enum").is_some() {
        reader.error(
            fields.key_line("enum").unwrap_or(fields.line),
            format!("`enum` is only for `type: enum` (param `{name}`)"),
        );
        fits = false;
    }
    for key in ["min", "max"] {
        if param_type != ParamType::Integer && fields.get(key).is_some() {
            reader.error(
                fields.key_line(key).unwrap_or(fields.line),
                format!("`{key}` is only for `type: integer` (param `{name}`)"),
            );
            fits = false;
        }
    }
    if let (Some(min), Some(max)) = (param.min, param.max) {
        if min > max {
            reader.error(
                fields.line,
                format!("param `{name}`: `min` {min} is above `max` {max}"),
            );
            fits = false;
        }
    }
    fits
}

/// Whether every alias of an `enum` param leads to one of its values; every one that does not
/// is reported.
fn aliases_are_allowed(reader: &mut Reader<'_>, fields: &Fields<'_>, param: &Param) -> bool {
    if param.param_type != ParamType::Enum {
        return true;
    }
    let mut allowed = true;
    for (from, to) in &param.aliases {
        if !param.allowed.contains(to) {
            reader.error(
                fields.key_line("aliases").unwrap_or(fields.line),
                format!(
                    "param `{}`: alias `{}` → `{}` is not one of its `enum` values",
                    param.name,
                    printable(from),
                    printable(to)
                ),
            );
            allowed = false;
        }
    }
    allowed
}

/// `default`, as written, and whether it fits the param's type. `None`: not a scalar.
fn read_default(reader: &mut Reader<'_>, node: &Node, param: &Param) -> Option<(String, bool)> {
    let text = reader.scalar_text(node, "`default`")?;
    // A default is stored as sent: each comma-separated piece of an `in`/`between` default
    // is checked when the filter is (see `read_filters`); here the whole must fit the type
    // unless it lists several values.
    let pieces: Vec<&str> = if text.contains(',') && param.param_type != ParamType::String {
        text.split(',').collect()
    } else {
        vec![text.as_str()]
    };
    let mut fits = true;
    for piece in pieces {
        if let Err(message) = parse_value(param, piece) {
            reader.error(
                node.line,
                format!("`default` of param `{}`: {message}", param.name),
            );
            fits = false;
        }
    }
    Some((text, fits))
}

fn read_aliases(reader: &mut Reader<'_>, node: &Node) -> Option<BTreeMap<String, String>> {
    let Value::Map(entries) = &node.value else {
        reader.error(
            node.line,
            format!("`aliases` must be a mapping, found {}", node.value.kind()),
        );
        return None;
    };
    if entries.len() > MAX_ALIASES {
        reader.error(node.line, format!("more than {MAX_ALIASES} aliases"));
        return None;
    }
    let mut aliases = BTreeMap::new();
    for entry in entries {
        let to = reader.scalar_text(&entry.value, "an alias")?;
        aliases.insert(entry.key.clone(), to);
    }
    Some(aliases)
}

pub fn parse_param_type(text: &str) -> Option<ParamType> {
    Some(match text {
        "string" => ParamType::String,
        "integer" => ParamType::Integer,
        "date" => ParamType::Date,
        "enum" => ParamType::Enum,
        "number" => ParamType::Number,
        "boolean" => ParamType::Boolean,
        "timestamp" => ParamType::Timestamp,
        _ => return None,
    })
}

/// `Some(None)`: no `combinations` (any subset allowed).
pub(super) fn read_combinations(
    reader: &mut Reader<'_>,
    fields: &Fields<'_>,
    declared: &BTreeSet<String>,
) -> Option<Option<Vec<BTreeSet<String>>>> {
    let Some(node) = fields.get("combinations") else {
        return Some(None);
    };
    let items = reader.sequence(node, "`combinations`")?;
    if items.len() > MAX_COMBINATIONS {
        reader.error(
            node.line,
            format!("more than {MAX_COMBINATIONS} combinations"),
        );
        return None;
    }
    let mut combinations = Vec::with_capacity(items.len());
    let mut complete = true;
    for item in items {
        let Some(names) = reader.identifiers(item, "a param in `combinations`") else {
            complete = false;
            continue;
        };
        let mut set = BTreeSet::new();
        for (name, line) in names {
            if !declared.contains(&name) {
                reader.error(
                    line,
                    format!("`combinations` names param `{name}`, which is not declared"),
                );
                complete = false;
            } else if !set.insert(name.clone()) {
                reader.error(
                    line,
                    format!("`combinations` lists `{name}` twice in one entry"),
                );
                complete = false;
            }
        }
        combinations.push(set);
    }
    complete.then_some(Some(combinations))
}
