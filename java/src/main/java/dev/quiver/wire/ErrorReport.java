package dev.quiver.wire;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An error as it travels: the exception type name, its message and classification, sent as a
 * zero-row batch at level EXCEPTION (python/quiver/wire/log.py's ErrorReport).
 */
public record ErrorReport(
    String exceptionType, String message, ErrorCode code, String kind, List<Object> details, String traceback) {
  /** Longest traceback carried; the rest is cut so one error cannot grow a reply without bound. */
  public static final int TRACEBACK_CHARS_MAX = 16_000;
  /** Largest {@code vgi_rpc.error_details} value; bigger details are dropped whole, never in part. */
  public static final int ERROR_DETAILS_BYTES_MAX = 4096;

  public ErrorReport(String exceptionType, String message) {
    this(exceptionType, message, ErrorCode.UNKNOWN, null, null, null);
  }

  /** Describes a Java exception; a {@link RpcError} keeps its wire type name and classification. */
  public static ErrorReport fromException(Throwable error) {
    if (error instanceof RpcError remote) {
      ErrorReport report = remote.report();
      return report.traceback() != null ? report : new ErrorReport(report.exceptionType(), report.message(),
          report.code(), report.kind(), report.details(), traceback(error));
    }
    String message = error.getMessage() == null ? "" : error.getMessage();
    return new ErrorReport(pythonName(error), message, ErrorCode.UNKNOWN, null, null, traceback(error));
  }

  /** The stack trace a client sees by default (as vgi-rpc's reference sends one), bounded. */
  private static String traceback(Throwable error) {
    StringWriter trace = new StringWriter();
    error.printStackTrace(new PrintWriter(trace));
    String text = trace.toString();
    if (text.length() > TRACEBACK_CHARS_MAX) {
      text = text.substring(0, TRACEBACK_CHARS_MAX) + "\n... <traceback truncated>";
    }
    return text;
  }

  /**
   * vgi-rpc peers classify errors by Python exception names; Java's nearest equivalents map to
   * them so a client sees the same type whichever language the worker is written in.
   */
  private static String pythonName(Throwable error) {
    if (error instanceof IllegalArgumentException) {
      return "ValueError";
    }
    if (error instanceof ClassCastException) {
      return "TypeError";
    }
    if (error instanceof IllegalStateException) {
      return "RuntimeError";
    }
    return error.getClass().getSimpleName();
  }

  /** The report as the metadata of an EXCEPTION batch (without server and request ids). */
  public Map<String, String> toMetadata() {
    Map<String, Object> extra = new LinkedHashMap<>();
    extra.put("exception_type", exceptionType);
    extra.put("exception_message", message);
    extra.put("error_code", code.name());
    String detailsText = details == null ? null : Json.encodeCompact(details);
    if (detailsText != null && detailsText.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > ERROR_DETAILS_BYTES_MAX) {
      detailsText = null;
    }
    if (kind != null) {
      extra.put("error_kind", kind);
    }
    if (detailsText != null) {
      extra.put("error_details", details);
    }
    if (traceback != null) {
      extra.put("traceback", traceback);
    }
    Map<String, String> metadata = new LinkedHashMap<>();
    metadata.put(Keys.LOG_LEVEL, LogLevel.EXCEPTION.name());
    metadata.put(Keys.LOG_MESSAGE, exceptionType + ": " + message);
    metadata.put(Keys.LOG_EXTRA, Json.encode(extra));
    if (kind != null) {
      metadata.put(Keys.ERROR_KIND, kind);
    }
    metadata.put(Keys.ERROR_CODE, code.name());
    if (detailsText != null) {
      metadata.put(Keys.ERROR_DETAILS, detailsText);
    }
    return metadata;
  }
}
