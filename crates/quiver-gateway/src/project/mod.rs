//! The project: its files (offloader's layout), loaded and checked into [`model`]'s types.

pub mod model;

pub use model::*;
