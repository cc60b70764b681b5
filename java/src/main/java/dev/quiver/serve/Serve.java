package dev.quiver.serve;

import dev.quiver.rpc.Server;
import dev.quiver.transport.Connection;
import dev.quiver.transport.Stdio;
import dev.quiver.transport.UnixListener;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** Parses a worker's command line and serves its {@link Server} on the transport it names. */
public final class Serve {
  /** Most clients served at once on a socket; more wait in the listen backlog. */
  public static final int CONNECTIONS_MAX = 256;

  private Serve() {}

  /** The transport a worker's arguments ask for. */
  public record Options(Path unix, Long idleTimeoutSeconds) {
    public static Options parse(String[] args) {
      Path unix = null;
      Long idle = null;
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "--unix" -> unix = Path.of(value(args, ++i, "--unix"));
          case "--idle-timeout" -> {
            idle = Long.parseLong(value(args, ++i, "--idle-timeout"));
            if (idle <= 0) {
              throw new IllegalArgumentException("--idle-timeout must be positive");
            }
          }
          default -> throw new IllegalArgumentException(
              "unknown argument " + args[i] + " (usage: [--unix PATH] [--idle-timeout SECONDS])");
        }
      }
      return new Options(unix, idle);
    }

    private static String value(String[] args, int index, String flag) {
      if (index >= args.length) {
        throw new IllegalArgumentException(flag + " needs a value");
      }
      return args[index];
    }
  }

  /** Serves as {@code args} say; returns the process exit status. */
  public static int main(Server server, String program, String[] args) {
    Options options;
    try {
      options = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(program + ": " + e.getMessage());
      return 2;
    }
    try {
      if (options.unix() == null) {
        server.serve(Stdio.connection());
      } else {
        serveUnix(server, options.unix(), options.idleTimeoutSeconds());
      }
      return 0;
    } catch (IOException e) {
      System.err.println(program + ": " + e.getMessage());
      return 1;
    }
  }

  /** Serves each client on its own thread until SIGTERM, or until idle too long. */
  public static void serveUnix(Server server, Path path, Long idleTimeoutSeconds) throws IOException {
    UnixListener listener = UnixListener.bind(path);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> closeQuietly(listener)));
    System.out.println("UNIX:" + path);
    System.out.flush();
    AtomicInteger active = new AtomicInteger();
    AtomicLong lastActivity = new AtomicLong(System.nanoTime());
    if (idleTimeoutSeconds != null) {
      startIdleWatchdog(listener, active, lastActivity, idleTimeoutSeconds);
    }
    while (true) {
      Connection connection;
      try {
        connection = listener.accept();
      } catch (IOException e) {
        return;
      }
      if (active.incrementAndGet() > CONNECTIONS_MAX) {
        active.decrementAndGet();
        connection.close();
        continue;
      }
      Thread thread = new Thread(() -> {
        try {
          server.serve(connection);
        } finally {
          lastActivity.set(System.nanoTime());
          active.decrementAndGet();
        }
      }, "quiver-connection");
      thread.setDaemon(true);
      thread.start();
    }
  }

  private static void startIdleWatchdog(UnixListener listener, AtomicInteger active, AtomicLong lastActivity, long seconds) {
    long timeoutNanos = seconds * 1_000_000_000L;
    Thread watchdog = new Thread(() -> {
      while (true) {
        try {
          Thread.sleep(250);
        } catch (InterruptedException e) {
          return;
        }
        if (active.get() == 0 && System.nanoTime() - lastActivity.get() > timeoutNanos) {
          System.err.println("quiver: idle for " + seconds + "s, exiting");
          closeQuietly(listener);
          System.exit(0);
        }
      }
    }, "quiver-idle-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
  }

  private static void closeQuietly(UnixListener listener) {
    try {
      listener.close();
    } catch (IOException e) {
      // Already closed.
    }
  }
}
