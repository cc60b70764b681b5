//! `quiver-gateway`: serve a project, check one, or write a starter project from parquet files.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use quiver_gateway::serve::{self, ServeOptions};

#[derive(Parser)]
#[command(
    name = "quiver-gateway",
    about = "Read-only HTTP APIs over DuckDB snapshots"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a project's endpoints.
    Serve(ServeArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// The project directory (offloader.yml or gateway.yml, datasets/, endpoints/, keys/).
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
    /// Where the server's database, the snapshot sidecar and downloaded parts live (default:
    /// PROJECT_DIR/.quiver-gateway).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Exit when stdin closes (a parent's dead-man switch).
    #[arg(long)]
    watch_stdin: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => {
            init_logs();
            let options = ServeOptions {
                project_dir: args.project_dir,
                listen: args.listen,
                admin_listen: args.admin_listen,
                server: args.server,
                server_token_env: args.server_token_env,
                admin_token_env: args.admin_token_env,
                state_dir: args.state_dir,
                watch_stdin: args.watch_stdin,
            };
            match serve::run(options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    eprintln!("quiver-gateway: {message}");
                    ExitCode::FAILURE
                }
            }
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
