package dev.quiver.vgi;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A function a worker serves, of one of four kinds, built with {@link Worker#scalar},
 * {@link Worker#table}, {@link Worker#tableInOut} or {@link Worker#aggregate} (crates/quiver-vgi/src/function.rs is the
 * Rust twin, python/quiver/vgi/function.py the Python one).
 */
public final class Function {
  /** The three kinds; a table-in-out function is listed and bound as TABLE. */
  public enum Kind {
    SCALAR("a scalar function"),
    TABLE("a table function"),
    TABLE_IN_OUT("a table-in-out function"),
    TABLE_BUFFERING("a buffered table function"),
    AGGREGATE("an aggregate function");

    final String described;

    Kind(String described) {
      this.described = described;
    }

    String wireName() {
      return switch (this) {
        case SCALAR -> "SCALAR";
        case TABLE_BUFFERING -> "TABLE_BUFFERING";
        case AGGREGATE -> "AGGREGATE";
        default -> "TABLE";
      };
    }
  }

  /** A scalar body: one output value per input row, as a vector the caller closes. */
  @FunctionalInterface
  public interface ScalarBody {
    FieldVector apply(List<FieldVector> columns, int rows, BufferAllocator allocator);
  }

  /** One connection's share of a table function's output: the next batch, or null when done. */
  @FunctionalInterface
  public interface TableScan {
    VectorSchemaRoot next(Scan scan, BufferAllocator allocator);
  }

  /** Starts a connection's scan from the bound arguments. */
  @FunctionalInterface
  public interface ScanFactory {
    TableScan start(Args args);
  }

  /** The units of work a table function's execution shares among its connections. */
  @FunctionalInterface
  public interface SharedWork {
    long units(Args args);
  }

  /** A table-in-out body: the output for one input batch (null for none); {@code state} is per call. */
  @FunctionalInterface
  public interface InOutBody {
    VectorSchemaRoot apply(Args args, Object state, VectorSchemaRoot input, BufferAllocator allocator);
  }

  /** A table-in-out finalize: the rows after the last input (null for none). */
  @FunctionalInterface
  public interface FinalizeBody {
    VectorSchemaRoot apply(Args args, Object state, BufferAllocator allocator);
  }

  /** A split-planned scan's units of work: one payload (the function's own bytes) per split. */
  @FunctionalInterface
  public interface Splits {
    List<byte[]> payloads(Args args);
  }

  /** A buffered table function's body: the whole input in, the output (null for none) out. */
  @FunctionalInterface
  public interface BufferedBody {
    VectorSchemaRoot apply(Args args, List<VectorSchemaRoot> input, BufferAllocator allocator);
  }

  /** Most arguments one function declares. */
  public static final int ARGS_MAX = 64;

  final String name;
  final Kind kind;
  String description = "";
  final List<Arg> args = new ArrayList<>();
  ArrowType returns;
  ScalarBody scalar;
  Schema output;
  boolean projectionPushdown;
  boolean filterPushdown;
  int maxWorkers = 1;
  SharedWork sharedWork;
  ScanFactory scan;
  Splits splits;
  BufferedBody buffered;
  InOutBody inOut;
  FinalizeBody finalizer;
  Aggregator<Object> aggregator;
  boolean orderDependent;
  boolean distinctDependent = true;
  /** The schema it lives in; null: the worker's default schema. */
  String schema;
  final Docs docs = new Docs();

  Function(String name, Kind kind) {
    if (!name.matches("[a-z_][a-z0-9_]*")) {
      throw new IllegalArgumentException("function name '" + name + "' must be a lowercase identifier");
    }
    this.name = name;
    this.kind = kind;
  }

  public String name() {
    return name;
  }

  public Kind kind() {
    return kind;
  }

  public Function doc(String text) {
    this.description = text;
    return this;
  }

  /** Puts the function in schema {@code name}; without this it lives in the worker's default schema. */
  public Function inSchema(String name) {
    this.schema = Docs.identifier(name, "schema");
    return this;
  }

  /** Its comment (duckdb_functions().comment). */
  public Function comment(String text) {
    docs.comment = text;
    return this;
  }

  /** Adds a tag (duckdb_functions().tags). */
  public Function tag(String key, String value) {
    docs.tags.put(key, value);
    return this;
  }

  /** Adds an example query, runnable as written (duckdb_functions().examples). */
  public Function example(String sql, String description) {
    docs.examples.add(new Docs.Example(sql, description));
    return this;
  }

  /** Adds a category (duckdb_functions().categories). */
  public Function category(String category) {
    docs.categories.add(category);
    return this;
  }

  public Function arg(Arg arg) {
    if (args.size() == ARGS_MAX) {
      throw new IllegalArgumentException(name + "() declares more than " + ARGS_MAX + " arguments");
    }
    if (args.stream().anyMatch(a -> a.name().equals(arg.name()))) {
      throw new IllegalArgumentException(name + "() declares argument '" + arg.name() + "' twice");
    }
    if (arg.table() && kind != Kind.TABLE_IN_OUT && kind != Kind.TABLE_BUFFERING) {
      throw new IllegalArgumentException(name + "(): only a table-in-out function takes an input table");
    }
    args.add(arg);
    return this;
  }

  /** A scalar function's body. */
  public Function body(ScalarBody body) {
    require(Kind.SCALAR, "body");
    this.scalar = body;
    return this;
  }

  /** A table function's output schema (the unprojected one). */
  public Function output(Schema schema) {
    require(Kind.TABLE, "output");
    this.output = schema;
    return this;
  }

  /** The engine may ask for a subset of the output columns; the SDK drops the others. */
  public Function projectionPushdown() {
    require(Kind.TABLE, "projectionPushdown");
    this.projectionPushdown = true;
    return this;
  }

  /**
   * The engine may push filters down ({@code vgi.filters.v2}); the SDK applies the required ones
   * it can evaluate exactly to every batch, before projection, and declines the rest.
   */
  public Function filterPushdown() {
    require(Kind.TABLE, "filterPushdown");
    this.filterPushdown = true;
    return this;
  }

  /**
   * The scan is shared: {@code work(args)} units are handed out through {@link Scan#claim} across
   * every connection of one execution, up to {@code maxWorkers} connections.
   */
  public Function sharedWork(int maxWorkers, SharedWork work) {
    require(Kind.TABLE, "sharedWork");
    if (maxWorkers < 1 || maxWorkers > 1024) {
      throw new IllegalArgumentException(name + "(): maxWorkers must be 1..1024");
    }
    this.maxWorkers = maxWorkers;
    this.sharedWork = work;
    return this;
  }

  /**
   * The scan is planned into splits ({@code table_function_plan}): {@code splits(args)} names the
   * units of work, the engine redeems each on any connection, up to {@code maxWorkers} at once, and
   * the scan reads its unit from {@link Scan#split}.
   */
  public Function splits(int maxWorkers, Splits splits) {
    require(Kind.TABLE, "splits");
    if (maxWorkers < 1 || maxWorkers > 1024) {
      throw new IllegalArgumentException(name + "(): maxWorkers must be 1..1024");
    }
    this.maxWorkers = maxWorkers;
    this.splits = splits;
    return this;
  }

  public Function scan(ScanFactory factory) {
    require(Kind.TABLE, "scan");
    this.scan = factory;
    return this;
  }

  /** A buffered table function's output schema and body, called once with the whole input. */
  public Function buffered(Schema output, BufferedBody body) {
    require(Kind.TABLE_BUFFERING, "buffered");
    this.output = output;
    this.buffered = body;
    return this;
  }

  /** A table-in-out function's body; its output schema is its input's. */
  public Function inOut(InOutBody body) {
    require(Kind.TABLE_IN_OUT, "inOut");
    this.inOut = body;
    return this;
  }

  public Function finalizer(FinalizeBody body) {
    require(Kind.TABLE_IN_OUT, "finalizer");
    this.finalizer = body;
    return this;
  }

  /** An aggregate function's behaviour. */
  @SuppressWarnings("unchecked")
  public <S> Function aggregator(Aggregator<S> body) {
    require(Kind.AGGREGATE, "aggregator");
    this.aggregator = (Aggregator<Object>) body;
    return this;
  }

  /** The aggregate's result depends on its rows' order: the engine keeps {@code ORDER BY} inside the call. */
  public Function orderDependent() {
    require(Kind.AGGREGATE, "orderDependent");
    this.orderDependent = true;
    return this;
  }

  /** {@code DISTINCT} does not change the aggregate's result (a min, a max); by default it is honoured. */
  public Function distinctIndependent() {
    require(Kind.AGGREGATE, "distinctIndependent");
    this.distinctDependent = false;
    return this;
  }

  private void require(Kind wanted, String what) {
    if (kind != wanted) {
      throw new IllegalStateException(name + "(): " + what + " is for " + wanted.described + "s");
    }
  }

  /** Throws unless the declaration is complete. */
  void check() {
    boolean complete = switch (kind) {
      case SCALAR -> scalar != null && returns != null;
      case TABLE -> scan != null && output != null;
      case TABLE_IN_OUT -> inOut != null && args.stream().anyMatch(Arg::table);
      case TABLE_BUFFERING -> buffered != null && output != null && args.stream().anyMatch(Arg::table);
      case AGGREGATE -> aggregator != null && returns != null;
    };
    if (!complete) {
      throw new IllegalStateException(name + "() is not fully declared (" + kind.described + ")");
    }
  }

  List<Arg> positional() {
    return args.stream().filter(a -> !a.named() && !a.table()).toList();
  }

  /** An aggregate's value columns: its arguments that are not constants. */
  List<Arg> columns() {
    return args.stream().filter(a -> !a.constant()).toList();
  }

  List<Arg> namedArgs() {
    return args.stream().filter(Arg::named).sorted(Comparator.comparing(Arg::name)).toList();
  }

  /** {@code FunctionInfo.arguments}: positional and table arguments in order, then named ones by name. */
  Schema argumentsSchema() {
    List<Field> fields = new ArrayList<>();
    args.stream().filter(a -> !a.named()).forEach(a -> fields.add(a.field()));
    namedArgs().forEach(a -> fields.add(a.field()));
    return new Schema(fields);
  }
}
