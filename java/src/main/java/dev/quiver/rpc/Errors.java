package dev.quiver.rpc;

import dev.quiver.wire.ErrorCode;
import dev.quiver.wire.ErrorReport;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The errors the framework itself reports, with the texts vgi-rpc peers expect (python/quiver/rpc/errors.py). */
final class Errors {
  private Errors() {}

  static final String METHOD_NOT_IMPLEMENTED = "method_not_implemented";
  static final String PROTOCOL_NOT_SPECIFIED = "protocol_not_specified";
  static final String PROTOCOL_NOT_SUPPORTED = "protocol_not_supported";
  static final String PROTOCOL_VERSION_MISMATCH = "protocol_version_mismatch";
  static final int PROTOCOL_NAME_BYTES_MAX = 255;

  private static final Pattern SEMVER = Pattern.compile("(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)");
  private static final Pattern PROTOCOL_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_.]*");

  static ErrorReport protocolError(String detail) {
    return new ErrorReport("RpcError", "ProtocolError: " + detail);
  }

  static ErrorReport malformed(String detail) {
    return new ErrorReport("ArrowInvalid", detail, ErrorCode.INVALID_ARGUMENT, null, null, null);
  }

  static ErrorReport missingMethod() {
    return protocolError(
        "Missing 'vgi_rpc.method' in request batch custom_metadata. Each request batch must carry a "
            + "'vgi_rpc.method' key in its Arrow IPC custom_metadata with the method name as a UTF-8 string.");
  }

  static ErrorReport badRequestVersion(String value) {
    String fix = "Set the 'vgi_rpc.request_version' custom_metadata value to b'1'.";
    if (value == null) {
      return new ErrorReport("VersionError", "Missing 'vgi_rpc.request_version' in request batch custom_metadata. " + fix);
    }
    return new ErrorReport("VersionError", "Unsupported request version b'" + value + "', expected b'1'. " + fix);
  }

  static ErrorReport reservedNotImplemented(String name) {
    if (name.equals("__describe__")) {
      return notImplemented(
          "'__describe__' was retired. Introspection is now the 'vgi_rpc.Reflection.v1' protocol: call "
              + "'list_protocols' for what this server hosts, then 'describe' for one protocol's methods.");
    }
    return notImplemented("This server does not implement the reserved method '" + name + "'.");
  }

  static ErrorReport methodNotFound(String protocol, String name, List<String> available) {
    List<String> sorted = new ArrayList<>(available);
    Collections.sort(sorted);
    return notImplemented("Protocol '" + protocol + "' has no method '" + name + "'. Available: " + pyList(sorted) + ".");
  }

  /** The routing error for a request's protocol key, or null when it names a hosted protocol. */
  static ErrorReport checkProtocolName(String name, List<String> hosted) {
    if (name != null && hosted.contains(name)) {
      return null;
    }
    if (name == null || name.isEmpty()) {
      return new ErrorReport(
          "ProtocolNotSpecifiedError",
          "Request carries no 'vgi_rpc.protocol' routing key. Every request must name the protocol it "
              + "addresses. This server hosts: " + pyList(hosted) + ".",
          ErrorCode.INVALID_ARGUMENT,
          PROTOCOL_NOT_SPECIFIED,
          null,
          null);
    }
    if (name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > PROTOCOL_NAME_BYTES_MAX
        || !PROTOCOL_NAME.matcher(name).matches()) {
      return notSupported("'vgi_rpc.protocol' is not a protocol name: '" + name + "'.");
    }
    return notSupported("This server does not host protocol '" + name + "'. Hosted: " + pyList(hosted) + ".");
  }

  /** The version-gate error, or null when major and minor of {@code client} equal the server's. */
  static ErrorReport checkProtocolVersion(String protocol, String client, String server) {
    int[] clientParts = semver(client);
    int[] serverParts = semver(server);
    if (clientParts != null && serverParts != null && clientParts[0] == serverParts[0] && clientParts[1] == serverParts[1]) {
      return null;
    }
    String direction;
    if (client == null) {
      direction = "the client did not send a vgi_rpc.protocol_version metadata key. This is either a vgi-rpc "
          + "framework bug or a non-VGI client connecting to a VGI worker.";
    } else if (clientParts == null) {
      direction = "client sent a malformed protocol_version. Expected canonical semver MAJOR.MINOR.PATCH.";
    } else if (serverParts != null && java.util.Arrays.compare(clientParts, serverParts) < 0) {
      direction = "client is too old; upgrade the VGI extension/client to a version supporting protocol_version " + server + ".";
    } else {
      direction = "server is too old; upgrade the VGI worker to a version supporting protocol_version " + client + ".";
    }
    String shown = client == null ? "<not declared>" : client;
    String text = "VGI client/worker protocol_version mismatch for protocol '" + protocol + "'.\n"
        + "  Client: " + shown + "\n  Server: " + server + "\n  Direction: " + direction;
    Map<String, Object> violation = new LinkedHashMap<>();
    violation.put("type", "protocol_version");
    violation.put("subject", protocol);
    violation.put("description", "client declares " + (client == null || client.isEmpty() ? "<none>" : client)
        + ", server requires " + server + "; major and minor must match");
    Map<String, Object> detail = new LinkedHashMap<>();
    detail.put("@type", "vgi_rpc.PreconditionFailure");
    detail.put("violations", List.of(violation));
    return new ErrorReport(
        "ProtocolVersionError", text, ErrorCode.FAILED_PRECONDITION, PROTOCOL_VERSION_MISMATCH, List.of(detail), null);
  }

  private static int[] semver(String version) {
    if (version == null) {
      return null;
    }
    Matcher match = SEMVER.matcher(version);
    if (!match.matches()) {
      return null;
    }
    return new int[] {Integer.parseInt(match.group(1)), Integer.parseInt(match.group(2)), Integer.parseInt(match.group(3))};
  }

  /** A list as Python prints it, since the texts mirror the reference server's. */
  private static String pyList(List<String> items) {
    StringBuilder out = new StringBuilder("[");
    for (int i = 0; i < items.size(); i++) {
      if (i > 0) {
        out.append(", ");
      }
      out.append('\'').append(items.get(i)).append('\'');
    }
    return out.append(']').toString();
  }

  private static ErrorReport notImplemented(String text) {
    return new ErrorReport("MethodNotImplementedError", text, ErrorCode.UNIMPLEMENTED, METHOD_NOT_IMPLEMENTED, null, null);
  }

  private static ErrorReport notSupported(String text) {
    return new ErrorReport("ProtocolNotSupportedError", text, ErrorCode.UNIMPLEMENTED, PROTOCOL_NOT_SUPPORTED, null, null);
  }
}
