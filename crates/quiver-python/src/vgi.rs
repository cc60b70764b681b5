//! The engine role of VGI for Python (`quiver_native.VgiWorker`): a worker attached through
//! `quiver-duckdb`, the same Rust the DuckDB extension runs (launching, catalog discovery, bind,
//! split plans, init streams, filters), so an engine written in Python drives workers without a
//! second VGI implementation. `quiver.spark` is its user: the driver plans a table function's
//! scan into encoded `init` requests (one per split), and each executor redeems them on a worker
//! of its own; scalar and table-in-out calls are fed batches on an exchange stream.
//!
//! Every call that waits on a worker releases the GIL; what Python reads from a scan or a call is in
//! `vgi_streams.rs`.

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use arrow_schema::{Schema, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use quiver_duckdb::attached::{self, Attached};
use quiver_duckdb::bind::{self, Bound as BoundCall};
use quiver_duckdb::calls::StreamHandle;
use quiver_duckdb::catalog::Kind;
use quiver_duckdb::stream::Stream;
use quiver_duckdb::{filters, scalar, scan, splits, table_in_out, Failure, FailureCode};

use crate::errors::{ConnectionLostError, InvalidInputError, RpcError};
use crate::vgi_streams::{ScanReader, VgiCall};

/// The Python exception for an engine failure: the worker's own error as `RpcError`, a refused
/// request as `InvalidInputError`, a worker that died or broke the protocol as
/// `ConnectionLostError`.
pub(crate) fn to_py(failure: Failure) -> PyErr {
    match failure.code {
        FailureCode::Invalid => InvalidInputError::new_err(failure.message),
        FailureCode::Remote => RpcError::new_err(failure.message),
        _ => ConnectionLostError::new_err(failure.message),
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Scalar => "scalar",
        Kind::Table => "table",
        Kind::TableInOut => "table_in_out",
        Kind::Aggregate => "aggregate",
        Kind::TableBuffering => "table_buffering",
    }
}

/// A worker attached in the engine role: `launch:<command>`, `unix://<path>`, `http(s)://...` or a
/// stdio command, as `ATTACH` takes them. The worker ends when the last handle on it drops.
#[pyclass(module = "quiver_native", frozen)]
pub(crate) struct VgiWorker {
    attached: Arc<Attached>,
}

#[pymethods]
impl VgiWorker {
    #[new]
    #[pyo3(signature = (location, alias = "w"))]
    fn new(py: Python<'_>, location: &str, alias: &str) -> PyResult<Self> {
        let attached = py
            .detach(|| attached::open(location, alias, None))
            .map_err(to_py)?;
        Ok(VgiWorker { attached })
    }

    /// The worker's functions by name: `kind`, `arguments` (a pyarrow schema, one field per
    /// parameter), and the facts a planner needs (`projection_pushdown`, `filter_pushdown`,
    /// `filters_exactly_applied`, `supports_splits`, `has_finalize`, `max_workers`).
    fn functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let all = PyDict::new(py);
        for desc in &self.attached.found.functions {
            let one = PyDict::new(py);
            one.set_item("kind", kind_name(desc.kind))?;
            one.set_item("arguments", desc.arguments.as_ref().to_pyarrow(py)?)?;
            one.set_item("projection_pushdown", desc.projection_pushdown)?;
            one.set_item("filter_pushdown", desc.filter_pushdown)?;
            one.set_item("filters_exactly_applied", desc.filters_exactly_applied)?;
            one.set_item("supports_splits", desc.supports_splits)?;
            one.set_item("has_finalize", desc.has_finalize)?;
            one.set_item("max_workers", desc.max_workers)?;
            all.set_item(&desc.name, one)?;
        }
        Ok(all)
    }

    /// The columns table function `function` answers for `arguments` (as in
    /// [`VgiWorker::plan_scan`]), from its bind alone.
    fn output_schema<'py>(
        &self,
        py: Python<'py>,
        function: &str,
        arguments: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let arguments = RecordBatch::from_pyarrow_bound(arguments)?;
        let output = py
            .detach(|| self.bind(function, &arguments, None, &[Kind::Table]))
            .map_err(to_py)?
            .output_schema;
        output.as_ref().to_pyarrow(py)
    }

    /// Binds table function `function` with `arguments` (a one-row batch of columns
    /// `positional_<i>` / `named_<name>`) and plans its scan: `schema` (the columns every part
    /// answers, projected to `columns`, indices into the unprojected output, where the function
    /// honours projections), `unprojected` (the bound output) and, for a function with a split
    /// plan, `requests`: one encoded `init` per split, for [`VgiWorker::redeem`] on any worker.
    /// `filter_spec` (a vgi.filters.v2 document) and `filter_values` (its literals `value_<N>`)
    /// go into every init where the function accepts filters.
    #[pyo3(signature = (function, arguments, columns = None, filter_spec = None, filter_values = None))]
    fn plan_scan<'py>(
        &self,
        py: Python<'py>,
        function: &str,
        arguments: &Bound<'py, PyAny>,
        columns: Option<Vec<i64>>,
        filter_spec: Option<String>,
        filter_values: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let call = ScanCall::new(arguments, columns, filter_spec, filter_values)?;
        let (bound, output, requests) = py
            .detach(|| -> Result<_, Failure> {
                let bound = self.bind(function, &call.arguments, None, &[Kind::Table])?;
                let (init, output) = scan::primary_init(&bound, call.columns, call.filters)?;
                let requests = match bound.desc().supports_splits {
                    true => Some(splits::plan(init, &bound, output.clone())?.requests()),
                    false => None,
                };
                Ok((bound, output, requests))
            })
            .map_err(to_py)?;
        let plan = PyDict::new(py);
        plan.set_item("schema", output.as_ref().to_pyarrow(py)?)?;
        plan.set_item("unprojected", bound.output_schema.as_ref().to_pyarrow(py)?)?;
        let requests = requests.map(|all| {
            all.iter()
                .map(|r| PyBytes::new(py, r).unbind())
                .collect::<Vec<_>>()
        });
        plan.set_item("requests", requests)?;
        Ok(plan)
    }

    /// Redeems one split: `request` is one of [`VgiWorker::plan_scan`]'s `requests` (planned by
    /// this worker or another serving the same functions), `schema` the plan's `schema`.
    fn redeem(
        &self,
        py: Python<'_>,
        request: Vec<u8>,
        schema: &Bound<'_, PyAny>,
    ) -> PyResult<ScanReader> {
        let output = Arc::new(Schema::from_pyarrow_bound(schema)?);
        let worker = self.attached.worker.clone();
        let stream = py
            .detach(|| {
                Stream::open(&worker, &request, "a split of a planned scan".into())
                    .map(|s| s.expecting(output.clone()))
            })
            .map_err(to_py)?;
        Ok(ScanReader::spawn(
            output,
            vec![StreamHandle::new(stream, None)],
        ))
    }

    /// Scans table function `function` (without a split plan) on up to `streams` connections of
    /// this worker at once, as DuckDB's threads do: the primary init, then secondaries joining
    /// its execution, as many as the worker allows. Arguments as [`VgiWorker::plan_scan`].
    #[pyo3(signature = (function, arguments, columns = None, filter_spec = None, filter_values = None, streams = 1))]
    #[allow(clippy::too_many_arguments)]
    fn scan<'py>(
        &self,
        py: Python<'py>,
        function: &str,
        arguments: &Bound<'py, PyAny>,
        columns: Option<Vec<i64>>,
        filter_spec: Option<String>,
        filter_values: Option<&Bound<'py, PyAny>>,
        streams: i64,
    ) -> PyResult<ScanReader> {
        let call = ScanCall::new(arguments, columns, filter_spec, filter_values)?;
        let (output, handles) = py
            .detach(|| -> Result<_, Failure> {
                let bound = self.bind(function, &call.arguments, None, &[Kind::Table])?;
                let (_, output) = scan::primary_init(&bound, call.columns.clone(), None)?;
                let (execution, primary) = scan::start(&bound, call.columns, call.filters)?;
                let mut handles = vec![primary];
                for _ in 1..streams.min(execution.max_workers).max(1) {
                    handles.push(execution.join()?);
                }
                Ok((output, handles))
            })
            .map_err(to_py)?;
        Ok(ScanReader::spawn(output, handles))
    }

    /// Opens a call of scalar or table-in-out function `function` whose input batches have
    /// `input_schema`; `arguments` (the non-input arguments, as in [`VgiWorker::plan_scan`]) go
    /// once, at bind.
    fn call(
        &self,
        py: Python<'_>,
        function: &str,
        arguments: &Bound<'_, PyAny>,
        input_schema: &Bound<'_, PyAny>,
    ) -> PyResult<VgiCall> {
        let arguments = RecordBatch::from_pyarrow_bound(arguments)?;
        let input = Arc::new(Schema::from_pyarrow_bound(input_schema)?);
        let (handle, output) = py
            .detach(|| -> Result<_, Failure> {
                let kinds = [Kind::Scalar, Kind::TableInOut];
                let bound = self.bind(function, &arguments, Some(input), &kinds)?;
                let handle = match bound.desc().kind {
                    Kind::Scalar => scalar::start(&bound)?,
                    _ => table_in_out::start(&bound)?,
                };
                Ok((handle, bound.output_schema.clone()))
            })
            .map_err(to_py)?;
        Ok(VgiCall {
            handle: Mutex::new(Some(handle)),
            output,
        })
    }

    /// The processes serving this worker's connections (for tests: one worker per process).
    fn pids(&self) -> Vec<u32> {
        self.attached.worker.pids()
    }
}

impl VgiWorker {
    /// Binds `function`, which must be of one of `kinds`.
    fn bind(
        &self,
        function: &str,
        arguments: &RecordBatch,
        input: Option<SchemaRef>,
        kinds: &[Kind],
    ) -> Result<BoundCall, Failure> {
        let functions = &self.attached.found.functions;
        let index = functions
            .iter()
            .position(|f| f.name == function)
            .ok_or_else(|| {
                Failure::invalid(format!(
                    "{} has no function {function}",
                    self.attached.worker.label()
                ))
            })?;
        let kind = functions[index].kind;
        if !kinds.contains(&kind) {
            let wanted: Vec<&str> = kinds.iter().map(|&k| kind_name(k)).collect();
            return Err(Failure::invalid(format!(
                "{function} is a {} function; this call takes a {} function",
                kind_name(kind),
                wanted.join(" or ")
            )));
        }
        bind::bind(&self.attached, index, bind::arguments_of(arguments)?, input)
    }
}

/// A scan's arguments, projection and filters as read from Python (with the GIL).
struct ScanCall {
    arguments: RecordBatch,
    columns: Option<Vec<i64>>,
    filters: Option<Vec<u8>>,
}

impl ScanCall {
    fn new(
        arguments: &Bound<'_, PyAny>,
        columns: Option<Vec<i64>>,
        filter_spec: Option<String>,
        filter_values: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ScanCall> {
        let arguments = RecordBatch::from_pyarrow_bound(arguments)?;
        let values = filter_values
            .map(RecordBatch::from_pyarrow_bound)
            .transpose()?;
        let filters = filter_spec
            .map(|spec| filters::encode(&spec, values))
            .transpose()
            .map_err(to_py)?;
        Ok(ScanCall {
            arguments,
            columns,
            filters,
        })
    }
}
