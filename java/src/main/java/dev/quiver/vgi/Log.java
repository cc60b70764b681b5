package dev.quiver.vgi;

/**
 * Worker logs: plain lines on stderr (stdout carries only protocol bytes), filtered by the level
 * the launcher asked for, in crates/quiver-vgi/src/logging.rs's format.
 */
final class Log {
  private Log() {}

  enum Level { ERROR, WARN, INFO, DEBUG }

  private static volatile Level level = Level.WARN;

  static void setLevel(Level wanted) {
    level = wanted;
  }

  /** Python logging names accepted; null for an unknown one. */
  static Level parse(String text) {
    return switch (text.toLowerCase(java.util.Locale.ROOT)) {
      case "error", "critical" -> Level.ERROR;
      case "warn", "warning" -> Level.WARN;
      case "info" -> Level.INFO;
      case "debug", "trace" -> Level.DEBUG;
      default -> null;
    };
  }

  static void log(Level at, String message) {
    if (at.ordinal() <= level.ordinal()) {
      System.err.println("quiver-vgi [" + ProcessHandle.current().pid() + "] "
          + at.name().toLowerCase(java.util.Locale.ROOT) + ": " + message);
      System.err.flush();
    }
  }

  static void debug(String message) {
    log(Level.DEBUG, message);
  }
}
