//! The public HTTP port: endpoints served as JSON, NDJSON, CSV, Arrow or Parquet, with keys,
//! rate limits, ETags and the error envelope.

pub(crate) mod app;
pub(crate) mod connections;
pub(crate) mod cors;
pub(crate) mod endpoint;
pub(crate) mod errors;
pub(crate) mod etag;
pub(crate) mod limits;
pub(crate) mod parse_errors;
pub mod query;
pub(crate) mod request_id;
pub(crate) mod timing;
