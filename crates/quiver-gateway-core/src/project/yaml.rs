//! The project's YAML files as a small tree that keeps each node's line, and a reader over it that
//! reports every type or field problem with its line and keeps going. Only this file knows the
//! YAML crate.

use std::path::{Path, PathBuf};

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};

use super::diagnostics::Diagnostics;

/// A project file may hold at most this many bytes (a project is configuration, not data).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Nesting deeper than this is refused rather than followed.
const MAX_DEPTH: usize = 32;

/// One YAML node and the 1-based line it starts on.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub line: usize,
    pub value: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
    /// Anything the project never uses (tags, aliases, complex keys, unparsable scalars).
    Unsupported,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub key: String,
    pub key_line: usize,
    pub value: Node,
}

impl Value {
    /// What a value is, for messages ("expected a list, found a string").
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "nothing",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
            Value::Unsupported => "an unsupported YAML node",
        }
    }
}

/// Reads and parses one file: `None` (with the problem recorded) when it cannot be read or is not
/// YAML. An empty file is an empty mapping's worth of nothing: `Value::Null`.
pub fn parse_file(path: &Path, diagnostics: &mut Diagnostics) -> Option<Node> {
    let size = match std::fs::metadata(path) {
        Ok(metadata) => metadata.len(),
        Err(error) => {
            diagnostics.push(path, 0, format!("cannot read: {error}"));
            return None;
        }
    };
    if size > MAX_FILE_BYTES {
        diagnostics.push(path, 0, format!("larger than {MAX_FILE_BYTES} bytes"));
        return None;
    }
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            diagnostics.push(path, 0, format!("cannot read: {error}"));
            return None;
        }
    };
    parse_str(path, &text, diagnostics)
}

/// Parses one YAML document held in `text` (its problems reported against `path`).
pub fn parse_str(path: &Path, text: &str, diagnostics: &mut Diagnostics) -> Option<Node> {
    let documents = match MarkedYaml::load_from_str(text) {
        Ok(documents) => documents,
        Err(error) => {
            let line = error_line(text, error.marker().line().max(1), error.info());
            diagnostics.push(path, line, format!("not valid YAML: {}", error.info()));
            return None;
        }
    };
    if documents.len() > 1 {
        diagnostics.push(path, 0, "holds more than one YAML document");
        return None;
    }
    match documents.first() {
        None => Some(Node {
            line: 1,
            value: Value::Null,
        }),
        Some(root) => Some(convert(root, 0)),
    }
}

/// The line a parse error is about. The scanner marks where the token it was reading began: for
/// a tab found while scanning a plain scalar that is the scalar's line, not the tab's, so the
/// line of the first tab from there on is taken.
fn error_line(text: &str, marked: usize, info: &str) -> usize {
    if !info.contains("tab") {
        return marked;
    }
    text.lines()
        .enumerate()
        .skip(marked - 1)
        .find(|(_, line)| line.contains('\t'))
        .map_or(marked, |(index, _)| index + 1)
}

fn line_of(node: &MarkedYaml<'_>) -> usize {
    node.span.start.line().max(1)
}

fn convert(node: &MarkedYaml<'_>, depth: usize) -> Node {
    let line = line_of(node);
    if depth > MAX_DEPTH {
        return Node {
            line,
            value: Value::Unsupported,
        };
    }
    let value = match &node.data {
        YamlData::Value(scalar) => scalar_value(scalar),
        YamlData::Representation(text, style, tag) => {
            match Scalar::parse_from_cow_and_metadata(text.clone(), *style, tag.as_ref()) {
                Some(scalar) => scalar_value(&scalar),
                None => Value::Unsupported,
            }
        }
        YamlData::Sequence(items) => {
            Value::Seq(items.iter().map(|item| convert(item, depth + 1)).collect())
        }
        YamlData::Mapping(mapping) => {
            let mut entries = Vec::with_capacity(mapping.len());
            for (key, value) in mapping {
                let key_text = match &key.data {
                    YamlData::Value(scalar) => scalar_text(scalar),
                    _ => None,
                };
                match key_text {
                    Some(text) => entries.push(Entry {
                        key: text,
                        key_line: line_of(key),
                        value: convert(value, depth + 1),
                    }),
                    None => {
                        return Node {
                            line,
                            value: Value::Unsupported,
                        };
                    }
                }
            }
            Value::Map(entries)
        }
        _ => Value::Unsupported,
    };
    Node { line, value }
}

fn scalar_value(scalar: &Scalar<'_>) -> Value {
    match scalar {
        Scalar::Null => Value::Null,
        Scalar::Boolean(value) => Value::Bool(*value),
        Scalar::Integer(value) => Value::Int(*value),
        Scalar::FloatingPoint(value) => Value::Float(value.into_inner()),
        Scalar::String(text) => Value::Str(text.to_string()),
    }
}

/// A scalar key's text (`25:` and `"25":` both name `25`).
fn scalar_text(scalar: &Scalar<'_>) -> Option<String> {
    match scalar {
        Scalar::Null => None,
        Scalar::Boolean(value) => Some(value.to_string()),
        Scalar::Integer(value) => Some(value.to_string()),
        Scalar::FloatingPoint(value) => Some(value.into_inner().to_string()),
        Scalar::String(text) => Some(text.to_string()),
    }
}

/// Reads typed values out of one file's nodes, recording a problem (with its line) for each node
/// of the wrong shape and answering `None` for it, so that a check goes on to the next field.
pub struct Reader<'d> {
    pub file: PathBuf,
    pub diagnostics: &'d mut Diagnostics,
}

impl Reader<'_> {
    pub fn error(&mut self, line: usize, message: impl Into<String>) {
        self.diagnostics.push(&self.file, line, message);
    }

    /// A mapping's entries, each key checked: one of `known`, or one of `ignored` (an offloader
    /// field quiver does not use), else a problem naming it.
    pub fn mapping<'n>(
        &mut self,
        node: &'n Node,
        what: &str,
        known: &[&str],
        ignored: &[&str],
    ) -> Option<Fields<'n>> {
        let Value::Map(entries) = &node.value else {
            self.error(
                node.line,
                format!("{what} must be a mapping, found {}", node.value.kind()),
            );
            return None;
        };
        for entry in entries {
            let key = entry.key.as_str();
            if !known.contains(&key) && !ignored.contains(&key) {
                self.error(
                    entry.key_line,
                    format!(
                        "unknown field `{}` in {what} (known: {})",
                        printable(key),
                        known.join(", ")
                    ),
                );
            }
        }
        Some(Fields {
            line: node.line,
            entries,
        })
    }

    pub fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.value {
            Value::Str(text) => Some(text.clone()),
            other => {
                self.error(
                    node.line,
                    format!("{what} must be a string, found {}", other.kind()),
                );
                None
            }
        }
    }

    /// A scalar's text, whatever its YAML type (a default `10` of a string param is `"10"`).
    pub fn scalar_text(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.value {
            Value::Str(text) => Some(text.clone()),
            Value::Int(value) => Some(value.to_string()),
            Value::Float(value) => Some(value.to_string()),
            Value::Bool(value) => Some(value.to_string()),
            other => {
                self.error(
                    node.line,
                    format!("{what} must be a single value, found {}", other.kind()),
                );
                None
            }
        }
    }

    /// An integer within `min..=max`.
    pub fn integer(&mut self, node: &Node, what: &str, min: i64, max: i64) -> Option<i64> {
        match &node.value {
            Value::Int(value) if (min..=max).contains(value) => Some(*value),
            Value::Int(_) => {
                self.error(node.line, format!("{what} must be within {min}..={max}"));
                None
            }
            other => {
                self.error(
                    node.line,
                    format!("{what} must be an integer, found {}", other.kind()),
                );
                None
            }
        }
    }

    pub fn boolean(&mut self, node: &Node, what: &str) -> Option<bool> {
        match &node.value {
            Value::Bool(value) => Some(*value),
            other => {
                self.error(
                    node.line,
                    format!("{what} must be true or false, found {}", other.kind()),
                );
                None
            }
        }
    }

    pub fn sequence<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [Node]> {
        match &node.value {
            Value::Seq(items) => Some(items),
            other => {
                self.error(
                    node.line,
                    format!("{what} must be a list, found {}", other.kind()),
                );
                None
            }
        }
    }

    /// An identifier `[a-z][a-z0-9_]*` of at most [`MAX_IDENTIFIER_LEN`] bytes: the only text of
    /// a project that is ever spliced into SQL (quoted).
    pub fn identifier(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.string(node, what)?;
        if is_identifier(&text) {
            Some(text)
        } else {
            self.error(
                node.line,
                format!(
                    "{what} `{}` must match [a-z][a-z0-9_]* (at most {MAX_IDENTIFIER_LEN} bytes)",
                    printable(&text)
                ),
            );
            None
        }
    }

    /// A list of identifiers.
    pub fn identifiers(&mut self, node: &Node, what: &str) -> Option<Vec<(String, usize)>> {
        let items = self.sequence(node, what)?;
        let mut names = Vec::with_capacity(items.len());
        for item in items {
            if let Some(name) = self.identifier(item, what) {
                names.push((name, item.line));
            }
        }
        Some(names)
    }
}

/// The longest identifier a project may use.
pub const MAX_IDENTIFIER_LEN: usize = 63;

pub fn is_identifier(text: &str) -> bool {
    let mut bytes = text.bytes();
    text.len() <= MAX_IDENTIFIER_LEN
        && matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|byte| matches!(byte, b'a'..=b'z' | b'0'..=b'9' | b'_'))
}

/// A name from a file, cut short and with control characters escaped, fit to print in a message.
pub fn printable(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(64)
        .flat_map(char::escape_default)
        .collect();
    if text.chars().count() > 64 {
        out.push('…');
    }
    out
}

/// A mapping's entries once its keys were checked.
pub struct Fields<'n> {
    pub line: usize,
    entries: &'n [Entry],
}

impl<'n> Fields<'n> {
    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|entry| entry.key == key)
            .map(|entry| &entry.value)
    }

    /// The key's line, for a problem about a field's presence.
    pub fn key_line(&self, key: &str) -> Option<usize> {
        self.entries
            .iter()
            .find(|entry| entry.key == key)
            .map(|entry| entry.key_line)
    }

    /// A field that must be there: `None` with a problem at the mapping's line when it is not.
    pub fn required(&self, reader: &mut Reader<'_>, key: &str, what: &str) -> Option<&'n Node> {
        let node = self.get(key);
        if node.is_none() {
            reader.error(self.line, format!("{what} needs `{key}`"));
        }
        node
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Option<Node>, Diagnostics) {
        let mut diagnostics = Diagnostics::default();
        let node = parse_str(Path::new("f.yml"), text, &mut diagnostics);
        (node, diagnostics)
    }

    #[test]
    fn lines_are_one_based_and_follow_keys() {
        let (node, diagnostics) = parse("a: 1\nb:\n  - x\n  - 2.5\nc: true\n");
        assert!(diagnostics.is_empty());
        let Value::Map(entries) = node.unwrap().value else {
            panic!("a mapping")
        };
        assert_eq!(entries[0].key_line, 1);
        assert_eq!(entries[1].key_line, 2);
        let Value::Seq(items) = &entries[1].value.value else {
            panic!("a list")
        };
        assert_eq!(items[0].line, 3);
        assert_eq!(items[0].value, Value::Str("x".into()));
        assert_eq!(items[1].line, 4);
        assert_eq!(items[1].value, Value::Float(2.5));
        assert_eq!(entries[2].value.value, Value::Bool(true));
    }

    #[test]
    fn a_syntax_error_has_its_line() {
        let (node, diagnostics) = parse("a: 1\nb: [1, 2\n");
        assert!(node.is_none());
        assert_eq!(diagnostics.items.len(), 1);
        assert!(diagnostics.items[0].line >= 2, "{diagnostics}");
    }

    #[test]
    fn a_tab_is_reported_on_its_own_line() {
        for text in [
            "id: e\nmanifest: m.json\n\tschema: x\n",
            "a: 1\nb:\n\t- 3\n",
        ] {
            let (node, diagnostics) = parse(text);
            assert!(node.is_none());
            assert_eq!(diagnostics.items[0].line, 3, "{text:?}: {diagnostics}");
        }
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let (node, diagnostics) = parse("a: 1\na: 2\n");
        assert!(node.is_none());
        assert_eq!(diagnostics.items[0].line, 2, "{diagnostics}");
    }

    #[test]
    fn unknown_fields_are_reported_with_their_line() {
        let (node, mut diagnostics) = parse("name: x\nflavour: y\nowner: z\n");
        let node = node.unwrap();
        let mut reader = Reader {
            file: "f.yml".into(),
            diagnostics: &mut diagnostics,
        };
        let fields = reader
            .mapping(&node, "an endpoint", &["name"], &["owner"])
            .unwrap();
        assert!(fields.get("name").is_some());
        assert_eq!(diagnostics.items.len(), 1);
        assert_eq!(diagnostics.items[0].line, 2);
        assert!(diagnostics.items[0].message.contains("flavour"));
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("a"));
        assert!(is_identifier("tenant_id2"));
        for bad in ["", "A", "1a", "_a", "a-b", "a b", "a\"b", &"a".repeat(64)] {
            assert!(!is_identifier(bad), "{bad}");
        }
    }
}
