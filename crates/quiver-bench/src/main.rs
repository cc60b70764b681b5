//! `quiver-bench`: the benchmark harness behind `./quiver bench <suite>`.
//!
//! `quiver-bench rpc` measures quiver's RPC (unary, producer and exchange streams,
//! 16 MiB batches inline and over shared memory) on every transport, the same
//! workloads through vgi-rpc (the Python peer, run under the oracle's
//! interpreter), and the machine's own limits (raw round trips, pipe bandwidth,
//! memcpy), all in one run; it writes `rpc.md` and `rpc.json`.
//!
//! The binary also plays the processes it measures: `serve` is the `BenchService`
//! worker and `raw-peer` the echo/sink peer of the baselines (both hidden).

mod baseline;
mod breakdown;
mod peer;
mod placement;
mod plan;
mod quiver_runs;
mod report;
mod service;
mod stats;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};

use crate::plan::Plan;
use crate::worker::{Listen, RawMode};

#[derive(Parser)]
#[command(name = "quiver-bench", version, about = "quiver's benchmark harness")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The RPC suite: quiver vs vgi-rpc vs the machine's limits.
    Rpc(RpcArgs),
    /// Serve BenchService (the worker the suite spawns).
    #[command(hide = true)]
    Serve {
        /// Listen on this Unix socket path instead of stdin/stdout.
        #[arg(long, conflicts_with = "tcp")]
        unix: Option<PathBuf>,
        /// Listen on this TCP address instead of stdin/stdout.
        #[arg(long)]
        tcp: Option<String>,
    },
    /// Echo or sink bytes (the peer of the raw baselines).
    #[command(hide = true)]
    RawPeer {
        /// What to do with the bytes.
        #[arg(long, value_enum)]
        mode: RawMode,
        /// Sink mode: acknowledge with one byte after this many bytes.
        #[arg(long, default_value_t = 1)]
        ack_every: u64,
        /// Connect to this Unix socket instead of using stdin/stdout.
        #[arg(long, conflicts_with = "tcp")]
        unix: Option<PathBuf>,
        /// Connect to this TCP address instead of using stdin/stdout.
        #[arg(long)]
        tcp: Option<String>,
    },
}

/// Options of `rpc`. A later occurrence of an option overrides an earlier one,
/// so `./quiver bench rpc --oracle-bin X` overrides the script's default.
#[derive(Args)]
#[command(args_override_self = true)]
struct RpcArgs {
    /// Directory holding the vgi-rpc oracle's `python` (a venv's bin/).
    #[arg(long)]
    oracle_bin: Option<PathBuf>,
    /// Where rpc.md and rpc.json are written.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
    /// Repetitions per figure.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    reps: u32,
    /// A tenth of the work per rep (smoke test; figures are noisier).
    #[arg(long)]
    quick: bool,
    /// Skip the vgi-rpc peer.
    #[arg(long)]
    no_peer: bool,
    /// Profiling aid: run only quiver's sessions named like this
    /// (`pipe/inline`, `subprocess/shm`, ...), no baselines and no peer.
    #[arg(long, hide = true)]
    only: Option<String>,
    /// The peer script.
    #[arg(long, default_value = "bench/peers/vgi_rpc_bench.py")]
    peer_script: PathBuf,
}

fn main() -> ExitCode {
    placement::cpu_count();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Rpc(args) => run_rpc(args),
        Command::Serve { unix, tcp } => {
            let listen = match (unix, tcp) {
                (Some(path), _) => Listen::Unix(path),
                (_, Some(address)) => Listen::Tcp(address),
                _ => Listen::Stdio,
            };
            worker::serve_bench(listen).map_err(|e| e.to_string())
        }
        Command::RawPeer {
            mode,
            ack_every,
            unix,
            tcp,
        } => worker::raw_peer(mode, ack_every, unix.as_deref(), tcp.as_deref())
            .map_err(|e| e.to_string()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("quiver-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

/// One part of a round.
#[derive(Clone, Copy)]
enum Section {
    Baselines,
    Quiver,
    Breakdown,
    Peer,
}

fn run_rpc(args: RpcArgs) -> Result<(), String> {
    let started = Instant::now();
    let plan = if args.quick {
        Plan::quick(args.reps)
    } else {
        Plan::full(args.reps)
    };
    let mut log = |message: &str| {
        eprintln!(
            "[bench {:6.1} s] {message}",
            started.elapsed().as_secs_f64()
        )
    };
    let no_peer = args.no_peer || args.only.is_some();
    let mut rounds = Rounds::default();
    for round in 0..plan.reps as usize {
        log(&format!("round {} of {}", round + 1, plan.reps));
        rounds.measure(&args, &plan, round, no_peer, &mut log);
    }
    let (failures, peer_run) = rounds.outcome(no_peer);

    placement::unpin_current_thread().map_err(|e| format!("unpinning: {e}"))?;
    let machine = report::Machine::probe();
    let run = report::Run {
        plan: &plan,
        measurements: &rounds.measurements,
        peer: &peer_run,
        failures: &failures,
        machine: &machine,
        wall_s: started.elapsed().as_secs_f64(),
    };
    let markdown = report::write(&run, &args.out)
        .map_err(|e| format!("writing results to {}: {e}", args.out.display()))?;
    println!("{markdown}");
    log(&format!("wrote {}/rpc.md and rpc.json", args.out.display()));
    let mut problems = failures;
    if !no_peer {
        problems.extend(peer_run.failure);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// What the rounds of an rpc run measured, and what failed.
#[derive(Default)]
struct Rounds {
    measurements: Vec<plan::Measurement>,
    failures: Vec<String>,
    peer_failures: Vec<String>,
    peer_info: peer::PeerInfo,
}

impl Rounds {
    /// One round: one rep of every section, starting with a different one each round, so that a
    /// slow spell of this noisy machine lands on all of them.
    fn measure(
        &mut self,
        args: &RpcArgs,
        plan: &Plan,
        round: usize,
        no_peer: bool,
        log: &mut dyn FnMut(&str),
    ) {
        const ORDER: [Section; 4] = [
            Section::Baselines,
            Section::Quiver,
            Section::Breakdown,
            Section::Peer,
        ];
        let round_plan = Plan {
            reps: 1,
            ..plan.clone()
        };
        for k in 0..ORDER.len() {
            let section = ORDER[(round + k) % ORDER.len()];
            let found = self.section(section, args, &round_plan, no_peer, log);
            plan::merge(&mut self.measurements, found);
        }
    }

    /// One rep of `section` (nothing for a section this run leaves out).
    fn section(
        &mut self,
        section: Section,
        args: &RpcArgs,
        round_plan: &Plan,
        no_peer: bool,
        log: &mut dyn FnMut(&str),
    ) -> Vec<plan::Measurement> {
        match section {
            Section::Baselines if args.only.is_none() => baseline::run_all(round_plan, log)
                .unwrap_or_else(|error| {
                    self.failures.push(format!("baselines: {error}"));
                    Vec::new()
                }),
            Section::Quiver => {
                quiver_runs::run_all(round_plan, args.only.as_deref(), log, &mut self.failures)
            }
            Section::Breakdown if args.only.is_none() => {
                log("quiver: 16 MiB path and unary CPU, step by step");
                breakdown::run_all(round_plan).unwrap_or_else(|error| {
                    self.failures.push(format!("breakdown: {error}"));
                    Vec::new()
                })
            }
            Section::Peer if !no_peer => match &args.oracle_bin {
                Some(oracle_bin) => {
                    log(&format!(
                        "vgi-rpc: {} under {}",
                        args.peer_script.display(),
                        oracle_bin.display()
                    ));
                    let run = peer::run(oracle_bin, &args.peer_script, round_plan);
                    if !run.info.vgi_rpc.is_empty() {
                        self.peer_info = run.info;
                    }
                    self.peer_failures.extend(run.failure);
                    run.measurements
                }
                None => {
                    self.peer_failures.push("not run (no --oracle-bin)".into());
                    Vec::new()
                }
            },
            _ => Vec::new(),
        }
    }

    /// quiver's failures (each once) and the peer's run as the report shows it.
    fn outcome(&mut self, no_peer: bool) -> (Vec<String>, peer::PeerRun) {
        let mut failures = std::mem::take(&mut self.failures);
        failures.sort();
        failures.dedup();
        let mut peer_failures = std::mem::take(&mut self.peer_failures);
        peer_failures.sort();
        peer_failures.dedup();
        let peer_run = peer::PeerRun {
            info: std::mem::take(&mut self.peer_info),
            measurements: Vec::new(),
            failure: if no_peer {
                Some("not run (--no-peer)".into())
            } else if peer_failures.is_empty() {
                None
            } else {
                Some(peer_failures.join("; "))
            },
        };
        (failures, peer_run)
    }
}
