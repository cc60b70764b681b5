package dev.quiver.wire;

import java.util.Map;

/** What a batch means: data, a log, an error, a shared-memory pointer, a cancel or an external pointer. */
public enum BatchRole {
  DATA,
  LOG,
  ERROR,
  SHM_POINTER,
  CANCEL,
  EXTERNAL;

  /**
   * Classifies a batch by its row count and metadata. Only zero-row batches can be control
   * batches; a zero-row batch without a control key (a void result, an empty page) is data.
   */
  public static BatchRole classify(int rowCount, Map<String, String> metadata) {
    if (rowCount != 0 || metadata.isEmpty()) {
      return DATA;
    }
    if (metadata.containsKey(Keys.LOG_LEVEL) && metadata.containsKey(Keys.LOG_MESSAGE)) {
      return LogLevel.EXCEPTION.name().equals(metadata.get(Keys.LOG_LEVEL)) ? ERROR : LOG;
    }
    if (metadata.containsKey(Keys.SHM_OFFSET)) {
      return SHM_POINTER;
    }
    if (metadata.containsKey(Keys.CANCEL)) {
      return CANCEL;
    }
    if (metadata.containsKey(Keys.LOCATION)) {
      return EXTERNAL;
    }
    return DATA;
  }
}
