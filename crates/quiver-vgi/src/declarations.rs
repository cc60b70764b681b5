//! What a function declares, as plain data: its kind, its arguments and its capabilities.
//! Everything else in the SDK reads these; they depend on nothing in it but the limits.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, StringArray};
use arrow_schema::DataType;
use quiver_vgi_contract::enums::function_type;

/// The three kinds of function this SDK serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    /// Columns in, one `result` column out, row for row.
    Scalar,
    /// Arguments in, a table out (`FROM f(...)`).
    Table,
    /// A table in (the `TABLE` argument), a table out, with an optional finalize.
    TableInOut,
    /// Rows in, one value per group out (`aggregate.rs`).
    Aggregate,
    /// A table in, a table out once the whole input arrived (`table_buffering`).
    TableBuffering,
}

impl FunctionKind {
    /// The `FunctionType` member name on the wire (table-in-out is `TABLE`).
    pub fn wire_name(self) -> &'static str {
        match self {
            FunctionKind::Scalar => function_type::SCALAR,
            FunctionKind::Table | FunctionKind::TableInOut => function_type::TABLE,
            FunctionKind::Aggregate => quiver_vgi_contract::aggregate::FUNCTION_TYPE,
            FunctionKind::TableBuffering => function_type::TABLE_BUFFERING,
        }
    }

    /// How the kind reads in error messages.
    pub fn describe(self) -> &'static str {
        match self {
            FunctionKind::Scalar => "a scalar function",
            FunctionKind::Table => "a table function",
            FunctionKind::TableInOut => "a table-in-out function",
            FunctionKind::Aggregate => "an aggregate function",
            FunctionKind::TableBuffering => "a buffered table function",
        }
    }
}

/// One declared argument.
#[derive(Clone, Debug)]
pub struct Arg {
    pub(crate) name: String,
    pub(crate) data_type: DataType,
    pub(crate) doc: String,
    pub(crate) named: bool,
    pub(crate) constant: bool,
    pub(crate) table: bool,
    pub(crate) nullable: bool,
    pub(crate) default: Option<ArrayRef>,
    pub(crate) min: Option<i64>,
    pub(crate) max: Option<i64>,
}

impl Arg {
    /// A positional argument of `data_type`.
    pub fn new(name: &str, data_type: DataType) -> Arg {
        assert!(
            is_identifier(name),
            "argument name '{name}' must be a lowercase identifier"
        );
        Arg {
            name: name.to_string(),
            data_type,
            doc: String::new(),
            named: false,
            constant: false,
            table: false,
            nullable: false,
            default: None,
            min: None,
            max: None,
        }
    }

    /// A named argument (`name := value` in SQL).
    pub fn named(name: &str, data_type: DataType) -> Arg {
        Arg {
            named: true,
            ..Arg::new(name, data_type)
        }
    }

    /// The table input of a table-in-out function.
    pub fn table(name: &str) -> Arg {
        Arg {
            table: true,
            ..Arg::new(name, DataType::Null)
        }
    }

    /// Documentation shown in the catalog.
    pub fn doc(mut self, doc: &str) -> Arg {
        self.doc = doc.to_string();
        self
    }

    /// Accepts SQL NULL (otherwise a NULL argument is refused at bind).
    pub fn nullable(mut self) -> Arg {
        self.nullable = true;
        self
    }

    /// For scalar and aggregate functions: the argument must be a constant and arrives at bind,
    /// not as an input column.
    pub fn constant(mut self) -> Arg {
        self.constant = true;
        self
    }

    /// Smallest accepted integer value.
    pub fn min(mut self, min: i64) -> Arg {
        assert!(
            self.data_type.is_integer(),
            "only integer arguments take a range"
        );
        self.min = Some(min);
        self
    }

    /// Largest accepted integer value.
    pub fn max(mut self, max: i64) -> Arg {
        assert!(
            self.data_type.is_integer(),
            "only integer arguments take a range"
        );
        self.max = Some(max);
        self
    }

    /// The value used when a named argument is not given (one element of the
    /// argument's type).
    pub fn default_value(mut self, value: ArrayRef) -> Arg {
        assert!(self.named, "only named arguments have defaults");
        assert_eq!(value.len(), 1, "a default is one value");
        assert_eq!(
            value.data_type(),
            &self.data_type,
            "a default has the argument's type"
        );
        self.default = Some(value);
        self
    }

    /// An integer default.
    pub fn default_i64(self, value: i64) -> Arg {
        let array: ArrayRef = Arc::new(Int64Array::from(vec![value]));
        let array = arrow_cast::cast(&array, &self.data_type).expect("an integer argument");
        self.default_value(array)
    }

    /// A string default.
    pub fn default_str(self, value: &str) -> Arg {
        self.default_value(Arc::new(StringArray::from(vec![value])))
    }

    /// The `vgi_range` interval text, e.g. `[0, +inf)`.
    pub(crate) fn range_text(&self) -> Option<String> {
        if self.min.is_none() && self.max.is_none() {
            return None;
        }
        let low = self.min.map_or("(-inf".to_string(), |v| format!("[{v}"));
        let high = self.max.map_or("+inf)".to_string(), |v| format!("{v}]"));
        Some(format!("{low}, {high}"))
    }
}

/// What a function promises the engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Capabilities {
    /// Honours `projection_ids`.
    pub projection_pushdown: bool,
    /// Accepts pushed-down filters (evaluated by the SDK).
    pub filter_pushdown: bool,
    /// Most connections one execution may use; `None` = unbounded.
    pub max_workers: Option<u32>,
    /// Table-in-out: has a FINALIZE phase.
    pub has_finalize: bool,
    /// Aggregates: the result depends on the order of the rows (`ORDER BY` inside the call).
    pub order_dependent: bool,
    /// Aggregates: the result changes under `DISTINCT`.
    pub distinct_dependent: bool,
}

/// Lowercase ASCII identifier: what SQL users type unquoted.
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_render_as_intervals() {
        assert_eq!(
            Arg::new("n", DataType::Int64).min(0).range_text().unwrap(),
            "[0, +inf)"
        );
        assert_eq!(
            Arg::new("n", DataType::Int64)
                .min(1)
                .max(10)
                .range_text()
                .unwrap(),
            "[1, 10]"
        );
        assert!(Arg::new("n", DataType::Int64).range_text().is_none());
    }
}
