//! Bounds on everything a peer can make us allocate.

/// Limits applied while decoding. A peer that announces more gets a clear error
/// before anything is allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest flatbuffer header of one message.
    pub metadata_bytes_max: u32,
    /// Largest body of one message.
    pub body_bytes_max: u64,
    /// Most messages in one stream (schema, dictionaries, batches).
    pub messages_per_stream_max: u32,
    /// The largest body over `body_bytes_max` a reader reads past, discarding it in pieces, so
    /// that it can answer the peer (whose write would otherwise fail before it could read why).
    /// Costs bandwidth, never memory; a larger body, or any with 0 here, ends the stream at once.
    pub skip_body_bytes_max: u64,
}

impl Limits {
    /// Generous defaults: 16 MiB headers, 4 GiB bodies, 16M messages per stream.
    pub const DEFAULT: Limits = Limits {
        metadata_bytes_max: 16 << 20,
        body_bytes_max: 4 << 30,
        messages_per_stream_max: 1 << 24,
        skip_body_bytes_max: 4 << 30,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
