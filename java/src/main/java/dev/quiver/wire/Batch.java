package dev.quiver.wire;

import java.util.Map;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;

/**
 * One record batch as it travels: its columns, the dictionaries its encoded columns refer to,
 * and its custom metadata. A batch read from a {@link StreamReader} is a view valid until the
 * reader's next read.
 */
public record Batch(VectorSchemaRoot root, DictionaryProvider dictionaries, Map<String, String> metadata) {
  public Batch {
    metadata = Map.copyOf(metadata);
  }

  public int rowCount() {
    return root.getRowCount();
  }

  public BatchRole role() {
    return BatchRole.classify(root.getRowCount(), metadata);
  }
}
