//! How a connection is opened: the token, shared memory, the name the client gives itself, and
//! the bounds on what it reads.

use quiver_server_protocol::{limits, Address};
use quiver_shm::ShmConfig;
use quiver_wire::Limits;

use crate::error::{Error, Result};

/// Whether a connection routes large batches through a shared-memory segment. Only Unix sockets
/// use one: a TCP peer may be on another machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Shm {
    /// As the environment says (`VGI_RPC_SHM_SIZE_BYTES`, `VGI_RPC_SHM_DISABLE`; see
    /// `quiver-shm/src/config.rs`).
    #[default]
    FromEnv,
    /// Never.
    Off,
    /// A segment of this many bytes per connection.
    Bytes(u64),
}

/// Segment size the client picks when asked for shared memory without a size: two default
/// result batches of a wide table fit, and 16 connections stay within the process budget.
pub const SHM_BYTES_DEFAULT: u64 = 256 << 20;

/// Options of [`Connection::connect_with`](crate::Connection::connect_with).
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// The access token; TCP listeners require one unless the server runs `--no-auth`.
    pub token: Option<String>,
    /// Shared memory for this connection.
    pub shm: Shm,
    /// A name for the server's log.
    pub client_name: Option<String>,
    /// Largest message (one batch) the client reads; bigger ones are refused before allocation.
    pub message_bytes_max: u64,
    /// Rows per result batch the client asks for (`None`: the server's default,
    /// [`limits::BATCH_ROWS_DEFAULT`]).
    pub batch_rows: Option<i64>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            token: None,
            shm: Shm::FromEnv,
            client_name: None,
            message_bytes_max: limits::MESSAGE_BYTES_DEFAULT,
            batch_rows: None,
        }
    }
}

impl ConnectOptions {
    /// Options with a token.
    pub fn with_token(token: impl Into<String>) -> Self {
        ConnectOptions {
            token: Some(token.into()),
            ..ConnectOptions::default()
        }
    }

    /// The same options with `shm`.
    pub fn shm(mut self, shm: Shm) -> Self {
        self.shm = shm;
        self
    }

    pub(crate) fn check(&self) -> Result<()> {
        if let Some(token) = &self.token {
            if token.len() > limits::TOKEN_BYTES_MAX {
                return Err(Error::InvalidInput(format!(
                    "token of {} bytes exceeds {}",
                    token.len(),
                    limits::TOKEN_BYTES_MAX
                )));
            }
        }
        if let Some(rows) = self.batch_rows {
            if !(1..=limits::BATCH_ROWS_MAX).contains(&rows) {
                return Err(Error::InvalidInput(format!(
                    "batch_rows {rows} is not in 1..={}",
                    limits::BATCH_ROWS_MAX
                )));
            }
        }
        if let Some(name) = &self.client_name {
            if name.len() > limits::IDENTIFIER_BYTES_MAX {
                return Err(Error::InvalidInput("client_name too long".into()));
            }
        }
        Ok(())
    }

    pub(crate) fn shm_config(&self) -> Result<ShmConfig> {
        let mut config = ShmConfig::from_env()
            .map_err(|error| Error::InvalidInput(format!("shm environment: {error:?}")))?;
        match self.shm {
            Shm::FromEnv => {}
            Shm::Off => config.segment_size_bytes = None,
            Shm::Bytes(size_bytes) => {
                config.segment_size_bytes = Some(size_bytes);
                config.disabled = false;
            }
        }
        Ok(config)
    }

    pub(crate) fn wire_limits(&self) -> Limits {
        Limits {
            body_bytes_max: self.message_bytes_max,
            ..Limits::DEFAULT
        }
    }
}

/// Anything that names a server: an [`Address`] or its URL text.
pub trait IntoAddress {
    /// The address, or why the text is not one.
    fn into_address(self) -> Result<Address>;
}

impl IntoAddress for Address {
    fn into_address(self) -> Result<Address> {
        Ok(self)
    }
}

impl IntoAddress for &Address {
    fn into_address(self) -> Result<Address> {
        Ok(self.clone())
    }
}

impl IntoAddress for &str {
    fn into_address(self) -> Result<Address> {
        self.parse().map_err(Error::InvalidInput)
    }
}

impl IntoAddress for &String {
    fn into_address(self) -> Result<Address> {
        self.as_str().into_address()
    }
}

impl IntoAddress for String {
    fn into_address(self) -> Result<Address> {
        self.as_str().into_address()
    }
}
