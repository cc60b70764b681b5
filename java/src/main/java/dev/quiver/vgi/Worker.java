package dev.quiver.vgi;

import dev.quiver.rpc.Method;
import dev.quiver.rpc.Params;
import dev.quiver.rpc.Protocol;
import dev.quiver.rpc.Server;
import dev.quiver.rpc.UnaryResult;
import dev.quiver.serve.Serve;
import dev.quiver.transport.Stdio;
import dev.quiver.wire.Limits;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * A VGI worker: a named catalog of functions, served as {@code vgi.v2} 2.2.0 over stdio or a Unix
 * socket (crates/quiver-vgi/src/worker.rs, python/quiver/vgi/worker.py).
 *
 * <pre>{@code
 * Worker worker = new Worker("demo", "a demo worker");
 * worker.scalar("shout", ArrowType.Utf8.INSTANCE).arg(Arg.of("s", ArrowType.Utf8.INSTANCE))
 *     .body((columns, rows, allocator) -> ...);
 * System.exit(worker.main(args));
 * }</pre>
 */
public final class Worker {
  public static final String PROTOCOL = "vgi.v2";
  public static final String PROTOCOL_VERSION = "2.2.0";
  /** Most functions one worker serves. */
  public static final int FUNCTIONS_MAX = 1024;

  private final String name;
  private final String description;
  private final Map<String, Function> functions = new LinkedHashMap<>();
  private String defaultSchema = "main";
  /** The catalog's comment and tags. */
  final Docs docs = new Docs();
  /** Declared schemas and their comment and tags, by name. */
  final Map<String, Docs> schemas = new LinkedHashMap<>();
  final Catalog catalog = new Catalog(this);
  final Executions executions = new Executions();
  final Buffered buffered = new Buffered();
  final Aggregates aggregates = new Aggregates(this);

  public Worker(String name, String description) {
    this.name = name;
    this.description = description;
  }

  public String name() {
    return name;
  }

  public String description() {
    return description;
  }

  Map<String, Function> functions() {
    return functions;
  }

  /** Where unqualified names resolve (USE w) and functions live unless they say otherwise; main when not set. */
  public Worker defaultSchema(String name) {
    this.defaultSchema = Docs.identifier(name, "schema");
    return this;
  }

  public String defaultSchema() {
    return defaultSchema;
  }

  /** The catalog's comment (duckdb_databases().comment). */
  public Worker comment(String text) {
    docs.comment = text;
    return this;
  }

  /** Adds a tag to the catalog (duckdb_databases().tags). */
  public Worker tag(String key, String value) {
    docs.tags.put(key, value);
    return this;
  }

  /** Declares schema {@code name}, with or without functions, with its comment and tags (duckdb_schemas()). */
  public Worker schema(String name, String comment, Map<String, String> tags) {
    Docs schema = new Docs();
    schema.comment = comment;
    schema.tags.putAll(tags);
    schemas.put(Docs.identifier(name, "schema"), schema);
    return this;
  }

  /** The schema {@code function} lives in. */
  String schemaOf(Function function) {
    return function.schema != null ? function.schema : defaultSchema;
  }

  /** Every schema: the default one, those declared, those functions name; in that order, once each. */
  Map<String, Docs> allSchemas() {
    Map<String, Docs> all = new LinkedHashMap<>();
    all.put(defaultSchema, schemas.getOrDefault(defaultSchema, new Docs()));
    all.putAll(schemas);
    for (Function function : functions.values()) {
      all.putIfAbsent(schemaOf(function), new Docs());
    }
    return all;
  }

  /** Declares a scalar function returning {@code returns}; finish it with {@link Function#body}. */
  public Function scalar(String name, ArrowType returns) {
    Function function = add(new Function(name, Function.Kind.SCALAR));
    function.returns = returns;
    return function;
  }

  /** Declares an aggregate returning {@code returns}; finish it with {@link Function#aggregator}. */
  public Function aggregate(String name, ArrowType returns) {
    Function function = add(new Function(name, Function.Kind.AGGREGATE));
    function.returns = returns;
    return function;
  }

  /** Declares a table function; finish it with {@link Function#output} and {@link Function#scan}. */
  public Function table(String name) {
    return add(new Function(name, Function.Kind.TABLE));
  }

  /**
   * Declares a buffered table function ({@code table_buffering}); finish it with an {@link Arg#table}
   * argument and {@link Function#buffered}.
   */
  public Function bufferedTable(String name) {
    return add(new Function(name, Function.Kind.TABLE_BUFFERING));
  }

  /** Declares a table-in-out function; finish it with an {@link Arg#table} argument and {@link Function#inOut}. */
  public Function tableInOut(String name) {
    return add(new Function(name, Function.Kind.TABLE_IN_OUT));
  }

  private Function add(Function function) {
    if (functions.containsKey(function.name)) {
      throw new IllegalArgumentException("function '" + function.name + "' declared twice");
    }
    if (functions.size() == FUNCTIONS_MAX) {
      throw new IllegalArgumentException("a worker serves at most " + FUNCTIONS_MAX + " functions");
    }
    functions.put(function.name, function);
    return function;
  }

  /** The {@code vgi.v2} protocol answering from this worker's functions. */
  Protocol protocol() {
    functions.values().forEach(Function::check);
    Protocol protocol = new Protocol(PROTOCOL, PROTOCOL_VERSION);
    Field request = bytes("request", false);
    Field attach = bytes("attach_opaque_data", false);
    Field transaction = bytes("transaction_opaque_data", true);
    Field path = new Field("path", FieldType.notNullable(new ArrowType.List()),
        List.of(new Field("item", FieldType.nullable(ArrowType.Utf8.INSTANCE), null)));
    Field type = new Field("type", new FieldType(false, ArrowType.Utf8.INSTANCE,
        new DictionaryEncoding(0, false, new ArrowType.Int(16, true))), null);
    Field result = bytes("result", false);
    unary(protocol, "catalog_catalogs", List.of(), result, (p, a) -> catalog.catalogs(a));
    unary(protocol, "catalog_attach", List.of(request), result,
        (p, a) -> catalog.attach(Rows.readRow(p.bytes("request"), a), a));
    unary(protocol, "catalog_schemas", List.of(attach, transaction), result, (p, a) -> {
      catalog.checkAttach(p.bytes("attach_opaque_data"));
      return catalog.schemas(null, true, a);
    });
    unary(protocol, "catalog_schema_get", List.of(attach, path, transaction), result, (p, a) -> {
      catalog.checkAttach(p.bytes("attach_opaque_data"));
      return catalog.schemas(list(p, "path"), false, a);
    });
    unary(protocol, "catalog_schema_contents_functions", List.of(attach, path, type, transaction), result, (p, a) -> {
      catalog.checkAttach(p.bytes("attach_opaque_data"));
      return catalog.functions(list(p, "path"), (String) Rows.value(p.column("type"), 0, p.dictionaries()), a);
    });
    for (String nothing : List.of("catalog_schema_contents_tables", "catalog_schema_contents_views",
        "catalog_schema_contents_indexes")) {
      unary(protocol, nothing, List.of(attach, path, transaction), result, (p, a) -> {
        catalog.checkAttach(p.bytes("attach_opaque_data"));
        return catalog.nothing(a);
      });
    }
    unary(protocol, "catalog_schema_contents_macros", List.of(attach, path, type, transaction), result, (p, a) -> {
      catalog.checkAttach(p.bytes("attach_opaque_data"));
      return catalog.nothing(a);
    });
    unary(protocol, "catalog_contents",
        List.of(attach, new Field("if_none_match", FieldType.nullable(ArrowType.Utf8.INSTANCE), null)), result,
        (p, a) -> {
          catalog.checkAttach(p.bytes("attach_opaque_data"));
          return catalog.contents(p.isNull("if_none_match") ? null : p.string("if_none_match"), a);
        });
    unary(protocol, "catalog_version", List.of(attach, transaction), result, (p, a) -> {
      catalog.checkAttach(p.bytes("attach_opaque_data"));
      return catalog.version(a);
    });
    protocol.add(Method.unary("catalog_detach", List.of(attach), null, (params, ctx) -> {
      catalog.checkAttach(params.bytes("attach_opaque_data"));
      return null;
    }));
    unary(protocol, "catalog_copy_from_formats", List.of(attach, transaction), result, (p, a) -> {
      catalog.checkAttach(p.bytes("attach_opaque_data"));
      return catalog.nothing(a);
    });
    unary(protocol, "bind", List.of(request), result, (p, a) -> {
      Binding.Bound bound = Binding.bind(catalog, Rows.readRow(p.bytes("request"), a), a);
      Log.debug("bind " + bound.function().name + "()");
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("output_schema", Rows.schemaBytes(bound.outputSchema()));
      row.put("lookup_secret_types", List.of());
      row.put("lookup_scopes", List.of());
      row.put("lookup_names", List.of());
      return Rows.row(Dataclasses.BIND_RESPONSE, row, a);
    });
    protocol.add(Method.exchange("init", List.of(request),
        (params, ctx) -> Init.init(this, Rows.readRow(params.bytes("request"), ctx.allocator()), ctx.allocator()))
        .withHeader(Dataclasses.GLOBAL_INIT_RESPONSE));
    unary(protocol, "table_function_plan", List.of(request), result, (p, a) -> {
      Map<String, Object> plan = Rows.readRow(p.bytes("request"), a);
      Map<String, Object> bindCall = Rows.readRow((byte[]) plan.get("bind_call"), a);
      Binding.Bound bound = Binding.bind(catalog, bindCall, a);
      return Splits.page(bound.function(), bound.args(), bindCall, plan, a);
    });
    unary(protocol, "table_buffering_process", List.of(request), result,
        (p, a) -> buffered.process(Rows.readRow(p.bytes("request"), a), a));
    unary(protocol, "table_buffering_combine", List.of(request), result,
        (p, a) -> buffered.combine(Rows.readRow(p.bytes("request"), a), a));
    unary(protocol, "table_buffering_destructor", List.of(request), result,
        (p, a) -> buffered.destruct(Rows.readRow(p.bytes("request"), a), a));
    unary(protocol, "table_function_cardinality", List.of(request), result,
        (p, a) -> Rows.row(Dataclasses.TABLE_CARDINALITY, new LinkedHashMap<>(), a));
    for (String method : Aggregates.METHODS) {
      unary(protocol, method, List.of(request), result, (p, a) -> aggregates.call(method, p.bytes("request"), a));
    }
    return protocol;
  }

  private interface BytesBody {
    byte[] call(Params params, BufferAllocator allocator) throws Exception;
  }

  private static void unary(Protocol protocol, String method, List<Field> params, Field result, BytesBody body) {
    protocol.add(Method.unary(method, params, result, (p, ctx) -> {
      byte[] bytes = body.call(p, ctx.allocator());
      VarBinaryVector vector = new VarBinaryVector(result, ctx.allocator());
      vector.setSafe(0, bytes);
      vector.setValueCount(1);
      return UnaryResult.of(vector);
    }));
  }

  private static List<?> list(Params params, String name) {
    return (List<?>) Rows.value(params.column(name), 0, params.dictionaries());
  }

  private static Field bytes(String name, boolean nullable) {
    return new Field(name, new FieldType(nullable, ArrowType.Binary.INSTANCE, null), null);
  }

  /**
   * The command line engines launch: stdio, or {@code --unix PATH [--idle-timeout SECS]}, with
   * {@code --debug}, {@code --quiet}, {@code --log-level LEVEL} (and {@code --log-format},
   * {@code --log-logger}, accepted and ignored). Returns the exit status.
   */
  public int main(String[] args) {
    Path unix = null;
    Long idleSeconds = 300L;
    List<String> rest = new ArrayList<>();
    try {
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "--unix" -> unix = Path.of(value(args, ++i));
          case "--idle-timeout" -> {
            double seconds = Double.parseDouble(value(args, ++i));
            idleSeconds = seconds <= 0 ? null : (long) Math.ceil(seconds);
          }
          case "--debug" -> Log.setLevel(Log.Level.DEBUG);
          case "--quiet" -> Log.setLevel(Log.Level.ERROR);
          case "--log-level" -> {
            Log.Level level = Log.parse(value(args, ++i));
            if (level != null) {
              Log.setLevel(level);
            }
          }
          case "--log-format", "--log-logger" -> value(args, ++i);
          default -> rest.add(args[i]);
        }
      }
      if (!rest.isEmpty()) {
        throw new IllegalArgumentException("unknown arguments " + rest
            + " (usage: [--unix PATH] [--idle-timeout SECS] [--debug|--quiet|--log-level LEVEL])");
      }
    } catch (IllegalArgumentException e) {
      System.err.println(name + ": " + e.getMessage());
      return 2;
    }
    Server server = new Server(List.of(protocol()), Limits.DEFAULT);
    try {
      if (unix == null) {
        Log.log(Log.Level.INFO, name + ": serving stdio");
        server.serve(Stdio.connection());
        Log.log(Log.Level.INFO, name + ": engine gone, exiting");
      } else {
        executions.inMemory = true;
        Serve.serveUnix(server, unix.toAbsolutePath(), idleSeconds);
      }
      return 0;
    } catch (IOException e) {
      System.err.println(name + ": " + e.getMessage());
      return 1;
    }
  }

  private static String value(String[] args, int index) {
    if (index >= args.length) {
      throw new IllegalArgumentException(args[index - 1] + " needs a value");
    }
    return args[index];
  }
}
