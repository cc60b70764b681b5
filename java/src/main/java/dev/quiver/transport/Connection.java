package dev.quiver.transport;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.WriteChannel;

/**
 * One client's byte stream both ways. Writes gather in a buffer and leave on {@link #flush()},
 * once per turn of the lockstep protocol. {@code local} says whether the peer shares this host
 * (shared memory is only offered to local peers).
 */
public final class Connection implements AutoCloseable {
  /** Gather buffer per direction; a turn larger than this is written through in pieces. */
  public static final int BUFFER_BYTES = 1 << 16;

  private final ReadChannel reader;
  private final WriteChannel writer;
  private final BufferedOutputStream output;
  private final AutoCloseable resource;
  private final String peer;
  private final boolean local;

  public Connection(InputStream input, OutputStream output, AutoCloseable resource, String peer, boolean local) {
    this.output = new BufferedOutputStream(output, BUFFER_BYTES);
    this.reader = new ReadChannel(Channels.newChannel(new BufferedInputStream(input, BUFFER_BYTES)));
    this.writer = new WriteChannel(Channels.newChannel(this.output));
    this.resource = resource;
    this.peer = peer;
    this.local = local;
  }

  public ReadChannel reader() {
    return reader;
  }

  public WriteChannel writer() {
    return writer;
  }

  public String peer() {
    return peer;
  }

  public boolean local() {
    return local;
  }

  /** Ends this side's turn: everything gathered goes to the peer. */
  public void flush() throws IOException {
    output.flush();
  }

  @Override
  public void close() {
    try {
      output.flush();
    } catch (IOException e) {
      // The peer is gone; nothing left to tell it.
    }
    try {
      resource.close();
    } catch (Exception e) {
      // Closing a dead connection has nothing to report.
    }
  }
}
