//! Aggregate functions: the [`Aggregator`] a worker author writes, its builder, and the five
//! unary methods that serve it (`aggregate_bind`, `_update`, `_combine`, `_finalize`,
//! `_destructor`; the exchange is described in `quiver_vgi_contract::aggregate`).
//!
//! The engine sends group ids; the states live here, per execution, in this process (the engine
//! keeps every call of one execution on one connection). Executions and groups are bounded: the
//! oldest execution is dropped past [`AGGREGATE_EXECUTIONS_MAX`] (an engine that died before its
//! destructor cannot grow a long-lived worker), and an execution refuses groups past
//! [`AGGREGATE_GROUPS_MAX`].

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use quiver_rpc::{field, Method, Service};
use quiver_vgi_contract::aggregate::{self as contract, BatchRequest};
use quiver_vgi_contract::{errors, BindRequest};
use quiver_wire::ErrorReport;

use crate::args::Args;
use crate::bind::bind_call;
use crate::catalog::Catalog;
use crate::declarations::{Arg, Capabilities, FunctionKind};
use crate::docs::FunctionDocs;
use crate::execution::ExecutionId;
use crate::function::{Body, Function};
use crate::limits::{AGGREGATE_EXECUTIONS_MAX, AGGREGATE_GROUPS_MAX};
use crate::logging::{self, Level};

/// What an aggregate's update sees: the value columns (cast to the declared types) and the
/// constant arguments.
pub struct AggregateInput<'a> {
    /// One array per column argument, in declaration order.
    pub columns: &'a [ArrayRef],
    /// Constant arguments, bound once per execution.
    pub args: &'a Args,
}

/// An aggregate's behaviour: a state per group, folded row by row, merged, finalized.
pub trait Aggregator: Send + Sync + 'static {
    /// One group's state.
    type State: Send + 'static;

    /// A new group's state (the identity of [`Aggregator::combine`]).
    fn init(&self, args: &Args) -> Self::State;

    /// Folds rows `rows` (indices into `input.columns`, in input order) into `state`. NULLs are
    /// the function's to skip or count.
    fn update(
        &self,
        state: &mut Self::State,
        input: &AggregateInput<'_>,
        rows: &[usize],
    ) -> Result<(), ErrorReport>;

    /// Merges `source` (a partial state of the same execution) into `target`.
    fn combine(&self, target: &mut Self::State, source: &Self::State) -> Result<(), ErrorReport>;

    /// One value per state, in order, of the declared result type; `None` is a group that never
    /// saw a row (SQL gives NULL for a sum over nothing, 0 for a count).
    fn finalize(
        &self,
        states: &[Option<&Self::State>],
        args: &Args,
    ) -> Result<ArrayRef, ErrorReport>;
}

type State = Box<dyn Any + Send>;

/// [`Aggregator`] with its state type erased, so that functions of different states share a
/// catalog.
pub(crate) trait ErasedAggregator: Send + Sync {
    fn init(&self, args: &Args) -> State;
    fn update(
        &self,
        state: &mut State,
        input: &AggregateInput<'_>,
        rows: &[usize],
    ) -> Result<(), ErrorReport>;
    fn combine(&self, target: &mut State, source: &State) -> Result<(), ErrorReport>;
    fn finalize(&self, states: &[Option<&State>], args: &Args) -> Result<ArrayRef, ErrorReport>;
}

fn typed<S: 'static>(state: &State) -> &S {
    state
        .downcast_ref()
        .expect("states of one execution have one type")
}

impl<A: Aggregator> ErasedAggregator for A {
    fn init(&self, args: &Args) -> State {
        Box::new(Aggregator::init(self, args))
    }
    fn update(
        &self,
        state: &mut State,
        input: &AggregateInput<'_>,
        rows: &[usize],
    ) -> Result<(), ErrorReport> {
        let state = state
            .downcast_mut()
            .expect("states of one execution have one type");
        Aggregator::update(self, state, input, rows)
    }
    fn combine(&self, target: &mut State, source: &State) -> Result<(), ErrorReport> {
        let target = target
            .downcast_mut()
            .expect("states of one execution have one type");
        Aggregator::combine(self, target, typed::<A::State>(source))
    }
    fn finalize(&self, states: &[Option<&State>], args: &Args) -> Result<ArrayRef, ErrorReport> {
        let states: Vec<Option<&A::State>> = states.iter().map(|s| s.map(typed)).collect();
        Aggregator::finalize(self, &states, args)
    }
}

/// An aggregate function under construction.
///
/// ```
/// use std::sync::Arc;
/// use arrow_array::{cast::AsArray, types::Int64Type, Array, ArrayRef, Int64Array};
/// use arrow_schema::DataType;
/// use quiver_vgi::{AggregateFunction, AggregateInput, Aggregator, Arg, Args};
/// use quiver_wire::ErrorReport;
///
/// struct Count;
/// impl Aggregator for Count {
///     type State = i64;
///     fn init(&self, _: &Args) -> i64 { 0 }
///     fn update(&self, n: &mut i64, input: &AggregateInput<'_>, rows: &[usize]) -> Result<(), ErrorReport> {
///         let x = input.columns[0].as_primitive::<Int64Type>();
///         *n += rows.iter().filter(|&&r| x.is_valid(r)).count() as i64;
///         Ok(())
///     }
///     fn combine(&self, n: &mut i64, other: &i64) -> Result<(), ErrorReport> { *n += other; Ok(()) }
///     fn finalize(&self, states: &[Option<&i64>], _: &Args) -> Result<ArrayRef, ErrorReport> {
///         Ok(Arc::new(states.iter().map(|s| s.copied().unwrap_or(0)).collect::<Int64Array>()))
///     }
/// }
/// let count = AggregateFunction::new("count_x", DataType::Int64)
///     .arg(Arg::new("x", DataType::Int64))
///     .aggregator(Count);
/// assert_eq!(count.name(), "count_x");
/// ```
pub struct AggregateFunction {
    name: String,
    result_type: DataType,
    description: String,
    args: Vec<Arg>,
    caps: Capabilities,
}

impl AggregateFunction {
    /// An aggregate returning `result_type`.
    pub fn new(name: &str, result_type: DataType) -> Self {
        Self {
            name: name.into(),
            result_type,
            description: String::new(),
            args: vec![],
            // DISTINCT changes most aggregates' results (a sum, a count): honoured unless the
            // function says otherwise.
            caps: Capabilities {
                distinct_dependent: true,
                ..Capabilities::default()
            },
        }
    }

    /// Documentation shown in the catalog.
    pub fn doc(mut self, description: &str) -> Self {
        self.description = description.into();
        self
    }

    /// Adds an argument (a value column unless marked [`Arg::constant`]).
    pub fn arg(mut self, arg: Arg) -> Self {
        assert!(!arg.named, "aggregate arguments are positional");
        self.args.push(arg);
        self
    }

    /// The result depends on the order of the rows: the engine then honours `ORDER BY` inside
    /// the call (`f(x ORDER BY y)`).
    pub fn order_dependent(mut self) -> Self {
        self.caps.order_dependent = true;
        self
    }

    /// `DISTINCT` does not change the result (a min, a max): the engine may then drop it.
    pub fn distinct_independent(mut self) -> Self {
        self.caps.distinct_dependent = false;
        self
    }

    /// The behaviour; completes the definition.
    pub fn aggregator(self, aggregator: impl Aggregator) -> Function {
        let function = Function {
            name: self.name,
            kind: FunctionKind::Aggregate,
            description: self.description,
            args: self.args,
            caps: self.caps,
            docs: FunctionDocs::default(),
            body: Body::Aggregate {
                result_type: self.result_type,
                aggregator: Arc::new(aggregator),
            },
        };
        function.check();
        function
    }
}

/// One execution: the bound call and its groups' states.
struct Execution {
    function: Arc<Function>,
    args: Args,
    column_types: Vec<DataType>,
    output_schema: SchemaRef,
    groups: HashMap<i64, State>,
}

impl Execution {
    fn aggregator(&self) -> Arc<dyn ErasedAggregator> {
        match &self.function.body {
            Body::Aggregate { aggregator, .. } => aggregator.clone(),
            _ => unreachable!("executions are made for aggregates only"),
        }
    }

    fn name(&self) -> &str {
        &self.function.name
    }

    fn state(&mut self, group: i64) -> Result<&mut State, ErrorReport> {
        if !self.groups.contains_key(&group) && self.groups.len() >= AGGREGATE_GROUPS_MAX {
            return Err(errors::resource_exhausted(format!(
                "{}(): more than {AGGREGATE_GROUPS_MAX} groups in one execution",
                self.function.name
            )));
        }
        let aggregator = self.aggregator();
        let args = &self.args;
        Ok(self
            .groups
            .entry(group)
            .or_insert_with(|| aggregator.init(args)))
    }

    fn update(&mut self, batch: &RecordBatch) -> Result<(), ErrorReport> {
        let name = self.name().to_string();
        let groups = group_column(batch, contract::GROUP_COLUMN)?;
        let values = &batch.columns()[1..];
        if values.len() != self.column_types.len() {
            return Err(errors::invalid_argument(format!(
                "{name}() takes {} value column(s), the update batch has {}",
                self.column_types.len(),
                values.len()
            )));
        }
        let columns = values
            .iter()
            .zip(&self.column_types)
            .map(|(column, declared)| {
                if column.data_type() == declared {
                    return Ok(column.clone());
                }
                arrow_cast::cast(column, declared).map_err(|e| {
                    errors::argument_validation(format!(
                        "{name}(): input column does not cast to {declared}: {e}"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Rows per group, each in input order (an order-dependent function sees them sorted).
        let mut order: Vec<i64> = Vec::new();
        let mut rows: HashMap<i64, Vec<usize>> = HashMap::new();
        for (row, group) in groups.iter().enumerate() {
            rows.entry(*group)
                .or_insert_with(|| {
                    order.push(*group);
                    Vec::new()
                })
                .push(row);
        }
        let args = self.args.clone();
        let input = AggregateInput {
            columns: &columns,
            args: &args,
        };
        let aggregator = self.aggregator();
        for group in order {
            let state = self.state(group)?;
            aggregator.update(state, &input, &rows[&group])?;
        }
        Ok(())
    }

    fn combine(&mut self, batch: &RecordBatch) -> Result<(), ErrorReport> {
        let sources = group_column(batch, contract::SOURCE_GROUP)?;
        let targets = group_column(batch, contract::TARGET_GROUP)?;
        let aggregator = self.aggregator();
        for (source, target) in sources.into_iter().zip(targets) {
            if source == target {
                continue;
            }
            // A source never updated is the initial state: merging it changes nothing. The source
            // stays (DuckDB may read a combined state again, e.g. in a window segment tree).
            let Some(from) = self.groups.remove(&source) else {
                continue;
            };
            let merged = self
                .state(target)
                .and_then(|into| aggregator.combine(into, &from));
            self.groups.insert(source, from);
            merged?;
        }
        Ok(())
    }

    fn finalize(&self, batch: &RecordBatch) -> Result<RecordBatch, ErrorReport> {
        let name = self.name();
        let groups = group_column(batch, contract::GROUP_ID)?;
        let states: Vec<Option<&State>> = groups.iter().map(|g| self.groups.get(g)).collect();
        let result = self.aggregator().finalize(&states, &self.args)?;
        if result.len() != groups.len() {
            return Err(errors::internal(format!(
                "{name}() finalized {} group(s) into {} value(s)",
                groups.len(),
                result.len()
            )));
        }
        let declared = self.output_schema.field(0).data_type();
        if result.data_type() != declared {
            return Err(errors::internal(format!(
                "{name}() finalized to {}, but declares {declared}",
                result.data_type()
            )));
        }
        RecordBatch::try_new(self.output_schema.clone(), vec![result])
            .map_err(|e| errors::internal(format!("{name}() result: {e}")))
    }
}

/// The `int64` group ids of `column` (no NULLs).
fn group_column(batch: &RecordBatch, column: &str) -> Result<Vec<i64>, ErrorReport> {
    let array = batch
        .column_by_name(column)
        .ok_or_else(|| errors::invalid_argument(format!("the batch has no '{column}' column")))?;
    let ids = arrow_cast::cast(array, &DataType::Int64)
        .map_err(|e| errors::invalid_argument(format!("'{column}': {e}")))?;
    if ids.null_count() > 0 {
        return Err(errors::invalid_argument(format!("'{column}' holds NULLs")));
    }
    Ok(ids.as_primitive::<Int64Type>().values().to_vec())
}

/// The live executions, and their ids oldest first.
#[derive(Default)]
struct Live {
    by_id: HashMap<ExecutionId, Arc<Mutex<Execution>>>,
    order: VecDeque<ExecutionId>,
}

/// The executions of this process.
#[derive(Default)]
struct Executions {
    live: Mutex<Live>,
}

impl Executions {
    fn open(&self, execution: Execution) -> ExecutionId {
        let id: ExecutionId = quiver_secret::random::bytes();
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        while live.order.len() >= AGGREGATE_EXECUTIONS_MAX {
            if let Some(oldest) = live.order.pop_front() {
                live.by_id.remove(&oldest);
                logging::log(
                    Level::Warn,
                    format!("more than {AGGREGATE_EXECUTIONS_MAX} aggregate executions: the oldest was dropped"),
                );
            }
        }
        live.by_id.insert(id, Arc::new(Mutex::new(execution)));
        live.order.push_back(id);
        id
    }

    fn get(&self, id: &[u8]) -> Result<Arc<Mutex<Execution>>, ErrorReport> {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        ExecutionId::try_from(id)
            .ok()
            .and_then(|id| live.by_id.get(&id).cloned())
            .ok_or_else(|| {
                errors::invalid_argument(
                    "unknown aggregate execution (never bound here, or already destroyed)",
                )
            })
    }

    fn close(&self, id: &[u8]) {
        let Ok(id) = ExecutionId::try_from(id) else {
            return;
        };
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.by_id.remove(&id);
        live.order.retain(|other| *other != id);
    }
}

fn bind(catalog: &Catalog, bytes: &[u8]) -> Result<(Execution, SchemaRef), ErrorReport> {
    let request = contract::BindRequest::decode(bytes)?;
    let bound = bind_call(
        catalog,
        &BindRequest {
            function_name: request.target.function_name,
            arguments: request.arguments,
            function_type: contract::FUNCTION_TYPE.into(),
            input_schema: request.input_schema,
            attach_opaque_data: request.target.attach_opaque_data,
            schema_path: request.target.schema_path,
        },
    )?;
    let column_types = bound
        .function
        .column_args()
        .map(|a| a.data_type.clone())
        .collect();
    let output_schema = bound.output_schema.clone();
    Ok((
        Execution {
            function: bound.function,
            args: bound.args,
            column_types,
            output_schema: output_schema.clone(),
            groups: HashMap::new(),
        },
        output_schema,
    ))
}

fn binary(bytes: Vec<u8>) -> Option<ArrayRef> {
    Some(Arc::new(BinaryArray::from(vec![bytes.as_slice()])))
}

/// Registers the five aggregate methods.
pub(crate) fn register(service: &mut Service, catalog: Arc<Catalog>) {
    let executions = Arc::new(Executions::default());
    let params = || vec![field("request", DataType::Binary, false)];
    let result = || Some(field("result", DataType::Binary, false));
    {
        let executions = executions.clone();
        service.add(Method::unary(
            contract::METHOD_BIND,
            params(),
            result(),
            move |params, _| {
                let (execution, output_schema) = bind(&catalog, params.bytes("request")?)?;
                let id = executions.open(execution);
                Ok(binary(contract::encode_bind_response(&output_schema, &id)))
            },
        ));
    }
    for method in [
        contract::METHOD_UPDATE,
        contract::METHOD_COMBINE,
        contract::METHOD_FINALIZE,
    ] {
        let executions = executions.clone();
        service.add(Method::unary(
            method,
            params(),
            result(),
            move |params, _| {
                let request = BatchRequest::decode(method, params.bytes("request")?)?;
                let execution = executions.get(&request.target.execution_id)?;
                let mut execution = execution.lock().unwrap_or_else(|p| p.into_inner());
                let answer = match method {
                    contract::METHOD_UPDATE => {
                        execution.update(&request.batch)?;
                        contract::empty_response()
                    }
                    contract::METHOD_COMBINE => {
                        execution.combine(&request.batch)?;
                        contract::empty_response()
                    }
                    _ => contract::encode_finalize_response(&execution.finalize(&request.batch)?),
                };
                Ok(binary(answer))
            },
        ));
    }
    service.add(Method::unary(
        contract::METHOD_DESTRUCTOR,
        params(),
        result(),
        move |params, _| {
            let request =
                BatchRequest::decode(contract::METHOD_DESTRUCTOR, params.bytes("request")?)?;
            executions.close(&request.target.execution_id);
            Ok(binary(contract::empty_response()))
        },
    ));
}
