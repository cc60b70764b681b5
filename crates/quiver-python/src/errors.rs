//! The client's errors as Python exceptions, one class per `quiver_client::Error` variant
//! (`crates/quiver-client/src/error.rs`), all under `quiver_native.Error`. An exception raised by
//! the server keeps its report: `error_type` (DuckDB's name for it) and `kind` (the protocol's
//! error kind, `crates/quiver-server-protocol/src/errors.rs`).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use quiver_client::Error;

create_exception!(
    quiver_native,
    QuiverError,
    PyException,
    "Every error of quiver_native."
);
create_exception!(
    quiver_native,
    SqlError,
    QuiverError,
    "DuckDB refused or failed the statement; the connection lives on."
);
create_exception!(
    quiver_native,
    UnauthenticatedError,
    QuiverError,
    "The token was missing or wrong."
);
create_exception!(
    quiver_native,
    ServerError,
    QuiverError,
    "Another error the server answered with (a limit, the server busy); the connection lives on."
);
create_exception!(
    quiver_native,
    ConnectionLostError,
    QuiverError,
    "The connection failed or the server broke the protocol; the connection is unusable."
);
create_exception!(
    quiver_native,
    InvalidInputError,
    QuiverError,
    "The client refused the request before sending it (a bad address, a wrong parameter)."
);
create_exception!(
    quiver_native,
    RpcError,
    QuiverError,
    "The RPC server answered with an error (its `error_type` names the remote exception)."
);
create_exception!(
    quiver_native,
    SpawnError,
    QuiverError,
    "Starting a server process failed."
);

/// The Python exception for a client error.
pub(crate) fn to_py(error: Error) -> PyErr {
    let message = error.to_string();
    let report = error.report().cloned();
    let err = match error {
        Error::Sql(_) => SqlError::new_err(message),
        Error::Unauthenticated(_) => UnauthenticatedError::new_err(message),
        Error::Server(_) => ServerError::new_err(message),
        Error::Connection(_) | Error::Protocol(_) | Error::Connect { .. } => {
            ConnectionLostError::new_err(message)
        }
        Error::InvalidInput(_) => InvalidInputError::new_err(message),
        Error::Spawn(_) => SpawnError::new_err(message),
    };
    Python::attach(|py| {
        let value = err.value(py);
        let (error_type, kind) = match &report {
            Some(report) => (Some(report.error_type.clone()), report.kind.clone()),
            None => (None, None),
        };
        // Setting attributes on a fresh exception instance cannot fail but for memory.
        let _ = value.setattr("error_type", error_type);
        let _ = value.setattr("kind", kind);
    });
    err
}

/// The Python exception for an RPC client's error: the server's report as [`RpcError`] (the
/// connection lives on), anything else as [`ConnectionLostError`].
pub(crate) fn rpc_to_py(error: quiver_rpc::RpcError) -> PyErr {
    match error {
        quiver_rpc::RpcError::Remote(report) => {
            let err = RpcError::new_err(format!("{}: {}", report.error_type, report.message));
            Python::attach(|py| {
                let _ = err
                    .value(py)
                    .setattr("error_type", report.error_type.clone());
            });
            err
        }
        other => ConnectionLostError::new_err(other.to_string()),
    }
}

/// A `Result` of the client as a `PyResult`.
pub(crate) trait IntoPy<T> {
    fn into_py_result(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for quiver_client::Result<T> {
    fn into_py_result(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// Registers the exception classes on the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("Error", py.get_type::<QuiverError>())?;
    module.add("SqlError", py.get_type::<SqlError>())?;
    module.add(
        "UnauthenticatedError",
        py.get_type::<UnauthenticatedError>(),
    )?;
    module.add("ServerError", py.get_type::<ServerError>())?;
    module.add("ConnectionLostError", py.get_type::<ConnectionLostError>())?;
    module.add("InvalidInputError", py.get_type::<InvalidInputError>())?;
    module.add("SpawnError", py.get_type::<SpawnError>())?;
    module.add("RpcError", py.get_type::<RpcError>())?;
    Ok(())
}
