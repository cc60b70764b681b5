//! `quiver-gateway`: serve a project, check one, or write a starter project from parquet files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use quiver_gateway::project::{self, init, keys};

#[derive(Parser)]
#[command(
    name = "quiver-gateway",
    about = "read-only HTTP APIs over DuckDB snapshots"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a project: every problem as `path:line: message` (exit 1), or a one-line summary.
    Check { project_dir: PathBuf },
    /// Write a starter project from a directory of parquet files; prints the key's token once.
    Init {
        parquet_dir: PathBuf,
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
    /// API keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Mint a key: prints its token once and the entry (its hash) for the keys file.
    Create {
        #[arg(long)]
        id: String,
        #[arg(long)]
        tenant: Option<String>,
        /// Comma-separated endpoint names.
        #[arg(long, value_delimiter = ',')]
        endpoints: Vec<String>,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Check { project_dir } => match project::load(&project_dir) {
            Ok(project) => {
                println!(
                    "ok: {} datasets, {} endpoints, {} keys",
                    project.datasets.len(),
                    project.endpoints.len(),
                    project.keys.len()
                );
                ExitCode::SUCCESS
            }
            Err(diagnostics) => {
                print!("{diagnostics}");
                eprintln!("{} problems", diagnostics.len());
                ExitCode::FAILURE
            }
        },
        Command::Init { parquet_dir, out } => match init::init(&parquet_dir, &out) {
            Ok(report) => {
                for dataset in &report.datasets {
                    println!(
                        "dataset {}: {} columns, {} rows, from {}",
                        dataset.id,
                        dataset.columns,
                        dataset.rows,
                        dataset.file.display()
                    );
                    for column in &dataset.skipped_columns {
                        println!("  left out column {column:?}: not an identifier [a-z][a-z0-9_]*");
                    }
                }
                for (file, why) in &report.skipped_files {
                    println!("skipped {}: {why}", file.display());
                }
                println!("project written to {}", report.project_dir.display());
                println!(
                    "key `{}` token (shown once): {}",
                    init::STARTER_KEY_ID,
                    report.token
                );
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("quiver-gateway init: {error}");
                ExitCode::FAILURE
            }
        },
        Command::Keys {
            command:
                KeysCommand::Create {
                    id,
                    tenant,
                    endpoints,
                },
        } => match keys::create(&id, tenant.as_deref(), &endpoints) {
            Ok((token, entry)) => {
                println!("token (shown once): {token}");
                println!("add to the keys file under `keys:`:\n{entry}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("quiver-gateway keys create: {error}");
                ExitCode::FAILURE
            }
        },
    }
}
