//! The Rust client of the quiver server: DuckDB serving `quiver.server` 1.0.0
//! (`crates/quiver-server-protocol`) on the vgi-rpc v1 spine (`crates/quiver-rpc`).
//!
//! ```no_run
//! use quiver_client::{Connection, ServerOptions, ServerProcess};
//!
//! let server = ServerProcess::spawn(ServerOptions::default())?; // or reach one already running:
//! # let _ = || Connection::connect("tcp://127.0.0.1:5433", Some("token"));
//! let mut db = server.connect()?;
//! db.execute("CREATE TABLE t AS SELECT range AS i FROM range(1000)")?;
//! for batch in db.query("SELECT i FROM t WHERE i % 2 = 0")? {
//!     println!("{} rows", batch?.num_rows());
//! }
//! # Ok::<(), quiver_client::Error>(())
//! ```
//!
//! - [`Connection`]: sync; `execute`, `query` (an iterator pulling one batch at a time),
//!   `query_arrow`, `prepare`, `query_cached` (prepared once per connection, by SQL text),
//!   transactions, the catalog, a [`CancelHandle`].
//! - [`params::row`]: one row of typed statement parameters.
//! - [`ArrowInserter`] and [`RowInserter`]: all-or-nothing inserts of batches or of rows;
//!   [`parallel`]: chunk senders on one connection, and work on N connections.
//! - [`AsyncConnection`]: the same for tokio, with [`AsyncQueryStream`] and
//!   [`AsyncArrowInserter`].
//! - [`Pool`]: connections shared by threads.
//! - [`ServerProcess`]: a server this process starts and stops.
#![warn(missing_docs)]

mod async_connection;
mod catalog;
mod connection;
mod error;
mod insert;
mod options;
pub mod parallel;
pub mod params;
mod pool;
mod prepared;
pub mod process;
mod query;
mod request;
mod row_inserter;
mod statement_cache;

pub use async_connection::{
    AsyncArrowInserter, AsyncConnection, AsyncQueryStream, INSERT_CHANNEL_BATCHES,
    QUERY_CHANNEL_BATCHES,
};
pub use catalog::{TableInfo, TABLES_LISTED_MAX};
pub use connection::{CancelHandle, Connection};
pub use error::{Error, Result};
pub use insert::ArrowInserter;
pub use options::{ConnectOptions, IntoAddress, Shm, SHM_BYTES_DEFAULT};
pub use params::Param;
pub use pool::{Pool, PooledConnection, POOL_SIZE_MAX};
pub use prepared::{Prepared, PreparedHandle};
pub use process::{ServerOptions, ServerProcess};
pub use query::QueryStream;
pub use quiver_rpc::{OutputBuffer, OutputRegion, OutputSpace};
pub use quiver_server_protocol::{Address, InsertMode, SessionInfo};
pub use row_inserter::{RowInserter, ROW_BATCH_ROWS_DEFAULT};
pub use statement_cache::STATEMENT_CACHE_MAX;
