package dev.quiver.wire;

/** Custom-metadata keys of the vgi-rpc v1 wire (python/quiver/wire/keys.py has the same list). */
public final class Keys {
  private Keys() {}

  public static final String METHOD = "vgi_rpc.method";
  public static final String REQUEST_VERSION = "vgi_rpc.request_version";
  /** The only request version spoken. */
  public static final String REQUEST_VERSION_VALUE = "1";
  public static final String PROTOCOL = "vgi_rpc.protocol";
  public static final String PROTOCOL_VERSION = "vgi_rpc.protocol_version";
  public static final String REQUEST_ID = "vgi_rpc.request_id";
  public static final String SERVER_ID = "vgi_rpc.server_id";

  public static final String LOG_LEVEL = "vgi_rpc.log_level";
  public static final String LOG_MESSAGE = "vgi_rpc.log_message";
  public static final String LOG_EXTRA = "vgi_rpc.log_extra";
  public static final String ERROR_CODE = "vgi_rpc.error_code";
  public static final String ERROR_KIND = "vgi_rpc.error_kind";
  public static final String ERROR_DETAILS = "vgi_rpc.error_details";

  /** On a zero-row input batch: cancel the stream. */
  public static final String CANCEL = "vgi_rpc.cancel";

  public static final String SHM_SEGMENT_NAME = "vgi_rpc.shm_segment_name";
  public static final String SHM_SEGMENT_SIZE = "vgi_rpc.shm_segment_size";
  public static final String SHM_OFFSET = "vgi_rpc.shm_offset";
  public static final String SHM_LENGTH = "vgi_rpc.shm_length";

  /** Pointer to an externally stored batch (HTTP transports only). */
  public static final String LOCATION = "vgi_rpc.location";
  /** Capability key on the {@code __transport_options__} reply. */
  public static final String TRANSPORT_SHM = "vgi_rpc.transport.shm";
}
