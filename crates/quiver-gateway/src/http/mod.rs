//! The public HTTP port: endpoints served as JSON, NDJSON, CSV, Arrow or Parquet, with keys,
//! rate limits, ETags and the error envelope.

pub mod app;
pub mod connections;
pub mod cors;
pub mod endpoint;
pub mod errors;
pub mod etag;
pub mod limits;
pub mod parse_errors;
pub mod query;
pub mod request_id;
pub mod timing;
