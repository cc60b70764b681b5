//! The addresses of the Flight SQL front door: `grpc://host:port` and `grpc+tls://host:port`, the
//! URIs ADBC's `uri` option and the Flight SQL JDBC driver take. The spine's addresses
//! (`tcp://`, `unix://`) are `quiver_server_protocol::Address`; these stay here, beside the only
//! code that listens on them.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

const PLAIN_SCHEME: &str = "grpc://";
const TLS_SCHEME: &str = "grpc+tls://";

/// Where the Flight SQL service listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrpcAddress {
    /// Host name or IP address (an IPv6 address without its brackets).
    pub host: String,
    /// TCP port; 0 picks a free one.
    pub port: u16,
    /// Whether connections are TLS (`grpc+tls://`).
    pub tls: bool,
}

impl GrpcAddress {
    /// Whether `text` names a gRPC address (so the spine's parser must not see it).
    pub fn is_grpc(text: &str) -> bool {
        text.starts_with("grpc:") || text.starts_with("grpc+")
    }

    /// Whether only this machine can reach the listener.
    pub fn is_local(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<IpAddr>()
                .is_ok_and(|address| address.is_loopback())
    }

    /// The URI a client passes once the listener is bound to `port`.
    pub fn uri(&self, port: u16) -> String {
        let scheme = if self.tls { TLS_SCHEME } else { PLAIN_SCHEME };
        if self.host.contains(':') {
            format!("{scheme}[{}]:{port}", self.host)
        } else {
            format!("{scheme}{}:{port}", self.host)
        }
    }
}

impl FromStr for GrpcAddress {
    type Err = String;

    fn from_str(text: &str) -> Result<GrpcAddress, String> {
        let (rest, tls) = if let Some(rest) = text.strip_prefix(PLAIN_SCHEME) {
            (rest, false)
        } else if let Some(rest) = text.strip_prefix(TLS_SCHEME) {
            (rest, true)
        } else {
            return Err(format!(
                "{text:?}: a Flight SQL address is grpc://HOST:PORT or grpc+tls://HOST:PORT"
            ));
        };
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| format!("{text:?}: the address has no port"))?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if host.is_empty() || host.contains('/') {
            return Err(format!("{text:?}: the address has no host"));
        }
        let port = port
            .parse::<u16>()
            .map_err(|_| format!("{text:?}: {port:?} is not a port"))?;
        Ok(GrpcAddress {
            host: host.to_string(),
            port,
            tls,
        })
    }
}

impl fmt::Display for GrpcAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.uri(self.port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_schemes_and_writes_them_back() {
        let plain: GrpcAddress = "grpc://127.0.0.1:0".parse().unwrap();
        assert!(!plain.tls && plain.is_local() && plain.port == 0);
        assert_eq!(plain.uri(31337), "grpc://127.0.0.1:31337");
        let tls: GrpcAddress = "grpc+tls://[::1]:8815".parse().unwrap();
        assert!(tls.tls && tls.is_local());
        assert_eq!(tls.to_string(), "grpc+tls://[::1]:8815");
        let remote: GrpcAddress = "grpc://0.0.0.0:1".parse().unwrap();
        assert!(!remote.is_local());
    }

    #[test]
    fn refuses_what_is_not_a_grpc_address() {
        assert!(GrpcAddress::is_grpc("grpc+tls://x:1"));
        assert!(!GrpcAddress::is_grpc("tcp://x:1"));
        for bad in [
            "tcp://127.0.0.1:1",
            "grpc://127.0.0.1",
            "grpc://:1",
            "grpc://h:99999",
            "grpc+unix:///tmp/x",
        ] {
            assert!(bad.parse::<GrpcAddress>().is_err(), "{bad}");
        }
    }
}
