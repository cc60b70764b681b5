//! The project: its files (offloader's layout), loaded and checked into [`model`]'s types.
//!
//! - [`load()`]: the whole project, every problem reported at once (`path:line: message`).
//! - [`keys`]: the keys file alone (serving reloads it), and minting a key.
//! - [`init`]: a starter project written from a directory of parquet files.
//! - `values`: a param's value checked against its type (a caller's, or a default).
//!
//! Reading an endpoint: `endpoint.rs` (its own fields), `params.rs` and `query.rs` (its params and
//! its query), each depending only on `model`, `bounds` and `yaml`, never on one another.

pub(crate) mod bounds;
pub(crate) mod dataset;
pub(crate) mod diagnostics;
pub(crate) mod endpoint;
pub mod init;
pub mod keys;
pub(crate) mod load;
pub mod model;
pub(crate) mod params;
pub(crate) mod query;
pub(crate) mod select;
pub(crate) mod settings;
pub(crate) mod values;
pub(crate) mod yaml;

pub use diagnostics::{Diagnostic, Diagnostics};
pub use load::{load, read};
pub use model::*;

#[cfg(test)]
pub(crate) mod load_tests;
