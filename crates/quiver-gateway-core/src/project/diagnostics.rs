//! Problems found in a project's files, each with its file and line, all reported at once.

use std::fmt;
use std::path::{Path, PathBuf};

/// At most this many problems are kept; past it one more says how many were left out, so a badly
/// broken file cannot grow the report without bound.
pub const MAX_DIAGNOSTICS: usize = 1000;

/// One problem: printed `path:line: message` (`path: message` when it concerns the whole file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file the problem is in.
    pub file: PathBuf,
    /// 1-based; 0 when the problem concerns the whole file.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
        }
    }
}

/// Every problem found, in the order found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// The problems kept, at most `MAX_DIAGNOSTICS`.
    pub items: Vec<Diagnostic>,
    /// Problems past `MAX_DIAGNOSTICS`, counted but not kept.
    pub left_out: usize,
}

impl Diagnostics {
    /// Records a problem at `file:line`, or only counts it once `MAX_DIAGNOSTICS` are kept.
    pub fn push(&mut self, file: &Path, line: usize, message: impl Into<String>) {
        if self.items.len() < MAX_DIAGNOSTICS {
            self.items.push(Diagnostic {
                file: file.to_path_buf(),
                line,
                message: message.into(),
            });
        } else {
            self.left_out += 1;
        }
    }

    /// Whether no problem was found.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.left_out == 0
    }

    /// How many problems were found, kept or left out.
    pub fn len(&self) -> usize {
        self.items.len() + self.left_out
    }

    /// `Ok(value)` when nothing was found, else every problem.
    pub fn into_result<T>(self, value: T) -> Result<T, Diagnostics> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for item in &self.items {
            writeln!(f, "{item}")?;
        }
        if self.left_out > 0 {
            writeln!(f, "... and {} more problems", self.left_out)?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}
