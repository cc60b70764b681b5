package dev.quiver.wire;

/**
 * An RPC call's error, carrying the exact {@link ErrorReport} its caller sees: a method throws it to
 * answer with that report. The same concept and name as {@code quiver.rpc.RpcError} in Python and
 * {@code quiver_rpc::RpcError} in Rust (there, what a client's call ends with).
 */
public class RpcError extends RuntimeException {
  private final ErrorReport report;

  public RpcError(ErrorReport report) {
    super(report.exceptionType() + ": " + report.message());
    this.report = report;
  }

  /** An error the client sees as {@code type: message}, e.g. {@code ValueError}. */
  public RpcError(String exceptionType, String message) {
    this(new ErrorReport(exceptionType, message));
  }

  public ErrorReport report() {
    return report;
  }
}
