//! The one connection a driver holds: quiver's client over the transport `connect`
//! named, and the stream call open on it, if any.
//!
//! The client is owned by exactly one of two places: idle in `client`, or inside
//! the open `stream` (a [`ClientStream`] owns its client for the call's life and
//! gives it back when the call ends).

use std::path::Path;

use quiver_rpc::http::HttpOptions;
use quiver_rpc::{Client, ClientStream};
use quiver_shm::{Segment, ShmConfig};
use quiver_transport::socket::{connect_tcp, connect_unix};
use quiver_transport::spawn;
use quiver_transport::Child;
use serde_json::Value;

/// The most bytes a `shm` connection's segment may take; the harness asks for 4 MiB by default.
const SHM_SIZE_BYTES_MAX: u64 = 1 << 30;

pub struct DriverConnection {
    client: Option<Client>,
    stream: Option<ClientStream<Client>>,
    /// The worker process of a `stdio` or `shm` connection; dropped after the client.
    child: Option<Child>,
}

impl DriverConnection {
    /// Opens the connection a `connect` request describes.
    pub fn open(request: &Value) -> Result<Self, String> {
        let transport = request["transport"]
            .as_str()
            .ok_or("connect: no transport")?;
        let target = &request["target"];
        let (client, child) = match transport {
            "stdio" | "shm" => {
                let argv: Vec<&str> = target
                    .as_array()
                    .ok_or("connect: the target of stdio/shm is an argv array")?
                    .iter()
                    .map(|a| a.as_str().ok_or("connect: argv entries are strings"))
                    .collect::<Result<_, _>>()?;
                let (program, args) = argv.split_first().ok_or("connect: empty argv")?;
                let (child, connection) =
                    spawn(*program, args).map_err(|e| format!("spawn {program}: {e}"))?;
                let mut client = Client::new(connection);
                if transport == "shm" {
                    client = with_segment(client, request["shm_size"].as_u64())?;
                }
                (client, Some(child))
            }
            "unix" => {
                let path = target.as_str().ok_or("connect: unix target is a path")?;
                let connection =
                    connect_unix(Path::new(path)).map_err(|e| format!("connect {path}: {e}"))?;
                (Client::new(connection), None)
            }
            "tcp" => {
                let address = target.as_str().ok_or("connect: tcp target is HOST:PORT")?;
                let address = match address.strip_prefix(':') {
                    Some(port) => format!("127.0.0.1:{port}"),
                    None => address.to_string(),
                };
                let connection =
                    connect_tcp(address.as_str()).map_err(|e| format!("connect {address}: {e}"))?;
                (Client::new(connection), None)
            }
            "http" => {
                let url = target.as_str().ok_or("connect: http target is a URL")?;
                (http_client(url, &request["headers"])?, None)
            }
            other => return Err(format!("connect: unknown transport {other:?}")),
        };
        Ok(Self {
            client: Some(client),
            stream: None,
            child,
        })
    }

    /// The idle client, for a call; an error while a stream is open.
    pub fn client(&mut self) -> Result<&mut Client, String> {
        if self.stream.is_some() {
            return Err("a stream is open on this connection".into());
        }
        self.client
            .as_mut()
            .ok_or_else(|| "the connection is closed".into())
    }

    /// Takes the idle client to open a stream with; give it back with [`Self::stream_opened`]
    /// or [`Self::give_back`].
    pub fn take_client(&mut self) -> Result<Client, String> {
        self.client()?;
        Ok(self.client.take().expect("checked just above"))
    }

    pub fn stream_opened(&mut self, stream: ClientStream<Client>) {
        assert!(self.client.is_none() && self.stream.is_none());
        self.stream = Some(stream);
    }

    pub fn give_back(&mut self, client: Client) {
        assert!(self.client.is_none() && self.stream.is_none());
        self.client = Some(client);
    }

    /// The open stream, if any.
    pub fn stream(&mut self) -> Option<&mut ClientStream<Client>> {
        self.stream.as_mut()
    }

    /// Ends the open stream's hold on the client: `how` gets the call and returns the client.
    pub fn end_stream(&mut self, how: impl FnOnce(ClientStream<Client>) -> Client) {
        if let Some(stream) = self.stream.take() {
            self.client = Some(how(stream));
        }
    }

    /// Logs the client has received since the last drain.
    pub fn take_logs(&mut self) -> Vec<quiver_wire::LogRecord> {
        match (&mut self.stream, &mut self.client) {
            (Some(stream), _) => stream.take_logs(),
            (None, Some(client)) => client.take_logs(),
            (None, None) => Vec::new(),
        }
    }

    /// Closes the connection: an open stream is dropped without a word (the peer sees the
    /// connection end), the client's transport closes, and a spawned worker is stopped.
    pub fn shut(mut self) {
        if let Some(stream) = self.stream.take() {
            drop(stream.release());
        }
        drop(self.client.take());
        drop(self.child.take());
    }
}

/// The most headers a `connect` may ask to send on every request, and their longest value.
const HEADERS_MAX: usize = 32;
const HEADER_VALUE_BYTES_MAX: usize = 8192;

fn http_client(url: &str, headers: &Value) -> Result<Client, String> {
    let mut options = HttpOptions::default();
    if let Some(headers) = headers.as_object() {
        if headers.len() > HEADERS_MAX {
            return Err(format!("connect: at most {HEADERS_MAX} headers"));
        }
        for (name, value) in headers {
            let value = value
                .as_str()
                .filter(|v| v.len() <= HEADER_VALUE_BYTES_MAX)
                .ok_or("connect: every header value is a short string")?;
            options.headers.push((name.clone(), value.to_string()));
        }
    }
    Client::http(url, options).map_err(|e| format!("connect {url}: {e}"))
}

fn with_segment(client: Client, size_bytes: Option<u64>) -> Result<Client, String> {
    let size_bytes = size_bytes.unwrap_or(4 << 20);
    if size_bytes == 0 || size_bytes > SHM_SIZE_BYTES_MAX {
        return Err(format!(
            "connect: shm_size {size_bytes} outside 1..={SHM_SIZE_BYTES_MAX}"
        ));
    }
    let segment = Segment::create(size_bytes).map_err(|e| format!("create segment: {e}"))?;
    // The size is the harness's; the rest (threshold, VGI_RPC_SHM_DEBUG) is the environment's,
    // as for any quiver client.
    let config = ShmConfig {
        segment_size_bytes: Some(size_bytes),
        ..ShmConfig::from_env().map_err(|e| format!("shm settings: {e}"))?
    };
    Ok(client.with_shm(segment, &config))
}
