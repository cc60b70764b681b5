//! Custom-metadata keys of the vgi-rpc v1 wire.
//!
//! Framework keys live in per-batch custom metadata, never in schema metadata, so a
//! batch carries its own meaning (request, log, error, pointer) wherever it travels.

/// Method name on a request batch.
pub const METHOD: &str = "vgi_rpc.method";
/// Wire request version on a request batch; must equal [`REQUEST_VERSION`].
pub const REQUEST_VERSION_KEY: &str = "vgi_rpc.request_version";
/// The only request version this implementation speaks.
pub const REQUEST_VERSION: &str = "1";
/// Name of the protocol (service) a request is addressed to.
pub const PROTOCOL: &str = "vgi_rpc.protocol";
/// `major.minor.patch` of that protocol; major.minor must match the server's.
pub const PROTOCOL_VERSION: &str = "vgi_rpc.protocol_version";
/// Optional caller-chosen id echoed on logs and errors.
pub const REQUEST_ID: &str = "vgi_rpc.request_id";
/// Identifies the server instance on logs and errors.
pub const SERVER_ID: &str = "vgi_rpc.server_id";

/// Log level of a zero-row log or error batch.
pub const LOG_LEVEL: &str = "vgi_rpc.log_level";
/// Human-readable message of a log or error batch.
pub const LOG_MESSAGE: &str = "vgi_rpc.log_message";
/// JSON object with extra fields of a log or error batch.
pub const LOG_EXTRA: &str = "vgi_rpc.log_extra";
/// Stable machine-readable error code of an EXCEPTION batch.
pub const ERROR_CODE: &str = "vgi_rpc.error_code";
/// Category of an EXCEPTION batch (protocol failures, user errors...).
pub const ERROR_KIND: &str = "vgi_rpc.error_kind";
/// JSON details of an EXCEPTION batch.
pub const ERROR_DETAILS: &str = "vgi_rpc.error_details";

/// A zero-row input batch with this key set to `1` cancels a stream.
pub const CANCEL: &str = "vgi_rpc.cancel";
/// HTTP streams: the sealed cursor naming a stream call's next turn (base64).
pub const STREAM_STATE: &str = "vgi_rpc.stream_state#b64";
/// HTTP streams: the sealed token naming the stream call, from `/init` on (base64).
pub const CALL_STATE: &str = "vgi_rpc.call_state#b64";

/// Shared-memory segment advertised on a request.
pub const SHM_SEGMENT_NAME: &str = "vgi_rpc.shm_segment_name";
/// Size in bytes of the advertised segment.
pub const SHM_SEGMENT_SIZE: &str = "vgi_rpc.shm_segment_size";
/// Absolute offset of a pointer batch's IPC stream inside the segment.
pub const SHM_OFFSET: &str = "vgi_rpc.shm_offset";
/// Length in bytes of a pointer batch's IPC stream inside the segment.
pub const SHM_LENGTH: &str = "vgi_rpc.shm_length";

/// Pointer to an externally stored batch (object storage); not supported here.
pub const LOCATION: &str = "vgi_rpc.location";

/// Capability key on the `__transport_options__` reply: `true` when the server
/// can attach a client's shared-memory segment.
pub const TRANSPORT_SHM: &str = "vgi_rpc.transport.shm";
