package dev.quiver.conformance;

import static dev.quiver.conformance.Fields.FLOAT64;
import static dev.quiver.conformance.Fields.UTF8;
import static dev.quiver.conformance.Fields.field;

import dev.quiver.rpc.Method;
import dev.quiver.rpc.Protocol;
import dev.quiver.wire.ErrorCode;
import dev.quiver.wire.ErrorReport;
import dev.quiver.wire.RpcError;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code conformance.Secondary.v1}, the protocol every conformance worker hosts beside the primary
 * (python/quiver/conformance/secondary.py): {@code echo_string} repeats the primary's name but
 * prefixes its answer, so routing on the bare method name shows; it declares no version, so a
 * server gating every call on the primary's version shows; {@code fail} and
 * {@code fail_oversized} exercise the error model (codes, kinds, details and their 4 KiB cap).
 */
final class Secondary {
  private Secondary() {}

  static final String PROTOCOL_NAME = "conformance.Secondary.v1";
  static final String ECHO_PREFIX = "secondary:";
  static final String INVALID_CODE_KIND = "invalid_code";
  static final String OVERSIZED_KIND = "details_oversized";
  static final int OVERSIZED_PADDING_BYTES = 5000;

  static Protocol protocol() {
    Protocol protocol = new Protocol(PROTOCOL_NAME, null);
    protocol.add(Method.unary("echo_string", List.of(field("value", UTF8)), field("result", UTF8),
        (params, ctx) -> Unary.text(ctx.allocator(), ECHO_PREFIX + params.string("value"))));
    protocol.add(Method.unary("fail",
        List.of(field("code", UTF8), field("kind", UTF8), field("retry_delay_seconds", FLOAT64)), null,
        (params, ctx) -> {
          throw fail(params.string("code"), params.string("kind"), params.float64("retry_delay_seconds"));
        }));
    protocol.add(Method.unary("fail_oversized", List.of(), null, (params, ctx) -> {
      // RetryInfo first and small: a server dropping only the detail that does not fit would keep
      // it and turn the error retryable, which the suite can observe.
      List<Object> details = List.of(retryInfo(1),
          Map.of("@type", "vgi_rpc.ErrorInfo", "metadata", Map.of("padding", "x".repeat(OVERSIZED_PADDING_BYTES))));
      throw new RpcError(new ErrorReport("StatusError", PROTOCOL_NAME + " fail_oversized: details exceed 4 KiB",
          ErrorCode.RESOURCE_EXHAUSTED, OVERSIZED_KIND, details, null));
    }));
    return protocol;
  }

  private static RpcError fail(String code, String kind, double retryDelaySeconds) {
    ErrorCode status;
    try {
      status = ErrorCode.valueOf(code);
    } catch (IllegalArgumentException e) {
      Map<String, Object> violation = new LinkedHashMap<>();
      violation.put("field", "code");
      violation.put("description", "must be a canonical code name");
      Map<String, Object> badRequest = new LinkedHashMap<>();
      badRequest.put("@type", "vgi_rpc.BadRequest");
      badRequest.put("field_violations", List.of(violation));
      return new RpcError(new ErrorReport("StatusError", "'" + code + "' is not a canonical error code",
          ErrorCode.INVALID_ARGUMENT, INVALID_CODE_KIND, List.of(badRequest), null));
    }
    List<Object> details = new ArrayList<>();
    Map<String, Object> errorInfo = new LinkedHashMap<>();
    errorInfo.put("@type", "vgi_rpc.ErrorInfo");
    errorInfo.put("metadata", Map.of("fixture", PROTOCOL_NAME));
    details.add(errorInfo);
    if (retryDelaySeconds > 0) {
      details.add(retryInfo(retryDelaySeconds));
    }
    Map<String, Object> probe = new LinkedHashMap<>();
    probe.put("@type", PROTOCOL_NAME + ".Probe");
    probe.put("note", "clients ignore detail types they do not know");
    details.add(probe);
    String message = (PROTOCOL_NAME + " fail: " + code + " " + kind).stripTrailing();
    return new RpcError(new ErrorReport("StatusError", message, status, kind.isEmpty() ? null : kind, details, null));
  }

  /** A {@code RetryInfo} detail; a whole number of seconds travels as an integer, as every port writes it. */
  private static Map<String, Object> retryInfo(double delaySeconds) {
    Map<String, Object> retry = new LinkedHashMap<>();
    retry.put("@type", "vgi_rpc.RetryInfo");
    boolean whole = delaySeconds == Math.rint(delaySeconds) && Math.abs(delaySeconds) < 1e15;
    retry.put("retry_delay_seconds", whole ? (Object) (long) delaySeconds : (Object) delaySeconds);
    return retry;
  }
}
