"""Custom-metadata keys of the vgi-rpc v1 wire.

Every framework key lives in the custom metadata of a record-batch message, never in
the schema, so each batch carries its own meaning (request, log, error, pointer).
"""

METHOD = "vgi_rpc.method"
"""Method name on a request batch."""
REQUEST_VERSION = "vgi_rpc.request_version"
"""Wire request version on a request batch; must equal :data:`REQUEST_VERSION_VALUE`."""
REQUEST_VERSION_VALUE = "1"
"""The only request version spoken."""
PROTOCOL = "vgi_rpc.protocol"
"""Name of the protocol a request is addressed to."""
PROTOCOL_VERSION = "vgi_rpc.protocol_version"
"""``MAJOR.MINOR.PATCH`` of that protocol; major and minor must match the server's."""
REQUEST_ID = "vgi_rpc.request_id"
"""Id of the call, stamped on its logs and errors."""
SERVER_ID = "vgi_rpc.server_id"
"""Identifies the server instance on logs and errors."""

LOG_LEVEL = "vgi_rpc.log_level"
LOG_MESSAGE = "vgi_rpc.log_message"
LOG_EXTRA = "vgi_rpc.log_extra"
ERROR_CODE = "vgi_rpc.error_code"
ERROR_KIND = "vgi_rpc.error_kind"
ERROR_DETAILS = "vgi_rpc.error_details"

CANCEL = "vgi_rpc.cancel"
"""On a zero-row input batch: cancel the stream."""

SHM_SEGMENT_NAME = "vgi_rpc.shm_segment_name"
SHM_SEGMENT_SIZE = "vgi_rpc.shm_segment_size"
SHM_OFFSET = "vgi_rpc.shm_offset"
SHM_LENGTH = "vgi_rpc.shm_length"

LOCATION = "vgi_rpc.location"
"""Pointer to an externally stored batch (HTTP transports); not supported on byte streams."""

TRANSPORT_SHM = "vgi_rpc.transport.shm"
"""Capability key on the ``__transport_options__`` reply."""

STREAM_STATE = "vgi_rpc.stream_state#b64"
"""HTTP only: the cursor token of a stream call, renewed on every turn (base64 text)."""
CALL_STATE = "vgi_rpc.call_state#b64"
"""HTTP only: the call token of a stream call, issued once by ``/init`` and echoed on every turn."""
