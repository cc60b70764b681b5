package dev.quiver.wire;

import java.io.IOException;

/**
 * Bytes that are not a valid vgi-rpc stream. {@code recoverable} says whether the reader is
 * still at a message boundary, so the connection can answer with an error and keep serving.
 */
public class WireException extends IOException {
  private final boolean recoverable;

  public WireException(String message, boolean recoverable) {
    super(message);
    this.recoverable = recoverable;
  }

  public boolean recoverable() {
    return recoverable;
  }

  /** The peer closed the connection at a message boundary. */
  public static final class ConnectionClosed extends WireException {
    public ConnectionClosed(String message) {
      super(message, false);
    }
  }
}
