//! The older contracts quiver's engine still speaks, and how it learns which one a worker wants.
//!
//! A vgi-rpc server refuses any request whose `vgi_rpc.protocol_version` differs from its own in
//! major or minor, and any request addressed to a protocol name it does not host. Each refusal is a
//! typed error naming what the worker serves, so the engine starts with the newest dialect and,
//! when refused, moves to the one the refusal names ([`Dialect::after_refusal`]).
//!
//! What changed between the dialects, on the calls the engine makes:
//!
//! | dialect        | vgi-python   | schemas named by | catalog_contents answer                  |
//! |----------------|--------------|------------------|------------------------------------------|
//! | vgi.v2 2.2     | 0.46, 0.47   | `path` list      | one nested stream per object category    |
//! | vgi.v2 2.1     | 0.40 to 0.45 | `path` list      | one `SchemaContents` struct per schema   |
//! | vgi.v2 2.0     | 0.31 to 0.39 | `path` list      | (no such call)                           |
//! | VgiProtocol 1.4| 0.30         | `name` string    | (no such call)                           |
//!
//! (`FunctionInfo.arguments` is a dictionary-encoded binary from 2.2 on, plain binary before; the
//! row readers take both.)

use quiver_wire::ErrorReport;

/// Most protocol names one refusal may list before it is treated as unreadable.
pub const HOSTED_NAMES_MAX: usize = 64;

/// One version of the engine-to-worker contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// vgi.v2 2.2.0 (vgi-python 0.46 and 0.47): what quiver's own workers speak.
    V2_2,
    /// vgi.v2 2.1.0 (vgi-python 0.40 to 0.45).
    V2_1,
    /// vgi.v2 2.0.0 (vgi-python 0.31 to 0.39): no `catalog_contents`.
    V2_0,
    /// VgiProtocol 1.4.0 (vgi-python 0.30): schemas are named, not pathed.
    V1_4,
}

/// Every dialect, newest first: the order the engine tries them in.
pub const DIALECTS: [Dialect; 4] = [Dialect::V2_2, Dialect::V2_1, Dialect::V2_0, Dialect::V1_4];

/// What a refusal tells the engine to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Speak this dialect instead.
    Speak(Dialect),
    /// The worker serves a protocol none of [`DIALECTS`] is; the text names what it serves.
    NoCommonGround(String),
    /// The error is not a protocol refusal.
    NotARefusal,
}

impl Dialect {
    /// The newest dialect, spoken first.
    pub const NEWEST: Dialect = Dialect::V2_2;

    /// The name requests carry in `vgi_rpc.protocol`.
    pub fn protocol_name(self) -> &'static str {
        match self {
            Dialect::V2_2 | Dialect::V2_1 | Dialect::V2_0 => "vgi.v2",
            Dialect::V1_4 => "VgiProtocol",
        }
    }

    /// The version requests carry in `vgi_rpc.protocol_version`.
    pub fn protocol_version(self) -> &'static str {
        match self {
            Dialect::V2_2 => "2.2.0",
            Dialect::V2_1 => "2.1.0",
            Dialect::V2_0 => "2.0.0",
            Dialect::V1_4 => "1.4.0",
        }
    }

    /// The vgi-python releases that speak it, for messages.
    pub fn releases(self) -> &'static str {
        match self {
            Dialect::V2_2 => "vgi-python 0.46 to 0.47",
            Dialect::V2_1 => "vgi-python 0.40 to 0.45",
            Dialect::V2_0 => "vgi-python 0.31 to 0.39",
            Dialect::V1_4 => "vgi-python 0.30",
        }
    }

    /// "vgi.v2 2.2.0".
    pub fn label(self) -> String {
        format!("{} {}", self.protocol_name(), self.protocol_version())
    }

    /// Schemas (and a function's home) are a `path` list; before 2.0 they were one `name`.
    pub fn schemas_have_paths(self) -> bool {
        self != Dialect::V1_4
    }

    /// `catalog_contents` answers with one nested stream per object category (2.2), not with
    /// one `SchemaContents` struct per schema (2.1).
    pub fn contents_by_category(self) -> bool {
        self == Dialect::V2_2
    }

    /// The dialect serving `name` at `version` (major and minor must match; patch is free).
    pub fn serving(name: &str, version: &str) -> Option<Dialect> {
        let wanted = major_minor(version)?;
        DIALECTS.into_iter().find(|d| {
            d.protocol_name() == name && major_minor(d.protocol_version()) == Some(wanted)
        })
    }

    /// What to do after the worker answered `report` to a request spoken in `self`.
    pub fn after_refusal(self, report: &ErrorReport) -> Next {
        match report.kind.as_deref() {
            Some("protocol_version_mismatch") => match served_version(report) {
                Some(version) => match Dialect::serving(self.protocol_name(), &version) {
                    Some(dialect) if dialect != self => Next::Speak(dialect),
                    _ => Next::NoCommonGround(format!("{} {version}", self.protocol_name())),
                },
                None => Next::NoCommonGround(format!(
                    "{} at a version it did not name",
                    self.protocol_name()
                )),
            },
            Some("protocol_not_supported") => {
                let hosted = hosted_names(&report.message);
                match DIALECTS.into_iter().find(|d| {
                    d.protocol_name() != self.protocol_name()
                        && hosted.iter().any(|h| h == d.protocol_name())
                }) {
                    Some(dialect) => Next::Speak(dialect),
                    None if hosted.is_empty() => {
                        Next::NoCommonGround("a protocol it did not name".to_string())
                    }
                    None => Next::NoCommonGround(hosted.join(", ")),
                }
            }
            _ => Next::NotARefusal,
        }
    }
}

/// The error a failed negotiation ends with: what the worker serves and every dialect quiver
/// speaks, so that whoever reads it knows which side to move.
pub fn no_common_ground(served: &str) -> String {
    let spoken: Vec<String> = DIALECTS
        .iter()
        .map(|d| format!("{} ({})", d.label(), d.releases()))
        .collect();
    format!(
        "the worker serves VGI protocol {served}; quiver's engine speaks {}",
        spoken.join(", ")
    )
}

fn major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The server's version from a `protocol_version_mismatch` refusal: vgi-rpc writes it on a line
/// `  Server: X.Y.Z` of the message (and quiver-rpc as "... the server speaks X.Y.Z").
fn served_version(report: &ErrorReport) -> Option<String> {
    let from_line = report
        .message
        .lines()
        .find_map(|line| line.trim().strip_prefix("Server:"))
        .map(|v| v.trim().to_string());
    from_line
        .or_else(|| {
            report
                .message
                .rsplit_once("server speaks ")
                .map(|(_, rest)| rest.split_whitespace().next().unwrap_or("").to_string())
        })
        .map(|v| v.trim_end_matches(['.', ',', ';']).to_string())
        .filter(|v| major_minor(v).is_some())
}

/// The protocol names of a `protocol_not_supported` refusal: vgi-rpc ends its message with
/// `Hosted: ['a', 'b'].`, quiver-rpc with `(this server hosts 'a')`.
fn hosted_names(message: &str) -> Vec<String> {
    let Some((_, list)) = message
        .rsplit_once("Hosted:")
        .or_else(|| message.rsplit_once("server hosts "))
    else {
        return Vec::new();
    };
    list.split(['\'', '"'])
        .skip(1)
        .step_by(2)
        .take(HOSTED_NAMES_MAX)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(kind: &str, message: &str) -> ErrorReport {
        let mut report = ErrorReport::new("ProtocolVersionError", message);
        report.kind = Some(kind.to_string());
        report
    }

    #[test]
    fn a_version_refusal_names_the_dialect_to_speak() {
        let report = refusal(
            "protocol_version_mismatch",
            "VGI client/worker protocol_version mismatch for protocol 'vgi.v2'.\n  Client: 2.2.0\n  Server: 2.1.0\n  Direction: server is too old",
        );
        assert_eq!(
            Dialect::V2_2.after_refusal(&report),
            Next::Speak(Dialect::V2_1)
        );
    }

    #[test]
    fn a_name_refusal_moves_to_the_hosted_protocol() {
        let report = refusal(
            "protocol_not_supported",
            "This server does not host protocol 'vgi.v2'. Hosted: ['VgiProtocol'].",
        );
        assert_eq!(
            Dialect::V2_2.after_refusal(&report),
            Next::Speak(Dialect::V1_4)
        );
    }

    #[test]
    fn an_unknown_version_is_no_common_ground_naming_both_sides() {
        let report = refusal(
            "protocol_version_mismatch",
            "mismatch\n  Client: 2.2.0\n  Server: 2.3.1\n",
        );
        let Next::NoCommonGround(served) = Dialect::V2_2.after_refusal(&report) else {
            panic!("2.3 is not spoken");
        };
        assert_eq!(served, "vgi.v2 2.3.1");
        let message = no_common_ground(&served);
        assert!(
            message.contains("vgi.v2 2.3.1") && message.contains("vgi.v2 2.2.0"),
            "{message}"
        );
    }

    #[test]
    fn a_protocol_nobody_speaks_is_no_common_ground() {
        let report = refusal(
            "protocol_not_supported",
            "not here. Hosted: ['Other', 'vgi.v2'].",
        );
        // Already speaking vgi.v2: its other name is all that is left, and it is unknown.
        assert_eq!(
            Dialect::V2_2.after_refusal(&report),
            Next::NoCommonGround("Other, vgi.v2".into())
        );
        let plain = ErrorReport::new("ValueError", "bad argument");
        assert_eq!(Dialect::V2_2.after_refusal(&plain), Next::NotARefusal);
    }

    #[test]
    fn serving_matches_major_and_minor_only() {
        assert_eq!(Dialect::serving("vgi.v2", "2.1.7"), Some(Dialect::V2_1));
        assert_eq!(Dialect::serving("vgi.v2", "2.0.0"), Some(Dialect::V2_0));
        assert_eq!(
            Dialect::serving("VgiProtocol", "1.4.0"),
            Some(Dialect::V1_4)
        );
        assert_eq!(Dialect::serving("vgi.v2", "1.4.0"), None);
        assert_eq!(Dialect::serving("vgi.v2", "junk"), None);
    }
}
