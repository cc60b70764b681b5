//! `quiver-gateway`: serve a project, check one, write a starter project from parquet files, or
//! mint an API key.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use quiver_gateway::project::{self, init, keys};
use quiver_gateway::serve::{self, ServeOptions};

/// See the dependency's note in Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "quiver-gateway",
    version,
    about = "read-only HTTP APIs over DuckDB snapshots"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a project's endpoints.
    Serve(ServeArgs),
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

#[derive(Args)]
struct ServeArgs {
    /// The project directory (offloader.yml or gateway.yml, datasets/, endpoints/, keys/), or
    /// a project in a bucket: s3://bucket/prefix or gs://bucket/prefix (downloaded into
    /// STATE_DIR/config).
    project_dir: PathBuf,
    /// The public port's address (port 0: a free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The admin port's address; non-loopback needs --admin-token-env.
    #[arg(long, default_value = "127.0.0.1:8081")]
    admin_listen: SocketAddr,
    /// The variable holding the admin port's bearer token.
    #[arg(long)]
    admin_token_env: Option<String>,
    /// A running quiver server (unix:///path or tcp://host:port); default: spawn one.
    #[arg(long)]
    server: Option<String>,
    /// The variable holding that server's token.
    #[arg(long, requires = "server")]
    server_token_env: Option<String>,
    /// The spawned server's DuckDB `threads` (default: DuckDB's, one per core).
    #[arg(long, conflicts_with = "server")]
    server_threads: Option<usize>,
    /// The spawned server's DuckDB `memory_limit`, e.g. `4GB` (default: DuckDB's).
    #[arg(long, conflicts_with = "server")]
    server_memory_limit: Option<String>,
    /// Where the server's database, the snapshot sidecar and downloaded parts live (default:
    /// PROJECT_DIR/.quiver-gateway).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Exit when stdin closes (a parent's dead-man switch).
    #[arg(long)]
    watch_stdin: bool,
    /// Browser origins the public port allows (CORS), comma-separated, or `*`; overrides the
    /// project's `gateway: cors_origins` and the OFFLOADER_CORS_ORIGINS variable.
    #[arg(long)]
    cors_origins: Option<String>,
    /// Re-read the project every this many seconds and swap a changed one in once it checks and
    /// its changed datasets have snapshots (offloader's config sync; OFFLOADER_CONFIG_SYNC_INTERVAL
    /// otherwise). Off by default.
    #[arg(long)]
    config_sync_interval: Option<u64>,
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
        Command::Serve(args) => run_serve(args),
        Command::Check { project_dir } => check(&project_dir),
        Command::Init { parquet_dir, out } => init_project(&parquet_dir, &out),
        Command::Keys {
            command:
                KeysCommand::Create {
                    id,
                    tenant,
                    endpoints,
                },
        } => create_key(&id, tenant.as_deref(), &endpoints),
    }
}

fn run_serve(args: ServeArgs) -> ExitCode {
    init_logs();
    let options = ServeOptions {
        project_dir: args.project_dir,
        listen: args.listen,
        admin_listen: args.admin_listen,
        server: args.server,
        server_token_env: args.server_token_env,
        server_threads: args.server_threads,
        server_memory_limit: args.server_memory_limit,
        admin_token_env: args.admin_token_env,
        state_dir: args.state_dir,
        watch_stdin: args.watch_stdin,
        cors_origins: args.cors_origins,
        config_sync_interval: args.config_sync_interval,
    };
    match serve::run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("quiver-gateway: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The project's files, then (for what loaded) its manifests and parts: every problem in one
/// pass.
fn check(project_dir: &std::path::Path) -> ExitCode {
    let (project, mut diagnostics) = project::read(project_dir);
    if let Some(project) = &project {
        quiver_gateway::snapshot::check::check_sources(project, &mut diagnostics);
    }
    match project
        .filter(|_| diagnostics.is_empty())
        .ok_or(diagnostics)
    {
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
    }
}

fn init_project(parquet_dir: &std::path::Path, out: &std::path::Path) -> ExitCode {
    match init::init(parquet_dir, out) {
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
    }
}

fn create_key(id: &str, tenant: Option<&str>, endpoints: &[String]) -> ExitCode {
    match keys::create(id, tenant, endpoints) {
        Ok((token, entry)) => {
            println!("token (shown once): {token}");
            println!("add to the keys file under `keys:`:\n{entry}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("quiver-gateway keys create: {error}");
            ExitCode::FAILURE
        }
    }
}

/// JSON lines on stderr; `RUST_LOG` filters (default `info`).
fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_current_span(false)
        .init();
}
