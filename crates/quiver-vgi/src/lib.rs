//! Worker SDK for the VGI engine↔worker protocol (`vgi.v2`, protocol version
//! 2.2.0, as spoken by vgi-python 0.47.0), on quiver's RPC spine.
//!
//! A worker exposes functions to SQL: scalar functions (columns in, one column
//! out), aggregate functions (rows in, one value per group out; `aggregate.rs`), table functions (`FROM f(...)`, parallel across connections through a
//! shared work counter) and table-in-out functions (a table in, a table out,
//! with an optional finalize). The SDK answers the engine's catalog discovery,
//! binds and checks calls, runs the `init` streams, applies projection and the
//! exact subset of pushed-down filters, and launches the process the way
//! engines expect (stdio, or `--unix PATH` printing `UNIX:<path>`, or `--http`).
//!
//! Over HTTP behind a load balancer, a stream's next turn may land on another replica: scalar
//! streams always resume there; a scan or table-in-out state does when it implements
//! `snapshot` ([`TableScan::snapshot`], [`InOutState::snapshot`]) and its function declares
//! `resume` ([`TableFunction::resume`], [`TableInOutFunction::resume`]). A state that cannot be
//! serialised (a closure, an open file) stays held by the replica that opened it, and a turn
//! landing elsewhere is refused with that replica's name (see `docs/call-out.md`, "Scale-out").
//!
//! ```no_run
//! use std::sync::Arc;
//! use arrow_array::{cast::AsArray, ArrayRef, Int64Array, RecordBatch};
//! use arrow_schema::{DataType, Field, Schema};
//! use quiver_vgi::{Arg, ScalarFunction, TableFunction, TableInOutFunction, Worker};
//!
//! let length = ScalarFunction::new("str_length", DataType::Int64)
//!     .doc("Length of a string in bytes")
//!     .arg(Arg::new("s", DataType::Utf8).doc("the string"))
//!     .body(|input| {
//!         let s = input.columns[0].as_string::<i32>();
//!         Ok(Arc::new(s.iter().map(|v| v.map(|v| v.len() as i64)).collect::<Int64Array>()) as ArrayRef)
//!     });
//!
//! let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, false)]));
//! let count = TableFunction::new("count_to")
//!     .doc("0..n-1, scanned in parallel")
//!     .arg(Arg::new("n", DataType::Int64).min(0))
//!     .output(schema.clone())
//!     .projection_pushdown()
//!     .filter_pushdown()
//!     .max_workers(4)
//!     .shared_work(|args| Ok(args.i64("n")? as u64))
//!     .scan(move |_| {
//!         let schema = schema.clone();
//!         Ok(move |scan: &mut quiver_vgi::Scan<'_>| {
//!             let Some(rows) = scan.claim(65_536)? else { return Ok(None) };
//!             let column = Int64Array::from_iter_values(rows.start as i64..rows.end as i64);
//!             Ok(Some(RecordBatch::try_new(schema.clone(), vec![Arc::new(column)]).unwrap()))
//!         })
//!     });
//!
//! let echo = TableInOutFunction::new("echo")
//!     .arg(Arg::table("data"))
//!     .map(|batch| Ok(batch.clone()));
//!
//! Worker::new("example").function(length).function(count).function(echo).run();
//! ```
#![warn(missing_docs)]

mod aggregate;
mod arg_binding;
mod args;
mod bind;
mod buffered;
mod builders;
mod carry;
mod catalog;
mod declarations;
mod docs;
mod execution;
mod filter_eval;
mod filter_expr;
mod filter_parser;
mod filters;
mod function;
mod in_out_state;
mod init;
pub mod limits;
pub mod logging;
mod plan;
mod projection;
mod scalar;
mod scan;
mod table;
mod table_in_out;
mod work_file;
mod worker;

pub use aggregate::{AggregateFunction, AggregateInput, Aggregator};
pub use args::Args;
pub use builders::{ScalarFunction, TableFunction, TableInOutFunction};
pub use declarations::{Arg, Capabilities, FunctionKind};
pub use docs::{CatalogDocs, Example, FunctionDocs, SchemaDecl};
pub use execution::{ExecutionId, Sharing};
pub use filters::Filters;
pub use function::{BindInput, Function, ScalarInput};
pub use in_out_state::{Emitter, InOutInit, InOutState};
pub use projection::Projection;
pub use quiver_rpc::OutputBuffer;
pub use scan::{Scan, ScanInit, TableScan};
pub use worker::{LaunchArgs, Worker};

// What both sides of vgi.v2 agree on lives in the contract crate; a worker author reaches it
// through this crate.
pub use quiver_vgi_contract::{
    errors, int64_value, ipc, schemas, utf8_value, BindRequest, GlobalInitResponse, InitRequest,
    RawArguments, RowBuilder, RowReader, CONTINUE, HAVE_MORE_OUTPUT, PROTOCOL_NAME,
    PROTOCOL_VERSION, STATUS_KEY,
};
