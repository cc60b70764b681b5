//! quiver gateway's core, with no async runtime and no HTTP stack: what a project says and what
//! a request to it means. The serving crate (`quiver-gateway`) puts snapshots, HTTP and a quiver
//! server under it.
//!
//! - [`project`]: the project files (offloader's layout) loaded and checked into one model, every
//!   problem reported at once as `file:line: message`.
//! - [`compile`]: an endpoint and a caller's params become one parameterized statement, and its
//!   signed keyset cursors.
//! - [`value`]: a value bound into a statement.
//! - [`openapi`]: the project's OpenAPI document; [`catalog`]: offloader's `/docs` and `/schema`.

#![warn(missing_docs)]

pub mod catalog;
pub mod compile;
pub mod openapi;
pub mod project;
pub mod value;
