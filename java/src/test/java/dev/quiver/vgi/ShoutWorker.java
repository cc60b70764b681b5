package dev.quiver.vgi;

import java.util.Locale;
import org.apache.arrow.vector.types.pojo.ArrowType;

/** The ten-line worker of README.md and java/README.md, compiled with the tests so it stays true. */
public final class ShoutWorker {
  public static void main(String[] args) {
    Worker worker = new Worker("demo", "a demo worker");
    worker.scalar("shout", ArrowType.Utf8.INSTANCE)
        .doc("Upper-cases s; NULL stays NULL")
        .arg(Arg.of("s", ArrowType.Utf8.INSTANCE))
        .body((columns, rows, allocator) -> Columns.strings(columns.get(0), s -> s.toUpperCase(Locale.ROOT), allocator));
    System.exit(worker.main(args)); // stdio, or --unix PATH [--idle-timeout SECS]
  }
}
