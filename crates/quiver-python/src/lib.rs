//! `quiver_native`: the Rust client of the quiver server (`crates/quiver-client`) as a Python
//! extension module. Query results reach Python as `pyarrow.RecordBatchReader`s (each batch through
//! the Arrow C data interface) and inserts leave it from pyarrow objects through the Arrow C stream
//! interface, both without a copy; errors keep quiver's exception types; every call that
//! waits on the server releases the GIL. `import quiver` stays pure Python and names this module
//! `quiver.native` when it is installed (`python/quiver/native_module.py`).
//!
//! The spine's RPC client and server are here too (`rpc.rs`): `RpcClient` calls unary methods of
//! any vgi-rpc v1 server, `RpcService` serves unary methods whose bodies are Python callables,
//! both with Rust framing, transports and shared memory.
//!
//! The engine role of VGI is here too (`vgi.rs`): `VgiWorker` attaches a worker through
//! `quiver-duckdb` and plans, redeems and calls its functions; `quiver.spark` drives it.
//!
//! ```python
//! import quiver_native
//! with quiver_native.ServerProcess() as server, server.connect() as db:
//!     db.execute("CREATE TABLE t AS SELECT range AS i FROM range(1000)")
//!     table = db.query("SELECT i FROM t WHERE i % 2 = 0").read_all()
//! ```
#![warn(missing_docs)]

mod connection;
mod errors;
mod insert;
mod params;
mod prepared;
mod reader;
mod rpc;
mod server;
mod session;
mod values;
mod vgi;
mod vgi_streams;

use pyo3::prelude::*;

#[pymodule]
fn quiver_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_function(wrap_pyfunction!(connection::connect, module)?)?;
    module.add_class::<connection::Connection>()?;
    module.add_class::<prepared::Prepared>()?;
    module.add_class::<insert::ArrowInserter>()?;
    module.add_class::<server::ServerProcess>()?;
    module.add_class::<rpc::RpcClient>()?;
    module.add_class::<rpc::RpcService>()?;
    module.add_class::<vgi::VgiWorker>()?;
    module.add_class::<vgi_streams::ScanReader>()?;
    module.add_class::<vgi_streams::VgiCall>()?;
    errors::register(module)?;
    Ok(())
}
