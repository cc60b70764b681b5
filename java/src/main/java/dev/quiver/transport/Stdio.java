package dev.quiver.transport;

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.PrintStream;

/** The worker's own stdin and stdout as one connection. */
public final class Stdio {
  private Stdio() {}

  /**
   * Takes stdin and stdout for the wire and points {@code System.out} at stderr, so a stray print
   * in worker code cannot corrupt the byte stream.
   */
  public static Connection connection() {
    FileInputStream input = new FileInputStream(FileDescriptor.in);
    FileOutputStream output = new FileOutputStream(FileDescriptor.out);
    System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
    return new Connection(input, output, () -> {
      input.close();
      output.close();
    }, "stdio", true);
  }
}
