//! Bounds on an endpoint's pieces, shared by the readers of its parts (`endpoint.rs`,
//! `params.rs`, `query.rs`), which otherwise do not depend on one another.

/// Bounds on an endpoint's pieces.
pub const MAX_PARAMS: usize = 64;
pub const MAX_SELECT: usize = 1000;
pub const MAX_FILTERS: usize = 256;
pub const MAX_COMBINATIONS: usize = 256;
pub const MAX_ALIASES: usize = 1000;
pub const MAX_ENUM_VALUES: usize = 10_000;
/// Pagination: offloader's defaults without a `pagination:` block, and a hard cap on any page.
pub const DEFAULT_LIMIT: u64 = 50;
pub const DEFAULT_MAX_LIMIT: u64 = 100;
pub const HARD_MAX_LIMIT: u64 = 100_000;
/// An `in` param's default count of values, and the most a project may allow.
pub const DEFAULT_MAX_VALUES: usize = 100;
pub const HARD_MAX_VALUES: usize = 1000;
