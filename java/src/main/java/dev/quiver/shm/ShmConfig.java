package dev.quiver.shm;

import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A worker's shared-memory settings from the environment, the same variables as the Rust and
 * Python spines (crates/quiver-shm/src/config.rs, python/quiver/shm/config.py):
 * {@code VGI_RPC_SHM_DISABLE=1} never uses shared memory, {@code VGI_RPC_SHM_DEBUG=1} logs
 * attach / resolve / fallback events and a summary per connection, and
 * {@code VGI_RPC_SHM_MIN_BATCH_BYTES} keeps smaller batches inline (default 128 KiB). A variable
 * that is set but malformed is an error naming it: a typo in a tuning knob must not silently
 * become the default.
 */
public record ShmConfig(boolean disabled, boolean debug, long minBatchBytes) {
  public static final String ENV_DISABLE = "VGI_RPC_SHM_DISABLE";
  public static final String ENV_DEBUG = "VGI_RPC_SHM_DEBUG";
  public static final String ENV_MIN_BATCH_BYTES = "VGI_RPC_SHM_MIN_BATCH_BYTES";
  public static final long MIN_BATCH_BYTES_DEFAULT = 128 * 1024;

  private static final Set<String> TRUE = Set.of("1", "true", "yes", "on");
  private static final Set<String> FALSE = Set.of("0", "false", "no", "off");

  public ShmConfig {
    if (minBatchBytes < 0 || minBatchBytes > Layout.SEGMENT_BYTES_MAX) {
      throw new IllegalArgumentException("minBatchBytes " + minBatchBytes + " is outside 0.." + Layout.SEGMENT_BYTES_MAX);
    }
  }

  public static final ShmConfig DEFAULT = new ShmConfig(false, false, MIN_BATCH_BYTES_DEFAULT);

  public static ShmConfig fromEnv() {
    return fromEnv(System.getenv());
  }

  /** Reads the settings from {@code env}; throws {@link IllegalArgumentException} naming a malformed variable. */
  public static ShmConfig fromEnv(Map<String, String> env) {
    String threshold = get(env, ENV_MIN_BATCH_BYTES);
    return new ShmConfig(flag(env, ENV_DISABLE), flag(env, ENV_DEBUG),
        threshold == null ? MIN_BATCH_BYTES_DEFAULT : bytes(ENV_MIN_BATCH_BYTES, threshold));
  }

  /** Whether a batch is worth sending through the segment: never empty, never below the threshold. */
  public boolean wantsShmFor(long rows, long batchBytes) {
    return !disabled && rows > 0 && batchBytes >= minBatchBytes;
  }

  private static String get(Map<String, String> env, String name) {
    String value = env.get(name);
    return value == null || value.isBlank() ? null : value;
  }

  private static boolean flag(Map<String, String> env, String name) {
    String value = get(env, name);
    if (value == null) {
      return false;
    }
    String word = value.strip().toLowerCase(Locale.ROOT);
    if (TRUE.contains(word)) {
      return true;
    }
    if (FALSE.contains(word)) {
      return false;
    }
    throw invalid(name, value, "expected 1/0, true/false, yes/no or on/off");
  }

  private static long bytes(String name, String value) {
    String digits = value.strip();
    if (digits.isEmpty() || digits.length() > 18 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw invalid(name, value, "expected a plain decimal number of bytes (no sign, unit or separator)");
    }
    long parsed = Long.parseLong(digits);
    if (parsed > Layout.SEGMENT_BYTES_MAX) {
      throw invalid(name, value, "exceeds the 64 GiB segment limit");
    }
    return parsed;
  }

  private static IllegalArgumentException invalid(String name, String value, String reason) {
    return new IllegalArgumentException(name + "='" + value + "' is invalid: " + reason);
  }
}
