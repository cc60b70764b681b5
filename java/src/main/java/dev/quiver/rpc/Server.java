package dev.quiver.rpc;

import dev.quiver.shm.ShmConfig;
import dev.quiver.transport.Connection;
import dev.quiver.wire.Limits;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/** The protocols a worker hosts, its identity and limits; serves connections one session each. */
public final class Server {
  /** Most protocols one server hosts; routing compares names linearly. */
  public static final int PROTOCOLS_MAX = 64;

  private final Map<String, Protocol> protocols = new LinkedHashMap<>();
  private final String serverId;
  private final Limits limits;
  private final ShmConfig shm;
  private final BufferAllocator allocator = new RootAllocator();

  /** A server with the shared-memory settings of the environment ({@link ShmConfig#fromEnv()}). */
  public Server(List<Protocol> hosted, Limits limits) {
    this(hosted, limits, ShmConfig.fromEnv());
  }

  public Server(List<Protocol> hosted, Limits limits, ShmConfig shm) {
    // Reflection is hosted beside the application's protocols, after them.
    if (hosted.isEmpty() || hosted.size() + 1 > PROTOCOLS_MAX) {
      throw new IllegalArgumentException("a server hosts 1.." + PROTOCOLS_MAX + " protocols");
    }
    for (Protocol protocol : hosted) {
      if (protocols.putIfAbsent(protocol.name(), protocol) != null) {
        throw new IllegalArgumentException("protocol " + protocol.name() + " hosted twice");
      }
    }
    Protocol reflection = Reflection.protocol(this);
    if (protocols.putIfAbsent(reflection.name(), reflection) != null) {
      throw new IllegalArgumentException("protocol " + reflection.name() + " is the server's own");
    }
    this.limits = limits;
    this.shm = shm;
    byte[] id = new byte[6];
    new SecureRandom().nextBytes(id);
    this.serverId = HexFormat.of().formatHex(id);
  }

  public Map<String, Protocol> protocols() {
    return protocols;
  }

  List<String> protocolNames() {
    return new ArrayList<>(protocols.keySet());
  }

  public String serverId() {
    return serverId;
  }

  public Limits limits() {
    return limits;
  }

  public ShmConfig shm() {
    return shm;
  }

  /** Serves one connection until the client closes it, then closes it. */
  public void serve(Connection connection) {
    try (BufferAllocator sessionAllocator = allocator.newChildAllocator(connection.peer(), 0, Long.MAX_VALUE)) {
      new Session(this, connection, sessionAllocator).run();
    }
  }
}
