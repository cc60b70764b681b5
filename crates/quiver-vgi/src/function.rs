//! A complete function: its declarations (`declarations.rs`) and its body, the closures that
//! bind, scan, map or finalize. The builders (`builders.rs`) check a definition when it is
//! made, so a worker with an inconsistent function fails at startup, not in the middle of a
//! query.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use quiver_wire::ErrorReport;

use crate::aggregate::ErasedAggregator;
use crate::args::Args;
use crate::declarations::{is_identifier, Arg, Capabilities, FunctionKind};
use crate::docs::{Example, FunctionDocs};
use crate::in_out_state::{InOutInit, InOutState};
use crate::limits::{ARGUMENTS_MAX, MAX_WORKERS_MAX};
use crate::scan::{ScanInit, TableScan};

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

/// Makes the scan state of one connection.
pub type ScanFactory =
    dyn Fn(&ScanInit<'_>) -> Result<Box<dyn TableScan>, ErrorReport> + Send + Sync;

/// Rebuilds a scan state from the bytes its [`TableScan::snapshot`] gave.
pub type ScanResume =
    dyn Fn(&ScanInit<'_>, &[u8]) -> Result<Box<dyn TableScan>, ErrorReport> + Send + Sync;

/// Rebuilds a table-in-out state from the bytes its [`InOutState::snapshot`] gave.
pub type InOutResume =
    dyn Fn(&InOutInit<'_>, &[u8]) -> Result<Box<dyn InOutState>, ErrorReport> + Send + Sync;

/// The units of work an execution shares between its connections.
pub type WorkBody = dyn Fn(&Args) -> Result<u64, ErrorReport> + Send + Sync;

/// The splits a planned scan is divided into: one payload (the function's own bytes naming a
/// unit of work) per split.
pub type SplitsBody = dyn Fn(&Args) -> Result<Vec<Vec<u8>>, ErrorReport> + Send + Sync;

/// An estimate of a table function's row count, for the engine's planner.
pub type CardinalityBody = dyn Fn(&Args) -> Result<Option<u64>, ErrorReport> + Send + Sync;

/// Makes the state of one table-in-out substream.
pub type InOutFactory =
    dyn Fn(&InOutInit<'_>) -> Result<Box<dyn InOutState>, ErrorReport> + Send + Sync;

/// A buffered table function's body: the whole input in, the output batches out.
pub type BufferedBody =
    dyn Fn(&Args, &[RecordBatch]) -> Result<Vec<RecordBatch>, ErrorReport> + Send + Sync;

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
        resume: Option<Arc<ScanResume>>,
        cardinality: Option<Arc<CardinalityBody>>,
        splits: Option<Arc<SplitsBody>>,
    },
    TableInOut {
        bind: Arc<BindBody>,
        state: Arc<InOutFactory>,
        resume: Option<Arc<InOutResume>>,
    },
    Buffered {
        bind: Arc<BindBody>,
        body: Arc<BufferedBody>,
    },
    Aggregate {
        result_type: DataType,
        aggregator: Arc<dyn ErasedAggregator>,
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
    pub(crate) docs: FunctionDocs,
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

    /// Whether its scan is planned into splits (`table_function_plan`).
    pub fn supports_splits(&self) -> bool {
        matches!(
            &self.body,
            Body::Table {
                splits: Some(_),
                ..
            }
        )
    }

    /// Puts the function in schema `name` (declared with the worker's `schema` or not); without
    /// this it lives in the worker's default schema.
    pub fn in_schema(mut self, name: &str) -> Function {
        assert!(
            is_identifier(name),
            "schema name '{name}' must be a lowercase identifier"
        );
        self.docs.schema = Some(name.to_string());
        self
    }

    /// Its comment (`duckdb_functions().comment`).
    pub fn comment(mut self, comment: &str) -> Function {
        self.docs.comment = Some(comment.to_string());
        self
    }

    /// Adds a tag (`duckdb_functions().tags`).
    pub fn tag(mut self, key: &str, value: &str) -> Function {
        self.docs.tags.push((key.to_string(), value.to_string()));
        self
    }

    /// Adds an example query, runnable as written (`duckdb_functions().examples`).
    pub fn example(mut self, sql: &str, description: &str) -> Function {
        self.docs.examples.push(Example {
            sql: sql.to_string(),
            description: description.to_string(),
        });
        self
    }

    /// Adds a category (`duckdb_functions().categories`).
    pub fn category(mut self, category: &str) -> Function {
        self.docs.categories.push(category.to_string());
        self
    }

    /// Its comment, tags, examples, categories and schema.
    pub fn docs(&self) -> &FunctionDocs {
        &self.docs
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
            FunctionKind::TableInOut | FunctionKind::TableBuffering => {
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
        if !matches!(self.kind, FunctionKind::Scalar | FunctionKind::Aggregate) {
            assert!(
                self.args.iter().all(|a| !a.constant),
                "{}: constant args are for scalars and aggregates",
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
        if let Body::Table { work, splits, .. } = &self.body {
            // Without shared work or splits, every connection would produce the whole table.
            assert!(
                work.is_some() || splits.is_some() || self.caps.max_workers == Some(1),
                "{}: a table function with max_workers > 1 needs shared_work() or splits()",
                self.name
            );
        }
    }
}
