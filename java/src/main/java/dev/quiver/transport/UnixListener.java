package dev.quiver.transport;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;

/** A listening Unix-domain socket (JDK 16+); removes its path when closed. */
public final class UnixListener implements AutoCloseable {
  private final ServerSocketChannel server;
  private final Path path;

  private UnixListener(ServerSocketChannel server, Path path) {
    this.server = server;
    this.path = path;
  }

  /** Binds {@code path}, replacing a stale socket file left by a dead worker. */
  public static UnixListener bind(Path path) throws IOException {
    Files.deleteIfExists(path);
    ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(path));
    return new UnixListener(server, path);
  }

  public Path path() {
    return path;
  }

  /** Waits for the next client. */
  public Connection accept() throws IOException {
    SocketChannel client = server.accept();
    return new Connection(
        Channels.newInputStream(client), Channels.newOutputStream(client), client, "unix:" + path, true);
  }

  @Override
  public void close() throws IOException {
    try {
      server.close();
    } finally {
      Files.deleteIfExists(path);
    }
  }
}
