//! A service: a protocol name and version, and its methods.

use std::collections::BTreeMap;

use crate::method::Method;

/// The set of methods a server offers under one protocol name and version.
pub struct Service {
    /// Routing key clients put in `vgi_rpc.protocol`.
    pub protocol_name: String,
    /// `major.minor.patch`; requests must match major.minor. Empty for a
    /// protocol that declares no version, whose requests are not gated.
    pub protocol_version: String,
    methods: BTreeMap<String, Method>,
}

impl Service {
    /// An empty service.
    pub fn new(protocol_name: impl Into<String>, protocol_version: impl Into<String>) -> Self {
        let protocol_version = protocol_version.into();
        assert!(
            major_minor(&protocol_version).is_some(),
            "protocol version must be major.minor[.patch]"
        );
        Self {
            protocol_name: protocol_name.into(),
            protocol_version,
            methods: BTreeMap::new(),
        }
    }

    /// A service whose protocol declares no version (reflection, or a protocol
    /// that versions itself by its name).
    pub fn unversioned(protocol_name: impl Into<String>) -> Self {
        Self {
            protocol_name: protocol_name.into(),
            protocol_version: String::new(),
            methods: BTreeMap::new(),
        }
    }

    /// Adds a method; names are unique.
    pub fn add(&mut self, method: Method) -> &mut Self {
        let previous = self.methods.insert(method.name.clone(), method);
        assert!(previous.is_none(), "method defined twice");
        self
    }

    /// Builder form of [`Service::add`].
    pub fn with(mut self, method: Method) -> Self {
        self.add(method);
        self
    }

    /// The method called `name`.
    pub fn method(&self, name: &str) -> Option<&Method> {
        self.methods.get(name)
    }

    /// All methods, by name.
    pub fn methods(&self) -> impl Iterator<Item = &Method> {
        self.methods.values()
    }
}

/// `(major, minor)` of a version string.
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}
