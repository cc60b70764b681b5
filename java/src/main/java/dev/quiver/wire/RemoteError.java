package dev.quiver.wire;

/** An exception that carries the exact {@link ErrorReport} the client should see. */
public class RemoteError extends RuntimeException {
  private final ErrorReport report;

  public RemoteError(ErrorReport report) {
    super(report.exceptionType() + ": " + report.message());
    this.report = report;
  }

  /** An error the client sees as {@code type: message}, e.g. {@code ValueError}. */
  public RemoteError(String exceptionType, String message) {
    this(new ErrorReport(exceptionType, message));
  }

  public ErrorReport report() {
    return report;
  }
}
