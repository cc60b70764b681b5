package dev.quiver.vgi;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Work shared by the connections of one execution: a counter of units handed out
 * (python/quiver/vgi/execution.py). Over {@code --unix} every connection reaches this process,
 * so the counter lives in memory; over stdio the engine starts one process per connection, so it
 * is a small file (two little-endian u64: next, total) named by the execution id, updated under
 * a file lock, and removed once every unit is claimed. A secondary that finds no file joins an
 * execution that is done.
 */
final class Executions {
  /** Most executions remembered in memory; the oldest are dropped past this. */
  static final int EXECUTIONS_MAX = 4096;

  interface Counter {
    Scan.Range claim(long units);
  }

  volatile boolean inMemory;
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();
  /** Table-in-out states by execution and substream, between the INPUT and FINALIZE calls. */
  final Map<String, Object> states = new ConcurrentHashMap<>();

  Counter start(byte[] executionId, long total) {
    String key = HexFormat.of().formatHex(executionId);
    if (inMemory) {
      if (counters.size() >= EXECUTIONS_MAX) {
        counters.clear();
      }
      Counter counter = new MemoryCounter(total);
      counters.put(key, counter);
      return counter;
    }
    return FileCounter.create(key, total);
  }

  Counter join(byte[] executionId) {
    String key = HexFormat.of().formatHex(executionId);
    return inMemory ? counters.get(key) : new FileCounter(directory().resolve(key + ".work"));
  }

  private static final class MemoryCounter implements Counter {
    private final long total;
    private long next;

    MemoryCounter(long total) {
      this.total = total;
    }

    @Override
    public synchronized Scan.Range claim(long units) {
      if (next >= total) {
        return null;
      }
      long start = next;
      next = Math.min(total, start + Math.max(1, units));
      return new Scan.Range(start, next);
    }
  }

  private record FileCounter(Path path) implements Counter {
    static FileCounter create(String key, long total) {
      Path path = directory().resolve(key + ".work");
      try (FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        channel.write(pair(0, total), 0);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot create the work file " + path, e);
      }
      return new FileCounter(path);
    }

    @Override
    public Scan.Range claim(long units) {
      try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
          FileLock lock = channel.lock()) {
        ByteBuffer data = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
        if (channel.read(data, 0) != 16) {
          return null;
        }
        long start = data.getLong(0);
        long total = data.getLong(8);
        if (start >= total) {
          Files.deleteIfExists(path);
          return null;
        }
        long end = Math.min(total, start + Math.max(1, units));
        channel.write(pair(end, total), 0);
        if (end >= total) {
          Files.deleteIfExists(path);
        }
        return new Scan.Range(start, end);
      } catch (NoSuchFileException e) {
        return null;
      } catch (IOException e) {
        throw new UncheckedIOException("cannot claim work from " + path, e);
      }
    }

    private static ByteBuffer pair(long next, long total) {
      ByteBuffer data = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
      data.putLong(next).putLong(total).flip();
      return data;
    }
  }

  /** $XDG_RUNTIME_DIR (or the temp dir)/quiver-vgi-java-USER, created owner-only. */
  static Path directory() {
    String base = System.getenv("XDG_RUNTIME_DIR");
    if (base == null || base.isEmpty()) {
      base = System.getProperty("java.io.tmpdir");
    }
    Path path = Path.of(base, "quiver-vgi-java-" + System.getProperty("user.name"));
    try {
      Files.createDirectories(path);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create " + path, e);
    }
    return path;
  }
}
