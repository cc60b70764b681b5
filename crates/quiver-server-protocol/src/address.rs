//! Where a server listens and a client connects: `tcp://HOST:PORT` or `unix:///absolute/path`.
//! One parser for the server's listeners, the command line and every client.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;

/// A server address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// A TCP endpoint; port 0 asks the server for a free port.
    Tcp {
        /// A host name or an IP address (IPv6 without brackets).
        host: String,
        /// The port.
        port: u16,
    },
    /// A Unix domain socket at an absolute path.
    Unix(PathBuf),
}

impl Address {
    /// Whether only this machine can reach it: a Unix socket, or TCP on a loopback address or
    /// `localhost`.
    pub fn is_local(&self) -> bool {
        match self {
            Address::Unix(_) => true,
            Address::Tcp { host, .. } => {
                host == "localhost"
                    || host
                        .parse::<IpAddr>()
                        .map(|ip| ip.is_loopback())
                        .unwrap_or(false)
            }
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Tcp { host, port } if host.contains(':') => {
                write!(f, "tcp://[{host}]:{port}")
            }
            Address::Tcp { host, port } => write!(f, "tcp://{host}:{port}"),
            Address::Unix(path) => write!(f, "unix://{}", path.display()),
        }
    }
}

impl FromStr for Address {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| {
            format!("bad address '{text}': {why} (expected tcp://HOST:PORT or unix:///PATH)")
        };
        if let Some(path) = text.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(bad("a Unix socket path must be absolute"));
            }
            return Ok(Address::Unix(PathBuf::from(path)));
        }
        let Some(rest) = text.strip_prefix("tcp://") else {
            return Err(bad("unknown scheme"));
        };
        let (host, port) = if let Some(bracketed) = rest.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| bad("unclosed '['"))?;
            let port = after
                .strip_prefix(':')
                .ok_or_else(|| bad("no port after the IPv6 address"))?;
            (host, port)
        } else {
            rest.rsplit_once(':').ok_or_else(|| bad("no port"))?
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = port
            .parse::<u16>()
            .map_err(|_| bad("the port is not 0-65535"))?;
        Ok(Address::Tcp {
            host: host.to_string(),
            port,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for text in [
            "tcp://127.0.0.1:0",
            "tcp://[::1]:5432",
            "tcp://db.example:9",
            "unix:///tmp/q.sock",
        ] {
            let address: Address = text.parse().unwrap();
            assert_eq!(address.to_string(), text);
        }
    }

    #[test]
    fn locality() {
        assert!("tcp://127.0.0.1:1".parse::<Address>().unwrap().is_local());
        assert!("tcp://[::1]:1".parse::<Address>().unwrap().is_local());
        assert!("tcp://localhost:1".parse::<Address>().unwrap().is_local());
        assert!("unix:///x".parse::<Address>().unwrap().is_local());
        assert!(!"tcp://0.0.0.0:1".parse::<Address>().unwrap().is_local());
    }

    #[test]
    fn refuses_with_the_reason() {
        for (text, why) in [
            ("http://x:1", "scheme"),
            ("unix://relative", "absolute"),
            ("tcp://host", "port"),
            ("tcp://host:99999", "port"),
            ("tcp://:5", "host"),
        ] {
            let error = text.parse::<Address>().unwrap_err();
            assert!(error.contains(why), "{text}: {error}");
        }
    }
}
