//! A worker: its functions, the vgi.v2 service built from them, and launching
//! it the way engines launch workers.
//!
//! * stdio (default): one connection on stdin/stdout; exits when stdin closes.
//!   Parallel scans share work through files (each connection is a process).
//! * `--unix PATH`: prints exactly `UNIX:<absolute path>`, serves every
//!   connection on its own thread with shared in-memory state, and exits after
//!   `--idle-timeout` seconds without a connection (default 300; 0 = never).
//! * `--http [ADDR]`: serves vgi-rpc's HTTP transport on `ADDR` (default `127.0.0.1:0`), prints
//!   `PORT:<n>`, and serves until `SIGTERM` (TLS with `--http-tls-cert`/`--http-tls-key`; the
//!   bearer token and the token key replicas share come from `QUIVER_HTTP_TOKEN` and
//!   `QUIVER_HTTP_TOKEN_KEY`). With a shared token key the worker is one of several replicas
//!   behind a load balancer: resumable streams carry their state in their tokens (`carry.rs`),
//!   so a shared-work scan runs on its primary connection alone, its counter in its token.
//!   Without one, the connections of a scan share the counter in this process.
//!
//! Only protocol bytes go to stdout: the stdio transport moves the protocol to a
//! private descriptor and points fd 1 at stderr, so a stray print cannot corrupt
//! the stream.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use quiver_rpc::serve::{http_config, serve_http, serve_stdio, serve_unix};
use quiver_rpc::{Server, ServerConfig, Service};
use quiver_shm::ShmConfig;

use crate::catalog::Catalog;
use crate::docs::{CatalogDocs, SchemaDecl};
use crate::execution::{Executions, Sharing};
use crate::function::Function;
use crate::init::InitContext;
use crate::logging::{self, Level};
use crate::{PROTOCOL_NAME, PROTOCOL_VERSION};

/// The command line every worker accepts (flatten it into a worker's own
/// parser to add flags).
#[derive(Parser, Debug, Clone)]
#[command(about = "A VGI worker (vgi.v2 2.2.0)")]
pub struct LaunchArgs {
    /// Serve many connections on this Unix socket instead of stdio.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Serve vgi-rpc's HTTP transport on this address instead (default 127.0.0.1:0).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0",
          conflicts_with = "unix")]
    pub http: Option<String>,
    /// With --http: serve HTTPS with this PEM certificate chain.
    #[arg(long, value_name = "PEM", requires = "http")]
    pub http_tls_cert: Option<PathBuf>,
    /// With --http: the PEM private key of --http-tls-cert.
    #[arg(long, value_name = "PEM", requires = "http")]
    pub http_tls_key: Option<PathBuf>,
    /// With --unix: exit after this many seconds with no connection (fractions
    /// allowed; 0 or less: never).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 300.0,
        allow_negative_numbers = true
    )]
    pub idle_timeout: f64,
    /// Log only errors.
    #[arg(long)]
    pub quiet: bool,
    /// Log every call.
    #[arg(long)]
    pub debug: bool,
    /// error, warning, info or debug.
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Accepted for launcher compatibility; logs are plain text.
    #[arg(long, value_name = "FORMAT", hide = true)]
    pub log_format: Option<String>,
    /// Accepted for launcher compatibility.
    #[arg(long, value_name = "NAME", hide = true)]
    pub log_logger: Option<String>,
}

impl LaunchArgs {
    /// The idle timeout, `None` for never.
    pub fn idle_timeout(&self) -> Option<Duration> {
        (self.idle_timeout.is_finite() && self.idle_timeout > 0.0)
            .then(|| Duration::from_secs_f64(self.idle_timeout))
    }

    fn level(&self) -> Level {
        let named = self.log_level.as_deref().and_then(logging::parse_level);
        match (self.quiet, self.debug, named) {
            (true, _, _) => Level::Error,
            (_, true, _) => Level::Debug,
            (_, _, Some(level)) => level,
            _ => Level::Warn,
        }
    }
}

/// A worker under construction: a catalog name and its functions.
pub struct Worker {
    catalog_name: String,
    functions: Vec<Function>,
    docs: CatalogDocs,
}

impl Worker {
    /// A worker whose catalog is called `catalog_name`.
    pub fn new(catalog_name: &str) -> Worker {
        assert!(!catalog_name.is_empty(), "a catalog needs a name");
        Worker {
            catalog_name: catalog_name.to_string(),
            functions: Vec::new(),
            docs: CatalogDocs::default(),
        }
    }

    /// The schema unqualified names resolve in (`USE w`) and functions live in unless they say
    /// otherwise ([`Function::in_schema`]); `main` when not set.
    pub fn default_schema(mut self, name: &str) -> Worker {
        assert!(
            crate::declarations::is_identifier(name),
            "schema name '{name}' must be a lowercase identifier"
        );
        self.docs.set_default(name);
        self
    }

    /// Declares a schema, with or without functions, and its comment and tags.
    pub fn schema(mut self, schema: SchemaDecl) -> Worker {
        self.docs.declare(schema);
        self
    }

    /// The catalog's comment (`duckdb_databases().comment`).
    pub fn comment(mut self, comment: &str) -> Worker {
        self.docs.comment = Some(comment.to_string());
        self
    }

    /// Adds a tag to the catalog (`duckdb_databases().tags`).
    pub fn tag(mut self, key: &str, value: &str) -> Worker {
        self.docs.tags.push((key.to_string(), value.to_string()));
        self
    }

    /// Adds a function.
    pub fn function(mut self, function: Function) -> Worker {
        assert!(
            self.functions.iter().all(|f| f.name != function.name),
            "function '{}' registered twice",
            function.name
        );
        self.functions.push(function);
        self
    }

    /// The vgi.v2 service of this worker, with executions shared as `sharing`
    /// says (in-process for one server with many connections, cross-process
    /// when every connection is its own process).
    pub fn service(self, sharing: Sharing) -> Service {
        let catalog =
            Arc::new(Catalog::new(&self.catalog_name, self.functions).with_docs(self.docs));
        let executions = Executions::new(sharing);
        let mut service = Service::new(PROTOCOL_NAME, PROTOCOL_VERSION);
        crate::catalog::register(&mut service, catalog.clone());
        crate::bind::register(&mut service, catalog.clone());
        crate::bind::register_cardinality(&mut service, catalog.clone());
        crate::plan::register(&mut service, catalog.clone());
        let buffered = Arc::new(crate::buffered::BufferedCalls::default());
        crate::buffered::register(&mut service, buffered.clone());
        crate::aggregate::register(&mut service, catalog.clone());
        crate::init::register(
            &mut service,
            Arc::new(InitContext {
                catalog,
                executions,
                buffered,
            }),
        );
        service
    }

    /// Parses the process's command line and serves; exits the process.
    pub fn run(self) -> ! {
        let args = LaunchArgs::parse();
        self.run_with(&args)
    }

    /// Serves as `args` say; exits the process (0 when the engine went away).
    pub fn run_with(self, args: &LaunchArgs) -> ! {
        logging::set_level(args.level());
        let name = self.catalog_name.clone();
        match self.serve(args) {
            Ok(()) => {
                // stdio: the engine closed our input; a socket: SIGTERM asked us to stop.
                let why = if args.unix.is_some() || args.http.is_some() {
                    "asked to stop"
                } else {
                    "engine gone"
                };
                logging::log(Level::Info, format!("{name}: {why}, exiting"));
                std::process::exit(0)
            }
            Err(error) => {
                logging::log(Level::Error, format!("{name}: {error}"));
                std::process::exit(1)
            }
        }
    }

    /// Serves as `args` say until the engine goes away (stdio) or the idle
    /// timeout passes (unix; that path exits the process itself).
    pub fn serve(self, args: &LaunchArgs) -> std::io::Result<()> {
        let shm = ShmConfig::from_env()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        let config = ServerConfig {
            shm,
            ..ServerConfig::default()
        };
        let name = self.catalog_name.clone();
        if let Some(address) = &args.http {
            let http = http_config(args.http_tls_cert.clone(), args.http_tls_key.clone(), None)?;
            // A key from the environment is shared with other replicas: nothing per scan may
            // stay in this process. A random key serves this process alone.
            let sharing = if std::env::var_os(quiver_rpc::http::TOKEN_KEY_ENV).is_some() {
                Sharing::Carried
            } else {
                Sharing::InProcess
            };
            let server = Server::new(self.service(sharing), config);
            logging::log(Level::Info, format!("{name}: serving HTTP on {address}"));
            return serve_http(Arc::new(server), address, http);
        }
        match &args.unix {
            Some(path) => {
                let server = Server::new(self.service(Sharing::InProcess), config);
                logging::log(Level::Info, format!("{name}: serving {}", path.display()));
                serve_unix(Arc::new(server), path, args.idle_timeout())
            }
            None => {
                let dir = crate::work_file::default_dir();
                let server = Server::new(self.service(Sharing::CrossProcess { dir }), config);
                logging::log(Level::Info, format!("{name}: serving stdio"));
                serve_stdio(&server)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_flags_parse_like_the_launchers_write_them() {
        let args = LaunchArgs::parse_from(["w", "--unix", "s.sock", "--idle-timeout", "300.0"]);
        assert_eq!(args.unix.as_deref(), Some(std::path::Path::new("s.sock")));
        assert_eq!(args.idle_timeout(), Some(Duration::from_secs(300)));
        let args = LaunchArgs::parse_from([
            "w",
            "--idle-timeout",
            "1.5",
            "--log-level",
            "INFO",
            "--log-format",
            "json",
        ]);
        assert_eq!(args.idle_timeout(), Some(Duration::from_millis(1500)));
        assert_eq!(args.level(), Level::Info);
        assert_eq!(
            LaunchArgs::parse_from(["w", "--idle-timeout", "0"]).idle_timeout(),
            None
        );
        assert_eq!(
            LaunchArgs::parse_from(["w", "--idle-timeout", "-1"]).idle_timeout(),
            None
        );
        assert!(LaunchArgs::parse_from(["w"]).unix.is_none());
    }
}
