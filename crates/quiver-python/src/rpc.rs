//! The spine's RPC client and server for Python (`crates/quiver-rpc`): Rust framing, transports
//! and shared memory, with Python values in and out and Python method bodies.
//!
//! `RpcClient` calls unary methods of any vgi-rpc v1 server with keyword arguments (typed as
//! quiver's type table maps `str`, `bytes`, `int`, `float`, `bool`). `RpcService` declares unary
//! methods by their Arrow schemas with a Python callable as the body, and serves them on stdio or a
//! Unix socket; a body runs with the GIL held, everything else without it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_pyarrow::FromPyArrow;
use arrow_schema::{DataType, Field, Schema};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use quiver_rpc::{CallContext, Client, Method, Params, Server, ServerConfig, Service};
use quiver_shm::ShmConfig;
use quiver_transport::{socket, Child};
use quiver_wire::ErrorReport;

use crate::errors::{rpc_to_py, ConnectionLostError, InvalidInputError};
use crate::values::{from_python, inferred_field, to_python};

/// Most arguments one call takes (a bound on the request schema built from keywords).
const ARGUMENTS_MAX: usize = 1024;
/// How long a spawned worker may take to exit after its stdin closes before it is killed.
const WORKER_STOP_GRACE: Duration = Duration::from_secs(5);

/// A client of one RPC server connection; calls are sequential.
#[pyclass(module = "quiver_native", frozen)]
pub(crate) struct RpcClient {
    /// `None` once closed.
    client: Mutex<Option<Client>>,
    /// The worker process, for a client that spawned one.
    child: Mutex<Option<Child>>,
    worker_pid: Option<u32>,
}

impl RpcClient {
    fn new(
        client: Client,
        protocol: Option<(String, String)>,
        shm_bytes: Option<u64>,
        child: Option<Child>,
    ) -> PyResult<RpcClient> {
        let mut client = match protocol {
            Some((name, version)) => client.with_protocol(name, version),
            None => client,
        };
        if let Some(size_bytes) = shm_bytes {
            let mut config = ShmConfig::from_env().map_err(|error| {
                InvalidInputError::new_err(format!("shm environment: {error:?}"))
            })?;
            config.segment_size_bytes = Some(size_bytes);
            config.disabled = false;
            client = client.with_shm_from_config(&config).map_err(rpc_to_py)?;
        }
        Ok(RpcClient {
            client: Mutex::new(Some(client)),
            worker_pid: child.as_ref().map(Child::pid),
            child: Mutex::new(child),
        })
    }
}

#[pymethods]
impl RpcClient {
    /// Connects to a server's Unix socket; `shm_bytes` gives the connection a shared-memory
    /// segment of that size; `protocol` is `(name, version)` for servers that check it.
    #[staticmethod]
    #[pyo3(signature = (path, *, protocol=None, shm_bytes=None))]
    fn connect_unix(
        py: Python<'_>,
        path: PathBuf,
        protocol: Option<(String, String)>,
        shm_bytes: Option<u64>,
    ) -> PyResult<RpcClient> {
        let connection = py.detach(|| socket::connect_unix(&path)).map_err(|error| {
            ConnectionLostError::new_err(format!("{}: {error}", path.display()))
        })?;
        RpcClient::new(Client::new(connection), protocol, shm_bytes, None)
    }

    /// Starts `argv` as a worker speaking on its stdin/stdout and connects to it.
    #[staticmethod]
    #[pyo3(signature = (argv, *, protocol=None, shm_bytes=None))]
    fn spawn(
        py: Python<'_>,
        argv: Vec<String>,
        protocol: Option<(String, String)>,
        shm_bytes: Option<u64>,
    ) -> PyResult<RpcClient> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| InvalidInputError::new_err("an empty worker command"))?;
        let (child, connection) = py
            .detach(|| {
                quiver_transport::spawn(
                    program.as_str(),
                    &args.iter().map(String::as_str).collect::<Vec<_>>(),
                )
            })
            .map_err(|error| {
                ConnectionLostError::new_err(format!("cannot start {program}: {error}"))
            })?;
        RpcClient::new(Client::new(connection), protocol, shm_bytes, Some(child))
    }

    /// Calls a unary method with keyword arguments, in the method's parameter order; returns its
    /// result as a Python value (`None` for a void method).
    #[pyo3(signature = (method, /, **arguments))]
    fn call(
        &self,
        py: Python<'_>,
        method: &str,
        arguments: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let request = request_batch(arguments)?;
        let reply = py.detach(|| {
            let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
            match client.as_mut() {
                Some(client) => client.call(method, &request).map_err(rpc_to_py),
                None => Err(InvalidInputError::new_err("the client is closed")),
            }
        })?;
        match reply {
            Some(batch) if batch.num_columns() > 0 && batch.num_rows() > 0 => {
                Ok(to_python(py, batch.column(0).as_ref(), 0)?.unbind())
            }
            _ => Ok(py.None()),
        }
    }

    /// The process id of the worker `spawn` started (`None` for a socket client).
    #[getter]
    fn worker_pid(&self) -> Option<u32> {
        self.worker_pid
    }

    /// Closes the connection (a spawned worker sees its stdin close and exits). Closing twice is
    /// fine.
    fn close(&self, py: Python<'_>) {
        let client = self.client.lock().unwrap_or_else(|p| p.into_inner()).take();
        let child = self.child.lock().unwrap_or_else(|p| p.into_inner()).take();
        py.detach(move || {
            drop(client);
            if let Some(mut child) = child {
                child.terminate(WORKER_STOP_GRACE);
            }
        });
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) {
        self.close(py);
    }
}

/// The request: one row, one column per keyword argument.
fn request_batch(arguments: Option<&Bound<'_, PyDict>>) -> PyResult<RecordBatch> {
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    if let Some(arguments) = arguments {
        if arguments.len() > ARGUMENTS_MAX {
            return Err(InvalidInputError::new_err(format!(
                "more than {ARGUMENTS_MAX} arguments"
            )));
        }
        for (name, value) in arguments.iter() {
            let name: String = name.extract()?;
            let field = inferred_field(&name, &value)?;
            columns.push(from_python(&field, &value)?);
            fields.push(field);
        }
    }
    let options = RecordBatchOptions::new().with_row_count(Some(1));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)
        .map_err(|error| InvalidInputError::new_err(error.to_string()))
}

/// A service being declared: its protocol and unary methods with Python bodies.
#[pyclass(module = "quiver_native", frozen)]
pub(crate) struct RpcService {
    /// `None` once served.
    service: Mutex<Option<Service>>,
}

#[pymethods]
impl RpcService {
    #[new]
    #[pyo3(signature = (protocol_name, protocol_version="1.0.0"))]
    fn new(protocol_name: &str, protocol_version: &str) -> RpcService {
        RpcService {
            service: Mutex::new(Some(Service::new(protocol_name, protocol_version))),
        }
    }

    /// Declares a unary method: `params` a `pyarrow.Schema` (one field per parameter, in order),
    /// `result` the `pyarrow.DataType` of its non-null result (`None` for void), `body` a callable
    /// taking the parameters positionally as Python values and returning the result.
    #[pyo3(signature = (name, params, result, body))]
    fn unary(
        &self,
        name: &str,
        params: &Bound<'_, PyAny>,
        result: Option<&Bound<'_, PyAny>>,
        body: Py<PyAny>,
    ) -> PyResult<()> {
        let params = Schema::from_pyarrow_bound(params)?;
        let result = result
            .map(|data_type| DataType::from_pyarrow_bound(data_type))
            .transpose()?
            .map(|data_type| Field::new("result", data_type, false));
        let result_field = result.clone();
        let method = Method::unary(
            name,
            params.fields().iter().map(|f| f.as_ref().clone()).collect(),
            result,
            move |params: &Params, _ctx: &mut CallContext<'_>| {
                run_body(&body, params, result_field.as_ref())
            },
        );
        let mut service = self.service.lock().unwrap_or_else(|p| p.into_inner());
        service
            .as_mut()
            .ok_or_else(|| InvalidInputError::new_err("the service is already being served"))?
            .add(method);
        Ok(())
    }

    /// Serves one client on this process's stdin/stdout until it closes stdin (a worker's
    /// main). Stray prints go to stderr.
    fn serve_stdio(&self, py: Python<'_>) -> PyResult<()> {
        let server = self.take_server()?;
        py.detach(|| quiver_rpc::serve::serve_stdio(&server))
            .map_err(|error| ConnectionLostError::new_err(error.to_string()))
    }

    /// Binds `path`, prints `UNIX:<path>`, and serves every client on a thread of its own until
    /// SIGTERM.
    fn serve_unix(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let server = Arc::new(self.take_server()?);
        py.detach(|| quiver_rpc::serve::serve_unix(server, &path, None))
            .map_err(|error| ConnectionLostError::new_err(error.to_string()))
    }
}

impl RpcService {
    fn take_server(&self) -> PyResult<Server> {
        let service = self
            .service
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("the service is already being served"))?;
        Ok(Server::new(service, ServerConfig::default()))
    }
}

/// Runs a Python body on one call's parameters; a Python exception becomes the error the client
/// receives, named by its class.
fn run_body(
    body: &Py<PyAny>,
    params: &Params,
    result: Option<&Field>,
) -> Result<Option<ArrayRef>, ErrorReport> {
    Python::attach(|py| {
        let call = || -> PyResult<Option<ArrayRef>> {
            let batch = params.batch();
            let mut arguments = Vec::with_capacity(batch.num_columns());
            for column in batch.columns() {
                arguments.push(to_python(py, column.as_ref(), 0)?);
            }
            let answer = body.bind(py).call1(PyTuple::new(py, arguments)?)?;
            result.map(|field| from_python(field, &answer)).transpose()
        };
        call().map_err(|error| {
            let error_type = error
                .get_type(py)
                .name()
                .map(|name| name.to_string())
                .unwrap_or_else(|_| "Exception".into());
            ErrorReport::new(error_type, error.value(py).to_string())
        })
    })
}
