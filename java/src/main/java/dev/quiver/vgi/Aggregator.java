package dev.quiver.vgi;

import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;

/**
 * An aggregate's behaviour (crates/quiver-vgi/src/aggregate.rs, python/quiver/vgi/aggregate.py): a
 * state per group, folded, merged, finalized. States are the aggregator's own objects; the SDK keeps
 * them per execution.
 *
 * @param <S> one group's state
 */
public interface Aggregator<S> {
  /** A new group's state (the identity of {@link #combine}). */
  S init(Args args);

  /** Folds rows {@code rows} (indices into {@code columns}, in input order) into {@code state}; NULLs are its to skip. */
  S update(S state, List<FieldVector> columns, int[] rows, Args args);

  /** Merges {@code source}, a partial state of the same execution, into {@code target}. */
  S combine(S target, S source, Args args);

  /** One value per state, in order, of the declared type; a null state is a group that never saw a row. */
  FieldVector finalize(List<S> states, Args args, BufferAllocator allocator);

  /** The error a body raises for bad input: the engine reports it as the worker's error, typed. */
  static RuntimeException invalidArgument(String message) {
    return VgiErrors.invalidArgument(message);
  }
}
