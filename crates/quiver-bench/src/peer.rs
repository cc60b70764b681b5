//! Runs the vgi-rpc peer (`bench/peers/vgi_rpc_bench.py`) under the oracle's
//! Python and collects its measurements.
//!
//! The script prints one JSON object per line on stdout: `{"info": {...}}` once
//! (versions), then `{"measurement": {...}}` per figure, in [`Measurement`]'s shape,
//! and `{"failure": "..."}` for a part that could not run.
//! Progress goes to stderr, which is passed through.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use quiver_process::{Child, StderrMode};

use serde::Deserialize;

use crate::plan::{Measurement, Plan};
use crate::quiver_runs::BenchResult;

/// The longest the peer may run before it is killed.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(600);

/// Versions the peer reports about itself.
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
pub struct PeerInfo {
    /// `sys.version` of the interpreter.
    pub python: String,
    /// `vgi_rpc.__version__` (or the installed distribution's version).
    pub vgi_rpc: String,
    /// `pyarrow.__version__`.
    pub pyarrow: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Line {
    Info(PeerInfo),
    Measurement(Measurement),
    /// A part of the peer's run that failed (the rest went on).
    Failure(String),
}

/// What the peer measured, and why it stopped early if it did.
#[derive(Debug, Default)]
pub struct PeerRun {
    /// Versions.
    pub info: PeerInfo,
    /// Figures, possibly fewer than planned.
    pub measurements: Vec<Measurement>,
    /// Why the run ended before its end, if it did.
    pub failure: Option<String>,
}

/// Runs `script` with `<oracle_bin>/python` and the plan; keeps whatever it
/// measured even when it fails part-way.
pub fn run(oracle_bin: &Path, script: &Path, plan: &Plan) -> PeerRun {
    match run_inner(oracle_bin, script, plan) {
        Ok(run) => run,
        Err(error) => PeerRun {
            failure: Some(error.to_string()),
            ..PeerRun::default()
        },
    }
}

fn run_inner(oracle_bin: &Path, script: &Path, plan: &Plan) -> BenchResult<PeerRun> {
    let python = oracle_bin.join("python");
    if !python.exists() {
        return Err(format!(
            "no interpreter at {} (pass --oracle-bin <venv>/bin)",
            python.display()
        )
        .into());
    }
    if !script.exists() {
        return Err(format!("peer script {} not found", script.display()).into());
    }
    let mut command = Command::new(&python);
    command
        .arg(script)
        .arg("bench")
        .arg("--plan")
        .arg(serde_json::to_string(plan)?)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let mut child = Child::spawn(command, StderrMode::Inherit)
        .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
    let stdout = child.take_stdout().expect("piped stdout");
    let reader = std::thread::spawn(move || -> PeerRun {
        let mut run = PeerRun::default();
        for line in BufReader::new(stdout).lines() {
            let line = match line {
                Ok(line) => line,
                Err(e) => {
                    run.failure = Some(format!("reading peer output: {e}"));
                    break;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Line>(&line) {
                Ok(Line::Info(info)) => run.info = info,
                Ok(Line::Measurement(m)) => run.measurements.push(m),
                Ok(Line::Failure(failure)) => {
                    run.failure = Some(match run.failure.take() {
                        Some(earlier) => format!("{earlier}; {failure}"),
                        None => failure,
                    })
                }
                Err(e) => {
                    run.failure = Some(format!("peer printed {line:?}: {e}"));
                    break;
                }
            }
        }
        run
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait() {
            break status;
        }
        if started.elapsed() > PEER_TIMEOUT {
            child.terminate(Duration::ZERO);
            let mut run = reader.join().map_err(|_| "peer output reader panicked")?;
            run.failure = Some(format!(
                "peer ran longer than {PEER_TIMEOUT:?} and was killed"
            ));
            return Ok(run);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut run = reader.join().map_err(|_| "peer output reader panicked")?;
    if !status.success() && run.failure.is_none() {
        run.failure = Some(format!(
            "peer exited with {status} after {} measurements",
            run.measurements.len()
        ));
    }
    Ok(run)
}
