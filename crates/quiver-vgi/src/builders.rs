//! The three builders a worker defines its functions with. Each takes the
//! name, the arguments, documentation and capabilities, then the body, and
//! returns a checked [`Function`].

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use quiver_wire::ErrorReport;

use crate::args::Args;
use crate::declarations::{Arg, Capabilities, FunctionKind};
use crate::docs::FunctionDocs;
use crate::function::{
    BindBody, BindInput, Body, CardinalityBody, Function, InOutFactory, InOutResume, ScalarInput,
    ScanFactory, ScanResume, SplitsBody, WorkBody,
};
use crate::in_out_state::{Emitter, InOutInit, InOutState};
use crate::scan::{ScanInit, TableScan};

/// A scalar function under construction.
///
/// ```
/// use std::sync::Arc;
/// use arrow_array::{cast::AsArray, ArrayRef, Int64Array};
/// use arrow_schema::DataType;
/// use quiver_vgi::{Arg, ScalarFunction};
///
/// let double = ScalarFunction::new("double", DataType::Int64)
///     .doc("Twice the input")
///     .arg(Arg::new("x", DataType::Int64).doc("a number"))
///     .body(|input| {
///         let x = input.columns[0].as_primitive::<arrow_array::types::Int64Type>();
///         Ok(Arc::new(x.unary::<_, arrow_array::types::Int64Type>(|v| v.wrapping_mul(2))) as ArrayRef)
///     });
/// assert_eq!(double.name(), "double");
/// ```
pub struct ScalarFunction {
    name: String,
    result_type: DataType,
    description: String,
    args: Vec<Arg>,
    max_workers: Option<u32>,
}

impl ScalarFunction {
    /// A scalar function returning `result_type`.
    pub fn new(name: &str, result_type: DataType) -> Self {
        Self {
            name: name.into(),
            result_type,
            description: String::new(),
            args: vec![],
            max_workers: None,
        }
    }

    /// Documentation shown in the catalog.
    pub fn doc(mut self, description: &str) -> Self {
        self.description = description.into();
        self
    }

    /// Adds an argument (a column unless marked [`Arg::constant`]).
    pub fn arg(mut self, arg: Arg) -> Self {
        assert!(!arg.named, "scalar arguments are positional");
        self.args.push(arg);
        self
    }

    /// Limits how many connections the engine may spread the input over.
    pub fn max_workers(mut self, max_workers: u32) -> Self {
        self.max_workers = Some(max_workers);
        self
    }

    /// The body; completes the definition.
    pub fn body<F>(self, body: F) -> Function
    where
        F: Fn(&ScalarInput<'_>) -> Result<ArrayRef, ErrorReport> + Send + Sync + 'static,
    {
        let function = Function {
            name: self.name,
            kind: FunctionKind::Scalar,
            description: self.description,
            args: self.args,
            caps: Capabilities {
                max_workers: self.max_workers,
                ..Capabilities::default()
            },
            body: Body::Scalar {
                result_type: self.result_type,
                body: Arc::new(body),
            },
            docs: FunctionDocs::default(),
        };
        function.check();
        function
    }
}

/// A table function under construction.
pub struct TableFunction {
    name: String,
    description: String,
    args: Vec<Arg>,
    caps: Capabilities,
    bind: Option<Arc<BindBody>>,
    work: Option<Arc<WorkBody>>,
    cardinality: Option<Arc<CardinalityBody>>,
    splits: Option<Arc<SplitsBody>>,
    resume: Option<Arc<ScanResume>>,
}

impl TableFunction {
    /// A table function; single-connection until [`TableFunction::shared_work`]
    /// and [`TableFunction::max_workers`] say otherwise.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            args: vec![],
            caps: Capabilities {
                max_workers: Some(1),
                ..Capabilities::default()
            },
            bind: None,
            work: None,
            cardinality: None,
            splits: None,
            resume: None,
        }
    }

    /// Documentation shown in the catalog.
    pub fn doc(mut self, description: &str) -> Self {
        self.description = description.into();
        self
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: Arg) -> Self {
        assert!(
            !arg.table && !arg.constant,
            "table functions take plain arguments"
        );
        self.args.push(arg);
        self
    }

    /// A fixed output schema.
    pub fn output(self, schema: SchemaRef) -> Self {
        self.bind(move |_| Ok(schema.clone()))
    }

    /// An output schema computed from the arguments at bind.
    pub fn bind<F>(mut self, bind: F) -> Self
    where
        F: Fn(&BindInput<'_>) -> Result<SchemaRef, ErrorReport> + Send + Sync + 'static,
    {
        self.bind = Some(Arc::new(bind));
        self
    }

    /// Honours projection pushdown (the SDK drops unprojected columns).
    pub fn projection_pushdown(mut self) -> Self {
        self.caps.projection_pushdown = true;
        self
    }

    /// Accepts filter pushdown (the SDK evaluates the supported subset).
    pub fn filter_pushdown(mut self) -> Self {
        self.caps.filter_pushdown = true;
        self
    }

    /// Lets the engine scan with up to `max_workers` connections.
    pub fn max_workers(mut self, max_workers: u32) -> Self {
        self.caps.max_workers = Some(max_workers);
        self
    }

    /// The execution's total units of work (rows, files, chunks), which its
    /// connections claim from one shared counter with [`Scan::claim`](crate::Scan::claim).
    pub fn shared_work<F>(mut self, work: F) -> Self
    where
        F: Fn(&Args) -> Result<u64, ErrorReport> + Send + Sync + 'static,
    {
        self.work = Some(Arc::new(work));
        self
    }

    /// Plans the scan into splits: one payload per unit of work. The engine asks for the plan
    /// (`table_function_plan`), then redeems each split on any connection; the scan reads its
    /// unit from [`ScanInit::split`](crate::ScanInit::split). With it, `max_workers` bounds how
    /// many splits run at once.
    pub fn splits<F>(mut self, splits: F) -> Self
    where
        F: Fn(&Args) -> Result<Vec<Vec<u8>>, ErrorReport> + Send + Sync + 'static,
    {
        self.splits = Some(Arc::new(splits));
        self
    }

    /// A row-count estimate for the engine's planner.
    pub fn cardinality<F>(mut self, cardinality: F) -> Self
    where
        F: Fn(&Args) -> Result<Option<u64>, ErrorReport> + Send + Sync + 'static,
    {
        self.cardinality = Some(Arc::new(cardinality));
        self
    }

    /// Lets the scan's state travel between replicas: `resume` rebuilds a scan from what its
    /// [`TableScan::snapshot`] returned (with the same [`ScanInit`] the scan started with).
    /// Over HTTP a resumable scan's next turn may then run on any replica sharing the token
    /// key; the SDK carries the bound arguments, projection, filters and a shared-work counter
    /// itself. Without it the scan stays in the process that started it.
    pub fn resume<F, S>(mut self, resume: F) -> Self
    where
        F: Fn(&ScanInit<'_>, &[u8]) -> Result<S, ErrorReport> + Send + Sync + 'static,
        S: TableScan + 'static,
    {
        self.resume = Some(Arc::new(move |init: &ScanInit<'_>, bytes: &[u8]| {
            Ok(Box::new(resume(init, bytes)?) as Box<dyn TableScan>)
        }));
        self
    }

    /// The scan: called once per connection, returns its state; completes the
    /// definition.
    pub fn scan<F, S>(self, scan: F) -> Function
    where
        F: Fn(&ScanInit<'_>) -> Result<S, ErrorReport> + Send + Sync + 'static,
        S: TableScan + 'static,
    {
        let bind = self
            .bind
            .expect("a table function needs output() or bind()");
        let factory: Arc<ScanFactory> =
            Arc::new(move |init: &ScanInit<'_>| Ok(Box::new(scan(init)?) as Box<dyn TableScan>));
        let function = Function {
            name: self.name,
            kind: FunctionKind::Table,
            description: self.description,
            args: self.args,
            caps: self.caps,
            body: Body::Table {
                bind,
                work: self.work,
                scan: factory,
                resume: self.resume,
                cardinality: self.cardinality,
                splits: self.splits,
            },
            docs: FunctionDocs::default(),
        };
        function.check();
        function
    }
}

/// A table-in-out function under construction.
pub struct TableInOutFunction {
    name: String,
    description: String,
    args: Vec<Arg>,
    caps: Capabilities,
    bind: Arc<BindBody>,
    resume: Option<Arc<InOutResume>>,
}

impl TableInOutFunction {
    /// A table-in-out function whose output schema is its input's until
    /// [`TableInOutFunction::output`] or [`TableInOutFunction::bind`] say
    /// otherwise; single-connection until [`TableInOutFunction::max_workers`].
    pub fn new(name: &str) -> Self {
        let same_as_input: Arc<BindBody> = Arc::new(|input: &BindInput<'_>| {
            Ok(input
                .input_schema
                .expect("table-in-out binds carry an input schema")
                .clone())
        });
        Self {
            name: name.into(),
            description: String::new(),
            args: vec![],
            caps: Capabilities {
                max_workers: Some(1),
                ..Capabilities::default()
            },
            bind: same_as_input,
            resume: None,
        }
    }

    /// Documentation shown in the catalog.
    pub fn doc(mut self, description: &str) -> Self {
        self.description = description.into();
        self
    }

    /// Adds an argument; exactly one must be [`Arg::table`].
    pub fn arg(mut self, arg: Arg) -> Self {
        assert!(
            !arg.constant,
            "table-in-out functions take no constant args"
        );
        self.args.push(arg);
        self
    }

    /// A fixed output schema.
    pub fn output(self, schema: SchemaRef) -> Self {
        self.bind(move |_| Ok(schema.clone()))
    }

    /// An output schema computed at bind from the arguments and input schema.
    pub fn bind<F>(mut self, bind: F) -> Self
    where
        F: Fn(&BindInput<'_>) -> Result<SchemaRef, ErrorReport> + Send + Sync + 'static,
    {
        self.bind = Arc::new(bind);
        self
    }

    /// Honours projection pushdown on its output.
    pub fn projection_pushdown(mut self) -> Self {
        self.caps.projection_pushdown = true;
        self
    }

    /// Accepts filter pushdown on its output.
    pub fn filter_pushdown(mut self) -> Self {
        self.caps.filter_pushdown = true;
        self
    }

    /// Lets the engine spread the input over up to `max_workers` connections.
    pub fn max_workers(mut self, max_workers: u32) -> Self {
        self.caps.max_workers = Some(max_workers);
        self
    }

    /// A stateless body: one output batch per input batch; completes the
    /// definition.
    pub fn map<F>(self, map: F) -> Function
    where
        F: Fn(&RecordBatch) -> Result<RecordBatch, ErrorReport> + Send + Sync + 'static,
    {
        let map: Arc<MapBody> = Arc::new(map);
        let resumed = map.clone();
        self.resume(move |_, _| {
            Ok(MapState {
                map: resumed.clone(),
            })
        })
        .build(false, move |_| Ok(MapState { map: map.clone() }))
    }

    /// Makes it a buffered table function (`table_buffering`): `body` runs once, with every
    /// input batch, after the input ended; completes the definition.
    pub fn buffered<F>(self, body: F) -> Function
    where
        F: Fn(&Args, &[RecordBatch]) -> Result<Vec<RecordBatch>, ErrorReport>
            + Send
            + Sync
            + 'static,
    {
        let function = Function {
            name: self.name,
            kind: FunctionKind::TableBuffering,
            description: self.description,
            args: self.args,
            caps: Capabilities {
                max_workers: Some(1),
                ..self.caps
            },
            body: Body::Buffered {
                bind: self.bind,
                body: Arc::new(body),
            },
            docs: FunctionDocs::default(),
        };
        function.check();
        function
    }

    /// Lets the state travel between replicas: `resume` rebuilds a state from what its
    /// [`InOutState::snapshot`] returned. Over HTTP the substream's next turn may then run on
    /// any replica sharing the token key (the SDK carries the bound arguments, projection,
    /// filters and output still pending). Ignored for a function with a finalize, whose state
    /// waits in its process for FINALIZE. [`TableInOutFunction::map`] sets it itself.
    pub fn resume<F, S>(mut self, resume: F) -> Self
    where
        F: Fn(&InOutInit<'_>, &[u8]) -> Result<S, ErrorReport> + Send + Sync + 'static,
        S: InOutState,
    {
        self.resume = Some(Arc::new(move |init: &InOutInit<'_>, bytes: &[u8]| {
            Ok(Box::new(resume(init, bytes)?) as Box<dyn InOutState>)
        }));
        self
    }

    /// A stateful body, one state per substream; completes the definition.
    pub fn state<F, S>(self, state: F) -> Function
    where
        F: Fn(&InOutInit<'_>) -> Result<S, ErrorReport> + Send + Sync + 'static,
        S: InOutState,
    {
        self.build(false, state)
    }

    /// A stateful body whose [`InOutState::finalize`] runs after the input ends;
    /// completes the definition.
    pub fn state_with_finalize<F, S>(self, state: F) -> Function
    where
        F: Fn(&InOutInit<'_>) -> Result<S, ErrorReport> + Send + Sync + 'static,
        S: InOutState,
    {
        self.build(true, state)
    }

    fn build<F, S>(self, has_finalize: bool, state: F) -> Function
    where
        F: Fn(&InOutInit<'_>) -> Result<S, ErrorReport> + Send + Sync + 'static,
        S: InOutState,
    {
        let factory: Arc<InOutFactory> =
            Arc::new(move |init: &InOutInit<'_>| Ok(Box::new(state(init)?) as Box<dyn InOutState>));
        let function = Function {
            name: self.name,
            kind: FunctionKind::TableInOut,
            description: self.description,
            args: self.args,
            caps: Capabilities {
                has_finalize,
                ..self.caps
            },
            body: Body::TableInOut {
                bind: self.bind,
                state: factory,
                resume: self.resume,
            },
            docs: FunctionDocs::default(),
        };
        function.check();
        function
    }
}

type MapBody = dyn Fn(&RecordBatch) -> Result<RecordBatch, ErrorReport> + Send + Sync;

/// The state of a stateless table-in-out function.
struct MapState {
    map: Arc<MapBody>,
}

impl InOutState for MapState {
    fn process(&mut self, input: &RecordBatch, out: &mut Emitter) -> Result<(), ErrorReport> {
        out.emit((self.map)(input)?);
        Ok(())
    }

    /// A map keeps nothing between batches.
    fn snapshot(&self) -> Option<Vec<u8>> {
        Some(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::Scan;

    #[test]
    #[should_panic(expected = "needs shared_work")]
    fn parallel_tables_need_shared_work() {
        let _ = TableFunction::new("t")
            .output(Arc::new(arrow_schema::Schema::empty()))
            .max_workers(2)
            .scan(|_| Ok(|_: &mut Scan<'_>| Ok(None)));
    }

    #[test]
    #[should_panic(expected = "one TABLE argument")]
    fn table_in_out_needs_its_table() {
        let _ = TableInOutFunction::new("t").map(|b| Ok(b.clone()));
    }
}
