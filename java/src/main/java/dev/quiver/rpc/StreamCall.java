package dev.quiver.rpc;

import org.apache.arrow.vector.types.pojo.Schema;

/**
 * What a stream method returns: its output schema, its input schema (empty for a producer), its
 * state, optionally a one-row header batch sent before any data (the session closes it), and
 * whether it is a producer (it may finish; the client's input is ticks). An exchange-declared
 * method may answer a call as a producer: VGI's {@code init} picks per call.
 */
public record StreamCall(Schema outputSchema, Schema inputSchema, StreamState state, HeaderBatch header,
    boolean producer) {
  public static final Schema EMPTY_SCHEMA = new Schema(java.util.List.of());

  /**
   * A one-row header: its columns, its schema as sent (dictionary-encoded fields carry their
   * value type) and the dictionaries those refer to (null when none).
   */
  public record HeaderBatch(
      org.apache.arrow.vector.VectorSchemaRoot root,
      Schema schema,
      org.apache.arrow.vector.dictionary.DictionaryProvider dictionaries) {}

  public static StreamCall producer(Schema outputSchema, StreamState state) {
    return new StreamCall(outputSchema, EMPTY_SCHEMA, state, null, true);
  }

  public static StreamCall exchange(Schema outputSchema, Schema inputSchema, StreamState state) {
    return new StreamCall(outputSchema, inputSchema, state, null, false);
  }

  public StreamCall withHeader(HeaderBatch header) {
    return new StreamCall(outputSchema, inputSchema, state, header, producer);
  }
}
