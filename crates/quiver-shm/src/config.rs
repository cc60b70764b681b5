//! Shared-memory settings from the environment.
//!
//! The variables come from the Java SDK and the C++ extension (vgi-rpc's Python package only
//! reads `VGI_RPC_SHM_MIN_BATCH_BYTES` and enables shm through its API). Unlike vgi-rpc, which
//! silently ignores a malformed threshold, we refuse nonsense with an error naming the variable:
//! a typo in a tuning knob should not silently become the default.

use crate::layout::{HEADER_SIZE_BYTES, SEGMENT_SIZE_MAX_BYTES};

/// Segment size in bytes; setting it makes a client create a segment.
pub const ENV_SIZE_BYTES: &str = "VGI_RPC_SHM_SIZE_BYTES";
/// Forces the inline path even when a segment is configured or advertised.
pub const ENV_DISABLE: &str = "VGI_RPC_SHM_DISABLE";
/// Log attach / resolve / fallback events.
pub const ENV_DEBUG: &str = "VGI_RPC_SHM_DEBUG";
/// Smallest batch (Arrow in-memory bytes) worth sending through shm.
pub const ENV_MIN_BATCH_BYTES: &str = "VGI_RPC_SHM_MIN_BATCH_BYTES";

/// Most bytes of segments one process may have created at once; a connection whose segment would
/// exceed it runs inline.
pub const ENV_PROCESS_MAX_BYTES: &str = "VGI_RPC_SHM_PROCESS_MAX_BYTES";

/// Default process budget: 4 GiB. Segments are sparse, so this bounds what a process *can* commit
/// to `/dev/shm`, not what it does. It fits 16 connections at the README's 256 MiB segment size
/// (e.g. two workers behind an 8-thread DuckDB), while four such processes stay within the
/// `/dev/shm` of a 32 GiB machine (half of RAM by default).
pub const PROCESS_MAX_BYTES_DEFAULT: u64 = 4 << 30;

/// vgi-rpc's default threshold on POSIX: below ~128 KiB the pipe beats shm's fixed costs.
pub const MIN_BATCH_BYTES_DEFAULT: u64 = 128 * 1024;

/// A variable that is set but cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    /// The variable's name.
    pub variable: &'static str,
    /// Its value as set.
    pub value: String,
    /// Why it cannot be used.
    pub reason: String,
}

/// Parsed shared-memory settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmConfig {
    /// Size of the segment a client should create; `None` when shm is not requested.
    pub segment_size_bytes: Option<u64>,
    /// Never use shm, in either direction, even if the peer advertises a segment.
    pub disabled: bool,
    /// Emit diagnostics about shm decisions.
    pub debug: bool,
    /// Batches smaller than this stay inline.
    pub min_batch_bytes: u64,
    /// Most bytes of segments this process may have created at once.
    pub process_max_bytes: u64,
}

impl Default for ShmConfig {
    fn default() -> Self {
        ShmConfig {
            segment_size_bytes: None,
            disabled: false,
            debug: false,
            min_batch_bytes: MIN_BATCH_BYTES_DEFAULT,
            process_max_bytes: PROCESS_MAX_BYTES_DEFAULT,
        }
    }
}

impl ShmConfig {
    /// Reads the process environment.
    pub fn from_env() -> Result<ShmConfig, ConfigError> {
        ShmConfig::from_lookup(|variable| match std::env::var(variable) {
            Ok(value) => Some(Ok(value)),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(raw)) => {
                Some(Err(raw.to_string_lossy().into_owned()))
            }
        })
    }

    /// Reads variables through `lookup` (`None` = unset, `Some(Err(lossy))` = not UTF-8); lets
    /// tests and embedders supply their own environment.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<Result<String, String>>,
    ) -> Result<ShmConfig, ConfigError> {
        let get = |variable: &'static str| -> Result<Option<String>, ConfigError> {
            match lookup(variable) {
                None => Ok(None),
                Some(Err(lossy)) => Err(ConfigError {
                    variable,
                    value: lossy,
                    reason: "not valid UTF-8".into(),
                }),
                Some(Ok(value)) if value.trim().is_empty() => Ok(None),
                Some(Ok(value)) => Ok(Some(value)),
            }
        };
        let mut config = ShmConfig::default();
        if let Some(value) = get(ENV_SIZE_BYTES)? {
            let size_bytes = parse_bytes(ENV_SIZE_BYTES, &value)?;
            if size_bytes <= HEADER_SIZE_BYTES {
                return Err(invalid(
                    ENV_SIZE_BYTES,
                    &value,
                    "must exceed the 65536-byte segment header",
                ));
            }
            if size_bytes > SEGMENT_SIZE_MAX_BYTES {
                return Err(invalid(ENV_SIZE_BYTES, &value, "exceeds the 64 GiB limit"));
            }
            config.segment_size_bytes = Some(size_bytes);
        }
        if let Some(value) = get(ENV_DISABLE)? {
            config.disabled = parse_flag(ENV_DISABLE, &value)?;
        }
        if let Some(value) = get(ENV_DEBUG)? {
            config.debug = parse_flag(ENV_DEBUG, &value)?;
        }
        if let Some(value) = get(ENV_MIN_BATCH_BYTES)? {
            let min_batch_bytes = parse_bytes(ENV_MIN_BATCH_BYTES, &value)?;
            if min_batch_bytes > SEGMENT_SIZE_MAX_BYTES {
                return Err(invalid(
                    ENV_MIN_BATCH_BYTES,
                    &value,
                    "exceeds the 64 GiB segment limit",
                ));
            }
            config.min_batch_bytes = min_batch_bytes;
        }
        if let Some(value) = get(ENV_PROCESS_MAX_BYTES)? {
            config.process_max_bytes = parse_bytes(ENV_PROCESS_MAX_BYTES, &value)?;
        }
        Ok(config)
    }

    /// The size of the segment a client should create now, if any.
    pub fn segment_to_create_bytes(&self) -> Option<u64> {
        if self.disabled {
            None
        } else {
            self.segment_size_bytes
        }
    }

    /// Whether a batch of `batch_bytes` (and `row_count` rows) is worth sending through shm.
    /// Mirrors vgi-rpc's gate: never 0-row batches, never below the threshold.
    pub fn wants_shm_for(&self, row_count: usize, batch_bytes: u64) -> bool {
        !self.disabled && row_count > 0 && batch_bytes >= self.min_batch_bytes
    }
}

fn parse_bytes(variable: &'static str, value: &str) -> Result<u64, ConfigError> {
    let digits = value.trim();
    if !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(invalid(
            variable,
            value,
            "expected a plain decimal number of bytes (no sign, unit or separator)",
        ));
    }
    digits
        .parse::<u64>()
        .map_err(|_| invalid(variable, value, "does not fit in 64 bits"))
}

fn parse_flag(variable: &'static str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(invalid(
            variable,
            value,
            "expected 1/0, true/false, yes/no or on/off",
        )),
    }
}

fn invalid(variable: &'static str, value: &str, reason: &str) -> ConfigError {
    ConfigError {
        variable,
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(vars: &[(&str, &str)]) -> Result<ShmConfig, ConfigError> {
        ShmConfig::from_lookup(|name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| Ok(value.to_string()))
        })
    }

    #[test]
    fn defaults_when_unset_or_empty() {
        assert_eq!(parse(&[]).unwrap(), ShmConfig::default());
        assert_eq!(
            parse(&[(ENV_SIZE_BYTES, ""), (ENV_DEBUG, " ")]).unwrap(),
            ShmConfig::default()
        );
        assert_eq!(ShmConfig::default().min_batch_bytes, 131072);
        assert_eq!(ShmConfig::default().process_max_bytes, 4 << 30);
    }

    #[test]
    fn parses_valid_values() {
        let config = parse(&[
            (ENV_SIZE_BYTES, "67108864"),
            (ENV_DISABLE, "0"),
            (ENV_DEBUG, "TRUE"),
            (ENV_MIN_BATCH_BYTES, " 0 "),
            (ENV_PROCESS_MAX_BYTES, "1073741824"),
        ])
        .unwrap();
        assert_eq!(config.segment_size_bytes, Some(64 << 20));
        assert_eq!(config.segment_to_create_bytes(), Some(64 << 20));
        assert!(config.debug && !config.disabled);
        assert_eq!(config.min_batch_bytes, 0);
        assert_eq!(config.process_max_bytes, 1 << 30);
        assert!(config.wants_shm_for(1, 0));
        assert!(!config.wants_shm_for(0, 1 << 20));
    }

    #[test]
    fn disable_wins() {
        let config = parse(&[(ENV_SIZE_BYTES, "1048576"), (ENV_DISABLE, "1")]).unwrap();
        assert_eq!(config.segment_to_create_bytes(), None);
        assert!(!config.wants_shm_for(10, 1 << 30));
    }

    #[test]
    fn rejects_nonsense_with_the_variable_name() {
        for (variable, value) in [
            (ENV_SIZE_BYTES, "64MiB"),
            (ENV_SIZE_BYTES, "-1"),
            (ENV_SIZE_BYTES, "65536"),
            (ENV_SIZE_BYTES, "68719476737"),
            (ENV_SIZE_BYTES, "99999999999999999999999"),
            (ENV_DISABLE, "maybe"),
            (ENV_DEBUG, "2"),
            (ENV_MIN_BATCH_BYTES, "1e6"),
            (ENV_MIN_BATCH_BYTES, "68719476737"),
            (ENV_PROCESS_MAX_BYTES, "4GiB"),
        ] {
            let error = parse(&[(variable, value)]).unwrap_err();
            assert_eq!(error.variable, variable);
            assert!(error.to_string().contains(variable), "{error}");
        }
        let error =
            ShmConfig::from_lookup(|name| (name == ENV_DEBUG).then(|| Err("\u{fffd}".into())))
                .unwrap_err();
        assert!(error.reason.contains("UTF-8"));
    }
}
