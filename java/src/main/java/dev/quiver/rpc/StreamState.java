package dev.quiver.rpc;

import dev.quiver.wire.Batch;

/**
 * Server-side state of one stream call. The session calls {@link #process} once per input batch
 * (a zero-column tick for producers, the client's batch for exchanges); each turn emits logs and
 * exactly one data batch, except that a producer may instead {@link Output#finish()}.
 */
public interface StreamState {
  void process(Batch input, Output out, CallContext ctx) throws Exception;

  /** Called once when the client cancels the stream; errors here are ignored. */
  default void onCancel(CallContext ctx) {}
}
