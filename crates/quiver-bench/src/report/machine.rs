//! The machine a run measured, for the report's "machine" line.

use serde::{Deserialize, Serialize};

/// Facts about the machine, for the "machine" line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Machine {
    /// `nproc`.
    pub nproc: String,
    /// First `model name` of /proc/cpuinfo.
    pub cpu_model: String,
    /// `uname -r`.
    pub kernel: String,
    /// UTC date and time of the run.
    pub date: String,
    /// `git describe`-like commit of the tree measured.
    pub commit: String,
}

impl Machine {
    /// Reads the facts (missing ones become "unknown").
    pub fn probe() -> Machine {
        let try_command = |program: &str, args: &[&str]| {
            std::process::Command::new(program)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let command = |program: &str, args: &[&str]| {
            try_command(program, args).unwrap_or_else(|| "unknown".to_string())
        };
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|line| line.starts_with("model name"))
                    .and_then(|line| line.split_once(':'))
                    .map(|(_, model)| model.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        let mut commit = command("git", &["rev-parse", "--short", "HEAD"]);
        let status = try_command("git", &["status", "--porcelain", "--untracked-files=no"]);
        if status.is_some_and(|changes| !changes.is_empty()) {
            commit.push_str(" (with uncommitted changes)");
        }
        Machine {
            nproc: command("nproc", &[]),
            cpu_model,
            kernel: command("uname", &["-r"]),
            date: command("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
            commit,
        }
    }
}
