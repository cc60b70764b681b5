//! `ServerProcess`: a quiver server this process starts and stops (`quiver_client::ServerProcess`:
//! `python -m quiver.serve`, or `$QUIVER_SERVER_COMMAND`, with its stdin as the dead-man switch).

use std::path::PathBuf;
use std::sync::Mutex;

use napi_derive::napi;
use quiver_client::{Address, ServerOptions as ClientOptions, ServerProcess as Server};

use crate::error::{invalid, to_js};

/// How to start a server.
#[napi(object)]
pub struct ServerOptions {
    /// The program and arguments before the server's flags (default: `$QUIVER_SERVER_COMMAND`,
    /// else `$QUIVER_SERVER_PYTHON -m quiver.serve`, else `quiver-server` on PATH, else
    /// `<python> -m quiver.serve` with the nearest `.venv`).
    pub command: Option<Vec<String>>,
    /// The database file (default: in memory).
    pub database: Option<String>,
    /// Listeners (default: `tcp://127.0.0.1:0`, a free port).
    pub listen: Option<Vec<String>>,
    /// The token TCP clients present (default: the server makes one).
    pub token: Option<String>,
    /// `--no-auth` (loopback only).
    pub no_auth: Option<bool>,
    /// The extension file the server loads.
    pub extension: Option<String>,
    /// DuckDB's threads.
    pub threads: Option<u32>,
    /// DuckDB's memory limit (`4GB`).
    pub memory_limit: Option<String>,
    /// Most connections at once.
    pub max_connections: Option<u32>,
    /// Further flags.
    pub extra_args: Option<Vec<String>>,
}

impl ServerOptions {
    fn into_client(self) -> napi::Result<ClientOptions> {
        let mut options = ClientOptions {
            command: self.command,
            database: self.database.map(PathBuf::from),
            token: self.token,
            no_auth: self.no_auth.unwrap_or(false),
            extension: self.extension.map(PathBuf::from),
            threads: self.threads.map(|threads| threads as usize),
            memory_limit: self.memory_limit,
            max_connections: self.max_connections.map(|max| max as usize),
            extra_args: self.extra_args.unwrap_or_default(),
            ..ClientOptions::default()
        };
        if let Some(listen) = self.listen {
            options.listen = listen
                .iter()
                .map(|address| address.parse::<Address>().map_err(invalid))
                .collect::<napi::Result<Vec<Address>>>()?;
        }
        Ok(options)
    }
}

/// Starts a server and waits until it is ready.
#[napi]
pub async fn spawn_server(options: Option<ServerOptions>) -> napi::Result<ServerProcess> {
    let options = match options {
        Some(options) => options.into_client()?,
        None => ClientOptions::default(),
    };
    let server = tokio::task::spawn_blocking(move || Server::spawn(options))
        .await
        .map_err(|error| invalid(error.to_string()))?
        .map_err(to_js)?;
    Ok(ServerProcess {
        addresses: server.addresses().iter().map(Address::to_string).collect(),
        token: server.token().map(str::to_string),
        pid: server.pid(),
        server: Mutex::new(Some(server)),
    })
}

/// A running server; `stop()` ends it (so does this process's exit).
#[napi]
pub struct ServerProcess {
    server: Mutex<Option<Server>>,
    addresses: Vec<String>,
    token: Option<String>,
    pid: u32,
}

#[napi]
impl ServerProcess {
    /// Every listener, in the order announced (`tcp://127.0.0.1:<port>`, `unix:///path`).
    #[napi(getter)]
    pub fn addresses(&self) -> Vec<String> {
        self.addresses.clone()
    }

    /// The token TCP clients present.
    #[napi(getter)]
    pub fn token(&self) -> Option<String> {
        self.token.clone()
    }

    /// The server's process id.
    #[napi(getter)]
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The last lines the server wrote on stderr.
    #[napi]
    pub fn stderr_tail(&self) -> napi::Result<String> {
        let server = self.server.lock().map_err(|_| invalid("a call panicked"))?;
        Ok(server.as_ref().map(Server::stderr_tail).unwrap_or_default())
    }

    /// Stops the server: SIGTERM, then SIGKILL after a grace.
    #[napi]
    pub async fn stop(&self) -> napi::Result<()> {
        let server = self
            .server
            .lock()
            .map_err(|_| invalid("a call panicked"))?
            .take();
        if let Some(server) = server {
            tokio::task::spawn_blocking(move || server.stop())
                .await
                .map_err(|error| invalid(error.to_string()))?;
        }
        Ok(())
    }
}
