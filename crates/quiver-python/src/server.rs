//! `quiver_native.ServerProcess`: a quiver server this process starts and stops, the Rust
//! client's `ServerProcess` (`crates/quiver-client/src/process.rs`): it runs
//! `python -m quiver.serve --watch-stdin`, waits for its announcement and stops it on `stop`, on
//! garbage collection, or when this process dies. The Python is the interpreter this module runs
//! in (where the `quiver` package is installed beside it), unless `$QUIVER_SERVER_COMMAND` or
//! `$QUIVER_SERVER_PYTHON` says otherwise.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;
use quiver_client::{Address, ServerOptions, ServerProcess as ClientServerProcess};

use crate::connection::{connect_options, Connection};
use crate::errors::{IntoPy, InvalidInputError, SpawnError};

/// A running server; `stop()` (or `with`) ends it.
#[pyclass(module = "quiver_native", frozen)]
pub(crate) struct ServerProcess {
    /// `None` once stopped.
    process: Mutex<Option<ClientServerProcess>>,
    addresses: Vec<String>,
    token: Option<String>,
    pid: u32,
}

#[pymethods]
impl ServerProcess {
    /// Starts a server and waits until it is ready. `listen`: addresses such as
    /// `tcp://127.0.0.1:0` (a free port) or `unix:///path`; `command`: the program and
    /// arguments to run instead of `<this interpreter> -m quiver.serve`.
    #[new]
    #[pyo3(signature = (*, database=None, listen=None, token=None, no_auth=false, extension=None,
                        threads=None, memory_limit=None, command=None, extra_args=None,
                        ready_wait_s=60.0))]
    #[allow(clippy::too_many_arguments)]
    fn spawn(
        py: Python<'_>,
        database: Option<PathBuf>,
        listen: Option<Vec<String>>,
        token: Option<String>,
        no_auth: bool,
        extension: Option<PathBuf>,
        threads: Option<usize>,
        memory_limit: Option<String>,
        command: Option<Vec<String>>,
        extra_args: Option<Vec<String>>,
        ready_wait_s: f64,
    ) -> PyResult<ServerProcess> {
        let command = match command {
            Some(command) => Some(command),
            None => this_interpreter_server(py)?,
        };
        let mut options = ServerOptions {
            command,
            database,
            token,
            no_auth,
            extension,
            threads,
            memory_limit,
            extra_args: extra_args.unwrap_or_default(),
            ready_wait: Duration::try_from_secs_f64(ready_wait_s)
                .map_err(|error| InvalidInputError::new_err(error.to_string()))?,
            ..ServerOptions::default()
        };
        if let Some(listen) = listen {
            options.listen = listen
                .iter()
                .map(|text| text.parse::<Address>())
                .collect::<Result<_, _>>()
                .map_err(InvalidInputError::new_err)?;
        }
        let process = py
            .detach(|| ClientServerProcess::spawn(options))
            .into_py_result()?;
        Ok(ServerProcess {
            addresses: process.addresses().iter().map(Address::to_string).collect(),
            token: process.token().map(str::to_string),
            pid: process.pid(),
            process: Mutex::new(Some(process)),
        })
    }

    /// Every listener, in the order announced.
    #[getter]
    fn addresses(&self) -> Vec<String> {
        self.addresses.clone()
    }

    /// The token TCP clients present (given, or the one the server made).
    #[getter]
    fn token(&self) -> Option<String> {
        self.token.clone()
    }

    /// The server's process id.
    #[getter]
    fn pid(&self) -> u32 {
        self.pid
    }

    /// Connects to `address` (default: the first listener) with the server's token; the keywords
    /// are `quiver_native.connect`'s.
    #[pyo3(signature = (address=None, *, shm=true, shm_bytes=None, client_name=None, batch_rows=None))]
    fn connect(
        &self,
        py: Python<'_>,
        address: Option<String>,
        shm: bool,
        shm_bytes: Option<u64>,
        client_name: Option<String>,
        batch_rows: Option<i64>,
    ) -> PyResult<Connection> {
        let address = address.unwrap_or_else(|| self.addresses[0].clone());
        let options = connect_options(self.token.clone(), shm, shm_bytes, client_name, batch_rows);
        let connection = py
            .detach(|| quiver_client::Connection::connect_with(address.as_str(), &options))
            .into_py_result()?;
        Ok(Connection::from_client(connection))
    }

    /// The last lines the server wrote on stderr.
    fn stderr_tail(&self) -> PyResult<String> {
        let process = self.process.lock().unwrap_or_else(|p| p.into_inner());
        match process.as_ref() {
            Some(process) => Ok(process.stderr_tail()),
            None => Err(SpawnError::new_err("the server has stopped")),
        }
    }

    /// Stops the server: SIGTERM, then SIGKILL after a grace. Stopping twice is fine.
    fn stop(&self, py: Python<'_>) {
        let process = self
            .process
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(process) = process {
            py.detach(|| process.stop());
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.stop(py);
    }
}

/// `[sys.executable, "-m", "quiver.serve"]`, unless the environment names the server's command or
/// Python (`quiver_client::ServerOptions`' defaults read those): the server then runs in the
/// interpreter that has this module, and so the `quiver` package installed with it, whatever
/// `python3` is on `PATH`.
fn this_interpreter_server(py: Python<'_>) -> PyResult<Option<Vec<String>>> {
    let named = |variable: &str| std::env::var_os(variable).is_some_and(|value| !value.is_empty());
    if named(quiver_client::process::ENV_COMMAND) || named(quiver_client::process::ENV_PYTHON) {
        return Ok(None);
    }
    let executable: String = py.import("sys")?.getattr("executable")?.extract()?;
    if executable.is_empty() {
        return Ok(None);
    }
    Ok(Some(vec![executable, "-m".into(), "quiver.serve".into()]))
}
