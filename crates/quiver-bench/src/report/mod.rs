//! Summaries, ratios, targets, and the two result files: `rpc.md` for people and
//! `rpc.json` for tools.
//!
//! - [`summary`]: a measurement as a `Figure`, looked up by its cell, and the baselines.
//! - [`ratios`]: each record's ratios against its baselines and its peer.
//! - [`targets`]: the stated goals and whether a run met them.
//! - [`json`] and [`markdown`]: the two files; [`format`]: how figures are written in prose.

mod format;
mod json;
mod machine;
mod markdown;
mod ratios;
mod summary;
mod targets;
#[cfg(test)]
mod tests;

use std::path::Path;

pub use machine::Machine;
pub use summary::Run;

/// Writes `rpc.json` and `rpc.md` under `dir`; returns the markdown.
pub fn write(run: &Run<'_>, dir: &Path) -> std::io::Result<String> {
    std::fs::create_dir_all(dir)?;
    let json = json::document(run);
    std::fs::write(
        dir.join("rpc.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    let markdown = markdown::markdown(run);
    std::fs::write(dir.join("rpc.md"), &markdown)?;
    Ok(markdown)
}
