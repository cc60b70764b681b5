package dev.quiver.vgi;

import dev.quiver.wire.ErrorCode;
import dev.quiver.wire.ErrorReport;
import dev.quiver.wire.RemoteError;

/** The errors a worker reports; the type name is the {@code exception_type} the engine sees (crates/quiver-vgi-contract/src/errors.rs). */
final class VgiErrors {
  private VgiErrors() {}

  static RemoteError notFound(String message) {
    return new RemoteError(new ErrorReport("NotFoundError", message, ErrorCode.NOT_FOUND, null, null, null));
  }

  static RemoteError invalidArgument(String message) {
    return new RemoteError(new ErrorReport("InvalidArgumentError", message, ErrorCode.INVALID_ARGUMENT, null, null,
        null));
  }

  static RemoteError argumentValidation(String message) {
    return new RemoteError(new ErrorReport("ArgumentValidationError", message, ErrorCode.INVALID_ARGUMENT, null, null,
        null));
  }

  static RemoteError opaqueDataNotRecognized(String what) {
    return new RemoteError(new ErrorReport("OpaqueDataNotRecognizedError",
        what + " was not issued by this worker's catalog_attach", ErrorCode.INVALID_ARGUMENT,
        "opaque_data_not_recognized", null, null));
  }
}
