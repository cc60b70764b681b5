//! The keys file (`keys/keys.yml`): API keys as SHA-256 hashes of their tokens. Loadable alone,
//! since serving reloads it without a restart, and minted by `keys create`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::diagnostics::Diagnostics;
use super::model::{Endpoint, Key};
use super::yaml::{parse_file, printable, Node, Reader, Value};

/// A keys file may list at most this many keys.
pub const MAX_KEYS: usize = 100_000;
/// A tenant value is at most this long (it is bound as a parameter, never spliced).
pub const MAX_TENANT_BYTES: usize = 256;
/// The most requests per second a key's rate limit may allow.
pub const MAX_RATE_LIMIT_PER_SECOND: i64 = 1_000_000;

/// Reads and checks a keys file on its own (endpoint names are not checked: see
/// [`load_keys_against`]).
pub fn load_keys(path: &Path) -> Result<Vec<Key>, Diagnostics> {
    load_keys_against(path, None)
}

/// Reads and checks a keys file; with `endpoints`, each key's endpoints must exist, and a key
/// granted a tenant-scoped endpoint must carry a tenant. Serving's reload passes the project's
/// endpoints so a new file is held to the same rules as at start.
pub fn load_keys_against(
    path: &Path,
    endpoints: Option<&[Endpoint]>,
) -> Result<Vec<Key>, Diagnostics> {
    let (keys, diagnostics) = load_keys_in_force(path, endpoints);
    diagnostics.into_result(keys)
}

/// The keys of a file that may be put in force, and every problem found: an entry with any
/// problem is left out on its own, as is every entry sharing an id or a hash with another entry
/// (which of them was meant is not a guess to make); a file that cannot be read or parsed, is
/// empty or is missing yields no keys. What fails, fails closed.
pub fn load_keys_in_force(path: &Path, endpoints: Option<&[Endpoint]>) -> (Vec<Key>, Diagnostics) {
    let mut diagnostics = Diagnostics::default();
    let none_failed = BTreeSet::new();
    let keys = load_keys_into(
        path,
        endpoints.map(|endpoints| (endpoints, &none_failed)),
        &mut diagnostics,
    );
    (keys, diagnostics)
}

/// `endpoints`: the project's endpoints, and the names of those that failed their own checks
/// (a key granting one of those is not reported again).
pub(super) fn load_keys_into(
    path: &Path,
    endpoints: Option<(&[Endpoint], &BTreeSet<String>)>,
    diagnostics: &mut Diagnostics,
) -> Vec<Key> {
    let Some(root) = parse_file(path, diagnostics) else {
        return Vec::new();
    };
    let mut reader = Reader {
        file: path.to_path_buf(),
        diagnostics,
    };
    let Some(fields) = reader.mapping(&root, "the keys file", &["keys"], &[]) else {
        return Vec::new();
    };
    let Some(items) = fields
        .required(&mut reader, "keys", "the keys file")
        .and_then(|node| match node.value {
            Value::Null => Some(&[][..]),
            _ => reader.sequence(node, "`keys`"),
        })
    else {
        return Vec::new();
    };
    if items.len() > MAX_KEYS {
        reader.error(root.line, format!("more than {MAX_KEYS} keys"));
        return Vec::new();
    }
    // Every id and hash an entry names, broken or not: a revocation written as a second entry,
    // or beside a mistake, must not leave an earlier grant of the same key in force.
    let mut claims: BTreeMap<(&str, String), usize> = BTreeMap::new();
    let mut sound: Vec<(Key, usize)> = Vec::with_capacity(items.len());
    for item in items {
        for field in ["id", "hash"] {
            if let Some(text) = claimed(item, field) {
                *claims.entry((field, text)).or_default() += 1;
            }
        }
        let problems_before = reader.diagnostics.len();
        let key = read_key(&mut reader, item, endpoints);
        match key {
            Some(key) if reader.diagnostics.len() == problems_before => {
                sound.push((key, item.line))
            }
            Some(key) => reader.error(
                item.line,
                format!("key `{}` has problems: it is not in force", key.id),
            ),
            None => {}
        }
    }
    let mut keys: Vec<Key> = Vec::with_capacity(sound.len());
    for (key, line) in sound {
        let shared = |field: &'static str, text: String| claims.get(&(field, text)).copied();
        if shared("id", key.id.clone()).unwrap_or(0) > 1 {
            reader.error(
                line,
                format!(
                    "key id `{}` is listed more than once: none of its entries is in force",
                    key.id
                ),
            );
        } else if shared("hash", hex(&key.token_sha256)).unwrap_or(0) > 1 {
            reader.error(
                line,
                format!(
                    "key `{}` has the same hash as another entry: neither is in force",
                    key.id
                ),
            );
        } else {
            keys.push(key);
        }
    }
    keys
}

/// The text an entry gives for `field` (an id, a hash), as loosely as it may be read.
fn claimed(item: &Node, field: &str) -> Option<String> {
    let Value::Map(entries) = &item.value else {
        return None;
    };
    let node = &entries.iter().find(|entry| entry.key == field)?.value;
    match &node.value {
        Value::Str(text) if field == "hash" => Some(text.to_ascii_lowercase()),
        Value::Str(text) => Some(text.clone()),
        Value::Int(value) => Some(value.to_string()),
        _ => None,
    }
}

fn is_key_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 128
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'))
}

fn read_key(
    reader: &mut Reader<'_>,
    node: &Node,
    endpoints: Option<(&[Endpoint], &BTreeSet<String>)>,
) -> Option<Key> {
    let fields = reader.mapping(
        node,
        "a key",
        &[
            "id",
            "hash",
            "tenant",
            "endpoints",
            "status",
            "expires_at",
            "rate_limit_per_second",
        ],
        &["description", "owner", "created_at"],
    )?;
    // Every field is read before any is given up on, so one pass reports every problem.
    let id = fields
        .required(reader, "id", "a key")
        .and_then(|node| read_id(reader, node));
    let token_sha256 = fields
        .required(reader, "hash", "a key")
        .and_then(|node| read_hash(reader, node));
    let tenant = read_tenant(reader, fields.get("tenant"));
    let has_tenant = fields
        .get("tenant")
        .is_some_and(|node| node.value != Value::Null);
    let granted = fields
        .required(reader, "endpoints", "a key")
        .and_then(|node| read_granted(reader, node, endpoints, has_tenant));
    let active = read_status(reader, fields.get("status"));
    let expires_at = read_expires_at(reader, fields.get("expires_at"));
    let rate_limit_per_second = match fields.get("rate_limit_per_second") {
        None => Some(None),
        Some(node) => reader
            .integer(
                node,
                "`rate_limit_per_second`",
                1,
                MAX_RATE_LIMIT_PER_SECOND,
            )
            .map(|rate| Some(rate as u32)),
    };
    Some(Key {
        id: id?,
        token_sha256: token_sha256?,
        tenant: tenant?,
        endpoints: granted?,
        active: active?,
        expires_at: expires_at?,
        rate_limit_per_second: rate_limit_per_second?,
    })
}

/// `id`: 1..=128 of `[A-Za-z0-9_.-]`.
fn read_id(reader: &mut Reader<'_>, node: &Node) -> Option<String> {
    let id = reader.scalar_text(node, "a key id")?;
    if is_key_id(&id) {
        Some(id)
    } else {
        reader.error(
            node.line,
            format!(
                "key id `{}` must be 1..=128 of [A-Za-z0-9_.-]",
                printable(&id)
            ),
        );
        None
    }
}

/// `hash`: the token's SHA-256 as 64 hex digits.
fn read_hash(reader: &mut Reader<'_>, node: &Node) -> Option<[u8; 32]> {
    let text = reader.string(node, "a key hash")?;
    let parsed = parse_sha256_hex(&text);
    if parsed.is_none() {
        reader.error(
            node.line,
            "a key `hash` must be 64 hex digits (the token's SHA-256)",
        );
    }
    parsed
}

/// `tenant`: absent or null for none, else 1..=`MAX_TENANT_BYTES` bytes. `None`: a problem.
fn read_tenant(reader: &mut Reader<'_>, node: Option<&Node>) -> Option<Option<String>> {
    match node {
        None => Some(None),
        Some(Node {
            value: Value::Null, ..
        }) => Some(None),
        Some(node) => reader.scalar_text(node, "`tenant`").and_then(|tenant| {
            if tenant.is_empty() || tenant.len() > MAX_TENANT_BYTES {
                reader.error(
                    node.line,
                    format!("`tenant` must be 1..={MAX_TENANT_BYTES} bytes"),
                );
                None
            } else {
                Some(Some(tenant))
            }
        }),
    }
}

/// `endpoints`: the names granted. Checked against the project's endpoints when they are known
/// (each must exist, and a tenant-scoped one needs a key with a tenant); a name among `failed`
/// (endpoints whose own file has problems) is not reported again.
fn read_granted(
    reader: &mut Reader<'_>,
    node: &Node,
    endpoints: Option<(&[Endpoint], &BTreeSet<String>)>,
    has_tenant: bool,
) -> Option<BTreeSet<String>> {
    let items = reader.sequence(node, "`endpoints`")?;
    let mut granted = BTreeSet::new();
    let mut complete = true;
    for item in items {
        let Some(name) = reader.string(item, "an endpoint name") else {
            complete = false;
            continue;
        };
        if let Some((endpoints, failed)) = endpoints {
            match endpoints.iter().find(|endpoint| endpoint.name == name) {
                None if failed.contains(&name) => complete = false,
                None => {
                    reader.error(
                        item.line,
                        format!(
                            "key grants endpoint `{}`, which is not defined",
                            printable(&name)
                        ),
                    );
                    complete = false;
                }
                Some(endpoint) if endpoint.tenant_column.is_some() && !has_tenant => {
                    reader.error(
                        item.line,
                        format!("key grants tenant-scoped endpoint `{name}` but has no `tenant`"),
                    );
                    complete = false;
                }
                Some(_) => {}
            }
        }
        granted.insert(name);
    }
    complete.then_some(granted)
}

/// `status`: `active` (the default) or `revoked`, as whether the key is in force.
fn read_status(reader: &mut Reader<'_>, node: Option<&Node>) -> Option<bool> {
    let Some(node) = node else {
        return Some(true);
    };
    match reader.string(node, "`status`").as_deref() {
        Some("active") => Some(true),
        Some("revoked") => Some(false),
        Some(other) => {
            reader.error(
                node.line,
                format!(
                    "`status` must be `active` or `revoked`, not `{}`",
                    printable(other)
                ),
            );
            None
        }
        None => None,
    }
}

/// `expires_at`: an RFC 3339 time after 1970, as seconds since the Unix epoch.
fn read_expires_at(reader: &mut Reader<'_>, node: Option<&Node>) -> Option<Option<u64>> {
    let Some(node) = node else {
        return Some(None);
    };
    reader
        .string(node, "`expires_at`")
        .and_then(|text| match chrono::DateTime::parse_from_rfc3339(&text) {
            Ok(time) if time.timestamp() >= 0 => Some(Some(time.timestamp() as u64)),
            _ => {
                reader.error(
                    node.line,
                    "`expires_at` must be an RFC 3339 time after 1970 (e.g. 2027-01-31T00:00:00Z)",
                );
                None
            }
        })
}

/// 64 hex digits (either case) as 32 bytes.
pub fn parse_sha256_hex(text: &str) -> Option<[u8; 32]> {
    quiver_secret::hex::decode_array(text)
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    quiver_secret::hex::encode(bytes)
}

/// The SHA-256 of a bearer token: what a keys file stores and what serving compares.
pub fn token_sha256(token: &str) -> [u8; 32] {
    quiver_secret::Secret::digest_of(token)
}

/// A new key: its token (32 random bytes, hex; shown once, never stored) and the keys file entry
/// holding only its hash.
pub fn create(
    id: &str,
    tenant: Option<&str>,
    endpoints: &[String],
) -> std::io::Result<(String, String)> {
    if !is_key_id(id) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a key id must be 1..=128 of [A-Za-z0-9_.-]",
        ));
    }
    let token = hex(&quiver_secret::random::bytes::<32>());
    let hash = hex(&token_sha256(&token));
    let tenant = match tenant {
        Some(tenant) => yaml_string(tenant),
        None => "null".to_string(),
    };
    let endpoints: Vec<String> = endpoints.iter().map(|name| yaml_string(name)).collect();
    let entry = format!(
        "  - id: {}\n    hash: \"{hash}\"\n    tenant: {tenant}\n    endpoints: [{}]\n    status: active\n",
        yaml_string(id),
        endpoints.join(", ")
    );
    Ok((token, entry))
}

/// A double-quoted YAML string (JSON's escaping is valid YAML).
fn yaml_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_entry_loads_back_and_its_hash_matches_the_token() {
        let (token, entry) =
            create("acme_prod", Some("tenant_acme"), &["a".into(), "b".into()]).unwrap();
        assert_eq!(token.len(), 64);
        let dir = std::env::temp_dir().join(format!("quiver-gateway-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.yml");
        std::fs::write(&path, format!("keys:\n{entry}")).unwrap();
        let keys = load_keys(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].token_sha256, token_sha256(&token));
        assert_eq!(keys[0].tenant.as_deref(), Some("tenant_acme"));
        assert!(keys[0].active);
        assert_eq!(keys[0].endpoints.len(), 2);
        let (other, _) = create("x", None, &[]).unwrap();
        assert_ne!(token, other, "tokens are random");
    }

    #[test]
    fn every_bad_key_is_reported_with_its_line() {
        let dir =
            std::env::temp_dir().join(format!("quiver-gateway-badkeys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.yml");
        let good = "a".repeat(64);
        std::fs::write(
            &path,
            format!(
                "keys:\n  - id: k1\n    hash: nothex\n    endpoints: []\n  - id: k2\n    hash: \"{good}\"\n    endpoints: []\n    status: paused\n    expires_at: tomorrow\n  - id: k1\n    hash: \"{}\"\n    endpoints: []\n    colour: red\n",
                "b".repeat(64)
            ),
        )
        .unwrap();
        let diagnostics = load_keys(&path).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        let lines: Vec<usize> = diagnostics.items.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![3, 8, 9, 13, 10], "{diagnostics}");
    }

    #[test]
    fn sha256_hex_round_trips() {
        let digest = token_sha256("token");
        assert_eq!(parse_sha256_hex(&hex(&digest)), Some(digest));
        assert_eq!(parse_sha256_hex(&hex(&digest).to_uppercase()), Some(digest));
        assert_eq!(parse_sha256_hex("zz"), None);
    }
}
