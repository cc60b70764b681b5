package dev.quiver.conformance;

import dev.quiver.rpc.Protocol;
import dev.quiver.rpc.Server;
import dev.quiver.serve.Serve;
import dev.quiver.wire.Limits;
import java.util.List;

/** {@code ConformanceService} (and {@code conformance.Secondary.v1} beside it) over stdio (default) or {@code --unix PATH} (prints {@code UNIX:<path>}). */
public final class ConformanceWorker {
  public static final String PROTOCOL_NAME = "ConformanceService";
  public static final String PROTOCOL_VERSION = "2.0.0";

  private ConformanceWorker() {}

  /** The protocol with every method this worker answers. */
  public static Protocol protocol() {
    Protocol protocol = new Protocol(PROTOCOL_NAME, PROTOCOL_VERSION);
    Unary.register(protocol);
    NestedContainers.register(protocol);
    Streams.register(protocol);
    Unbound.register(protocol);
    return protocol;
  }

  public static void main(String[] args) {
    Server server = new Server(List.of(protocol(), Secondary.protocol()), Limits.DEFAULT);
    System.exit(Serve.main(server, "quiver-conformance-java", args));
  }
}
