//! Function definitions: name, arguments, result, documentation, capabilities and
//! the body, and the traits a function's per-stream state implements. The
//! builders (`builders.rs`) check a definition when it is made, so a worker with
//! an inconsistent function fails at startup, not in the middle of a query.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, SchemaRef};
use quiver_wire::ErrorReport;

use crate::arguments::Args;
use crate::limits::{ARGUMENTS_MAX, MAX_WORKERS_MAX};
use crate::table::{Scan, ScanInit};
use crate::table_in_out::{Emitter, InOutInit};

/// The three kinds of function this SDK serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    /// Columns in, one `result` column out, row for row.
    Scalar,
    /// Arguments in, a table out (`FROM f(...)`).
    Table,
    /// A table in (the `TABLE` argument), a table out, with an optional finalize.
    TableInOut,
}

impl FunctionKind {
    /// The `FunctionType` member name on the wire (table-in-out is `TABLE`).
    pub fn wire_name(self) -> &'static str {
        match self {
            FunctionKind::Scalar => "SCALAR",
            FunctionKind::Table | FunctionKind::TableInOut => "TABLE",
        }
    }

    /// How the kind reads in error messages.
    pub fn describe(self) -> &'static str {
        match self {
            FunctionKind::Scalar => "a scalar function",
            FunctionKind::Table => "a table function",
            FunctionKind::TableInOut => "a table-in-out function",
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

    /// For scalar functions: the argument must be a constant and arrives at bind,
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

/// Scalar body: the input columns (cast to the declared types), the constant
/// arguments, and the row count; returns the `result` column, one value per row.
pub type ScalarBody = dyn Fn(&ScalarInput<'_>) -> Result<ArrayRef, ErrorReport> + Send + Sync;

/// What a scalar body sees for one input batch.
pub struct ScalarInput<'a> {
    /// One array per column argument, in declaration order.
    pub columns: &'a [ArrayRef],
    /// Constant arguments, bound once per call.
    pub args: &'a Args,
    /// Rows in this batch (also right when there are no column arguments).
    pub num_rows: usize,
}

/// Bind body of table and table-in-out functions: the output schema.
pub type BindBody = dyn Fn(&BindInput<'_>) -> Result<SchemaRef, ErrorReport> + Send + Sync;

/// What a bind body sees.
pub struct BindInput<'a> {
    /// The bound arguments.
    pub args: &'a Args,
    /// The input table's schema (table-in-out only).
    pub input_schema: Option<&'a SchemaRef>,
}

/// The per-connection state of a table function scan.
pub trait TableScan: Send {
    /// The next batch of the unprojected output schema, or `None` at the end.
    /// Columns that [`Scan::needs_column`] reports unneeded may be all-null.
    fn next_batch(&mut self, scan: &mut Scan<'_>) -> Result<Option<RecordBatch>, ErrorReport>;
}

impl<F> TableScan for F
where
    F: FnMut(&mut Scan<'_>) -> Result<Option<RecordBatch>, ErrorReport> + Send,
{
    fn next_batch(&mut self, scan: &mut Scan<'_>) -> Result<Option<RecordBatch>, ErrorReport> {
        self(scan)
    }
}

/// Makes the scan state of one connection.
pub type ScanFactory =
    dyn Fn(&ScanInit<'_>) -> Result<Box<dyn TableScan>, ErrorReport> + Send + Sync;

/// The units of work an execution shares between its connections.
pub type WorkBody = dyn Fn(&Args) -> Result<u64, ErrorReport> + Send + Sync;

/// An estimate of a table function's row count, for the engine's planner.
pub type CardinalityBody = dyn Fn(&Args) -> Result<Option<u64>, ErrorReport> + Send + Sync;

/// The per-substream state of a table-in-out function.
pub trait InOutState: Send + 'static {
    /// Handles one input batch, emitting any number of output batches.
    fn process(&mut self, input: &RecordBatch, out: &mut Emitter) -> Result<(), ErrorReport>;

    /// Emits what remains once the input has ended (only called for functions
    /// that declare a finalize).
    fn finalize(&mut self, _out: &mut Emitter) -> Result<(), ErrorReport> {
        Ok(())
    }
}

/// Makes the state of one table-in-out substream.
pub type InOutFactory =
    dyn Fn(&InOutInit<'_>) -> Result<Box<dyn InOutState>, ErrorReport> + Send + Sync;

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
}

/// The body of a function, by kind.
pub(crate) enum Body {
    Scalar {
        result_type: DataType,
        body: Arc<ScalarBody>,
    },
    Table {
        bind: Arc<BindBody>,
        work: Option<Arc<WorkBody>>,
        scan: Arc<ScanFactory>,
        cardinality: Option<Arc<CardinalityBody>>,
    },
    TableInOut {
        bind: Arc<BindBody>,
        state: Arc<InOutFactory>,
    },
}

/// A complete function definition, ready to register with a worker.
pub struct Function {
    pub(crate) name: String,
    pub(crate) kind: FunctionKind,
    pub(crate) description: String,
    pub(crate) args: Vec<Arg>,
    pub(crate) caps: Capabilities,
    pub(crate) body: Body,
}

impl Function {
    /// The SQL name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kind.
    pub fn kind(&self) -> FunctionKind {
        self.kind
    }

    /// The capabilities.
    pub fn capabilities(&self) -> Capabilities {
        self.caps
    }

    /// Positional arguments (the TABLE one excluded), in declaration order.
    pub(crate) fn positional_args(&self) -> impl Iterator<Item = &Arg> {
        self.args.iter().filter(|a| !a.named && !a.table)
    }

    /// Named arguments, sorted by name (the catalog order).
    pub(crate) fn named_args(&self) -> Vec<&Arg> {
        let mut named: Vec<&Arg> = self.args.iter().filter(|a| a.named).collect();
        named.sort_by(|a, b| a.name.cmp(&b.name));
        named
    }

    /// Scalar column arguments, in declaration order.
    pub(crate) fn column_args(&self) -> impl Iterator<Item = &Arg> {
        self.args
            .iter()
            .filter(|a| !a.named && !a.constant && !a.table)
    }

    pub(crate) fn check(&self) {
        assert!(
            is_identifier(&self.name),
            "function name '{}' must be a lowercase identifier",
            self.name
        );
        assert!(
            self.args.len() <= ARGUMENTS_MAX,
            "{}: too many arguments",
            self.name
        );
        for (index, arg) in self.args.iter().enumerate() {
            assert!(
                self.args[..index]
                    .iter()
                    .all(|other| other.name != arg.name),
                "{}: argument '{}' declared twice",
                self.name,
                arg.name
            );
        }
        let tables = self.args.iter().filter(|a| a.table).count();
        match self.kind {
            FunctionKind::TableInOut => {
                assert_eq!(
                    tables, 1,
                    "{}: a table-in-out function has one TABLE argument",
                    self.name
                )
            }
            _ => assert_eq!(
                tables, 0,
                "{}: only table-in-out functions take a TABLE",
                self.name
            ),
        }
        if self.kind != FunctionKind::Scalar {
            assert!(
                self.args.iter().all(|a| !a.constant),
                "{}: constant args are for scalars",
                self.name
            );
        }
        if let Some(max_workers) = self.caps.max_workers {
            assert!(
                (1..=MAX_WORKERS_MAX).contains(&max_workers),
                "{}: max_workers out of range",
                self.name
            );
        }
        assert!(
            !self.caps.has_finalize || self.kind == FunctionKind::TableInOut,
            "{}: only table-in-out functions finalize",
            self.name
        );
        if let Body::Table { work, .. } = &self.body {
            // Without shared work, every connection would produce the whole table.
            assert!(
                work.is_some() || self.caps.max_workers == Some(1),
                "{}: a table function with max_workers > 1 needs shared_work()",
                self.name
            );
        }
    }
}

/// Lowercase ASCII identifier: what SQL users type unquoted.
fn is_identifier(name: &str) -> bool {
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
