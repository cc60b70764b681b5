package dev.quiver.wire;

/** gRPC status names used as {@code vgi_rpc.error_code}. */
public enum ErrorCode {
  UNKNOWN,
  INVALID_ARGUMENT,
  FAILED_PRECONDITION,
  UNIMPLEMENTED,
  RESOURCE_EXHAUSTED,
  INTERNAL
}
