package dev.quiver.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.quiver.rpc.ProtocolHash;
import dev.quiver.rpc.Server;
import dev.quiver.wire.Limits;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The protocol hash is defined to be equal in every port; these are the reference's own values. */
class ProtocolHashTest {
  /** Read off vgi-rpc 0.52.2's reference conformance worker, as python/tests/test_reflection.py pins them. */
  private static final Map<String, String> REFERENCE_HASHES = Map.of(
      "ConformanceService", "05479410c96f34410a2b10a4f6a49d59dcfd9d6d1d45ce9a9807d060a3bd6014",
      "conformance.Secondary.v1", "58557cf1611546ad22d1c379bc3ce1b04166082f78375e9fc959f0086347eab6",
      "vgi_rpc.Reflection.v1", "3c7db4cae8cdfc93dc4a76e73b8b759e18e45e6a5811adba4e520366344b919a");

  @Test
  void everyHostedProtocolHashesAsTheReferenceDoes() {
    Server server = new Server(List.of(ConformanceWorker.protocol(), Secondary.protocol()), Limits.DEFAULT);
    assertEquals(List.of("ConformanceService", "conformance.Secondary.v1", "vgi_rpc.Reflection.v1"),
        List.copyOf(server.protocols().keySet()), "reflection is hosted last");
    for (var hosted : server.protocols().values()) {
      assertEquals(REFERENCE_HASHES.get(hosted.name()), ProtocolHash.of(hosted), hosted.name());
    }
  }
}
