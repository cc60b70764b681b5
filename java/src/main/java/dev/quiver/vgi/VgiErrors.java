package dev.quiver.vgi;

import dev.quiver.wire.ErrorCode;
import dev.quiver.wire.ErrorReport;
import dev.quiver.wire.RpcError;

/** The errors a worker reports; the type name is the {@code exception_type} the engine sees (crates/quiver-vgi-contract/src/errors.rs). */
final class VgiErrors {
  private VgiErrors() {}

  static RpcError notFound(String message) {
    return new RpcError(new ErrorReport("NotFoundError", message, ErrorCode.NOT_FOUND, null, null, null));
  }

  static RpcError invalidArgument(String message) {
    return new RpcError(new ErrorReport("InvalidArgumentError", message, ErrorCode.INVALID_ARGUMENT, null, null,
        null));
  }

  static RpcError argumentValidation(String message) {
    return new RpcError(new ErrorReport("ArgumentValidationError", message, ErrorCode.INVALID_ARGUMENT, null, null,
        null));
  }

  static RpcError opaqueDataNotRecognized(String what) {
    return new RpcError(new ErrorReport("OpaqueDataNotRecognizedError",
        what + " was not issued by this worker's catalog_attach", ErrorCode.INVALID_ARGUMENT,
        "opaque_data_not_recognized", null, null));
  }
}
